"""The suite's reports: the terminal summary, the JSON report and the Markdown report.

This module owns rendering what the verdict kernel (:mod:`conformance.kernel`) decided about a
run: the JSON report, described by ``conformance/schemas/report.schema.json``, with the run's
facts beside the kernel's answer; the Markdown report; and the terminal summary, one row per
requirement. It computes no outcome and no verdict of its own: each view prints the kernel's
verdict, exit code and verdict line (decisions S1.11). Everything it writes comes from check
records, which hold labels, IDs and static text only; it must never be handed a value.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance import __version__
from conformance.canary import Canary, Guarded, issued_canaries, redact_runs, run_window_index
from conformance.expectations import summary as expectations_summary
from conformance.inert import escape_controls, map_strings, markdown_code, markdown_text
from conformance.kernel import (
    BASELINED,
    CONFORMANT,
    COUNT_KEYS,
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
    Outcome,
    RequirementInfo,
    RequirementResult,
    decide,
    requirement_outcomes,
    run_scopes,
    unchecked_musts,
    verdict_line,
)
from conformance.outcomes import HardeningRow

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
    "unchecked_musts",
    "verdict_text",
    "write_json",
    "write_markdown",
]

#: The report format this module writes.
REPORT_FORMAT: Final = "secref-conformance-report/1"

#: Outcome order for the summary, worst first.
_SEVERITY: Final = (
    Outcome.FAIL.value,
    Outcome.UNEXPECTED_PASS.value,
    Outcome.ERROR.value,
    BASELINED,
    Outcome.BASELINED.value,
    Outcome.FLAKY.value,
    Outcome.NON_STRICT.value,
    Outcome.ACCEPTED.value,
    UNCHECKED,
    Outcome.SKIPPED.value,
    Outcome.PASS.value,
    NOT_APPLICABLE,
    NOT_CHECKED,
    NOT_SELECTED,
    EXCLUDED,
)


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

    def is_narrowed(self) -> bool:
        """Return whether the run covered less than the whole catalog (decisions S1.7)."""
        return self.inputs().is_narrowed()

    def selected(self) -> frozenset[str]:
        """Return the requirement IDs the run set out to check (decisions S1.7)."""
        return self.inputs().selected()

    def requirements(self) -> list[RequirementResult]:
        """Return one result per requirement of the catalog."""
        return self.decide().requirements

    def verdict(self) -> str:
        """Return the run's verdict."""
        return self.decide().verdict


def verdict_text(report: Mapping[str, Any]) -> str:
    """Return the verdict line the kernel wrote into ``report``.

    A report saved before the line was stored has it rebuilt from the same fields, by the
    kernel's own :func:`~conformance.kernel.verdict_line`.
    """
    line = report.get("verdictLine")
    if isinstance(line, str):
        return line
    return verdict_line(
        str(report["verdict"]),
        declared=len(report.get("unchecked", {}).get("declared", ())),
        selection=report.get("selection") or (),
        narrowed=report.get("narrowed") or (),
        stopped=report.get("stopped"),
    )


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


