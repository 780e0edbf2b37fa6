"""The suite's reports: the terminal summary, the JSON report and the Markdown report.

This module owns rendering what the verdict kernel (:mod:`conformance.kernel`) decided about a
run: the JSON report, described by ``conformance/schemas/report.schema.json``, with the run's
facts beside the kernel's answer; the Markdown report; and the terminal summary, both laid out
by :mod:`conformance.report_views` (verdict first, then what needs attention, then the rest);
and the redaction every written or printed report passes through. It computes no outcome and
no verdict of its own: each view prints the kernel's verdict, exit code and verdict line
(decisions S1.11). Everything it writes comes from check records, which hold labels, IDs and
static text only; it must never be handed a value.
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance import __version__, report_views
from conformance.canary import Canary, Guarded, issued_canaries, redact_runs, run_window_index
from conformance.inert import map_strings
from conformance.kernel import (
    BASELINED,
    CONFORMANT,
    DECLARED,
    EXCLUDED,
    EXIT_CODES,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_CHECKED,
    NOT_CONFORMANT,
    NOT_SELECTED,
    UNCHECKED,
    CheckResult,
    Decision,
    Expectations,
    Inputs,
    RequirementInfo,
    RequirementResult,
    decide,
    requirement_outcomes,
    run_scopes,
    unchecked_musts,
)
from conformance.outcomes import HardeningRow
from conformance.report_views import unchecked_lines, verdict_text

__all__ = [
    "BASELINED",
    "CONFORMANT",
    "DECLARED",
    "EXCLUDED",
    "EXIT_CODES",
    "HARNESS_ERROR",
    "INCOMPLETE",
    "NARROWED",
    "NOT_APPLICABLE",
    "NOT_CHECKED",
    "NOT_CONFORMANT",
    "NOT_SELECTED",
    "REPORT_FORMAT",
    "UNCHECKED",
    "CheckResult",
    "RequirementInfo",
    "RequirementResult",
    "RunData",
    "build_report",
    "render_markdown",
    "report_schema",
    "requirement_outcomes",
    "run_scopes",
    "summary_lines",
    "summary_rows",
    "unchecked_lines",
    "unchecked_musts",
    "verdict_text",
    "write_json",
    "write_markdown",
]

#: The report format this module writes.
REPORT_FORMAT: Final = "secref-conformance-report/1"


def hardening_table(rows: Iterable[HardeningRow]) -> list[dict[str, Any]]:
    """Aggregate hardening rows into one entry per (form, surface)."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        entry = table.setdefault(
            (row.form, row.surface),
            {"form": row.form, "surface": row.surface, "scrubbed": 0, "kept": 0, "checks": []},
        )
        entry["scrubbed" if row.scrubbed else "kept"] += 1
        if row.check not in entry["checks"]:
            entry["checks"].append(row.check)
    return [table[key] for key in sorted(table)]


@dataclass(slots=True)
class RunData:
    """Everything a report holds about one run: the kernel's inputs and the run's facts."""

    host: Mapping[str, Any]
    vectors_digest: str | None
    checks: list[CheckResult]
    catalog: list[RequirementInfo]
    hardening: list[HardeningRow]
    problems: list[str]
    started: datetime.datetime
    duration_s: float
    expectations: Expectations | None = None
    """The host's expectations file; the kernel applies it to copies of the checks."""
    selection: tuple[str, ...] = ()
    stopped: str | None = None
    """Why the run ended before its last check (``-x``, ``--stop-when-decided``), if it did."""
    narrowed: tuple[str, ...] = ()
    """How pytest's own options narrowed the run (:mod:`conformance.narrowing`)."""
    planned: frozenset[str] | None = None
    """The requirement IDs the collected checks cite; ``None`` when not known (a parallel
    run's controller collects nothing)."""

    def inputs(self) -> Inputs:
        """Return the verdict kernel's inputs for this run."""
        return Inputs(
            catalog=self.catalog,
            checks=self.checks,
            path=str(self.host.get("via") or ""),
            capabilities=tuple(self.host.get("capabilities") or ()),
            selection=self.selection,
            narrowed=self.narrowed,
            planned=self.planned,
            stopped=self.stopped,
            problems=tuple(self.problems),
            expectations=self.expectations,
        )

    def decide(self) -> Decision:
        """Return what the verdict kernel decided about this run."""
        return decide(self.inputs())

    def verdict(self) -> str:
        """Return the run's verdict."""
        return self.decide().verdict


