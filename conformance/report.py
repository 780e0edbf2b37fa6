"""The suite's results: per-check and per-requirement outcomes, and the reports built from them.

This module owns the data a run produces (each check's outcome, the requirement IDs it cites,
the vectors it ran, what it found) and the three views of it: the terminal summary, one row per
requirement; the JSON report, described by ``conformance/schemas/report.schema.json``; and the
Markdown report. It also owns the verdict and its exit code: 0 conformant, 1 not conformant,
2 harness error. Everything it writes comes from check records, which hold labels, IDs and
static text only; it must never be handed a value.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance import __version__
from conformance.canary import Detector, Guarded, issued_canaries, redact_runs
from conformance.expectations import requirement_outcome
from conformance.expectations import summary as expectations_summary
from conformance.inert import escape_controls, map_strings, markdown_code, markdown_text
from conformance.outcomes import HardeningRow, Outcome

#: The report format this module writes.
REPORT_FORMAT: Final = "secref-conformance-report/1"

#: The verdicts of a run and their exit codes.
CONFORMANT: Final = "conformant"
NOT_CONFORMANT: Final = "not-conformant"
HARNESS_ERROR: Final = "harness-error"
#: Every failure is a known failure of the host's expectations file: the run passes, and the
#: report shows each MUST failed as non-conformant (baselined).
BASELINED: Final = "non-conformant (baselined)"
EXIT_CODES: Final = {CONFORMANT: 0, BASELINED: 0, NOT_CONFORMANT: 1, HARNESS_ERROR: 2}

#: A requirement no collected check cites (a SHOULD or EITHER without a check, or one left out
#: by a selection).
NOT_CHECKED: Final = "not-checked"
#: A requirement the design excludes; reported with its reason, never checked.
EXCLUDED: Final = "excluded"

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
    Outcome.SKIPPED.value,
    Outcome.PASS.value,
    NOT_CHECKED,
    EXCLUDED,
)


@dataclass(frozen=True, slots=True)
class RequirementInfo:
    """What a report needs to know of one catalog entry."""

    id: str
    level: str
    section: str
    statement: str
    scope: str = "any-host"
    alternatives: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(slots=True)
class CheckResult:
    """One check's outcome.

    Attributes:
        nodeid: The pytest node id, which carries vector IDs as parameter ids.
        requirements: The requirement IDs the check cites.
        vectors: The vector IDs it ran.
        outcome: Its outcome.
        failed: The requirement IDs a failure names.
        non_strict: (requirement, detail) for each SHOULD the host missed.
        alternatives: (requirement, alternative) for each EITHER choice seen.
        detail: Why it failed, errored or was skipped; static text and labels only.
        duration_s: Seconds the check took.
    """

    nodeid: str
    requirements: tuple[str, ...]
    vectors: tuple[str, ...] = ()
    outcome: Outcome = Outcome.PASS
    failed: tuple[str, ...] = ()
    non_strict: list[tuple[str, str]] = field(default_factory=list)
    alternatives: list[tuple[str, str]] = field(default_factory=list)
    detail: str | None = None
    duration_s: float = 0.0

    @property
    def executed(self) -> bool:
        """Whether the check's body ran to a verdict (not skipped, not a harness error)."""
        return self.outcome not in (Outcome.SKIPPED, Outcome.ERROR)


@dataclass(slots=True)
class RequirementResult:
    """One requirement's outcome over every check that cites it."""

    info: RequirementInfo
    outcome: str
    checks: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


