"""Generated runs for the verdict kernel's property tests, and the properties themselves.

This module owns the Hypothesis strategy :func:`runs`, which draws whole kernel inputs (a
catalog, one record per check, a selection, a narrowing, an early stop, a path and an
expectations file), biased towards runs that are nearly conformant so that one wrong rule is
enough to change the verdict; and :func:`check_properties`, which asserts every rule the kernel
promises (docs/conformance.md, "How the verdict is decided") against one drawn run, including
that every renderer prints the same verdict. The property tests and the kernel mutants in
``test_kernel_properties.py`` share both.
"""

from __future__ import annotations

import datetime
import re
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from hypothesis import strategies as st

from conformance import junit
from conformance.kernel import (
    BASELINED,
    CONFORMANT,
    DECLARED,
    EXIT_CODES,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_APPLICABLE_PREFIX,
    NOT_CONFORMANT,
    CheckResult,
    Decision,
    Entry,
    Expectations,
    Inputs,
    Outcome,
    RequirementInfo,
    decide,
    scopes_for,
)
from conformance.kernel.fold import blinded_by
from conformance.report import RunData, build_report, render_markdown, summary_lines

#: The verdicts that pass a CI gate.
GOOD: Final = frozenset({CONFORMANT, BASELINED, DECLARED, NARROWED})

#: Requirement IDs drawn for catalogs: invariant 1's family, surface rules, and plain ones.
_IDS: Final = ("INV1", "INV1-2", "LOG-001", "LEDG-004", "APPR-005", "R-1", "R-2", "R-3", "R-4")
_SURFACES: Final = ("ledger", "host log", "approval request", "printed output", "MCP session")
_PATHS: Final = ("in-process", "driver", "mcp")


@st.composite
def _catalog(draw: st.DrawFn) -> list[RequirementInfo]:
    ids = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=6, unique=True))
    catalog = []
    for rid in ids:
        level = draw(st.sampled_from(("MUST", "MUST", "MUST", "SHOULD", "EITHER", "excluded")))
        scope = draw(st.sampled_from(("any-host", "any-host", "any-host", "mcp", "reference-only")))
        catalog.append(RequirementInfo(rid, level, "R0", f"rule {rid}", scope, reason="excluded"))
    return catalog


@st.composite
def _check(draw: st.DrawFn, index: int, cites: Sequence[str], ids: Sequence[str]) -> CheckResult:
    """One check record: mostly a pass, sometimes any outcome the plugin produces."""
    outcome = draw(
        st.sampled_from(
            (Outcome.PASS,) * 6 + (Outcome.FAIL, Outcome.SKIPPED, Outcome.ERROR, Outcome.FLAKY)
        )
    )
    requirements = tuple(dict.fromkeys(cites))
    check = CheckResult(
        f"checks/test_{index}.py::test_it[V-{index}]", requirements, (f"V-{index}",)
    )
    check.outcome = outcome
    perturb = draw(st.integers(0, 9))
    if outcome is Outcome.FAIL:
        check.failed = tuple(
            draw(st.lists(st.sampled_from(requirements), max_size=len(requirements), unique=True))
        )
        check.leak = draw(st.booleans())
        check.detail = "it broke"
    elif outcome is Outcome.FLAKY:
        check.attempts = 2
        check.leak = perturb == 0
        check.detail = "passed on a rerun"
    elif outcome is Outcome.SKIPPED:
        check.detail = draw(st.sampled_from(("no observe.log", NOT_APPLICABLE_PREFIX + "not here")))
    elif outcome is Outcome.ERROR:
        check.detail = "the host crashed"
        check.harness = perturb in (1, 2, 3)
    if outcome in (Outcome.PASS, Outcome.FLAKY):
        if perturb == 2:
            check.unchecked.append((draw(st.sampled_from(requirements)), "could not see it"))
        if perturb == 3:
            check.not_searched = (draw(st.sampled_from(_SURFACES)),)
        if perturb == 4:
            check.alternatives.append((draw(st.sampled_from(requirements)), "either one"))
        if perturb == 5:
            check.non_strict.append((draw(st.sampled_from(requirements)), "missed a should"))
    if perturb == 6 and ids:
        check.requirements += (draw(st.sampled_from(ids)),)
    return check


@st.composite
def _expectations(
    draw: st.DrawFn, checks: Sequence[CheckResult], ids: Sequence[str]
) -> Expectations | None:
    if not draw(st.booleans()):
        return None
    nodes = [check.nodeid.split("::")[-1] for check in checks] or ["test_none"]
    vectors = [vector for check in checks for vector in check.vectors] or ["V-0"]
    entry = st.one_of(
        st.builds(Entry, st.just("check"), st.sampled_from(nodes), st.just("known")),
        st.builds(Entry, st.just("vector"), st.sampled_from(vectors), st.just("known")),
        st.builds(Entry, st.just("requirement"), st.sampled_from(ids), st.just("known")),
    )
    return Expectations(
        "expectations.yaml",
        known=tuple(draw(st.lists(entry, max_size=3))),
        flaky=tuple(draw(st.lists(entry, max_size=3))),
        unchecked=tuple(
            Entry("requirement", rid, "declared")
            for rid in draw(st.lists(st.sampled_from(ids), max_size=2, unique=True))
        ),
    )


