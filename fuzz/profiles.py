"""The Hypothesis settings profiles and the example database teams share.

This module owns the three profiles every property runs under: ``dev`` (fast, for the edit
loop), ``ci`` (what tox selects: derandomized, so a CI run is reproducible and never flakes) and
``nightly`` (thousands of examples per fuzz property). ``HYPOTHESIS_PROFILE`` picks one.
``tests/conftest.py`` keeps the project-wide ``dev`` and ``ci`` figures; :func:`register` adds
what is missing (``nightly`` always; ``dev`` and ``ci`` when fuzzing runs on its own) and never
changes a figure already registered. ``HYPOTHESIS_DATABASE_DIR`` points ``dev`` and ``nightly``
at a directory a team shares (a network mount, or a cache CI restores and saves), so a
counterexample one person finds replays first for everyone; ``ci`` never uses a database.

The fuzz properties build whole argument trees, so each runs a share of the profile's examples
(:func:`scaled`): 90 under ``ci``, 30 under ``dev``, 6,000 under ``nightly``.
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import InvalidArgument

#: The environment variables this module reads.
PROFILE_ENV: Final = "HYPOTHESIS_PROFILE"
DATABASE_ENV: Final = "HYPOTHESIS_DATABASE_DIR"

#: The share of a profile's examples each fuzz property runs.
FUZZ_SHARE: Final = 0.3

# Generation builds argument trees hundreds of levels deep on purpose; the size and speed health
# checks would only say so.
QUIET: Final = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much)

_DEFAULTS: Final = {
    "dev": {"max_examples": 100, "deadline": None},
    "ci": {"max_examples": 300, "deadline": None, "derandomize": True, "database": None},
    "nightly": {"max_examples": 20_000, "deadline": None},
}


def _registered(name: str) -> bool:
    try:
        settings.get_profile(name)
    except InvalidArgument:
        return False
    return True


def register() -> None:
    """Register ``nightly``, and ``dev`` and ``ci`` unless they already are.

    With ``HYPOTHESIS_DATABASE_DIR`` set, ``dev`` and ``nightly`` keep their examples there.
    """
    directory = os.environ.get(DATABASE_ENV)
    for name, values in _DEFAULTS.items():
        if name == "nightly" or not _registered(name):
            settings.register_profile(name, **values)  # type: ignore[arg-type]
        if directory and name != "ci":
            settings.register_profile(
                name,
                parent=settings.get_profile(name),
                database=DirectoryBasedExampleDatabase(directory),
            )


def load(default: str = "dev") -> str:
    """Register the profiles and load the one ``HYPOTHESIS_PROFILE`` names.

    Returns:
        The profile's name.
    """
    register()
    name = os.environ.get(PROFILE_ENV, default)
    settings.load_profile(name)
    return name


def scaled(share: float = FUZZ_SHARE) -> settings:
    """Return the loaded profile's settings with ``share`` of its examples (at least 10)."""
    current = settings.default
    assert current is not None
    return settings(
        current,
        max_examples=max(10, int(current.max_examples * share)),
        suppress_health_check=QUIET,
    )


def ci(share: float = FUZZ_SHARE, shrink: bool = True) -> settings:
    """Return the ``ci`` profile's settings, scaled, whatever profile is loaded.

    Tests that must be deterministic anywhere (the planted-bug tests) run under this; they only
    need to know that a failure exists, so they may skip shrinking it.
    """
    register()
    base = settings.get_profile("ci")
    return settings(
        base,
        max_examples=max(10, int(base.max_examples * share)),
        derandomize=True,
        database=None,
        suppress_health_check=QUIET,
        phases=list(Phase) if shrink else [Phase.explicit, Phase.generate],
    )
