"""Property tests of the verdict kernel, and the kernel mutants they must catch.

The properties (``kernel_model.check_properties``) run over generated runs: catalogs, check
records, selections, narrowings, early stops, paths and expectations files. Each kernel mutant
below is a plausible wrong rule, one per property; the test for it patches the kernel and shows
that the same properties find a run it decides wrongly. A property that no mutant can break
would be a property that checks nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from conformance.kernel import (
    BASELINED,
    CONFORMANT,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_CONFORMANT,
    UNCHECKED,
    CheckResult,
    Entry,
    Expectations,
    Inputs,
    Outcome,
    RequirementInfo,
    decide,
)
from conformance.kernel import baseline as kernel_baseline
from conformance.kernel import fold as kernel_fold
from conformance.kernel import verdict as kernel_verdict
from tests.conformance.kernel_model import check_properties, runs

#: Examples each property run draws in CI. The generation is derandomized, so CI always runs
#: the same examples; a longer campaign raises the count with HYPOTHESIS_PROFILE.
EXAMPLES = 400

#: Examples a mutant's hunt may draw before it counts as missed.
MUTANT_EXAMPLES = 3000


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(runs())
def test_every_kernel_rule_holds_on_generated_runs(inputs: Inputs) -> None:
    """Every property of docs/conformance.md's verdict rules holds for every generated run."""
    check_properties(inputs)


# --- kernel mutants ------------------------------------------------------------------------------


def _flaky_covers_must(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flaky entry forgives a failure (the fault S1.6 closed)."""
    original = kernel_baseline.apply

    def apply(expectations: Expectations, checks: Sequence[CheckResult]) -> Any:
        for check in checks:
            if check.outcome is Outcome.FAIL and any(e.matches(check) for e in expectations.flaky):
                check.outcome = Outcome.FLAKY
        return original(expectations, checks)

    monkeypatch.setattr(kernel_verdict, "apply", apply)


def _leak_may_be_flaky(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that found a value but passed on a rerun holds."""
    monkeypatch.setattr(
        kernel_verdict, "judged_checks", lambda checks: [check.copy() for check in checks]
    )


def _narrowed_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """A narrowed run is plainly conformant (the fault S1.7 closed)."""
    original = kernel_verdict._verdict

    def verdict(*args: Any) -> str:
        found = original(*args)
        return CONFORMANT if found == NARROWED else found

    monkeypatch.setattr(kernel_verdict, "_verdict", verdict)
    monkeypatch.setattr(
        kernel_verdict,
        "verdict_line",
        lambda verdict, **_: CONFORMANT if verdict == NARROWED else verdict,
    )


def _stop_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that stopped early is judged on what it ran."""
    original = kernel_verdict._verdict

    def verdict(inputs: Inputs, *args: Any) -> str:
        return original(dataclasses.replace(inputs, stopped=None), *args)

    monkeypatch.setattr(kernel_verdict, "_verdict", verdict)


def _blind_check_judges(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that could not see a requirement's surface passes it anyway (S1.1, S1.3)."""
    monkeypatch.setattr(kernel_fold, "unjudged", lambda requirement, check: [])


def _skip_counts_as_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A requirement with one judging check passes though another of its checks was skipped."""
    original = kernel_fold._fold_one

    def fold_one(entry: RequirementInfo, cited: list[CheckResult], scopes: Any) -> Any:
        result = original(entry, cited, scopes)
        if result.outcome == UNCHECKED and any(
            check.outcome is Outcome.PASS and not check.unchecked for check in cited
        ):
            result.outcome = Outcome.PASS.value
        return result

    monkeypatch.setattr(kernel_fold, "_fold_one", fold_one)


def _out_of_scope_hides_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A requirement outside the run's scope is not applicable even though its check failed
    (the fault S1.12 closed: MCP-005 and MCP-008)."""
    original = kernel_fold._fold_one

    def fold_one(entry: RequirementInfo, cited: list[CheckResult], scopes: Any) -> Any:
        result = original(entry, cited, scopes)
        if scopes is not None and entry.scope not in scopes and entry.level != "excluded":
            result.outcome = NOT_APPLICABLE
        return result

    monkeypatch.setattr(kernel_fold, "_fold_one", fold_one)


def _baselining_marks_every_cited_must(monkeypatch: pytest.MonkeyPatch) -> None:
    """A baselined check marks every MUST it cites baselined, not only the ones it named."""
    original = kernel_fold._fold_one

    def fold_one(entry: RequirementInfo, cited: list[CheckResult], scopes: Any) -> Any:
        result = original(entry, cited, scopes)
        if (
            entry.level == "MUST"
            and any(c.outcome is Outcome.BASELINED for c in cited)
            and result.outcome not in (Outcome.FAIL.value, Outcome.ERROR.value)
        ):
            result.outcome = BASELINED
        return result

    monkeypatch.setattr(kernel_fold, "_fold_one", fold_one)


def _harness_error_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known-failure entry forgives a host that restarted as another (S1.8)."""
    original = kernel_baseline.apply

    def apply(expectations: Expectations, checks: Sequence[CheckResult]) -> Any:
        for check in checks:
            check.harness = False
        return original(expectations, checks)

    monkeypatch.setattr(kernel_verdict, "apply", apply)


def _markdown_computes_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that prints the bare verdict word instead of the kernel's line."""
    from conformance import report_views

    # The views read the line where they are laid out (conformance.report_views).
    monkeypatch.setattr(report_views, "verdict_text", lambda found: str(found["verdict"]))


def _mutates_its_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that applies the expectations file to the caller's own records."""
    monkeypatch.setattr(kernel_verdict, "judged_checks", list)


MUTANTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "flaky-covers-must": _flaky_covers_must,
    "leak-may-be-flaky": _leak_may_be_flaky,
    "narrowed-is-plain": _narrowed_is_plain,
    "stop-ignored": _stop_ignored,
    "blind-check-judges": _blind_check_judges,
    "skip-counts-as-pass": _skip_counts_as_pass,
    "out-of-scope-hides-failure": _out_of_scope_hides_failure,
    "baselining-marks-every-cited-must": _baselining_marks_every_cited_must,
    "harness-error-hidden": _harness_error_hidden,
    "markdown-computes-its-own-line": _markdown_computes_its_own_line,
    "mutates-its-inputs": _mutates_its_inputs,
}


