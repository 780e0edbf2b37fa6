"""The console script's exit codes: 0 conformant, 1 not conformant, 2 harness error, and a run
in which no check executed is a harness error. Each runs ``secref-conformance`` as a user does,
in a subprocess, narrowed to a few requirements to stay quick.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def secref_conformance(tmp_path: Path, *arguments: str) -> tuple[int, str, dict[str, Any]]:
    """Run the console script; return its exit code, its output and its JSON report."""
    report = tmp_path / "out" / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "--report-json",
            str(report),
            "--report-md",
            str(tmp_path / "out" / "report.md"),
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, done.stdout + done.stderr, data


@pytest.mark.req("INV1")
def test_conformant_host_exits_0(tmp_path: Path) -> None:
    """The reference host passes: exit 0, a report and the summary."""
    code, out, report = secref_conformance(tmp_path, "--requirements", "APPR-003,MSG-011")
    assert code == 0, out[-2000:]
    assert report["verdict"] == "conformant (narrowed)"
    assert "verdict: conformant (only the checks of APPR-003, MSG-011)" in out


@pytest.mark.req("SCRUB-001")
def test_mutant_exits_1(tmp_path: Path) -> None:
    """A host that breaks a MUST fails: exit 1, naming the requirement."""
    code, out, report = secref_conformance(
        tmp_path, "--host", "mutant:floor-nine", "--requirements", "SCRUB-001"
    )
    assert code == 1, out[-2000:]
    assert report["verdict"] == "not-conformant"
    assert "SCRUB-001" in out


@pytest.mark.req("INV1")
def test_unknown_host_exits_2(tmp_path: Path) -> None:
    """A --host that names no host is a harness error."""
    code, out, _report = secref_conformance(
        tmp_path, "--host", "mutant:no-such-mutant", "--requirements", "APPR-003"
    )
    assert code == 2, out[-2000:]


@pytest.mark.req("INV1")
def test_no_check_executed_exits_2(tmp_path: Path) -> None:
    """A run in which every check was deselected is a harness error, not a pass."""
    code, out, report = secref_conformance(
        tmp_path, "--requirements", "APPR-003", "--", "-k", "no_such_check_name"
    )
    assert code == 2, out[-2000:]
    assert report["verdict"] == "harness-error"
    assert "no conformance check executed" in report["problems"]


@pytest.mark.req("INV1")
def test_unknown_requirement_selection_exits_2(tmp_path: Path) -> None:
    """Selecting a requirement ID the catalog does not hold is a harness error."""
    code, out, _report = secref_conformance(tmp_path, "--requirements", "NOPE-999")
    assert code == 2, out[-2000:]
