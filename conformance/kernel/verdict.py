"""The verdict: one pure function from a run's inputs to every outcome a report shows.

This module owns :func:`decide`. Its inputs (:class:`Inputs`) are the catalog, the run's
selection and narrowing, the path under test (known to the suite alone, decisions S1.8), the
host's expectations file, the harness's own problems, and one record per check. Its answer
(:class:`Decision`) is each requirement's outcome, the verdict, its exit code and the verdict
line. Every renderer (terminal, JSON, Markdown, JUnit) and the exit code print what it returns
and compute nothing of their own (decisions S1.11).

The rules, in order:

1. A **harness error** (exit 2) when the harness reported a problem, no check ran, a check
   errored, or a check met a host that restarted as another.
2. **Not conformant** (exit 1) when a check failed, a MUST's outcome is a failure, or a
   known-failure entry matched only passing checks. A check that found a value on any attempt
   has failed, however an expectations file lists it: a leak is never flaky (decisions S1.6).
3. **Incomplete** (exit 1) when the run stopped early, no check executed, or a MUST in the
   selection neither held nor was declared unchecked (decisions S1.2, S1.7).
4. **Non-conformant (baselined)** (exit 0) when every failure was a known failure; else
   **conformant, with MUSTs unchecked by declaration** (exit 0) when the expectations file
   declared the MUSTs left unchecked; else **conformant** (exit 0).
5. A run narrowed in any way is never plainly conformant: the verdict is
   ``conformant (narrowed)`` and its line names the narrowing (decisions S1.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from conformance.kernel.baseline import Applied, Expectations, apply
from conformance.kernel.fold import requirement_outcomes, scopes_for
from conformance.kernel.records import (
    BASELINED,
    CONFORMANT,
    DECLARED,
    EXCLUDED,
    EXIT_CODES,
    HARNESS_ERROR,
    HELD,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_CONFORMANT,
    NOT_SELECTED,
    CheckResult,
    Outcome,
    RequirementInfo,
    RequirementResult,
)

#: The verdicts that pass a gate only because nothing failed that was not forgiven or declared.
GOOD: tuple[str, ...] = (CONFORMANT, BASELINED, DECLARED, NARROWED)


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything the verdict depends on.

    Attributes:
        catalog: Every requirement, in catalog order.
        checks: One record per check the run collected and reached (skipped ones included).
        path: The path under test: ``in-process``, ``driver`` or ``mcp``.
        capabilities: What the host announced (only ``reference`` matters here: the reference
            implementation answers for its own rules as well).
        selection: The ``--requirements`` IDs, if the run was narrowed to them.
        narrowed: How pytest's own options narrowed the run, each named.
        planned: The requirement IDs the collected checks cite; ``None`` when not known.
        stopped: Why the run ended before its last check, if it did.
        problems: The harness's own problems.
        expectations: The host's expectations file, if one was given.
    """

    catalog: Sequence[RequirementInfo]
    checks: Sequence[CheckResult]
    path: str = "in-process"
    capabilities: Sequence[str] = ()
    selection: Sequence[str] = ()
    narrowed: Sequence[str] = ()
    planned: frozenset[str] | None = None
    stopped: str | None = None
    problems: Sequence[str] = ()
    expectations: Expectations | None = None

    def is_narrowed(self) -> bool:
        """Return whether the run covered less than the whole catalog (decisions S1.7)."""
        return bool(self.selection or self.narrowed)

    def selected(self) -> frozenset[str]:
        """Return the requirement IDs the run set out to check (decisions S1.7).

        The ``--requirements`` IDs; else, in a run pytest's options narrowed, those the
        collected checks cite (those the checks that ran cite, when the collection is not
        known); else the whole catalog.
        """
        if self.selection:
            return frozenset(self.selection)
        if self.narrowed:
            if self.planned is not None:
                return self.planned
            return frozenset(rid for check in self.checks for rid in check.requirements)
        return frozenset(entry.id for entry in self.catalog)


@dataclass(slots=True)
class Decision:
    """What the kernel decided about a run.

    Attributes:
        checks: The check records as judged: copies, with the expectations file applied.
        requirements: One outcome per catalog entry, in catalog order.
        verdict: The run's verdict.
        exit_code: Its exit code.
        line: The verdict as one sentence, with every narrowing and early stop named.
        undeclared: The MUSTs left unchecked that the host did not declare.
        declared: (requirement, reason) for each MUST left unchecked by declaration.
        applied: What the expectations file changed, if one was given.
    """

    checks: list[CheckResult]
    requirements: list[RequirementResult]
    verdict: str
    exit_code: int
    line: str
    undeclared: list[RequirementResult] = field(default_factory=list)
    declared: list[tuple[RequirementResult, str]] = field(default_factory=list)
    applied: Applied | None = None


