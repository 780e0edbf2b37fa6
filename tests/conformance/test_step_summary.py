"""The CI job summary: appended where $GITHUB_STEP_SUMMARY points, as the exit code says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import step_summary
from tests.conformance.suite_runs import console


def _console(tmp_path: Path, summary: Path, *arguments: str) -> int:
    done, _ = console(
        tmp_path,
        "--requirements",
        "SCRUB-001",
        *arguments,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    return done.returncode


@pytest.mark.usefixtures("full_model_budget")
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


def test_the_heading_is_inert_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict line names the run's narrowing, a -k expression included: the heading shows
    it as text, as the report below it does, never as markup."""
    from conformance import report

    monkeypatch.setattr(report, "render_markdown", lambda _report: "body\n")
    saved = tmp_path / "r.json"
    line = "conformant (narrowed: -k <img src=x> or *not_this*)"
    saved.write_text(json.dumps({"verdict": "conformant (narrowed)", "verdictLine": line}))
    heading = step_summary.render(saved, 0).splitlines()[0]
    assert heading == (
        "## secref-conformance: conformant (narrowed: -k &lt;img src=x&gt; or "
        "\\*not\\_this\\*) (exit code 0)"
    )
