"""The layout of the suite's human reports: what failed first, then the rest.

This module owns how the terminal summary and the Markdown report are laid out, from a JSON
report (:mod:`conformance.report`): the kernel's verdict line, its exit code and the run's one
duration first; then the requirements that need attention (failed, errored, unchecked, known
failures), each with its title, its reasons and the checks that show it, capped; then the rest
(collapsed in ``<details>`` in Markdown); a narrowed run's requirements outside its selection
counted, not listed; and failing checks grouped by their cause, so that a crashing host gives
one line per cause rather than one row per check. It decides nothing: every outcome, the verdict
and the exit code are the report's, as the kernel wrote them (decisions S1.11). Host text is
made inert where it is written (decisions S1.5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from conformance.expectations import summary as expectations_summary
from conformance.inert import escape_controls, markdown_code, markdown_text
from conformance.kernel import (
    BASELINED,
    CONFORMANT,
    COUNT_KEYS,
    DECLARED,
    EXCLUDED,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_CHECKED,
    NOT_CONFORMANT,
    NOT_SELECTED,
    UNCHECKED,
    Outcome,
    verdict_line,
)

#: Outcome order, worst first.
SEVERITY: Final = (
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

#: The requirement outcomes listed first, under "needs attention".
ATTENTION: Final = (
    Outcome.FAIL.value,
    Outcome.UNEXPECTED_PASS.value,
    Outcome.ERROR.value,
    BASELINED,
    Outcome.BASELINED.value,
    UNCHECKED,
)

#: The check outcomes whose checks are listed, grouped by cause.
FAILING_CHECKS: Final = (
    Outcome.FAIL.value,
    Outcome.ERROR.value,
    Outcome.UNEXPECTED_PASS.value,
    Outcome.BASELINED.value,
    Outcome.FLAKY.value,
)

#: Check outcomes that judged none of the requirements the check cites.
_UNJUDGED: Final = (
    Outcome.ERROR.value,
    Outcome.SKIPPED.value,
    Outcome.UNEXPECTED_PASS.value,
    Outcome.BASELINED.value,
)

#: How many checks a row names before "and N more".
CHECKS_SHOWN: Final = 5
#: How many errored requirements sharing one cause are shown as one row instead.
COLLAPSE_FROM: Final = 3
#: How many requirement IDs a collapsed row names.
IDS_SHOWN: Final = 12
#: How many reasons a row gives before "and N more".
REASONS_SHOWN: Final = 3

#: The colour of each outcome and verdict on a terminal: fail red, unchecked or incomplete
#: yellow, pass green. A colour shows the kernel's word; it decides nothing.
COLOURS: Final = {
    Outcome.FAIL.value: "red",
    Outcome.UNEXPECTED_PASS.value: "red",
    Outcome.ERROR.value: "red",
    BASELINED: "yellow",
    Outcome.BASELINED.value: "yellow",
    Outcome.FLAKY.value: "yellow",
    Outcome.NON_STRICT.value: "yellow",
    UNCHECKED: "yellow",
    Outcome.PASS.value: "green",
    Outcome.ACCEPTED.value: "green",
    NOT_CONFORMANT: "red",
    HARNESS_ERROR: "red",
    INCOMPLETE: "yellow",
    CONFORMANT: "green",
    NARROWED: "green",
    DECLARED: "green",
}

#: Outcome words: what each check outcome did, for "N checks failed: cause".
_DID: Final = {
    Outcome.FAIL.value: "failed",
    Outcome.ERROR.value: "errored",
    Outcome.UNEXPECTED_PASS.value: "passed though listed as known failures",
    Outcome.BASELINED.value: "failed as known (baselined)",
    Outcome.FLAKY.value: "passed on a rerun (flaky)",
}


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the terminal summary and the colour it is shown in, if any."""

    text: str
    colour: str | None = None


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


def verdict_sentence(report: Mapping[str, Any]) -> str:
    """Return ``verdict: <line> (exit code N)``, the line every terminal view starts and ends
    with."""
    return f"verdict: {verdict_text(report)} (exit code {int(report['exitCode'])})"


