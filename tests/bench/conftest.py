"""Shared set-up for the loose-bound cost checks: their figures, printed after the run.

pytest captures what a passing test prints, so the checks hand their figures to the
``cost_figures`` fixture instead, and this module prints them in the terminal summary, the way
the design's overhead test prints its two numbers on every run.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

_KEY = pytest.StashKey[list[str]]()


@pytest.fixture
def cost_figures(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> Callable[[str, str], None]:
    """Return a function that records one named figure for the summary and the JUnit report."""
    lines = request.config.stash.setdefault(_KEY, [])

    def record(name: str, text: str) -> None:
        record_property(name, text)
        lines.append(f"{name}: {text}")

    return record


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the cost figures the checks recorded, if any ran."""
    lines = terminalreporter.config.stash.get(_KEY, [])
    if lines:
        terminalreporter.section("cost figures (loose bounds; see docs/benchmarks.md)")
        for line in lines:
            terminalreporter.write_line(line)
