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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance import __version__
from conformance.canary import Canary, Guarded, issued_canaries, redact_runs, run_window_index
from conformance.expectations import requirement_outcome
from conformance.expectations import summary as expectations_summary
from conformance.inert import escape_controls, map_strings, markdown_code, markdown_text
from conformance.outcomes import NOT_APPLICABLE_PREFIX, HardeningRow, Outcome

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

#: Some MUST went unchecked and the host did not declare it (decisions S1.2): never conformant.
INCOMPLETE: Final = "incomplete"
#: Every MUST checked held, and the ones left unchecked are all declared so in the host's
#: expectations file, with a reason (decisions S1.2).
DECLARED: Final = "conformant (declared unchecked)"
EXIT_CODES.update({INCOMPLETE: 1, DECLARED: 0})
#: Every MUST the run was narrowed to was checked and held, and the run names its narrowing
#: (``--requirements``, ``-k``, ``-m``, ``--deselect``, ...): never a plain ``conformant``, since
#: the requirements outside the selection were not looked at (decisions S1.7). Exit 0, as a run
#: narrowed with ``--requirements`` always has: a developer's or a judge's narrowed run passes
#: when what it covered holds, and every report says what that was.
NARROWED: Final = "conformant (narrowed)"
EXIT_CODES[NARROWED] = 0

#: A requirement no collected check cites (a SHOULD or EITHER without a check, or one left out
#: by a selection).
NOT_CHECKED: Final = "not-checked"
#: A requirement whose every check was skipped, or ran without being able to judge it: the host
#: did not let the suite see what it needs (decisions S1.1). Never passed.
UNCHECKED: Final = "unchecked"
#: A requirement that cannot arise on the path under test, with the reason (decisions S1.1).
NOT_APPLICABLE: Final = "not-applicable"
#: A requirement the design excludes; reported with its reason, never checked.
EXCLUDED: Final = "excluded"
#: A requirement outside a narrowed run's selection (decisions S1.7): never passed, whatever
#: the selected checks that cite it saw; a failure or an error they found stays visible.
NOT_SELECTED: Final = "not-selected"

#: The folded outcomes a requirement outside the selection shows as ``not-selected``: every
#: outcome that would read as a pass or as the run's own gap, never a finding.
_UNSELECTED: Final = frozenset(
    {
        Outcome.PASS.value,
        Outcome.ACCEPTED.value,
        Outcome.FLAKY.value,
        "unchecked",
        "not-checked",
        "not-applicable",
    }
)

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

#: The per-requirement check counts every report shows.
COUNT_KEYS: Final = ("pass", "fail", "error", "skipped", "unchecked")


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
        unchecked: (requirement, reason) for each cited requirement it could not judge
            (decisions S1.1): never passed by this check.
        reads: The capabilities the check used or asked for.
        sweeps: For each call the canary sweep covered, the surfaces searched.
        not_searched: The surfaces the sweep could not search: unseen, never clean.
        leak: Whether the failure is a value the canary sweep found, on any attempt: such a
            failure is never flaky and never rerun (decisions S1.6).
        harness: Whether the check errored because the run cannot go on, such as a host that
            restarted as another (decisions S1.8): the run is a harness error, and no entry of
            an expectations file changes that.
        attempts: How many times the check ran: more than once only when an expectations
            file lists it as flaky and it failed without finding a value (decisions S1.6).
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
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    leak: bool = False
    reads: tuple[str, ...] = ()
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    not_searched: tuple[str, ...] = ()
    harness: bool = False
    attempts: int = 1

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
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))