def duration(report: Mapping[str, Any]) -> str:
    """Return the run's one duration, as every view prints it."""
    return f"{float(report['durationS']):.1f} s"


def count_cell(item: Mapping[str, Any]) -> str:
    """Return a requirement's check counts as ``p/f/e/s/u``."""
    counts = item.get("counts") or {}
    return "/".join(str(counts.get(key, 0)) for key in COUNT_KEYS)


def outcome_counts(counts: Mapping[str, int]) -> str:
    """Return outcome counts worst first, as ``3 fail, 140 pass``."""
    ordered = [name for name in SEVERITY if name in counts]
    ordered += sorted(name for name in counts if name not in SEVERITY)
    return ", ".join(f"{counts[name]:,} {name}" for name in ordered)


def plural(count: int, noun: str) -> str:
    """Return ``1 check`` or ``1,786 checks``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def capped(names: Sequence[str], shown: int = CHECKS_SHOWN, separator: str = ", ") -> str:
    """Return the first ``shown`` names, then ``and N more``."""
    text = separator.join(names[:shown])
    if len(names) > shown:
        text += f" and {len(names) - shown:,} more"
    return text


def is_narrowed(report: Mapping[str, Any]) -> bool:
    """Return whether the report says its run was narrowed (a selection or pytest's options)."""
    return bool(report.get("selection") or report.get("narrowed"))


def short_check(nodeid: str) -> str:
    """Return a check's node id without its directory, as the rows name it."""
    path, sep, rest = nodeid.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


@dataclass(frozen=True, slots=True)
class Layout:
    """A report's requirements, sorted the way every view shows them."""

    attention: list[Mapping[str, Any]]
    """The requirements needing attention that are shown one row each."""
    collapsed: list[tuple[str, list[str]]]
    """(cause, requirement IDs): errored requirements that share one cause, shown as one row."""
    rest: list[Mapping[str, Any]]
    not_selected: int
    problem_checks: dict[str, list[str]]

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> Layout:
        """Sort ``report``'s requirements: needing attention (worst first), the rest, and the
        count of those outside a narrowed run's selection."""
        rank = {name: index for index, name in enumerate(SEVERITY)}
        items = list(report["requirements"])
        attention = sorted(
            (item for item in items if item["outcome"] in ATTENTION),
            key=lambda item: rank.get(item["outcome"], len(rank)),
        )
        # A narrowed run lists its selection alone: the rest of the catalog, and the non-goals
        # no selection holds, are counted (decisions S1.7).
        left_out = {NOT_SELECTED, EXCLUDED} if is_narrowed(report) else {NOT_SELECTED}
        rest = [
            item
            for item in items
            if item["outcome"] not in ATTENTION and item["outcome"] not in left_out
        ]
        not_selected = sum(1 for item in items if item["outcome"] in left_out)
        shared: dict[str, list[str]] = {}
        for item in attention:
            cause = single_cause(item)
            if cause is not None:
                shared.setdefault(cause, []).append(item["id"])
        collapsed = [(cause, ids) for cause, ids in shared.items() if len(ids) >= COLLAPSE_FROM]
        hidden = {rid for _cause, ids in collapsed for rid in ids}
        shown = [item for item in attention if item["id"] not in hidden]
        return cls(shown, collapsed, rest, not_selected, _problem_checks(report["checks"]))

    @property
    def attention_count(self) -> int:
        """How many requirements need attention, collapsed ones included."""
        return len(self.attention) + sum(len(ids) for _cause, ids in self.collapsed)

    def checks_of(self, item: Mapping[str, Any]) -> list[str]:
        """Return the checks a row names: those that show the problem, else every citing one."""
        named = self.problem_checks.get(item["id"]) if item["outcome"] in ATTENTION else None
        return [short_check(name) for name in (named or item.get("checks") or [])]


def _problem_checks(checks: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Return, by requirement, the checks that failed it (first), then those that errored, were
    skipped or left it unjudged."""
    failed: dict[str, list[str]] = {}
    other: dict[str, list[str]] = {}
    for check in checks:
        unjudged = {entry["requirement"] for entry in check.get("unchecked", ())}
        for rid in check.get("requirements") or ():
            if rid in check.get("failedRequirements", ()):
                failed.setdefault(rid, []).append(check["id"])
            elif rid in unjudged or check["outcome"] in _UNJUDGED:
                other.setdefault(rid, []).append(check["id"])
    return {rid: failed.get(rid, []) + other.get(rid, []) for rid in {*failed, *other}}


def reasons(item: Mapping[str, Any]) -> str:
    """Return a requirement's distinct reasons, each once with how many checks gave it, capped.

    A reason the kernel prefixed with the check's node id is counted without it, so that one
    cause over many checks reads as one reason.
    """
    checks = item.get("checks") or ()
    counted: Counter[str] = Counter()
    for detail in item.get("details") or ():
        counted[_without_check(str(detail), checks)] += 1
    distinct = [
        cause if count == 1 else f"{cause} ({count:,} checks)" for cause, count in counted.items()
    ]
    return capped(distinct, REASONS_SHOWN, "; ") if distinct else ""


def _without_check(detail: str, checks: Iterable[str]) -> str:
    head, sep, _tail = detail.partition(": ")
    if sep and "::" in head:
        for check in checks:
            if detail.startswith(check + ": "):
                return detail[len(check) + 2 :]
    return detail


def single_cause(item: Mapping[str, Any]) -> str | None:
    """Return the one cause of an errored requirement whose every reason is the same, if so."""
    if item["outcome"] != Outcome.ERROR.value:
        return None
    checks = item.get("checks") or ()
    found = {_without_check(str(detail), checks) for detail in item.get("details") or ()}
    return found.pop() if len(found) == 1 else None


def causes(checks: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, list[str], list[str]]]:
    """Group failing checks by outcome and cause, largest group first.

    Returns:
        (outcome, cause, check ids, requirement IDs) per group.
    """
    groups: dict[tuple[str, str], tuple[list[str], dict[str, None]]] = {}
    for check in checks:
        if check["outcome"] not in FAILING_CHECKS:
            continue
        ids, rids = groups.setdefault((check["outcome"], check.get("detail") or ""), ([], {}))
        ids.append(check["id"])
        rids.update(
            dict.fromkeys(check.get("failedRequirements") or check.get("requirements") or ())
        )
    ordered = sorted(groups.items(), key=lambda entry: -len(entry[1][0]))
    return [(outcome, cause, ids, list(rids)) for (outcome, cause), (ids, rids) in ordered]


def cause_sentence(outcome: str, cause: str, count: int) -> str:
    """Return ``1,780 checks errored: <cause>``."""
    return f"{plural(count, 'check')} {_DID.get(outcome, outcome)}: {cause or 'no detail given'}"


def requirement_properties(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return one ``requirement:<ID>`` property per requirement: its outcome, its counts and its
    title, as a JUnit file holds them."""
    found = []
    for item in report["requirements"]:
        counts = ", ".join(f"{key} {value}" for key, value in item["counts"].items())
        title = f": {item['title']}" if item.get("title") else ""
        found.append((f"requirement:{item['id']}", f"{item['outcome']} ({counts}){title}"))
    return found


# --- the terminal ---------------------------------------------------------------------------


def terminal_lines(report: Mapping[str, Any]) -> list[Line]:
    """Return the terminal summary of ``report``, verdict first and last.

    Control characters of host text are shown as escapes (decisions S1.5); the caller redacts.
    """
    layout = Layout.of(report)
    verdict_colour = COLOURS.get(str(report["verdict"]))
    host = report["host"]
    lines = [
        Line(verdict_sentence(report), verdict_colour),
        Line(
            f"took {duration(report)} for {plural(len(report['checks']), 'check')}; host "
            f"{host.get('name')} {host.get('version')} ({host.get('language')}) via "
            f"{host.get('via') or 'driver'}"
        ),
        Line("requirements: " + outcome_counts(report["summary"]["requirements"])),
        Line("checks: " + outcome_counts(report["summary"]["checks"])),
    ]
    lines += [Line(f"harness problem: {problem}", "red") for problem in report["problems"]]
    header = ("requirement", "level", "outcome", "p/f/e/s/u")
    rows = layout.attention + layout.rest
    widths = [
        max([len(header[0]), *(len(item["id"]) for item in rows)]),
        max([len(header[1]), *(len(item["level"]) for item in rows)]),
        max([len(header[2]), *(len(item["outcome"]) for item in rows)]),
        max([len(header[3]), *(len(count_cell(item)) for item in rows)]),
    ]

    def row(cells: Sequence[str], title: str) -> str:
        padded = " ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        return f"  {padded} {title}".rstrip()

    lines.append(
        Line(
            "p/f/e/s/u counts the checks citing a requirement that passed, failed, errored, were "
            "skipped, and ran without being able to judge it"
        )
    )
    indent = " " * (4 + widths[0])
    if layout.attention_count:
        lines.append(
            Line(f"needs attention: {plural(layout.attention_count, 'requirement')}", "red")
        )
        for cause, ids in layout.collapsed:
            lines.append(
                Line(f"  {len(ids)} requirements errored, each for one cause: {cause}", "red")
            )
            lines.append(Line(f"    {capped(ids, IDS_SHOWN)}"))
        if layout.attention:
            lines.append(Line(row(header, "title")))
        for item in layout.attention:
            cells = (item["id"], item["level"], item["outcome"], count_cell(item))
            lines.append(Line(row(cells, item.get("title", "")), COLOURS.get(item["outcome"])))
            why = reasons(item)
            if why:
                lines.append(Line(f"{indent}why: {why}"))
            named = layout.checks_of(item)
            if named:
                lines.append(Line(f"{indent}checks: {capped(named)}"))
    else:
        lines.append(Line("needs attention: none", "green"))
    if layout.rest:
        lines.append(Line(f"the rest: {plural(len(layout.rest), 'requirement')}"))
        lines.append(Line(row(header, "title / note")))
        for item in layout.rest:
            cells = (item["id"], item["level"], item["outcome"], count_cell(item))
            note = ", ".join(item.get("alternatives") or ()) or item.get("title", "")
            lines.append(Line(row(cells, note), COLOURS.get(item["outcome"])))
    if layout.not_selected:
        lines.append(
            Line(
                f"not listed: {plural(layout.not_selected, 'requirement')} outside this run's "
                "selection (excluded ones included), none of them passed (decisions S1.7)"
            )
        )
    for outcome, cause, ids, _rids in causes(report["checks"]):
        lines.append(Line(cause_sentence(outcome, cause, len(ids)), COLOURS.get(outcome)))
        lines.append(Line(f"  {capped([short_check(name) for name in ids])}"))
    kept = sum(row["kept"] for row in report["hardening"])
    lines.append(
        Line(f"hardening: {len(report['hardening'])} rows, {kept} forms kept (never a failure)")
    )
    if report.get("expectations"):
        lines += [Line(text) for text in expectations_summary(report["expectations"])]
    lines += [Line(text, "yellow") for text in unchecked_lines(report)]
    lines.append(Line(verdict_sentence(report), verdict_colour))
    return [Line(escape_controls(line.text), line.colour) for line in lines]


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


# --- Markdown -------------------------------------------------------------------------------


def _cell(text: object) -> str:
    """Host or suite text for Markdown running text or a table cell, made inert."""
    return markdown_text(str(text))


def markdown(report: Mapping[str, Any]) -> str:
    """Return the Markdown report of a JSON report, verdict first.

    Every text is escaped where it is written (:mod:`conformance.inert`): none can add a line,
    a tag, an HTML comment or a verdict.
    """
    layout = Layout.of(report)
    host = report["host"]
    capabilities = host.get("capabilities") or []
    lines = [
        "# Conformance report",
        "",
        f"- Verdict: **{_cell(verdict_text(report))}** (exit code {int(report['exitCode'])})",
        f"- Took: {duration(report)} for {plural(len(report['checks']), 'check')}, started "
        f"{_cell(report['started'])}",
        f"- Host: {_cell(host.get('name'))} {_cell(host.get('version'))} "
        f"({_cell(host.get('language'))}) via {_cell(host.get('via') or 'driver')}",
        "- Capabilities: " + (", ".join(_cell(item) for item in capabilities) or "none"),
        "- Requirements: " + outcome_counts(report["summary"]["requirements"]),
        "- Checks: " + outcome_counts(report["summary"]["checks"]),
        f"- Suite: {_cell(report['suite']['name'])} {_cell(report['suite']['version'])}; "
        f"vectors digest {markdown_code(str(report['vectorsDigest']))}",
        "",
    ]
    if report["problems"]:
        lines += ["## Harness problems", ""]
        lines += [f"- {_cell(problem)}" for problem in report["problems"]]
        lines.append("")
    lines += [f"## Needs attention ({layout.attention_count})", ""]
    for cause, ids in layout.collapsed:
        lines += [
            f"- {len(ids)} requirements errored, each for one cause: {_cell(cause)}: "
            f"{_cell(capped(ids, IDS_SHOWN))}",
            "",
        ]
    if layout.attention:
        lines += [
            "| ID | Title | Level | Outcome | Checks p/f/e/s/u | Why | Checks |",
            "|---|---|---|---|---|---|---|",
        ]
        for item in layout.attention:
            named = capped([markdown_code(name) for name in layout.checks_of(item)])
            lines.append(
                f"| {_cell(item['id'])} | {_cell(item.get('title', ''))} | {_cell(item['level'])} "
                f"| {_cell(item['outcome'])} | {count_cell(item)} | {_cell(reasons(item))} "
                f"| {named} |"
            )
    elif not layout.collapsed:
        lines.append("No requirement failed, errored or went unchecked.")
    grouped = causes(report["checks"])
    if grouped:
        lines += ["", "### Failing checks, by cause", ""]
        lines += ["| Checks | Requirements | Cause |", "|---|---|---|"]
        for outcome, cause, ids, rids in grouped:
            shown = capped([markdown_code(short_check(name)) for name in ids])
            lines.append(
                f"| {shown} | {_cell(capped(rids, 8))} "
                f"| {_cell(cause_sentence(outcome, cause, len(ids)))} |"
            )
    lines.append("")
    lines += _unchecked_section(report)
    applied = report.get("expectations")
    if applied:
        lines += ["## Expectations", ""]
        lines += [f"- {_cell(line)}" for line in expectations_summary(applied)]
        lines += [f"- unused entry: {_cell(entry)}" for entry in applied["unused"]]
        lines.append("")
    lines += ["## Other requirements", ""]
    if layout.rest:
        lines += _rest_table(layout)
    else:
        lines += ["No other requirement in this run.", ""]
    if layout.not_selected:
        lines += [
            f"Not listed: {plural(layout.not_selected, 'requirement')} outside this run's "
            "selection (excluded ones included); none of them is passed (decisions S1.7).",
            "",
        ]
    lines += ["## Hardening (decisions R5.6: reported, never a failure)", ""]
    if report["hardening"]:
        lines += ["| Form | Surface | Scrubbed | Kept |", "|---|---|---|---|"]
        for entry in report["hardening"]:
            lines.append(
                f"| {_cell(entry['form'])} | {_cell(entry['surface'])} | {int(entry['scrubbed'])} "
                f"| {int(entry['kept'])} |"
            )
    else:
        lines.append("No hardening form was looked for in this run.")
    return "\n".join(lines) + "\n"


def _rest_table(layout: Layout) -> list[str]:
    """Return the requirements not needing attention as a table collapsed in ``<details>``."""
    rest_counts = Counter(item["outcome"] for item in layout.rest)
    lines = [
        "<details>",
        f"<summary>{plural(len(layout.rest), 'requirement')}: "
        f"{outcome_counts(rest_counts)}</summary>",
        "",
        "Checks counts each requirement's checks as passed, failed, errored, skipped, and run "
        "without being able to judge it (unchecked).",
        "",
        "| ID | Title | Level | Outcome | Checks p/f/e/s/u | Note |",
        "|---|---|---|---|---|---|",
    ]
    for item in layout.rest:
        note = ", ".join(item.get("alternatives") or ()) or reasons(item)
        lines.append(
            f"| {_cell(item['id'])} | {_cell(item.get('title', ''))} | {_cell(item['level'])} "
            f"| {_cell(item['outcome'])} | {count_cell(item)} | {_cell(note)} |"
        )
    return [*lines, "", "</details>", ""]


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