def requirement_outcomes(
    catalog: Sequence[RequirementInfo], checks: Iterable[CheckResult]
) -> list[RequirementResult]:
    """Fold the checks' outcomes into one outcome per requirement.

    A requirement fails when a failing check names it (a SHOULD is then non-strict); it errors
    when a check citing it errored; it is non-strict or an accepted alternative when a check
    recorded so; it passes when a check citing it ran; it is skipped when every check citing it
    was skipped, and not checked when none cites it.

    Args:
        catalog: Every requirement, in catalog order.
        checks: Every check result of the run.

    Returns:
        One result per requirement, in catalog order.
    """
    by_requirement: dict[str, list[CheckResult]] = {entry.id: [] for entry in catalog}
    for check in checks:
        noted = [rid for rid, _ in (*check.non_strict, *check.alternatives)]
        for requirement in dict.fromkeys((*check.requirements, *check.failed, *noted)):
            by_requirement.setdefault(requirement, []).append(check)
    results: list[RequirementResult] = []
    for entry in catalog:
        cited = by_requirement.get(entry.id, [])
        result = RequirementResult(entry, NOT_CHECKED, [check.nodeid for check in cited])
        if entry.level == EXCLUDED:
            result.outcome = EXCLUDED
            if entry.reason:
                result.details.append(entry.reason)
            results.append(result)
            continue
        failed = [check for check in cited if entry.id in check.failed]
        non_strict = [
            detail for check in cited for req, detail in check.non_strict if req == entry.id
        ]
        chosen = list(
            dict.fromkeys(
                alternative
                for check in cited
                for req, alternative in check.alternatives
                if req == entry.id
            )
        )
        result.alternatives = chosen
        forgiven = [check for check in cited if check.outcome is Outcome.BASELINED]
        if failed:
            result.outcome = requirement_outcome(entry.level, failed) or (
                Outcome.NON_STRICT.value if entry.level == "SHOULD" else Outcome.FAIL.value
            )
            result.details = [f"{check.nodeid}: {check.detail}" for check in failed]
        elif forgiven and entry.level != "SHOULD":
            # A baselined error names no requirement; keep the MUST visible all the same.
            result.outcome = BASELINED
            result.details = [f"{check.nodeid}: {check.detail}" for check in forgiven]
        elif any(check.outcome is Outcome.ERROR for check in cited):
            result.outcome = Outcome.ERROR.value
            result.details = [
                f"{check.nodeid}: {check.detail}"
                for check in cited
                if check.outcome is Outcome.ERROR
            ]
        elif non_strict:
            result.outcome = Outcome.NON_STRICT.value
            result.details = list(dict.fromkeys(non_strict))
        elif chosen:
            result.outcome = Outcome.ACCEPTED.value
        elif any(check.executed and check.outcome is not Outcome.FAIL for check in cited):
            result.outcome = Outcome.PASS.value
        elif cited:
            result.outcome = Outcome.SKIPPED.value
            result.details = list(
                dict.fromkeys(check.detail or "skipped" for check in cited if check.detail)
            )
        results.append(result)
    return results


def verdict(checks: Sequence[CheckResult], problems: Sequence[str]) -> str:
    """Return the run's verdict.

    A harness error when the harness reported a problem, a check errored, or no check ran; not
    conformant when any check failed; conformant otherwise.
    """
    if problems or any(check.outcome is Outcome.ERROR for check in checks):
        return HARNESS_ERROR
    if not any(check.executed for check in checks):
        return HARNESS_ERROR
    if any(check.outcome in (Outcome.FAIL, Outcome.UNEXPECTED_PASS) for check in checks):
        return NOT_CONFORMANT
    if any(check.outcome is Outcome.BASELINED for check in checks):
        return BASELINED
    return CONFORMANT


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
    """Everything a report holds about one run."""

    host: Mapping[str, Any]
    vectors_digest: str | None
    checks: list[CheckResult]
    catalog: list[RequirementInfo]
    hardening: list[HardeningRow]
    problems: list[str]
    started: datetime.datetime
    duration_s: float
    expectations: Mapping[str, Any] | None = None

    def verdict(self) -> str:
        """Return the run's verdict; a known failure that passed makes it not conformant."""
        result = verdict(self.checks, self.problems)
        unexpected = bool(self.expectations and self.expectations.get("unexpectedPasses"))
        return NOT_CONFORMANT if unexpected and result in (CONFORMANT, BASELINED) else result


