"""Reports that lead with what failed: the layout of the terminal summary and the Markdown report.

Reports are built from check records by :func:`conformance.report.build_report`, as a run builds
them, so each test is quick: the verdict first (and last, on the terminal) with the run's one
duration; the failing, unchecked and errored requirements next with their titles and reasons;
the rest after them (in ``<details>`` in Markdown); the checks a row names capped; a narrowed
run's unselected requirements counted, not listed; a crashing host's identical causes
collapsed; colours through the terminal reporter's markup; columns that hold wide cells; and
failures that lead with their requirement message and a short traceback.
"""

from __future__ import annotations

import datetime
import io
import re
from typing import Any

import pytest

from conformance import _hooks, report_views
from conformance.kernel import Outcome
from conformance.report import (
    CheckResult,
    RequirementInfo,
    RunData,
    build_report,
    render_markdown,
    summary_lines,
    summary_rows,
)

FAILED = RequirementInfo(
    "ORD-004", "MUST", "R0", "long statement", title="Kill-switch and tool RBAC come first"
)
HELD = RequirementInfo("LOG-001", "MUST", "R6.6", "no value in the log", title="No value in logs")
BLIND = RequirementInfo("VAULT-003", "MUST", "R7.1", "no read", title="No read without refs")
CATALOG = [FAILED, HELD, BLIND]
NON_GOAL = RequirementInfo(
    "EXCL-001", "excluded", "R0", "s", reason="a non-goal", title="Excluded: a non-goal"
)


def _report(
    checks: list[CheckResult],
    catalog: list[RequirementInfo] | None = None,
    selection: tuple[str, ...] = (),
    duration_s: float = 27.44,
    host: str = "h",
) -> dict[str, Any]:
    run = RunData(
        host={"name": host, "version": "1", "language": "x", "capabilities": []},
        vectors_digest=None,
        checks=checks,
        catalog=CATALOG if catalog is None else catalog,
        hardening=[],
        problems=[],
        started=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        duration_s=duration_s,
        selection=selection,
    )
    return build_report(run)


def _mixed() -> dict[str, Any]:
    """One requirement failed by 20 checks, one held, one unchecked."""
    checks = [
        CheckResult(
            f"conformance/checks/test_o.py::test_o[{index}]",
            ("ORD-004",),
            outcome=Outcome.FAIL,
            failed=("ORD-004",),
            detail="the vault was read",
        )
        for index in range(20)
    ]
    checks.append(CheckResult("conformance/checks/test_l.py::test_l", ("LOG-001",)))
    blind = CheckResult("conformance/checks/test_v.py::test_v", ("VAULT-003",))
    blind.unchecked.append(("VAULT-003", "the host did not announce observe.vault"))
    checks.append(blind)
    return _report(checks)


def test_terminal_leads_with_the_verdict_and_one_duration() -> None:
    """The first and last lines are the kernel's verdict; the second gives the one duration,
    the same figure the Markdown gives."""
    report = _mixed()
    lines = summary_lines(report, [])
    said = f"verdict: {report['verdictLine']} (exit code {report['exitCode']})"
    assert lines[0] == lines[-1] == said
    assert lines[1].startswith("took 27.4 s for 22 checks")
    markdown = render_markdown(report)
    items = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert items[0] == "- Verdict: **not-conformant** (exit code 1)"
    assert items[1].startswith("- Took: 27.4 s for 22 checks")
    assert markdown.count(" s for ") == 1


def test_failing_and_unchecked_come_first_with_titles_and_reasons() -> None:
    """Needs attention lists the failed and the unchecked requirement, with title and why,
    before any held one; the held one comes after."""
    lines = summary_lines(_mixed(), [])
    text = "\n".join(lines)
    attention = lines.index("needs attention: 2 requirements")
    rest = lines.index("the rest: 1 requirement")
    assert attention < rest
    failed = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ORD-004"))
    blind = next(i for i, line in enumerate(lines) if line.lstrip().startswith("VAULT-003"))
    held = next(i for i, line in enumerate(lines) if line.lstrip().startswith("LOG-001"))
    assert attention < failed < blind < rest < held
    assert lines[failed].endswith("Kill-switch and tool RBAC come first")
    assert "why: the vault was read (20 checks)" in text
    assert "why: the host did not announce observe.vault" in text


