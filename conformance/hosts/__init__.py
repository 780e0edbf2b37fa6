"""Hosts the suite can check, each behind :class:`conformance.host.HostUnderTest`."""
