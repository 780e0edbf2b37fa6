"""The self-test's proof that hidden capabilities never turn into passes (decisions S1.1 to S1.3).

This module owns the capability-stripping tables of ``secref-conformance selftest``. The first
runs the whole suite against the reference driver once per capability, with that capability
stripped by :mod:`conformance.strip`, and holds each run to three rules: the verdict is never
conformant; no check that used the stripped capability passed or failed; and every requirement
a check judges by a surface the sweep could not search is reported unchecked by it. The second
reruns every mutant that can run behind the driver, once per capability its catch used, with
that capability stripped: the verdict must never be conformant. It prints one row per run and
never a value. It takes a mutant's command from :mod:`conformance.selftest.hosts`; it must never
import :mod:`conformance.selftest.runner`, which imports it, nor :mod:`conformance.cli`.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from conformance.canary import SURFACE_CAPABILITIES, surfaces_judged_by
from conformance.selftest import pool
from conformance.selftest.hosts import driver_command

#: Verdicts that certify a host.
CERTIFYING: Final = frozenset(
    {"conformant", "conformant (declared unchecked)", "conformant (narrowed)"}
)

#: Check outcomes that judged something: forbidden for a check that used a stripped capability.
JUDGING: Final = frozenset(
    {"pass", "fail", "non-strict", "accepted-alternative", "baselined", "unexpected-pass"}
)

#: Check outcomes that passed the requirements they judged.
PASSING: Final = frozenset({"pass", "non-strict", "accepted-alternative"})

#: ``reference`` says which host this is rather than what the suite may see: stripping it makes
#: the reference host's own rules not applicable, and a conformant verdict is then right.
IDENTITY: Final = frozenset({"reference"})

#: Runs the suite with the given arguments and returns its JSON report (or ``None``).
SuiteRunner = Callable[[Sequence[str]], "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class StripRow:
    """One stripped run and what the rules found.

    Attributes:
        label: What was run: a capability, or a mutant and a capability.
        verdict: The run's verdict.
        users: How many checks used the stripped capability.
        judged: How many of those passed or failed anyway (must be 0).
        leaked: Requirements judged by an unsearched surface yet not reported unchecked.
        unchecked: How many MUSTs the run left unchecked.
        seconds: How long the run took.
        stopped: Whether the run ended once its verdict was decided, before its last check.
    """

    label: str
    verdict: str
    users: int
    judged: int
    leaked: int
    unchecked: int
    seconds: float
    stopped: bool = False

    @property
    def holds(self) -> bool:
        """Whether the run obeyed every rule."""
        return self.verdict not in CERTIFYING and not self.judged and not self.leaked


def stripped_command(capabilities: Iterable[str], adapter: str) -> str:
    """Return the ``--host`` command that runs ``adapter`` with ``capabilities`` stripped."""
    hidden = ",".join(capabilities)
    return f"{shlex.quote(sys.executable)} -m conformance.strip {shlex.quote(hidden)} -- {adapter}"


def judge(
    label: str, capability: str, report: Mapping[str, Any] | None, seconds: float
) -> StripRow:
    """Hold one stripped run's report to the rules."""
    if report is None:
        return StripRow(label, "no report", 0, 0, 0, 0, seconds)
    surfaces = {
        surface.value for surface, needed in SURFACE_CAPABILITIES.items() if needed == capability
    }
    users = [check for check in report["checks"] if capability in check.get("reads", ())]
    # A leak the sweep found on a surface it did read fails a check whatever else it used.
    judged = [
        check for check in users if check["outcome"] in JUDGING and not check.get("leak", False)
    ]
    leaked = 0
    for check in report["checks"]:
        if check["outcome"] not in PASSING:
            continue
        unseen = set(check.get("sweep", {}).get("notSearched", ())) & surfaces
        if not unseen:
            continue
        unchecked = {item["requirement"] for item in check.get("unchecked", ())}
        for requirement in check["requirements"]:
            needs = {surface.value for surface in surfaces_judged_by(requirement)}
            if needs & unseen and requirement not in unchecked:
                leaked += 1
    missing = report.get("unchecked", {})
    count = len(missing.get("undeclared", ())) + len(missing.get("declared", ()))
    stopped = bool(report.get("stopped"))
    return StripRow(
        label, report["verdict"], len(users), len(judged), leaked, count, seconds, stopped
    )


#: Leaves the generated grammar corpus out of a stripped run: the same checks over the same
#: surfaces as the hand-written vectors, a thousand times over, which a quick table skips.
CORE_ONLY: Final = ("-k", "not gen-")


#: The model check's name: a mutant's stripped reruns leave it out unless it was among the
#: checks that caught the mutant (:func:`mutant_table`).
MODEL_CHECK: Final = "test_model"


