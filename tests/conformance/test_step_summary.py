"""The CI job summary: appended where $GITHUB_STEP_SUMMARY points, as the exit code says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import step_summary


def _console(tmp_path: Path, summary: Path, *arguments: str) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "--requirements", "SCRUB-001", *arguments],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PY_COLORS="0", GITHUB_STEP_SUMMARY=str(summary)),
        timeout=300,
        check=False,
    )
    return done.returncode


def test_a_run_in_a_github_job_appends_its_verdict_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $GITHUB_STEP_SUMMARY set, the summary gets the verdict line, the exit code and the
    Markdown report, after what was there; --no-step-summary leaves it alone."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    code = _console(tmp_path, summary, "--report-json", str(tmp_path / "r.json"))
    text = summary.read_text(encoding="utf-8")
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert text.startswith("earlier step\n")
    assert f"## secref-conformance: {report['verdictLine']} (exit code {code})" in text
    assert "# Conformance report" in text
    # A report longer than a summary holds is cut, and says so.
    monkeypatch.setattr(step_summary, "MAX_BYTES", 200)
    assert "(report cut here;" in step_summary.render(tmp_path / "r.json", code)
    before = summary.read_text(encoding="utf-8")
    _console(tmp_path, summary, "--no-step-summary")
    assert summary.read_text(encoding="utf-8") == before


def test_a_broken_host_appends_a_red_heading(tmp_path: Path) -> None:
    """A mutant's run says not-conformant with exit code 1 in the summary, as the exit code does."""
    summary = tmp_path / "summary.md"
    code = _console(tmp_path, summary, "--host", "mutant:floor-nine")
    assert code == 1
    assert "(exit code 1)" in summary.read_text(encoding="utf-8").splitlines()[0]


def test_no_report_and_a_long_report(tmp_path: Path) -> None:
    """No JSON report: a harness-error heading; the summary file is the one asked for, else
    $GITHUB_STEP_SUMMARY unless refused."""
    assert "harness-error (exit code 2)" in step_summary.render(tmp_path / "missing.json", 2)
    assert step_summary.target(None, False, {}) is None
    assert step_summary.target(None, True, {"GITHUB_STEP_SUMMARY": "x"}) is None
    assert step_summary.target(None, False, {"GITHUB_STEP_SUMMARY": "x"}) == Path("x")