def test_markdown_puts_the_rest_in_details() -> None:
    """In Markdown the held requirement sits inside <details>, the failing ones before it."""
    markdown = render_markdown(_mixed())
    opened = markdown.index("<details>")
    closed = markdown.index("</details>")
    assert markdown.index("| ORD-004 | Kill-switch and tool RBAC come first |") < opened
    assert markdown.index("| VAULT-003 | No read without refs |") < opened
    assert opened < markdown.index("| LOG-001 | No value in logs |") < closed


def test_checks_named_per_row_are_capped() -> None:
    """Twenty failing checks are named as the first five and "and 15 more", in every view."""
    report = _mixed()
    row = next(line for line in summary_lines(report, []) if "checks: test_o.py" in line)
    assert row.count("test_o.py::") == report_views.CHECKS_SHOWN
    assert row.endswith("and 15 more")
    markdown = render_markdown(report)
    assert markdown.count("`test_o.py::") <= 2 * report_views.CHECKS_SHOWN
    assert "20 checks failed: the vault was read" in markdown


def test_a_narrowed_run_lists_its_selection_alone() -> None:
    """Requirements outside the selection, and the non-goals, are counted, never listed; a
    whole run lists the non-goals."""
    checks = [CheckResult("conformance/checks/test_l.py::test_l", ("LOG-001",))]
    whole = summary_lines(_report(checks, [*CATALOG, NON_GOAL]), [])
    assert any(line.lstrip().startswith("EXCL-001") for line in whole)
    report = _report(checks, [*CATALOG, NON_GOAL], selection=("LOG-001",))
    assert {item["outcome"] for item in report["requirements"]} >= {"not-selected"}
    lines = summary_lines(report, [])
    assert not any(line.lstrip().startswith(("ORD-004", "VAULT-003", "EXCL")) for line in lines)
    assert any(line.lstrip().startswith("LOG-001") for line in lines)
    assert any(line.startswith("not listed: 3 requirements") for line in lines)
    markdown = render_markdown(report)
    assert "| ORD-004 |" not in markdown
    assert "| LOG-001 |" in markdown
    assert "Not listed: 3 requirements" in markdown
    assert "| EXCL-001 |" not in markdown


def test_a_crashing_host_gives_one_line_per_cause() -> None:
    """1,786 checks that errored for one cause make a report of a few kilobytes, naming the
    cause once with its count; every requirement they cite collapses into one row."""
    catalog = [
        RequirementInfo(f"GRAM-{index:03d}", "MUST", "R1", "s", title=f"t{index}")
        for index in range(150)
    ]
    checks = [
        CheckResult(
            f"conformance/checks/test_x.py::test_x[{index}]",
            (catalog[index % 150].id,),
            outcome=Outcome.ERROR,
            detail="host error: the host exited with status 1",
        )
        for index in range(1786)
    ]
    report = _report(checks, catalog)
    markdown = render_markdown(report)
    assert len(markdown.encode()) < 10_000, len(markdown.encode())
    assert markdown.count("1,786 checks errored: host error: the host exited with status 1") == 1
    assert "150 requirements errored, each for one cause" in markdown
    terminal = summary_lines(report, [])
    assert len(terminal) < 30, len(terminal)
    assert "1,786 checks errored: host error: the host exited with status 1" in terminal


def test_colours_follow_outcomes_and_the_verdict() -> None:
    """Fail rows and a failing verdict are red, unchecked yellow, held green."""
    rows = summary_rows(_mixed(), [])
    colour = {row.text.split()[0]: row.colour for row in rows if row.text.startswith("  ")}
    assert colour["ORD-004"] == "red"
    assert colour["VAULT-003"] == "yellow"
    assert colour["LOG-001"] == "green"
    assert rows[0].colour == rows[-1].colour == "red"
    held = _report(
        [CheckResult("conformance/checks/test_l.py::test_l", ("LOG-001",))], catalog=[HELD]
    )
    assert summary_rows(held, [])[0].colour == "green"


class _Reporter:
    """A terminal reporter that writes through pytest's own writer, as the real one does."""

    def __init__(self, markup: bool) -> None:
        from _pytest._io import TerminalWriter

        self.file = io.StringIO()
        self.writer = TerminalWriter(self.file)
        self.writer.hasmarkup = markup

    def section(self, title: str) -> None:
        self.writer.sep("=", title)

    def write_line(self, line: str, **markup: bool) -> None:
        self.writer.line(line, **markup)