def _counts(requirement: str, cited: Iterable[CheckResult]) -> dict[str, int]:
    """Return how the checks citing ``requirement`` went, as every report counts them."""
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for check in cited:
        if requirement in check.failed or check.outcome in (
            Outcome.FAIL,
            Outcome.BASELINED,
            Outcome.UNEXPECTED_PASS,
        ):
            counts["fail"] += 1
        elif check.outcome is Outcome.ERROR:
            counts["error"] += 1
        elif check.outcome is Outcome.SKIPPED:
            counts["skipped"] += 1
        elif any(rid == requirement for rid, _ in check.unchecked):
            counts["unchecked"] += 1
        else:
            counts["pass"] += 1
    return counts


def applicable(entry: RequirementInfo, scopes: Iterable[str] | None) -> bool:
    """Return whether ``entry``'s scope applies to the run (``scopes`` ``None``: all do)."""
    return scopes is None or entry.scope in set(scopes)


def run_scopes(host: Mapping[str, Any]) -> frozenset[str]:
    """Return the requirement scopes that apply to a run against ``host`` (its report entry).

    Every host answers for ``any-host`` rules; only the reference implementation for its own
    (``reference-only``); only a run through MCP for the wire's rules (``mcp``). Whether the run
    is through MCP is the suite's own ``via``, never a capability the host announced
    (decisions S1.8).
    """
    scopes = {"any-host"}
    if "reference" in host.get("capabilities", ()):
        scopes.add("reference-only")
    if host.get("via") == "mcp":
        scopes.add("mcp")
    return frozenset(scopes)


def requirement_outcomes(
    catalog: Sequence[RequirementInfo],
    checks: Iterable[CheckResult],
    scopes: Iterable[str] | None = None,
    selected: AbstractSet[str] | None = None,
) -> list[RequirementResult]:
    """Fold the checks' outcomes into one outcome per requirement.

    A requirement fails when a failing check names it (a SHOULD is then non-strict); it errors
    when a check citing it errored; it is non-strict or an accepted alternative when a check
    recorded so; it passes only when the checks citing it ran and judged it, every one. When a
    check citing it was skipped, or ran without being able to judge it, it is unchecked
    (decisions S1.1): a case the suite could not see is not certified by the cases it could.
    It is not applicable when each check citing it said it cannot arise. A requirement outside
    the run's scopes is not applicable, and one no check cites is not checked.

    Given the run's selection (decisions S1.7), a requirement outside it is not selected unless
    a check found it failing or errored, and a MUST inside it that no check ran for is unchecked.

    Args:
        catalog: Every requirement, in catalog order.
        checks: Every check result of the run.
        scopes: The scopes that apply to the run (:func:`run_scopes`); all of them if omitted.
        selected: The requirement IDs the run set out to check; ``None`` when not known.

    Returns:
        One result per requirement, in catalog order.
    """
    by_requirement: dict[str, list[CheckResult]] = {entry.id: [] for entry in catalog}
    for check in checks:
        noted = [rid for rid, _ in (*check.non_strict, *check.alternatives)]
        for requirement in dict.fromkeys((*check.requirements, *check.failed, *noted)):
            by_requirement.setdefault(requirement, []).append(check)
    return [_within(result, selected) for result in _fold(catalog, by_requirement, scopes)]


def _within(result: RequirementResult, selected: AbstractSet[str] | None) -> RequirementResult:
    """Apply the run's selection to one folded requirement (decisions S1.7)."""
    if selected is None or result.outcome == EXCLUDED:
        return result
    if result.info.id not in selected:
        if result.outcome in _UNSELECTED:
            result.outcome = NOT_SELECTED
            result.details = ["outside the run's selection"]
        return result
    if result.outcome == NOT_CHECKED and not result.checks and result.info.level == "MUST":
        result.outcome = UNCHECKED
        result.details = ["no check of it ran in this run"]
    return result


