"""``secref-conformance report``: show a saved JSON report again, or several side by side.

This module owns the ``report`` subcommand. ``report FILE.json`` re-renders a JSON report the
suite wrote, after checking it against ``conformance/schemas/report.schema.json``: as the
terminal summary (the default), Markdown, JUnit XML, or only its problems.
``report --compare A.json B.json ...`` prints a matrix of hosts by requirements, and ``--html
PAGE`` writes that matrix, with each host's detail, as one self-contained HTML page
(:mod:`conformance.report_html`). It reruns nothing and decides nothing: every outcome, verdict
and exit code shown is the report's own (decisions S1.11). A file it cannot use ends it with one
line on stderr and exit code 2; otherwise it exits 0, whatever the verdict it shows. Host text
is made inert in every format (decisions S1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from conformance import junit, report_html
from conformance.arguments import OneLineParser
from conformance.inert import escape_controls
from conformance.kernel import EXCLUDED, NOT_SELECTED
from conformance.report import report_schema
from conformance.report_views import (
    ATTENTION,
    COLOURS,
    Line,
    markdown,
    requirement_properties,
    terminal_lines,
    verdict_sentence,
    verdict_text,
)

#: Exit codes: the report was shown; the command line or a file could not be used.
SHOWN: Final = 0
USAGE: Final = 2

#: The formats one report is shown in.
FORMATS: Final = ("terminal", "markdown", "junit", "problems")

#: ANSI colours for the terminal.
_ANSI: Final = {"red": "31", "yellow": "33", "green": "32"}


class ReportFileError(ValueError):
    """A file that is not a JSON report of the suite; the message is one line."""


def load(path: str | Path) -> dict[str, Any]:
    """Read a JSON report and check it against the report's schema.

    Raises:
        ReportFileError: The file cannot be read, is not JSON, or breaks the schema.
    """
    import jsonschema

    name = escape_controls(str(path))
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ReportFileError(f"{name}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ReportFileError(f"{name}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ReportFileError(
            f"{name}: not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    validator = jsonschema.Draft202012Validator(report_schema())
    problems = sorted(validator.iter_errors(document), key=lambda error: list(error.path))
    if problems:
        first = problems[0]
        where = "/" + "/".join(str(step) for step in first.absolute_path)
        message = escape_controls(first.message)
        if len(message) > 160:
            message = message[:157] + "..."
        raise ReportFileError(f"{name}: not a conformance report: at {where}: {message}")
    report: dict[str, Any] = document
    return report


def use_colour(choice: str, stream: TextIO) -> bool:
    """Return whether to colour: ``yes``, ``no``, or ``auto`` (a tty, and ``NO_COLOR`` unset)."""
    if choice != "auto":
        return choice == "yes"
    if os.environ.get("NO_COLOR"):
        return False
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def paint(lines: Sequence[Line], colour: bool) -> str:
    """Return ``lines`` as text, each in its colour when ``colour``."""
    out = []
    for line in lines:
        if colour and line.colour in _ANSI:
            bold = "1;" if line.text.startswith("verdict:") else ""
            out.append(f"\x1b[{bold}{_ANSI[line.colour]}m{line.text}\x1b[0m")
        else:
            out.append(line.text)
    return "\n".join(out) + "\n"


def problem_lines(report: Mapping[str, Any]) -> list[Line]:
    """Return only what went wrong: the verdict, then the terminal summary's problem lines."""
    lines = terminal_lines(report)
    kept = [lines[0], lines[1]]
    keep = False
    for line in lines[2:-1]:
        if line.text.startswith(("needs attention", "harness problem", "unchecked MUST")):
            keep = True
        elif line.text.startswith(("the rest:", "not listed:", "hardening:")):
            keep = False
        if keep or (line.colour == "red" and line.text[:1].isdigit()):
            kept.append(line)
    kept.append(lines[-1])
    return kept


def junit_text(report: Mapping[str, Any]) -> str:
    """Return a JUnit XML file of ``report``: one test case per check, then the verdict's."""
    suite = ElementTree.Element("testsuite", name="pytest", tests="0")
    # The suite's properties, as the run's own file holds them (conformance._hooks).
    properties = ElementTree.SubElement(suite, "properties")
    named = [("secref-verdict", str(report["verdict"])), *requirement_properties(report)]
    for name, value in named:
        ElementTree.SubElement(properties, "property", name=name, value=escape_controls(value))
    results = {"fail": "failure", "error": "error", "skipped": "skipped"}
    for check in report["checks"]:
        classname, name = junit.case_key(check["id"])
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=escape_controls(classname),
            name=escape_controls(name),
            time=str(check.get("durationS", 0)),
        )
        tag = results.get(check["outcome"])
        if tag is not None:
            result = ElementTree.SubElement(
                case, tag, message=escape_controls(check.get("detail") or "")
            )
            if tag == "skipped":
                result.set("type", "pytest.skip")
    root = ElementTree.Element("testsuites")
    root.append(suite)
    with tempfile.TemporaryDirectory(prefix="secref-report-") as folder:
        path = Path(folder) / "junit.xml"
        ElementTree.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
        checks = [
            {**check, "detail": escape_controls(check.get("detail") or "")}
            for check in report["checks"]
        ]
        junit.rewrite(path, checks, escape_controls(verdict_text(report)), report["exitCode"])
        return path.read_text(encoding="utf-8")


