"""What the model check makes of Hypothesis's flakiness errors.

A failure that did not come back when its example ran again was still seen, so it stays the
failure of the requirement it named; the same draws meeting different rules (the rules for an
open prompt are drawn only while one is open, and when a prompt opens is a host's timing) judged
nothing, so it is the suite's error and fails no requirement.
"""

from __future__ import annotations

from hypothesis.errors import FlakyFailure, FlakyStrategyDefinition

from conformance.model.machine import _unflaked
from conformance.outcomes import RequirementError, SuiteError


def test_a_failure_seen_once_is_the_failure() -> None:
    """``FlakyFailure`` holding a requirement's failure gives that failure back."""
    seen = RequirementError("APPR-001", "the call ran unasked")
    got = _unflaked(FlakyFailure("did not reproduce", [seen]))
    assert got is seen
    assert got.requirements == ("APPR-001",)


def test_inconsistent_draws_are_the_suites_error() -> None:
    """Draws that met different rules fail no requirement: the suite's error."""
    got = _unflaked(FlakyStrategyDefinition("inconsistent data generation"))
    assert isinstance(got, SuiteError)
    assert not isinstance(got, RequirementError)
    assert "FlakyStrategyDefinition" in got.detail


def test_a_flaky_failure_without_a_requirement_is_the_suites_error() -> None:
    """A flaky failure of something else than a requirement names none."""
    got = _unflaked(FlakyFailure("did not reproduce", [ValueError("x")]))
    assert isinstance(got, SuiteError)


def test_other_errors_pass_unchanged() -> None:
    """Anything else is what it was."""
    error = RequirementError("INV1", "a value leaked")
    assert _unflaked(error) is error