def is_model_check(check_id: str) -> bool:
    """Return whether the check with this report id is the model check."""
    return check_id.rpartition("::")[2] == MODEL_CHECK


def deselection(core: bool, modelled: bool) -> tuple[str, ...]:
    """Return the ``-k`` arguments of a mutant's stripped rerun: the generated corpus left out
    when a hand-written check caught the mutant (``core``), the model check when it was not
    among the checks that did (``modelled``); nothing when neither is left out."""
    left_out = [CORE_ONLY[1]] if core else []
    if not modelled:
        left_out.append(f"not {MODEL_CHECK}")
    return ("-k", " and ".join(left_out)) if left_out else ()


#: What every stripped run passes: it ends at its first unchecked MUST or failure, since either
#: already means "not conformant" (the rows count these stops).
DECIDED: Final = ("--stop-when-decided",)


def capability_table(
    adapter: str,
    capabilities: Sequence[str],
    run_suite: SuiteRunner,
    out: Callable[[str], None] = print,
    extra: Sequence[str] = CORE_ONLY,
    workers: int = 1,
) -> list[StripRow]:
    """Run the suite against ``adapter`` once per capability stripped, printing a table.

    Args:
        adapter: The adapter command.
        capabilities: What the adapter announces.
        run_suite: Runs the suite in this process and returns its report.
        out: Where lines go.
        extra: Further pytest arguments for each run (by default, the hand-written corpus only).
        workers: How many runs go side by side (:mod:`conformance.selftest.pool`).

    Returns:
        One row per capability, identity capabilities left out.
    """
    out(
        f"{'stripped capability':<26} {'verdict':<16} {'users':>5} {'judged':>6} "
        f"{'unseen':>6} {'unchecked MUSTs':>15}  rule"
    )
    chosen = [capability for capability in capabilities if capability not in IDENTITY]
    runs = [
        ["--host", stripped_command([capability], adapter), *DECIDED, *extra]
        for capability in chosen
    ]
    rows: list[StripRow] = []
    for capability, (report, seconds) in zip(
        chosen, pool.run_all(run_suite, runs, workers), strict=True
    ):
        row = judge(capability, capability, report, seconds)
        rows.append(row)
        out(_line(row))
    return rows


def mutant_table(
    cases: Iterable[tuple[str, str, Sequence[str], bool, Sequence[str], bool]],
    run_suite: SuiteRunner,
    out: Callable[[str], None] = print,
    workers: int = 1,
) -> list[StripRow]:
    """Rerun each mutant once per capability its catch used, with that capability stripped.

    Each run stops once its verdict is decided (a failure or an unchecked MUST already means
    "not conformant"), leaves the generated corpus out when a hand-written check caught the
    mutant, and leaves the model check out when it was not among the checks that caught it.
    The model check cites most requirements and draws its whole verdict budget wherever it
    runs, so in a rerun narrowed to one requirement it would be most of the run's time, for a
    catch it did not make; how it meets each stripped capability is what
    :func:`capability_table` runs, with every check of the suite.

    Args:
        cases: (mutant name, its requirement, the capabilities its failing checks used, whether
            a hand-written check caught it, and the path arguments its catch ran with, such as
            ``--via mcp`` for a mutant of the MCP layer: a stripped run that took another path
            would never meet the mutant and would certify it, and whether the model check was
            among the checks that caught it).
        run_suite: Runs the suite in this process and returns its report.
        out: Where lines go.
        workers: How many runs go side by side (:mod:`conformance.selftest.pool`).

    Returns:
        One row per mutant and capability.
    """
    labels: list[tuple[str, str]] = []
    runs: list[list[str]] = []
    for name, requirement, used, core, path, modelled in cases:
        narrowed = ["--requirements", requirement, *DECIDED, *path, *deselection(core, modelled)]
        for capability in used:
            if capability in IDENTITY:
                continue
            command = stripped_command([capability], driver_command(name))
            labels.append((f"{name} - {capability}", capability))
            runs.append(["--host", command, *narrowed])
    rows: list[StripRow] = []
    for (label, capability), (report, seconds) in zip(
        labels, pool.run_all(run_suite, runs, workers), strict=True
    ):
        row = judge(label, capability, report, seconds)
        rows.append(row)
        out(_line(row))
    return rows


#: How a row says its run ended early: a stop is a decided verdict, never a pass.
STOPPED_NOTE: Final = ", stopped once decided"


def _line(row: StripRow) -> str:
    rule = "never conformant" if row.holds else "BROKEN"
    return (
        f"{row.label:<26} {row.verdict:<16} {row.users:>5} {row.judged:>6} {row.leaked:>6} "
        f"{row.unchecked:>15}  {rule} ({row.seconds:.1f} s{STOPPED_NOTE if row.stopped else ''})"
    )
