"""Shared pytest set-up for the project's own tests.

Hypothesis profiles: ``ci`` (what tox selects) runs more examples and is derandomized so a CI
run is repeatable; ``dev`` (the default) is quicker. Neither sets a deadline, because a slow
runner must not fail a property that is about outcomes, not speed.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from fuzz import profiles

settings.register_profile(
    "ci",
    deadline=None,
    max_examples=300,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
# `nightly` and the shared example database (HYPOTHESIS_DATABASE_DIR) live in fuzz/profiles.py.
profiles.register()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