@st.composite
def runs(draw: st.DrawFn) -> Inputs:
    """Draw one run's kernel inputs, nearly conformant more often than not."""
    catalog = draw(_catalog())
    ids = [entry.id for entry in catalog]
    checks: list[CheckResult] = []
    for entry in catalog:
        for _ in range(draw(st.integers(0 if draw(st.integers(0, 7)) == 0 else 1, 2))):
            cites = [entry.id, *draw(st.lists(st.sampled_from(ids), max_size=2))]
            checks.append(draw(_check(len(checks), cites, ids)))
    narrowed = draw(st.sampled_from(((),) * 4 + (("-k model",), ("1 checks deselected",))))
    selection: tuple[str, ...] = ()
    if draw(st.integers(0, 5)) == 0:
        selection = tuple(draw(st.lists(st.sampled_from(ids), min_size=1, unique=True)))
    return Inputs(
        catalog=catalog,
        checks=checks,
        path=draw(st.sampled_from(_PATHS)),
        capabilities=draw(st.sampled_from(((), ("reference",)))),
        selection=selection,
        narrowed=narrowed,
        planned=None,
        stopped=draw(st.sampled_from((None,) * 6 + ("stopped after the first failure",))),
        problems=draw(st.sampled_from(((),) * 12 + (("the catalog could not be loaded",),))),
        expectations=draw(_expectations(checks, ids)),
    )


# --- what a check did, read from its original record ---------------------------------------------


def _judges(check: CheckResult, requirement: str) -> bool:
    """Whether ``check`` ran, held, and judged ``requirement`` on everything it depends on."""
    return (
        requirement in check.requirements
        and check.outcome in (Outcome.PASS, Outcome.FLAKY)
        and not check.leak
        and not any(rid == requirement for rid, _ in check.unchecked)
        and not blinded_by(requirement, check.not_searched)
    )


def _broke(check: CheckResult) -> bool:
    return check.outcome is Outcome.FAIL or (check.leak and check.outcome is Outcome.FLAKY)


def _known(inputs: Inputs, check: CheckResult) -> bool:
    """Whether a known-failure entry of the run's expectations matches ``check``, read as the
    failure it is (a leak that passed on a rerun is a failure)."""
    judged = check.copy()
    if _broke(check):
        judged.outcome = Outcome.FAIL
    return inputs.expectations is not None and any(
        entry.matches(judged) and entry.fails(judged) for entry in inputs.expectations.known
    )


# --- the properties ------------------------------------------------------------------------------


