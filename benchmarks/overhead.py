"""What a whole in-process conformance run costs beyond its checks, measured from outside.

This module owns the run-overhead figures of the benchmark report: one ``secref-conformance``
run against the in-process reference host, launched as a user launches it, with a probe plugin
(:mod:`benchmarks._probe`) timing it from inside. It reports the whole run's wall time as a
multiple of the sum of the check bodies' own time, and the seconds from launch to the first
check's body, both taken in that one run. It never asserts a time: the report compares them
with their targets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from benchmarks._probe import PROBE_ENV

#: A whole run may take at most this multiple of its check bodies' own time.
RUN_OVERHEAD_TARGET: Final = 3.0
#: The first check's body must begin within this many seconds of launch.
FIRST_CHECK_TARGET: Final = 3.0


@dataclass(frozen=True, slots=True)
class RunCost:
    """One whole run's figures, in seconds."""

    wall: float
    bodies: float
    first_check: float
    checks: int
    status: int

    @property
    def ratio(self) -> float:
        """The whole run's wall time as a multiple of its check bodies' own time."""
        return self.wall / self.bodies if self.bodies else float("inf")


def measure_run(extra: tuple[str, ...] = ()) -> RunCost:
    """Launch one in-process suite run as a user would and return its figures.

    Args:
        extra: Further pytest arguments (for example ``-k`` to time a part of the suite).

    Returns:
        The run's wall time, the sum of its check bodies' time, the seconds from launch to the
        first check's body, how many checks ran, and the run's exit status.
    """
    with tempfile.TemporaryDirectory(prefix="secref-overhead-") as directory:
        probe = Path(directory) / "probe.json"
        environment = {**os.environ, PROBE_ENV: str(probe)}
        command = [
            sys.executable,
            "-m",
            "conformance.cli",
            "--report-json",
            str(Path(directory) / "report.json"),
            "--report-md",
            str(Path(directory) / "report.md"),
            "--",
            "-p",
            "benchmarks._probe",
            *extra,
        ]
        launched = time.time()
        done = subprocess.run(
            command, env=environment, capture_output=True, check=False, cwd=os.getcwd()
        )
        wall = time.time() - launched
        figures = json.loads(probe.read_text(encoding="utf-8")) if probe.exists() else {}
    first = figures.get("firstCheckAt")
    return RunCost(
        wall=wall,
        bodies=float(figures.get("bodies", 0.0)),
        first_check=(first - launched) if first else float("inf"),
        checks=int(figures.get("checks", 0)),
        status=done.returncode,
    )
