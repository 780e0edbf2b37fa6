"""A pytest plugin the run-overhead benchmark loads into one suite run, to time it from inside.

This module owns three figures of one run: the wall-clock moment its first check's body began,
the sum of every check body's own time (pytest's call phase), and how many checks ran. It
writes them as JSON to the file ``SECREF_PROBE`` names when pytest ends, and never changes what
the run does or reports.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

#: The environment variable naming the file the figures go to.
PROBE_ENV = "SECREF_PROBE"

_figures: dict[str, Any] = {"firstCheckAt": None, "bodies": 0.0, "checks": 0}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Note when the first check's body began, as wall-clock time."""
    if _figures["firstCheckAt"] is None:
        _figures["firstCheckAt"] = time.time()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add each check body's own time."""
    if report.when == "call":
        _figures["bodies"] += report.duration
        _figures["checks"] += 1


def pytest_unconfigure(config: pytest.Config) -> None:
    """Write the figures where the benchmark asked for them."""
    path = os.environ.get(PROBE_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_figures, handle)
