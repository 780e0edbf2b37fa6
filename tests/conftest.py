"""Shared pytest set-up for the project's own tests.

The model check's budget for the suite runs the tests start is set below.

Hypothesis profiles: ``ci`` (what tox selects) runs more examples and is derandomized so a CI
run is repeatable; ``dev`` (the default) is quicker. Neither sets a deadline, because a slow
runner must not fail a property that is about outcomes, not speed.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from conformance.model import budget as model_budget
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

#: pytest-xdist workers per core under ``-n auto`` (the unit-test job's setting). Most of this
#: suite's time is waiting, not work: the suite runs its tests start hold prompts open, let
#: approval and execution timeouts pass and wait on driver processes, so one worker leaves its
#: core idle about two thirds of the time. Two per core fill those gaps (docs/ci.md).
WORKERS_PER_CORE = 2


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` starts two workers per core this process may run on; a count set in
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` is left to pytest-xdist, which reads it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return WORKERS_PER_CORE * max(1, len(os.sched_getaffinity(0)))


# The suite runs these tests start (hundreds, to test its reports, exit codes, adapters and
# self-test) draw one example of the model check from its CI seed, not 25; each such run's
# verdict names that narrowing (decisions S1.7). The tests that judge a verdict the model check
# could change ask for its whole budget (`full_model_budget`); so do the conformance jobs and
# the self-test, which never read this file. A campaign set by hand is left as it is.
if model_budget.EXAMPLES_ENV not in os.environ:
    os.environ[model_budget.EXAMPLES_ENV] = "1"
    os.environ.setdefault(model_budget.SEED_ENV, str(model_budget.CI_SEED))


@pytest.fixture
def full_model_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Suite runs started by the test draw the model check's whole CI budget."""
    monkeypatch.delenv(model_budget.EXAMPLES_ENV, raising=False)
    monkeypatch.delenv(model_budget.SEED_ENV, raising=False)