def judged_checks(checks: Sequence[CheckResult]) -> list[CheckResult]:
    """Return copies of ``checks`` with what no input may change made so.

    A check that found a value is failed, whatever it says it is: a leak passed on a rerun is
    still a leak (decisions S1.6).
    """
    copies = [check.copy() for check in checks]
    for check in copies:
        if check.leak and check.outcome in (Outcome.FLAKY, Outcome.PASS):
            check.outcome = Outcome.FAIL
    return copies


def decide(inputs: Inputs) -> Decision:
    """Return the verdict and every requirement's outcome for ``inputs`` (the module's rules).

    Pure: the records in ``inputs`` are not changed.
    """
    checks = judged_checks(inputs.checks)
    applied = None
    if inputs.expectations is not None:
        applied = apply(inputs.expectations, checks)
    folded = requirement_outcomes(
        inputs.catalog,
        checks,
        scopes_for(inputs.path, inputs.capabilities),
        inputs.selected(),
    )
    declared_reasons = dict(applied.declared) if applied else {}
    missing = [
        item
        for item in folded
        if item.info.level == "MUST"
        and item.outcome not in HELD
        and item.outcome not in (NOT_APPLICABLE, NOT_SELECTED, EXCLUDED)
        and not _failed(item)
    ]
    undeclared = [item for item in missing if item.info.id not in declared_reasons]
    declared = [
        (item, declared_reasons[item.info.id])
        for item in missing
        if item.info.id in declared_reasons
    ]
    result = _verdict(inputs, checks, folded, undeclared, declared, applied)
    return Decision(
        checks=checks,
        requirements=folded,
        verdict=result,
        exit_code=EXIT_CODES[result],
        line=verdict_line(
            result,
            declared=len(declared),
            selection=inputs.selection,
            narrowed=inputs.narrowed,
            stopped=inputs.stopped,
        ),
        undeclared=undeclared,
        declared=declared,
        applied=applied,
    )


def _failed(item: RequirementResult) -> bool:
    return item.outcome in (Outcome.FAIL.value, Outcome.ERROR.value, BASELINED)


def _verdict(
    inputs: Inputs,
    checks: Sequence[CheckResult],
    folded: Sequence[RequirementResult],
    undeclared: Sequence[RequirementResult],
    declared: Sequence[tuple[RequirementResult, str]],
    applied: Applied | None,
) -> str:
    if (
        inputs.problems
        or not checks
        or any(check.outcome is Outcome.ERROR or check.harness for check in checks)
    ):
        return HARNESS_ERROR
    musts = [item for item in folded if item.info.level == "MUST"]
    if (
        any(check.outcome in (Outcome.FAIL, Outcome.UNEXPECTED_PASS) for check in checks)
        or any(item.outcome in (Outcome.FAIL.value, Outcome.ERROR.value) for item in musts)
        or (applied is not None and applied.unexpected)
    ):
        return NOT_CONFORMANT
    if inputs.stopped or undeclared or not any(check.executed for check in checks):
        # Checks ran but judged nothing, a MUST went unseen, or the run ended early.
        return INCOMPLETE
    if any(check.outcome is Outcome.BASELINED for check in checks):
        return BASELINED
    if declared:
        return DECLARED
    return NARROWED if inputs.is_narrowed() else CONFORMANT


def verdict_line(
    verdict: str,
    *,
    declared: int = 0,
    selection: Sequence[str] = (),
    narrowed: Sequence[str] = (),
    stopped: str | None = None,
) -> str:
    """Return the verdict as a sentence: with the count of MUSTs unchecked by declaration,
    every narrowing of the run and any early stop (decisions S1.7)."""
    result = verdict
    if verdict == DECLARED:
        noun = "MUST" if declared == 1 else "MUSTs"
        result = f"conformant, with {declared} {noun} unchecked by declaration"
    if verdict == NARROWED and (selection or narrowed):
        # The suffixes below name the narrowing, so the line is never a plain "conformant".
        result = CONFORMANT
    if selection:
        # A narrowed run speaks for the requirements it was asked about, and says so.
        result += f" (only the checks of {', '.join(selection)})"
    if narrowed:
        result += f" (narrowed: {'; '.join(narrowed)})"
    if stopped:
        # An early stop is never to be read as a pass: the line says the run ended early.
        result += f" ({stopped})"
    return result
