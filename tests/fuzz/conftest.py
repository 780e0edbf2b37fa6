"""Registers the fuzz profiles (``nightly``, and the shared example database) for these tests."""

from fuzz import profiles

profiles.register()