def build_report(run: RunData) -> dict[str, Any]:
    """Return the JSON report of ``run`` (schema ``report.schema.json``): what the verdict
    kernel decided, with the run's facts beside it."""
    decision = run.decide()
    requirements = decision.requirements
    checks = decision.checks
    return {
        "format": REPORT_FORMAT,
        "suite": {"name": "secref-conformance", "version": __version__},
        "vectorsDigest": run.vectors_digest,
        "host": dict(run.host),
        "started": run.started.isoformat(),
        "durationS": round(run.duration_s, 3),
        "verdict": decision.verdict,
        "verdictLine": decision.line,
        "exitCode": decision.exit_code,
        "problems": list(run.problems),
        "selection": list(run.selection),
        "narrowed": list(run.narrowed),
        "stopped": run.stopped,
        "unchecked": {
            "undeclared": [
                {"id": item.info.id, "reasons": item.details} for item in decision.undeclared
            ],
            "declared": [
                {"id": item.info.id, "reasons": item.details, "declaration": reason}
                for item, reason in decision.declared
            ],
        },
        "summary": {
            "requirements": dict(Counter(item.outcome for item in requirements)),
            "checks": dict(Counter(check.outcome.value for check in checks)),
        },
        "requirements": [
            {
                "id": item.info.id,
                "level": item.info.level,
                "section": item.info.section,
                "scope": item.info.scope,
                "title": item.info.title,
                "statement": item.info.statement,
                "outcome": item.outcome,
                "alternatives": item.alternatives,
                "checks": item.checks,
                "counts": item.counts,
                "details": item.details,
            }
            for item in requirements
        ],
        "checks": [
            {
                "id": check.nodeid,
                "requirements": list(check.requirements),
                "vectors": list(check.vectors),
                "outcome": check.outcome.value,
                "failedRequirements": list(check.failed),
                "nonStrict": [
                    {"requirement": req, "detail": detail} for req, detail in check.non_strict
                ],
                "alternatives": [
                    {"requirement": req, "alternative": alt} for req, alt in check.alternatives
                ],
                "detail": check.detail,
                "unchecked": [
                    {"requirement": req, "reason": reason} for req, reason in check.unchecked
                ],
                "reads": list(check.reads),
                "sweptOnly": list(check.swept_only),
                "leakedOn": list(check.leaked_on),
                "leak": check.leak,
                "harnessError": check.harness,
                "attempts": check.attempts,
                "sweep": {"calls": check.sweeps, "notSearched": list(check.not_searched)},
                "durationS": round(check.duration_s, 4),
            }
            for check in checks
        ],
        "hardening": hardening_table(run.hardening),
        "expectations": None if decision.applied is None else decision.applied.to_report(),
    }


def report_schema() -> dict[str, Any]:
    """Return the JSON Schema of the JSON report."""
    text = (
        resources.files("conformance")
        .joinpath("schemas", "report.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def redacted(report: Mapping[str, Any], canaries: Sequence[Canary] | None = None) -> dict[str, Any]:
    """Return a copy of ``report`` holding no run of 8 or more characters of any canary.

    Every canary given (by default, every canary minted in this process) is looked for in every
    string, whole or in part, as a last line of defence: the checks redact their own text
    already. A run passes its own canaries, so a process that runs the suite many times (the
    self-test) does not look for every earlier run's canaries in each new report.
    """
    canaries = issued_canaries() if canaries is None else canaries
    if not canaries:
        return dict(report)
    # Every run of a value's forms is a window of the index, whole forms included, so one
    # linear pass per string is enough.
    index = run_window_index(tuple(Guarded(canary.label, canary.value) for canary in canaries))
    changed: dict[str, Any] = map_strings(dict(report), lambda text: redact_runs(text, index))
    return changed


#: The last JSON report this process wrote: its resolved path and its text, what the command
#: line reads its own run's verdict from (:func:`written_here`). One only: a process that runs
#: the suite hundreds of times (the self-test, the unit tests) must not keep every report.
_WRITTEN: list[tuple[Path, str]] = []


def _replace(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` whole or not at all: a reader never sees half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}"
    # Created as an ordinary file is (the umask applies), never over an existing one.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json(
    report: Mapping[str, Any], path: str | Path, canaries: Sequence[Canary] | None = None
) -> None:
    """Write the JSON report to ``path``, creating its directory, whole or not at all.

    It is written redacted (:func:`redacted`) and ASCII-only, so that no control or
    bidirectional character the host sent reaches a terminal that shows the file.
    """
    target = Path(path)
    text = json.dumps(redacted(report, canaries), indent=2, ensure_ascii=True) + "\n"
    _replace(target, text)
    _WRITTEN[:] = [(target.resolve(), text)]


def written_here(path: str | Path) -> str | None:
    """Return the JSON text this process wrote last, if it went to ``path``, else ``None``:
    another run writing the same path meanwhile cannot change what this run decided."""
    if not _WRITTEN or _WRITTEN[0][0] != Path(path).resolve():
        return None
    return _WRITTEN[0][1]


def render_markdown(report: Mapping[str, Any]) -> str:
    """Return the Markdown report of a JSON report, verdict first
    (:func:`conformance.report_views.markdown`)."""
    return report_views.markdown(report)


def write_markdown(
    report: Mapping[str, Any], path: str | Path, canaries: Sequence[Canary] | None = None
) -> None:
    """Write the Markdown report to ``path``, creating its directory (redacted as
    :func:`write_json` is)."""
    _replace(Path(path), render_markdown(redacted(report, canaries)))


def summary_rows(
    report: Mapping[str, Any], canaries: Sequence[Canary] | None = None
) -> list[report_views.Line]:
    """Return the terminal summary, verdict first and last, each line with its colour.

    Each line is redacted and has its control characters shown as escapes, so host text cannot
    move the cursor, recolour the terminal or start a line of its own.
    """
    return report_views.terminal_lines(redacted(report, canaries))


def summary_lines(report: Mapping[str, Any], canaries: Sequence[Canary] | None = None) -> list[str]:
    """Return the terminal summary's lines, without colour (:func:`summary_rows`)."""
    return [line.text for line in summary_rows(report, canaries)]
