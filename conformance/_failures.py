"""A failed requirement's traceback, drawn as pytest's short style draws it, without its cost.

A conformance run shows each failed check in pytest's short traceback style (conformance._hooks):
the check's line and the requirement's message. pytest draws each entry by parsing the whole
source file of that entry to find the statement around the line, afresh for every failure: on a
host that fails a thousand checks that was half of the run (42 s of a 42 s run with the drawing,
21 s without it, on two cores). A requirement failure needs no statement range: the short style
prints the one line the frame was on. :func:`short_repr` draws the same entries, the same lines
and the same crash location from the line cache, and leaves every other failure to pytest.

pytest's failure summary then looks, for each failure, through every passed setup and teardown
report of the run for that check's teardown output: a search that grows with failures times
checks (14 s of that run). :func:`drop_silent_phase_reports` keeps only the reports that have
teardown output to show, so the summary prints the same text.

It builds pytest's own report objects, so a parallel run's workers serialize it, the JUnit
writer reads its crash message and the terminal prints it as before. Those classes live in
pytest's private ``_pytest._code.code``; when they or the traceback filter move, the function
returns ``None`` and pytest draws the failure itself.
"""

from __future__ import annotations

import linecache
import os
from pathlib import Path
from typing import Any

import pytest

from conformance.outcomes import RequirementError


def short_repr(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> Any | None:
    """Return the short-style report of a requirement failure, or ``None`` to leave it to pytest.

    Only a :class:`RequirementError` with no exception chained to it is drawn here: a chain, a
    host error or a bug in a check keeps pytest's own drawing.

    Args:
        item: The failed check.
        excinfo: Its failure.
    """
    error = excinfo.value
    if not isinstance(error, RequirementError):
        return None
    if error.__cause__ is not None or (
        error.__context__ is not None and not error.__suppress_context__
    ):
        return None
    try:
        from _pytest._code.code import (
            ExceptionChainRepr,
            ReprEntry,
            ReprFileLocation,
            ReprTraceback,
        )
    except ImportError:  # pytest moved them: it draws the failure itself
        return None
    traceback_filter = getattr(item, "_traceback_filter", None)
    if traceback_filter is None:
        return None
    entries = list(traceback_filter(excinfo))
    if not entries:
        return None
    try:
        relative_to_cwd = Path(os.getcwd()) == item.config.invocation_params.dir
    except OSError:
        relative_to_cwd = False
    shown = [f"E   {line}" for line in excinfo.exconly(tryshort=True).split("\n")]
    drawn = []
    for index, entry in enumerate(entries):
        source = linecache.getline(str(entry.path), entry.lineno + 1).strip()
        lines = [f"    {source or '???'}"]
        if index == len(entries) - 1:
            lines.extend(shown)
        location = ReprFileLocation(
            _path(entry.path, relative_to_cwd), entry.lineno + 1, f"in {entry.name}"
        )
        drawn.append(ReprEntry(lines, None, None, location, "short"))
    crash = _crash(excinfo)
    return ExceptionChainRepr([(ReprTraceback(drawn, None, "short"), crash, None)])


def _path(path: Path | str, relative_to_cwd: bool) -> str:
    """Return ``path`` as pytest's short style shows it: relative to the working directory when
    that is shorter and the directory is still the one the run started in."""
    if relative_to_cwd:
        try:
            relative = os.path.relpath(path)
        except (OSError, ValueError):
            return str(path)
        if len(relative) < len(str(path)):
            return relative
    return str(path)


def _crash(excinfo: pytest.ExceptionInfo[BaseException]) -> Any | None:
    """Return the crash location pytest would: the innermost frame not hidden from tracebacks,
    or ``None`` when every frame is hidden."""
    from _pytest._code.code import ReprFileLocation

    for entry in reversed(excinfo.traceback):
        if not entry.ishidden(excinfo):
            return ReprFileLocation(
                str(entry.frame.code.raw.co_filename),
                entry.lineno + 1,
                excinfo.exconly(tryshort=True),
            )
    return None


def drop_silent_phase_reports(config: pytest.Config) -> None:
    """Keep, of the terminal's passed setup and teardown reports, those with teardown output.

    pytest's terminal keeps those reports under the empty category and reads them only to print
    a failed check's teardown output, which it takes from sections whose name says teardown.
    Called before the terminal's summary; a terminal without that list is left alone.
    """
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None)
    if not isinstance(stats, dict):
        return
    phases = stats.get("")
    if isinstance(phases, list) and phases:
        phases[:] = [
            report
            for report in phases
            if any("teardown" in name for name, _ in getattr(report, "sections", ()))
        ]
