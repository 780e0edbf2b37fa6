"""End to end: a broken adapter gives a finished report with errors that name the cause.

Each test runs the console script in a subprocess against a tiny broken adapter, on a narrow
requirement selection, with a short host timeout, and bounds the wall time: a hung, crashing or
garbage-writing host must end the run with exit status 2 and a complete report, never a hang.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import _barrier
from conformance.report import report_schema
from tests.conformance.suite_runs import console

BROKEN = Path(__file__).parent / "broken_hosts" / "broken_host.py"

#: Generous against a loaded runner; a hang without the harness's timeouts takes an hour.
WALL_LIMIT_S = 90.0


def run_cli(tmp_path: Path, mode: str, *extra: str) -> tuple[int, str, dict[str, Any] | None]:
    """Run the suite against the broken adapter in ``mode``; return status, output, report."""
    report = tmp_path / "report.json"
    done, seconds = console(
        tmp_path,
        "--host",
        f"{sys.executable} {BROKEN} {mode}",
        "--host-timeout",
        "0.3",
        "--host-start-timeout",
        "2",
        "--report-json",
        str(report),
        "--report-md",
        str(tmp_path / "report.md"),
        *extra,
        timeout=WALL_LIMIT_S,
    )
    assert seconds < WALL_LIMIT_S
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    return done.returncode, done.stdout + done.stderr, data


def _checked(report: dict[str, Any] | None) -> dict[str, Any]:
    assert report is not None, "no report was written"
    from jsonschema import Draft202012Validator

    Draft202012Validator(report_schema()).validate(report)
    assert report["verdict"] == "harness-error"
    assert report["exitCode"] == 2
    return report


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("stall", "did not answer configure within 0.3 s"),
        ("crash", "exited with status 3; its standard error ends: broken host: giving up"),
        ("garbage", "wrote a line that is not protocol: 'this is not protocol ###"),
    ],
)
def test_broken_host_gives_finished_report(tmp_path: Path, mode: str, cause: str) -> None:
    """Every check that met the broken host is errored with the cause; the report is whole."""
    status, output, data = run_cli(tmp_path, mode, "--requirements", "VAULT-003")
    report = _checked(data)
    assert status == 2, output[-2000:]
    # The late-output barrier's check searched what the host wrote on standard error.
    checks = [check for check in report["checks"] if check["id"] != _barrier.NODE_ID]
    outcomes = {check["outcome"] for check in checks}
    assert outcomes <= {"error", "skipped"}
    assert "error" in outcomes
    details = [check["detail"] or "" for check in checks if check["outcome"] == "error"]
    assert any(cause in detail for detail in details), details[:3]
    assert (tmp_path / "report.md").exists()
    if mode == "stall":
        # After a few hangs the rest of the run errors at once instead of waiting again.
        assert sum("abandoned" in detail for detail in details) >= len(details) - 3


def test_version_mismatch_is_a_harness_error(tmp_path: Path) -> None:
    """A host speaking another protocol version stops the run with exit status 2."""
    status, output, data = run_cli(tmp_path, "version", "--requirements", "VAULT-003")
    assert status == 2
    assert "does not speak driver protocol 1" in output or "speaks driver protocol 2" in output
    if data is not None:
        assert data["verdict"] == "harness-error"
        assert not any(
            check["outcome"] in ("pass", "fail")
            for check in data["checks"]
            if check["id"] != _barrier.NODE_ID
        )
