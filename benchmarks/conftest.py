"""pytest set-up for the benchmarks: every benchmark runs with the same timer and round rules.

The rules sit here, not on the command line, so that ``pytest benchmarks`` and
``python -m benchmarks.report`` measure alike: at least 20 rounds, the median reported, and
garbage collection off during a round so that a collection does not land in one benchmark and
not its baseline.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Raise the round floor and turn collection off while a round runs, unless the user chose."""
    option = config.option
    if getattr(option, "benchmark_min_rounds", None) == 5:  # pytest-benchmark's default
        option.benchmark_min_rounds = 20
    if hasattr(option, "benchmark_disable_gc"):
        option.benchmark_disable_gc = True
