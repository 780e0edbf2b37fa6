"""The end-of-run barrier over late output (decisions S1.9), as one check the verdict judges.

This module owns when and how the barrier runs and what its answer becomes. The plugin keeps
every host under test it builds (:func:`keep`); when the run ends, before the report is built,
:func:`run` asks each host that keeps late output (:class:`~conformance.late.KeepsLateOutput`)
for its :class:`~conformance.late.LateReport`, once, over every canary the run minted, and
turns the answers into one synthetic check result, :data:`NODE_ID`. That result cites
:data:`~conformance.late.STDERR_REQUIREMENTS` (non-disclosure and the host log rule); it fails
with a leak when a required form of any canary was found, names each finding by label, form
and where, and marks its requirements unchecked when a stream was not searched whole, so the
verdict is never ``conformant`` over output nobody read. A parallel run's workers each search
their own host; the controller folds their answers into the one result (:func:`merged`). A host
that does not keep late output (the in-process host) adds nothing, and no result is made. It
never prints a value: findings carry labels only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

import pytest

from conformance.canary import Canary
from conformance.late import STDERR_REQUIREMENTS, KeepsLateOutput, LateReport
from conformance.outcomes import Outcome
from conformance.report import CheckResult

#: The node id of the barrier's check in every report.
NODE_ID: Final = "secref-conformance::late-output"

#: Findings a failing barrier names in its detail; the rest are counted.
SHOWN_FINDINGS: Final = 5

#: The hosts the plugin built for this session, in order.
HOSTS_KEY: Final = pytest.StashKey[list[object]]()


def keep(config: pytest.Config, host: object) -> None:
    """Remember ``host``, the session's host under test, for the barrier at the run's end."""
    config.stash.setdefault(HOSTS_KEY, []).append(host)


def search(hosts: Sequence[object], canaries: Sequence[Canary]) -> CheckResult | None:
    """Ask every host of ``hosts`` that keeps late output for its report; judge them together.

    Each host is asked once: it closes itself, drains its streams (bounded) and searches all it
    kept for every required form of ``canaries``. A host whose search raised is a stream not
    searched, never a clean one.

    Returns:
        The barrier's check result, or ``None`` when no host keeps late output.
    """
    keepers = [host for host in hosts if isinstance(host, KeepsLateOutput)]
    if not keepers:
        return None
    started = time.monotonic()
    report = LateReport()
    for host in keepers:
        try:
            report.extend(host.late_findings(canaries))
        except Exception as error:  # the barrier must still answer, and never as clean
            report.unsearched.append(("late output", f"its search failed ({type(error).__name__})"))
    return judged(report, time.monotonic() - started)


def judged(report: LateReport, seconds: float = 0.0) -> CheckResult:
    """Return the check result that ``report`` amounts to.

    Args:
        report: Every host's late report, together.
        seconds: What the search took.

    Returns:
        A failure with a leak when anything was found; the requirements unchecked when a
        stream was not searched whole (skipped, when nothing else judged them); else a pass.
    """
    failed = tuple(
        dict.fromkeys(rid for finding in report.findings for rid in finding.requirements)
    )
    requirements = tuple(dict.fromkeys((*STDERR_REQUIREMENTS, *failed)))
    result = CheckResult(NODE_ID, requirements, duration_s=seconds)
    result.sweeps = [
        {"call": "everything written after each check's sweep", "searched": list(report.searched)}
    ]
    result.not_searched = tuple(dict.fromkeys(stream for stream, _ in report.unsearched))
    reasons = [f"the {stream} was not searched whole: {why}" for stream, why in report.unsearched]
    result.unchecked = [(rid, reason) for reason in dict.fromkeys(reasons) for rid in requirements]
    if report.findings:
        result.outcome = Outcome.FAIL
        result.failed = failed or STDERR_REQUIREMENTS
        result.leak = True
        shown = "; ".join(finding.describe() for finding in report.findings[:SHOWN_FINDINGS])
        more = len(report.findings) - SHOWN_FINDINGS
        result.detail = f"value leaked in late output: {shown}" + (
            f" and {more} more" if more > 0 else ""
        )
    elif result.unchecked:
        result.outcome = Outcome.SKIPPED
        result.detail = "; ".join(dict.fromkeys(reasons))
    return result


def merged(results: Sequence[CheckResult]) -> CheckResult | None:
    """Fold the barrier results of a parallel run's workers into one, as a serial run has it.

    A failure anywhere fails it; a stream any worker could not search whole leaves its
    requirements unchecked; it passes only when every worker's did.
    """
    if not results:
        return None
    if len(results) == 1:
        return results[0]
    requirements = tuple(dict.fromkeys(rid for each in results for rid in each.requirements))
    result = CheckResult(NODE_ID, requirements)
    result.duration_s = max(each.duration_s for each in results)
    result.sweeps = [sweep for each in results for sweep in each.sweeps]
    result.not_searched = tuple(dict.fromkeys(s for each in results for s in each.not_searched))
    result.unchecked = list(dict.fromkeys(pair for each in results for pair in each.unchecked))
    failing = [each for each in results if each.outcome is Outcome.FAIL]
    if failing:
        result.outcome = Outcome.FAIL
        result.failed = tuple(dict.fromkeys(rid for each in failing for rid in each.failed))
        result.leak = any(each.leak for each in failing)
        result.detail = "; ".join(str(each.detail) for each in failing)
    elif result.unchecked:
        result.outcome = Outcome.SKIPPED
        result.detail = "; ".join(dict.fromkeys(reason for _, reason in result.unchecked))
    return result


def run(config: pytest.Config, results: dict[str, CheckResult], canaries: Sequence[Canary]) -> None:
    """Run the barrier over the session's hosts; put its result, if any, in ``results``."""
    hosts: list[object] = config.stash.get(HOSTS_KEY, [])
    result = search(hosts, canaries)
    if result is not None:
        results[NODE_ID] = result