@contextmanager
def _patched(name: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        MUTANTS[name](monkeypatch)
        yield


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_properties_catch_each_kernel_mutant(name: str) -> None:
    """Each wrong rule decides some generated run wrongly, and a property says so."""

    @settings(
        max_examples=MUTANT_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(runs())
    def hunt(inputs: Inputs) -> None:
        check_properties(inputs)

    with _patched(name), pytest.raises((AssertionError, ExceptionGroup)):
        hunt()


# --- examples, one per rule ----------------------------------------------------------------------

MUST_A = RequirementInfo("INV1", "MUST", "I1", "no value anywhere")
MUST_B = RequirementInfo("LOG-001", "MUST", "R6.6", "no value in the log")
WIRE = RequirementInfo("MCP-005", "MUST", "R9.5", "refusals on the wire", "mcp")


def _passing(nodeid: str, *requirements: str) -> CheckResult:
    return CheckResult(nodeid, requirements)


def _failing(nodeid: str, *requirements: str, leak: bool = False) -> CheckResult:
    return CheckResult(
        nodeid, requirements, outcome=Outcome.FAIL, failed=requirements[:1], leak=leak
    )


def test_a_run_where_every_must_was_judged_and_held_is_conformant() -> None:
    decision = decide(Inputs([MUST_A, MUST_B], [_passing("a", "INV1"), _passing("b", "LOG-001")]))
    assert (decision.verdict, decision.exit_code, decision.line) == (CONFORMANT, 0, CONFORMANT)


def test_a_must_no_check_judged_makes_the_run_incomplete() -> None:
    decision = decide(Inputs([MUST_A, MUST_B], [_passing("a", "INV1")]))
    assert decision.verdict == INCOMPLETE
    assert [item.info.id for item in decision.undeclared] == ["LOG-001"]


def test_a_check_blind_to_a_surface_does_not_certify_what_it_could_not_see() -> None:
    blind = _passing("a", "INV1", "LOG-001")
    blind.not_searched = ("host log",)
    decision = decide(Inputs([MUST_A, MUST_B], [blind]))
    assert decision.verdict == INCOMPLETE
    assert {item.info.id: item.outcome for item in decision.requirements} == {
        "INV1": UNCHECKED,
        "LOG-001": UNCHECKED,
    }


def test_a_leak_that_passed_on_a_rerun_is_a_failure() -> None:
    rerun = CheckResult("a", ("INV1",), outcome=Outcome.FLAKY, leak=True, attempts=2)
    flaky = Expectations("f", flaky=(Entry("check", "a", "timing"),))
    decision = decide(Inputs([MUST_A], [rerun], expectations=flaky))
    assert decision.verdict == NOT_CONFORMANT
    assert rerun.outcome is Outcome.FLAKY  # the caller's record is untouched


def test_no_flaky_entry_forgives_a_failure() -> None:
    flaky = Expectations("f", flaky=(Entry("requirement", "INV1", "timing"),))
    decision = decide(Inputs([MUST_A], [_failing("a", "INV1")], expectations=flaky))
    assert decision.verdict == NOT_CONFORMANT


def test_baselining_marks_only_the_requirements_the_failure_named() -> None:
    known = Expectations("f", known=(Entry("check", "a", "known bug"),))
    failing = _failing("a", "INV1", "LOG-001")
    decision = decide(Inputs([MUST_A, MUST_B], [failing], expectations=known))
    outcomes = {item.info.id: item.outcome for item in decision.requirements}
    assert outcomes == {"INV1": BASELINED, "LOG-001": UNCHECKED}
    assert decision.verdict == INCOMPLETE


def test_a_narrowed_run_is_never_plainly_conformant() -> None:
    decision = decide(Inputs([MUST_A], [_passing("a", "INV1")], narrowed=("-k inv1",)))
    assert decision.verdict == NARROWED
    assert decision.line == "conformant (narrowed: -k inv1)"


def test_a_failing_check_of_an_out_of_scope_requirement_is_reported() -> None:
    decision = decide(Inputs([MUST_A, WIRE], [_passing("a", "INV1"), _failing("b", "MCP-005")]))
    assert {item.info.id: item.outcome for item in decision.requirements}["MCP-005"] == "fail"
    assert decision.verdict == NOT_CONFORMANT


def test_a_host_that_restarted_as_another_is_a_harness_error_whatever_is_declared() -> None:
    restarted = CheckResult("a", ("INV1",), outcome=Outcome.ERROR, harness=True)
    known = Expectations("f", known=(Entry("check", "a", "known"),))
    decision = decide(Inputs([MUST_A], [restarted], expectations=known))
    assert (decision.verdict, decision.exit_code) == (HARNESS_ERROR, 2)


def test_a_requirement_entry_is_not_contradicted_by_a_check_blind_to_it() -> None:
    """A known failure listed by requirement stays expected while no check could judge it: a
    check that passed without seeing the requirement's surface is no evidence it holds."""
    blind = _passing("a", "LOG-001")
    blind.unchecked.append(("LOG-001", "the host did not announce observe.log"))
    known = Expectations("f", known=(Entry("requirement", "LOG-001", "walks one page"),))
    decision = decide(Inputs([MUST_B], [blind], expectations=known))
    assert decision.applied is not None
    assert decision.applied.unexpected == []
    assert decision.verdict == INCOMPLETE