def compare_lines(reports: Sequence[Mapping[str, Any]]) -> list[Line]:
    """Return the matrix of hosts by requirements, for a terminal."""
    lines = [Line("hosts:")]
    for index, report in enumerate(reports, 1):
        lines.append(
            Line(
                escape_controls(
                    f"  H{index} {report_html.host_label(report)}: {verdict_sentence(report)}, "
                    f"took {float(report['durationS']):.1f} s"
                ),
                COLOURS.get(str(report["verdict"])),
            )
        )
    found = [{item["id"]: item for item in report["requirements"]} for report in reports]
    table = report_html.rows(reports)
    cells = [
        [
            str(found[column][rid]["outcome"]) if rid in found[column] else "-"
            for column in range(len(reports))
        ]
        for rid, _title in table
    ]
    id_width = max([len("requirement"), *(len(rid) for rid, _title in table)])
    widths = [
        max([len(f"H{column + 1}"), *(len(row[column]) for row in cells)])
        for column in range(len(reports))
    ]
    head = " ".join(f"H{column + 1}".ljust(width) for column, width in enumerate(widths))
    lines.append(Line(f"{'requirement'.ljust(id_width)} {head} title"))
    for (rid, title), row in zip(table, cells, strict=True):
        shown = " ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        worst = next((cell for cell in row if cell in ATTENTION), None)
        lines.append(
            Line(
                escape_controls(f"{rid.ljust(id_width)} {shown} {title}"),
                COLOURS.get(worst) if worst else None,
            )
        )
    left_out = (
        sum(
            1
            for item in reports[0]["requirements"]
            if all(
                found[column].get(item["id"], {}).get("outcome") in (NOT_SELECTED, EXCLUDED)
                for column in range(len(reports))
            )
        )
        if reports
        else 0
    )
    if left_out:
        lines.append(Line(f"not listed: {left_out} requirements no run selected, or excluded"))
    return lines


def compare_markdown(reports: Sequence[Mapping[str, Any]]) -> str:
    """Return the matrix of hosts by requirements as Markdown."""
    from conformance.inert import markdown_text

    lines = ["# Conformance matrix", "", "| Host | Name | Verdict | Exit code | Took |"]
    lines.append("|---|---|---|---|---|")
    for index, report in enumerate(reports, 1):
        lines.append(
            f"| H{index} | {markdown_text(report_html.host_label(report))} "
            f"| **{markdown_text(verdict_text(report))}** | {int(report['exitCode'])} "
            f"| {float(report['durationS']):.1f} s |"
        )
    found = [{item["id"]: item for item in report["requirements"]} for report in reports]
    heads = " | ".join(f"H{index}" for index in range(1, len(reports) + 1))
    lines += ["", f"| ID | Title | {heads} |", "|---|---|" + "---|" * len(reports)]
    for rid, title in report_html.rows(reports):
        row = " | ".join(
            markdown_text(str(column[rid]["outcome"])) if rid in column else "-" for column in found
        )
        lines.append(f"| {markdown_text(rid)} | {markdown_text(title)} | {row} |")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="secref-conformance report",
        description="Show a saved JSON report again, or several side by side. Exit codes: 0 "
        "shown (whatever the verdict), 2 a file or option that cannot be used.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.json", help="JSON reports to show")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="terminal",
        help="how to show one report: terminal summary, Markdown report, JUnit XML, or only "
        "its problems (default: terminal)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="show the reports side by side: a matrix of hosts by requirements (terminal "
        "or markdown format; default: off)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="PAGE",
        help="also write one self-contained HTML page of the matrix and each host's detail "
        "to PAGE (default: none)",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "yes", "no"),
        default="auto",
        help="colour the terminal formats: auto colours on a terminal unless NO_COLOR is set "
        "(default: auto)",
    )
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Entry point of ``secref-conformance report``; returns its exit code."""
    out = sys.stdout if stdout is None else stdout
    parser = _parser()
    try:
        options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as stop:
        return int(stop.code or 0)
    if len(options.files) > 1 and not options.compare:
        sys.stderr.write("secref-conformance report: several files need --compare\n")
        return USAGE
    if options.compare and options.format not in ("terminal", "markdown"):
        sys.stderr.write("secref-conformance report: --compare shows terminal or markdown\n")
        return USAGE
    try:
        reports = [load(path) for path in options.files]
    except ReportFileError as error:
        sys.stderr.write(f"secref-conformance report: {error}\n")
        return USAGE
    colour = use_colour(options.color, out)
    if options.compare:
        if options.format == "markdown":
            out.write(compare_markdown(reports))
        else:
            out.write(paint(compare_lines(reports), colour))
    elif options.format == "markdown":
        out.write(markdown(reports[0]))
    elif options.format == "junit":
        out.write(junit_text(reports[0]))
    elif options.format == "problems":
        out.write(paint(problem_lines(reports[0]), colour))
    else:
        out.write(paint(terminal_lines(reports[0]), colour))
    if options.html is not None:
        try:
            options.html.parent.mkdir(parents=True, exist_ok=True)
            options.html.write_text(report_html.page(reports), encoding="utf-8")
        except OSError as error:
            name = escape_controls(str(options.html))
            sys.stderr.write(f"secref-conformance report: {name}: cannot be written ({error})\n")
            return USAGE
    return SHOWN


if __name__ == "__main__":
    raise SystemExit(main())