def check_properties(inputs: Inputs) -> Decision:
    """Assert every rule of the kernel against one run; return the decision."""
    originals = [check.copy() for check in inputs.checks]
    decision = decide(inputs)
    assert inputs.checks == originals, "the kernel changed its inputs"
    assert decision.exit_code == EXIT_CODES[decision.verdict]
    scopes = scopes_for(inputs.path, inputs.capabilities)
    musts = [entry for entry in inputs.catalog if entry.level == "MUST"]
    folded = {item.info.id: item for item in decision.requirements}

    # Conformant only if every MUST in scope was judged by an executed check on surfaces
    # searched whole, and nothing failed (decisions S1.1, S1.2, S1.3).
    if decision.verdict in (CONFORMANT, NARROWED):
        selected = inputs.selected()
        assert not inputs.problems
        assert not inputs.stopped
        assert not any(_broke(check) for check in inputs.checks)
        for entry in musts:
            if entry.scope not in scopes or entry.id not in selected:
                continue
            cited = [check for check in inputs.checks if entry.id in check.requirements]
            judged = any(_judges(check, entry.id) for check in cited)
            cannot_arise = bool(cited) and all(
                check.outcome is Outcome.SKIPPED
                and (check.detail or "").startswith(NOT_APPLICABLE_PREFIX)
                for check in cited
            )
            assert judged or cannot_arise, f"{entry.id} certified without a judging check"

    # No expectations entry turns a failure into a pass; only a known-failure entry gives at
    # best the baselined verdict (decisions S1.6).
    if any(_broke(check) for check in inputs.checks):
        assert decision.verdict not in (CONFORMANT, DECLARED, NARROWED), decision.verdict
    if decision.verdict == BASELINED:
        for check in inputs.checks:
            if _broke(check) or check.outcome is Outcome.ERROR:
                assert _known(inputs, check), f"{check.nodeid} forgiven by no known entry"

    # A requirement entry is an unexpected pass only where a check judged its requirement:
    # a check blind to it shows nothing about it (decisions S1.1).
    for label, _nodes in decision.applied.unexpected if decision.applied else ():
        kind, _, rid = label.partition(" ")
        if kind == "requirement":
            assert any(_judges(check, rid) for check in inputs.checks), f"{label} unjudged"

    # A narrowed or stopped run is never plainly conformant (decisions S1.7).
    if inputs.is_narrowed() or inputs.stopped:
        assert decision.verdict != CONFORMANT
        assert decision.line != CONFORMANT
    if inputs.stopped:
        assert decision.verdict not in GOOD

    # A harness problem is a harness error, whatever else.
    if inputs.problems or any(check.harness for check in inputs.checks):
        assert decision.verdict == HARNESS_ERROR

    for rid, item in folded.items():
        cited = [check for check in inputs.checks if rid in check.requirements]
        failing = [check for check in inputs.checks if rid in check.failed]
        # A requirement passes only if some check judged it and none failed it.
        if item.outcome == Outcome.PASS.value:
            assert any(_judges(check, rid) for check in cited), f"{rid} passed unjudged"
            assert not failing
            assert not any(_broke(check) for check in cited)
            assert not any(
                check.outcome is Outcome.SKIPPED
                and not (check.detail or "").startswith(NOT_APPLICABLE_PREFIX)
                for check in cited
            ), f"{rid} passed though a check of it was skipped"
        # A requirement one of whose checks failed or errored is never not-applicable (S1.12).
        if failing or any(check.outcome in (Outcome.FAIL, Outcome.ERROR) for check in cited):
            assert item.outcome != NOT_APPLICABLE, f"{rid} not applicable though its check failed"
        # Baselining marks only the requirements a baselined failure named (S1.4, S1.6).
        if item.outcome == BASELINED:
            assert failing
            assert all(_known(inputs, check) for check in failing)

    assert_renderers_agree(inputs, decision)
    return decision


def assert_renderers_agree(inputs: Inputs, decision: Decision) -> None:
    """Every report prints the kernel's verdict and exit code (decisions S1.11)."""
    run = RunData(
        host={
            "name": "h",
            "version": "1",
            "language": "x",
            "via": inputs.path,
            "capabilities": list(inputs.capabilities),
        },
        vectors_digest=None,
        checks=list(inputs.checks),
        catalog=list(inputs.catalog),
        hardening=[],
        problems=list(inputs.problems),
        started=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        duration_s=0.0,
        expectations=inputs.expectations,
        selection=tuple(inputs.selection),
        stopped=inputs.stopped,
        narrowed=tuple(inputs.narrowed),
        planned=inputs.planned,
    )
    report = build_report(run)
    assert (report["verdict"], report["exitCode"]) == (decision.verdict, decision.exit_code)
    assert report["verdictLine"] == decision.line
    terminal = summary_lines(report, canaries=[])
    # The terminal starts and ends with the verdict; no other line of it says one.
    said = f"verdict: {decision.line} (exit code {decision.exit_code})"
    assert terminal[0] == terminal[-1] == said
    assert [line for line in terminal if line.startswith("verdict:")] == [said, said]
    markdown = render_markdown(report)
    # The Markdown's first item is the verdict.
    first = next(line for line in markdown.splitlines() if line.startswith("- "))
    shown = re.fullmatch(r"- Verdict: \*\*(.*)\*\* \(exit code (\d)\)", first)
    assert shown is not None, first
    assert shown.group(1).replace("\\", "") == decision.line
    assert int(shown.group(2)) == decision.exit_code
    assert _junit_verdict(report) == (decision.exit_code != 0, decision.line)


def _junit_verdict(report: dict[str, Any]) -> tuple[bool, str]:
    """Return whether the JUnit verdict case failed, and its message, for ``report``."""
    cases = "".join(
        '<testcase classname="{}" name="{}" time="0"/>'.format(
            *(_attribute(part) for part in junit.case_key(check["id"]))
        )
        for check in report["checks"]
    )
    text = f'<testsuites><testsuite name="pytest" tests="0">{cases}</testsuite></testsuites>'
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "junit.xml"
        path.write_text(text, encoding="utf-8")
        junit.rewrite(path, report["checks"], report["verdictLine"], report["exitCode"])
        root = ElementTree.parse(path).getroot()  # noqa: S314 (the suite's own file)
    verdict = [case for case in root.iter("testcase") if case.get("name") == junit.VERDICT_CASE]
    assert len(verdict) == 1
    failure = verdict[0].find("failure")
    return failure is not None, report["verdictLine"] if failure is None else failure.get(
        "message", ""
    )


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


__all__ = ["GOOD", "INCOMPLETE", "NOT_CONFORMANT", "check_properties", "runs"]