def write_json(
    report: Mapping[str, Any], path: str | Path, canaries: Sequence[Canary] | None = None
) -> None:
    """Write the JSON report to ``path``, creating its directory.

    It is written redacted (:func:`redacted`) and ASCII-only, so that no control or
    bidirectional character the host sent reaches a terminal that shows the file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(redacted(report, canaries), indent=2, ensure_ascii=True)
    target.write_text(text + "\n", encoding="utf-8")


def _cell(text: object) -> str:
    """Host or suite text for Markdown running text or a table cell, made inert."""
    return markdown_text(str(text))


def render_markdown(report: Mapping[str, Any]) -> str:
    """Return the Markdown report of a JSON report.

    Every text is escaped where it is written (:mod:`conformance.inert`): none can add a line,
    a tag, an HTML comment or a verdict.
    """
    host = report["host"]
    capabilities = host.get("capabilities") or []
    lines = [
        "# Conformance report",
        "",
        f"- Verdict: **{_cell(verdict_text(report))}** (exit code {int(report['exitCode'])})",
        f"- Host: {_cell(host.get('name'))} {_cell(host.get('version'))} "
        f"({_cell(host.get('language'))})",
        "- Capabilities: " + (", ".join(_cell(item) for item in capabilities) or "none"),
        f"- Suite: {_cell(report['suite']['name'])} {_cell(report['suite']['version'])}",
        f"- Vectors digest: {markdown_code(str(report['vectorsDigest']))}",
        f"- Started: {_cell(report['started'])}, took {report['durationS']} s",
        "",
    ]
    if report["problems"]:
        lines += ["## Harness problems", ""]
        lines += [f"- {_cell(problem)}" for problem in report["problems"]]
        lines.append("")
    lines += _unchecked_section(report)
    counts = report["summary"]["requirements"]
    lines += [
        "## Requirements",
        "",
        "Outcomes: " + ", ".join(f"{name} {counts[name]}" for name in _SEVERITY if name in counts),
        "",
        "Checks counts each requirement's checks as passed, failed, errored, skipped, and run "
        "without being able to judge it (unchecked).",
        "",
        "| ID | Level | Outcome | Checks (pass/fail/error/skipped/unchecked) | Note |",
        "|---|---|---|---|---|",
    ]
    for item in report["requirements"]:
        note = ", ".join(item["alternatives"]) or "; ".join(item["details"][:2])
        lines.append(
            f"| {_cell(item['id'])} | {_cell(item['level'])} | {_cell(item['outcome'])} "
            f"| {_count_cell(item)} | {_cell(note)} |"
        )
    shown = ("fail", "error", "unexpected-pass", "baselined", "flaky")
    failing = [check for check in report["checks"] if check["outcome"] in shown]
    if failing:
        lines += ["", "## Failing checks", "", "| Check | Outcome | Requirements | Detail |"]
        lines.append("|---|---|---|---|")
        for check in failing:
            lines.append(
                f"| {markdown_code(check['id'])} | {_cell(check['outcome'])} | "
                f"{_cell(', '.join(check['failedRequirements']))} "
                f"| {_cell(check['detail'] or '')} |"
            )
    applied = report.get("expectations")
    if applied:
        lines += ["", "## Expectations", ""]
        lines += [f"- {_cell(line)}" for line in expectations_summary(applied)]
        lines += [f"- unused entry: {_cell(entry)}" for entry in applied["unused"]]
    lines += ["", "## Hardening (decisions R5.6: reported, never a failure)", ""]
    if report["hardening"]:
        lines += ["| Form | Surface | Scrubbed | Kept |", "|---|---|---|---|"]
        for row in report["hardening"]:
            lines.append(
                f"| {_cell(row['form'])} | {_cell(row['surface'])} | {int(row['scrubbed'])} "
                f"| {int(row['kept'])} |"
            )
    else:
        lines.append("No hardening form was looked for in this run.")
    return "\n".join(lines) + "\n"


def _count_cell(item: Mapping[str, Any]) -> str:
    counts = item.get("counts") or {}
    return "/".join(str(counts.get(key, 0)) for key in COUNT_KEYS)


def unchecked_lines(report: Mapping[str, Any]) -> list[str]:
    """Return one line per unchecked MUST, undeclared first, each with why (decisions S1.2)."""
    unchecked = report.get("unchecked") or {}
    lines = [
        f"unchecked MUST {item['id']}: {'; '.join(item['reasons'][:3])}"
        for item in unchecked.get("undeclared", ())
    ]
    lines += [
        f"unchecked MUST {item['id']} (declared: {item['declaration']}): "
        f"{'; '.join(item['reasons'][:3])}"
        for item in unchecked.get("declared", ())
    ]
    return lines


def _unchecked_section(report: Mapping[str, Any]) -> list[str]:
    lines = unchecked_lines(report)
    if not lines:
        return []
    return [
        "## Unchecked MUSTs",
        "",
        "The suite could not see what these requirements need, so it certifies none of them "
        "(decisions S1.2).",
        "",
        *[f"- {_cell(line)}" for line in lines],
        "",
    ]


def write_markdown(
    report: Mapping[str, Any], path: str | Path, canaries: Sequence[Canary] | None = None
) -> None:
    """Write the Markdown report to ``path``, creating its directory (redacted as
    :func:`write_json` is)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_markdown(redacted(report, canaries)), encoding="utf-8")


def summary_lines(report: Mapping[str, Any], canaries: Sequence[Canary] | None = None) -> list[str]:
    """Return the terminal summary: one row per requirement, then the verdict.

    Each line is redacted and has its control characters shown as escapes, so host text cannot
    move the cursor, recolour the terminal or start a line of its own.
    """
    report = redacted(report, canaries)
    rows = [
        (
            item["id"],
            item["level"],
            item["outcome"],
            _count_cell(item),
            ", ".join(item["alternatives"]),
        )
        for item in report["requirements"]
    ]
    lines = [
        "p/f/e/s/u counts the checks citing a requirement that passed, failed, errored, were "
        "skipped, and ran without being able to judge it",
        f"{'requirement':<12} {'level':<8} {'outcome':<21} {'p/f/e/s/u':<10} note",
    ]
    lines += [
        f"{rid:<12} {level:<8} {outcome:<21} {counts:<10} {note}".rstrip()
        for rid, level, outcome, counts, note in rows
    ]
    counts = report["summary"]["requirements"]
    lines.append(
        "requirements: "
        + ", ".join(f"{counts[name]} {name}" for name in _SEVERITY if name in counts)
    )
    checks = report["summary"]["checks"]
    lines.append(
        "checks: " + ", ".join(f"{count} {name}" for name, count in sorted(checks.items()))
    )
    kept = sum(row["kept"] for row in report["hardening"])
    lines.append(f"hardening: {len(report['hardening'])} rows, {kept} forms kept (never a failure)")
    if report.get("expectations"):
        lines.extend(expectations_summary(report["expectations"]))
    for problem in report["problems"]:
        lines.append(f"harness problem: {problem}")
    lines.extend(unchecked_lines(report))
    lines.append(f"verdict: {verdict_text(report)} (exit code {report['exitCode']})")
    return [escape_controls(line) for line in lines]