def build_report(run: RunData) -> dict[str, Any]:
    """Return the JSON report of ``run`` (schema ``report.schema.json``)."""
    requirements = requirement_outcomes(run.catalog, run.checks)
    result = run.verdict()
    return {
        "format": REPORT_FORMAT,
        "suite": {"name": "secref-conformance", "version": __version__},
        "vectorsDigest": run.vectors_digest,
        "host": dict(run.host),
        "started": run.started.isoformat(),
        "durationS": round(run.duration_s, 3),
        "verdict": result,
        "exitCode": EXIT_CODES[result],
        "problems": list(run.problems),
        "summary": {
            "requirements": dict(Counter(item.outcome for item in requirements)),
            "checks": dict(Counter(check.outcome.value for check in run.checks)),
        },
        "requirements": [
            {
                "id": item.info.id,
                "level": item.info.level,
                "section": item.info.section,
                "scope": item.info.scope,
                "statement": item.info.statement,
                "outcome": item.outcome,
                "alternatives": item.alternatives,
                "checks": item.checks,
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
                "durationS": round(check.duration_s, 4),
            }
            for check in run.checks
        ],
        "hardening": hardening_table(run.hardening),
        "expectations": None if run.expectations is None else dict(run.expectations),
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


def redacted(report: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``report`` holding no run of 8 or more characters of any canary.

    Every canary minted in this process is looked for in every string, whole or in part, as a
    last line of defence: the checks redact their own text already.
    """
    canaries = issued_canaries()
    if not canaries:
        return dict(report)
    # Every run of a value's forms is a window of the index, whole forms included, so one
    # linear pass per string is enough.
    index = Detector([Guarded(canary.label, canary.value) for canary in canaries]).run_index()
    changed: dict[str, Any] = map_strings(dict(report), lambda text: redact_runs(text, index))
    return changed


def write_json(report: Mapping[str, Any], path: str | Path) -> None:
    """Write the JSON report to ``path``, creating its directory.

    It is written redacted (:func:`redacted`) and ASCII-only, so that no control or
    bidirectional character the host sent reaches a terminal that shows the file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(redacted(report), indent=2, ensure_ascii=True)
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
        f"- Verdict: **{_cell(report['verdict'])}** (exit code {int(report['exitCode'])})",
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
    counts = report["summary"]["requirements"]
    lines += [
        "## Requirements",
        "",
        "Outcomes: " + ", ".join(f"{name} {counts[name]}" for name in _SEVERITY if name in counts),
        "",
        "| ID | Level | Outcome | Checks | Note |",
        "|---|---|---|---|---|",
    ]
    for item in report["requirements"]:
        note = ", ".join(item["alternatives"]) or "; ".join(item["details"][:2])
        lines.append(
            f"| {_cell(item['id'])} | {_cell(item['level'])} | {_cell(item['outcome'])} "
            f"| {len(item['checks'])} | {_cell(note)} |"
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


def write_markdown(report: Mapping[str, Any], path: str | Path) -> None:
    """Write the Markdown report to ``path``, creating its directory."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_markdown(redacted(report)), encoding="utf-8")


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """Return the terminal summary: one row per requirement, then the verdict.

    Each line is redacted and has its control characters shown as escapes, so host text cannot
    move the cursor, recolour the terminal or start a line of its own.
    """
    report = redacted(report)
    rows = [
        (item["id"], item["level"], item["outcome"], ", ".join(item["alternatives"]))
        for item in report["requirements"]
    ]
    lines = [f"{'requirement':<12} {'level':<8} {'outcome':<21} note"]
    lines += [
        f"{rid:<12} {level:<8} {outcome:<21} {note}".rstrip() for rid, level, outcome, note in rows
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
    lines.append(f"verdict: {report['verdict']} (exit code {report['exitCode']})")
    return [escape_controls(line) for line in lines]