@pytest.mark.parametrize("markup", [True, False])
def test_the_summary_colours_only_through_the_reporters_markup(markup: bool) -> None:
    """The hook asks for colours by markup: pytest's writer shows them when its markup is on
    (a tty, --color=yes) and never when off (--color=no, NO_COLOR)."""
    hooks = object.__new__(_hooks.ConformanceHooks)
    state = _hooks.State()
    state.shown = _mixed()
    hooks.config = type("Config", (), {"stash": {_hooks.STATE_KEY: state}})()
    reporter = _Reporter(markup)
    hooks.pytest_terminal_summary(reporter)
    out = reporter.file.getvalue()
    assert ("\x1b[31m" in out) is markup
    assert ("\x1b[32m" in out) is markup
    assert re.sub(r"\x1b\[[0-9;]*m", "", out).count("verdict: not-conformant (exit code 1)") == 2


def test_pytest_writer_turns_markup_off_under_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR turns pytest's markup off even on a terminal, so the summary has no colour."""
    from _pytest._io.terminalwriter import should_do_markup

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("PY_COLORS", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert should_do_markup(Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not should_do_markup(Tty())


def test_columns_hold_wide_outcomes_and_counts() -> None:
    """A row with ``non-conformant (baselined)``-wide outcomes and five-digit counts keeps every
    title in one column."""
    wide = RequirementInfo("INV1-SHA256", "MUST", "I1", "s", title="Title one")
    other = RequirementInfo("LOG-001", "MUST", "R6.6", "s", title="Title two")
    checks = [
        CheckResult(f"conformance/checks/test_w.py::test_w[{index}]", ("INV1-SHA256",))
        for index in range(12345)
    ]
    checks.append(
        CheckResult(
            "conformance/checks/test_l.py::test_l",
            ("LOG-001",),
            outcome=Outcome.FAIL,
            failed=("LOG-001",),
            detail="x",
        )
    )
    report = _report(checks, [wide, other])
    # The report's outcome for a row may be any word the kernel spells; the widest one must fit.
    report["requirements"][0]["outcome"] = "non-conformant (baselined)"
    lines = summary_lines(report, [])
    starts = {line.index("Title") for line in lines if "Title " in line}
    assert len(starts) == 1, lines


def test_short_tracebacks_unless_verbose_or_asked() -> None:
    """The default is short; -v, --verbose or an explicit --tb keeps pytest's choice."""

    def config(args: tuple[str, ...], tbstyle: str = "auto") -> Any:
        return type(
            "C",
            (),
            {
                "option": type("O", (), {"tbstyle": tbstyle})(),
                "invocation_params": type("P", (), {"args": args})(),
            },
        )()

    assert _hooks.short_tracebacks(config(("-q", "-k", "vault")))
    assert not _hooks.short_tracebacks(config(("-v",)))
    assert not _hooks.short_tracebacks(config(("-vv",)))
    assert not _hooks.short_tracebacks(config(("--verbose",)))
    assert not _hooks.short_tracebacks(config((), tbstyle="long"))


def test_a_failure_leads_with_its_requirement_message() -> None:
    """The requirement and why come before the traceback, whatever form pytest's holds."""
    from _pytest._code.code import ExceptionInfo
    from _pytest.reports import TestReport

    from conformance.outcomes import RequirementError, require

    try:
        require(False, "LOG-001", "a value in the log")
    except RequirementError:
        info = ExceptionInfo.from_current()
    longrepr = info.getrepr(style="short")
    report = TestReport("t", ("t", 0, "t"), {}, "failed", longrepr, "call")
    _hooks.lead_with(report, "LOG-001: a value in the log")
    text = str(report.longrepr)
    assert text.startswith("LOG-001: a value in the log\n"), text
    # The suite's own helper hides itself from the traceback.
    assert "def require" not in text
    assert "outcomes.py" not in text
    plain = TestReport("t", ("t", 0, "t"), {}, "failed", "Traceback ...", "call")
    _hooks.lead_with(plain, "LOG-001: \x1b[31mwhy")
    assert str(plain.longrepr) == "LOG-001: \\x1b[31mwhy\n\nTraceback ..."


def test_no_empty_table_when_every_selected_requirement_needs_attention() -> None:
    """A run whose every listed requirement failed says there is nothing else, with no empty
    table, in Markdown and on the HTML page."""
    from conformance import report_html

    check = CheckResult(
        "conformance/checks/test_o.py::test_o",
        ("ORD-004",),
        outcome=Outcome.FAIL,
        failed=("ORD-004",),
        detail="the vault was read",
    )
    report = _report([check], selection=("ORD-004",))
    markdown = render_markdown(report)
    assert "No other requirement in this run." in markdown
    assert "<details>" not in markdown
    page = report_html.page([report])
    assert "No other requirement in this run." in page
    assert "<details>" not in page