def _fold(
    catalog: Sequence[RequirementInfo],
    by_requirement: Mapping[str, list[CheckResult]],
    scopes: Iterable[str] | None,
) -> list[RequirementResult]:
    results: list[RequirementResult] = []
    for entry in catalog:
        cited = by_requirement.get(entry.id, [])
        result = RequirementResult(entry, NOT_CHECKED, [check.nodeid for check in cited])
        result.counts = _counts(entry.id, cited)
        if entry.level == EXCLUDED:
            result.outcome = EXCLUDED
            if entry.reason:
                result.details.append(entry.reason)
            results.append(result)
            continue
        if not applicable(entry, scopes):
            result.outcome = NOT_APPLICABLE
            result.details.append(f"a {entry.scope} rule, which does not apply to this run")
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
        judged = [
            check
            for check in cited
            if check.executed
            and check.outcome is not Outcome.FAIL
            and all(rid != entry.id for rid, _ in check.unchecked)
        ]
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
        elif cited:
            skipped = [
                check.detail or "skipped" for check in cited if check.outcome is Outcome.SKIPPED
            ]
            unjudged = [
                reason for check in cited for rid, reason in check.unchecked if rid == entry.id
            ]
            # A check that failed at another requirement stopped before judging this one: it is
            # a check that could not judge it, never a pass and never "cannot arise" (decisions
            # S1.1, S1.4, S1.12).
            unjudged += [
                f"{check.nodeid} failed at {', '.join(check.failed)} before judging it"
                for check in cited
                if check.outcome is Outcome.FAIL and entry.id not in check.failed
            ]
            # A case the suite could not see is a case not certified, however many others
            # passed: a host must not escape a check by hiding what it would have read.
            blind = [
                reason
                for reason in dict.fromkeys(skipped + unjudged)
                if not reason.startswith(NOT_APPLICABLE_PREFIX)
            ]
            if judged and not blind:
                # A check that passed only on a rerun holds, and says so (decisions S1.6).
                flaky = [check for check in judged if check.outcome is Outcome.FLAKY]
                result.outcome = Outcome.FLAKY.value if flaky else Outcome.PASS.value
                result.details = [f"{check.nodeid}: {check.detail}" for check in flaky]
            elif blind:
                result.outcome = UNCHECKED
                result.details = blind
                if judged:
                    result.details.insert(
                        0, f"{len(judged)} of {len(cited)} checks judged it; the others could not"
                    )
            else:
                result.outcome = NOT_APPLICABLE
                result.details = list(dict.fromkeys(skipped + unjudged))
        results.append(result)
    return results


def unchecked_musts(requirements: Iterable[RequirementResult]) -> list[RequirementResult]:
    """Return the MUST requirements the run could not check (decisions S1.2)."""
    return [
        item for item in requirements if item.info.level == "MUST" and item.outcome == UNCHECKED
    ]


