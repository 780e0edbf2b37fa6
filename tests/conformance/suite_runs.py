"""Run the conformance suite for tests of the harness: in this process, or as the console script.

This module owns two helpers: :func:`run_suite`, a nested pytest session over
``conformance.checks`` (or a given path) with the plugin's report options, returning the exit
status and the JSON report; and :func:`console`, ``secref-conformance`` in a process of its
own, returning what it printed and how long it took. Neither prints a value; tests grep their
outputs for canaries.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.canary import Canary, issued_canaries


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """One nested run: its pytest status, its report files and the canaries it minted."""

    status: int
    json_path: Path
    md_path: Path
    junit_path: Path
    canaries: tuple[Canary, ...]

    def report(self) -> dict[str, Any]:
        """Return the JSON report."""
        loaded: dict[str, Any] = json.loads(self.json_path.read_text(encoding="utf-8"))
        return loaded

    def failed_requirements(self) -> set[str]:
        """Return the requirement IDs the report's failed checks named."""
        return {
            rid
            for check in self.report()["checks"]
            if check["outcome"] == "fail"
            for rid in check["failedRequirements"]
        }


def run_suite(tmp_path: Path, *arguments: str, target: Sequence[str] = ()) -> SuiteRun:
    """Run the suite (or ``target``) in a nested pytest session with every report written."""
    before = len(issued_canaries())
    json_path, md_path, junit_path = (
        tmp_path / "report.json",
        tmp_path / "report.md",
        tmp_path / "junit.xml",
    )
    where = list(target) or ["--pyargs", "conformance.checks"]
    # This worker's heap (every module imported, every earlier test's leftovers) is frozen for
    # the nested run: pytest collects garbage as a session ends, which would otherwise walk all
    # of it again, run after run (test_variants.py in one process: 117 s of CPU, 94 s frozen).
    # Thawed after, so nothing outlives the run frozen; the run's garbage is collected as before.
    gc.freeze()
    try:
        status = pytest.main(
            [
                *where,
                "-q",
                "-p",
                "no:cacheprovider",
                "-W",
                "ignore::pytest.PytestAssertRewriteWarning",
                "--report-json",
                str(json_path),
                "--report-md",
                str(md_path),
                "--junitxml",
                str(junit_path),
                *arguments,
            ]
        )
    finally:
        gc.unfreeze()
    return SuiteRun(int(status), json_path, md_path, junit_path, issued_canaries()[before:])


def console(
    tmp_path: Path,
    *arguments: str,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``secref-conformance`` with ``arguments`` in ``tmp_path``, without colour and with
    ``env`` added to this process's environment; return it and the seconds it took."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", *arguments],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {}), "PY_COLORS": "0"},
        timeout=timeout,
        check=False,
    )
    return done, time.monotonic() - started