def verdict(
    checks: Sequence[CheckResult],
    problems: Sequence[str],
    unchecked: Iterable[str] = (),
    declared: Iterable[str] = (),
) -> str:
    """Return the run's verdict (decisions S1.2).

    A harness error when the harness reported a problem, a check errored, a check met a host
    that restarted as another (decisions S1.8), or no check ran at all; not conformant when any
    check failed; incomplete when a MUST went unchecked that the host did not declare, or when
    every check was skipped; conformant only when every MUST was checked and held, or went
    unchecked by declaration, which the verdict then says. A check that passed only on a rerun
    (``flaky``, decisions S1.6) holds; a failure the expectations file baselined gives at best
    ``non-conformant (baselined)``.

    Args:
        checks: Every check result of the run.
        problems: The harness's own problems.
        unchecked: The IDs of the MUSTs the run could not check.
        declared: The IDs the host's expectations file declares unchecked.
    """
    if (
        problems
        or not checks
        or any(check.outcome is Outcome.ERROR or check.harness for check in checks)
    ):
        return HARNESS_ERROR
    if any(check.outcome in (Outcome.FAIL, Outcome.UNEXPECTED_PASS) for check in checks):
        return NOT_CONFORMANT
    missing = set(unchecked)
    if missing - set(declared) or not any(check.executed for check in checks):
        # Checks ran but judged nothing, or a MUST went unseen: nothing to certify.
        return INCOMPLETE
    if any(check.outcome is Outcome.BASELINED for check in checks):
        return BASELINED
    return DECLARED if missing else CONFORMANT


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
    selection: tuple[str, ...] = ()
    stopped: str | None = None
    """Why the run ended before its last check (``-x``, ``--stop-when-decided``), if it did."""
    narrowed: tuple[str, ...] = ()
    """How pytest's own options narrowed the run (:mod:`conformance.narrowing`)."""
    planned: frozenset[str] | None = None
    """The requirement IDs the collected checks cite; ``None`` when not known (a parallel
    run's controller collects nothing)."""

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

    def requirements(self) -> list[RequirementResult]:
        """Return one result per requirement of the catalog."""
        return requirement_outcomes(
            self.catalog, self.checks, run_scopes(self.host), self.selected()
        )

    def declared(self) -> list[tuple[str, str]]:
        """Return (requirement, reason) for each MUST the expectations file declares unchecked."""
        if not self.expectations:
            return []
        return [
            (str(item["requirement"]), str(item["reason"]))
            for item in self.expectations.get("declaredUnchecked", ())
        ]

    def verdict(self, requirements: Sequence[RequirementResult] | None = None) -> str:
        """Return the run's verdict; a known failure that passed makes it not conformant."""
        folded = self.requirements() if requirements is None else requirements
        missing = [item.info.id for item in unchecked_musts(folded)]
        declared = [requirement for requirement, _ in self.declared()]
        result = verdict(self.checks, self.problems, missing, declared)
        unexpected = bool(self.expectations and self.expectations.get("unexpectedPasses"))
        good = (CONFORMANT, BASELINED, DECLARED)
        if unexpected and result in good:
            return NOT_CONFORMANT
        if self.stopped and result in good:
            # A run that ended before its last check certifies nothing (decisions S1.7).
            return INCOMPLETE
        if self.is_narrowed() and result == CONFORMANT:
            # What the run covered held, and the verdict line says what that was (S1.7).
            return NARROWED
        return result


def verdict_text(report: Mapping[str, Any]) -> str:
    """Return the verdict as a sentence: with the count of MUSTs unchecked by declaration,
    every narrowing of the run and any early stop (decisions S1.7)."""
    result = str(report["verdict"])
    count = len(report.get("unchecked", {}).get("declared", ()))
    if result == DECLARED:
        noun = "MUST" if count == 1 else "MUSTs"
        result = f"conformant, with {count} {noun} unchecked by declaration"
    selection = report.get("selection") or ()
    narrowed = report.get("narrowed") or ()
    if result == NARROWED and (selection or narrowed):
        # The suffixes below name the narrowing, so the line is never a plain "conformant".
        result = CONFORMANT
    if selection:
        # A narrowed run speaks for the requirements it was asked about, and says so.
        result += f" (only the checks of {', '.join(selection)})"
    if narrowed:
        result += f" (narrowed: {'; '.join(narrowed)})"
    stopped = report.get("stopped")
    if stopped:
        # An early stop is never to be read as a pass: the line says the run ended early.
        result += f" ({stopped})"
    return result


def build_report(run: RunData) -> dict[str, Any]:
    """Return the JSON report of ``run`` (schema ``report.schema.json``)."""
    requirements = run.requirements()
    result = run.verdict(requirements)
    declared = dict(run.declared())
    missing = unchecked_musts(requirements)
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
        "selection": list(run.selection),
        "narrowed": list(run.narrowed),
        "stopped": run.stopped,
        "unchecked": {
            "undeclared": [
                {"id": item.info.id, "reasons": item.details}
                for item in missing
                if item.info.id not in declared
            ],
            "declared": [
                {"id": item.info.id, "reasons": item.details, "declaration": declared[item.info.id]}
                for item in missing
                if item.info.id in declared
            ],
        },
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
