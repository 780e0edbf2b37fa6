"""A framework whose Python (or node) is missing is named in one line and reported not run.

This module owns the check of ``conformance.frameworks.envs`` without any install: with a
framework pinned to a Python no machine has, or an npm framework on a machine without node and
npm, the env step says so in one line, builds nothing, and the matrix it runs reports that
framework as not run, with the reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conformance.frameworks import envs


def test_a_missing_python_is_one_line_and_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = envs.Pinned("nowhere", "conformance.frameworks.askui", "askui==0.48.0", "2.9")
    monkeypatch.setattr(envs, "FRAMEWORKS", (missing,))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    out = tmp_path / "r"
    code = envs.main(
        ["--root", str(tmp_path / "venvs"), "--report-json", str(out / "f.json"),
         "--report-md", str(out / "f.md")]
    )  # fmt: skip
    assert code == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "nowhere" in line]
    assert lines[0] == "nowhere: no Python 2.9 on this machine"
    document = json.loads((out / "f.json").read_text("utf-8"))
    assert document["frameworks"] == []
    assert document["installs"] == []
    assert document["notRun"] == ["nowhere: no Python 2.9 on this machine"]
    assert "| nowhere | | not run |" in (out / "f.md").read_text("utf-8")
    assert not (tmp_path / "venvs").exists()


def test_an_npm_framework_without_node_is_one_line_and_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    document = _run_playwright_only(tmp_path)
    line = "playwright-mcp: no node and no npm on this machine"
    assert capsys.readouterr().out.splitlines()[0] == line
    assert (document["frameworks"], document["notRun"]) == ([], [line])
    assert not (tmp_path / "prefixes").exists()


@pytest.mark.parametrize(
    ("stderr", "cause"),
    [
        (
            b"npm warn x\nnpm error code ETIMEDOUT\nnpm error network request failed\n",
            ": npm error code ETIMEDOUT",
        ),
        ("Collecting x\nERROR: No matching distribution found for x==9\nmore\n", ": ERROR: No"),
        ("a\nthe last line \x1b[31mred\n", ": the last line [31mred"),
        ("", ""),
    ],
)
def test_a_failed_install_says_why_in_its_one_line(stderr: str | bytes, cause: str) -> None:
    note = envs.install_failed("playwright-mcp", 1, stderr)
    assert note.startswith(f"playwright-mcp: the install failed (exit 1){cause}")
    assert "\n" not in note
    assert "\x1b" not in note
    assert len(note) <= len("playwright-mcp: the install failed (exit 1): ") + envs.CAUSE_CHARS


def test_a_failed_npm_install_names_its_cause_and_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(envs, "CHROMIUM", Path(__file__))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())

    def fail(step: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        return subprocess.CompletedProcess(step, 1, b"", b"npm error code E404\nnpm error 404\n")

    monkeypatch.setattr(subprocess, "run", fail)
    document = _run_playwright_only(tmp_path)
    line = "playwright-mcp: the install failed (exit 1): npm error code E404"
    assert capsys.readouterr().out.splitlines()[0] == line
    assert (document["frameworks"], document["notRun"]) == ([], [line])


def _run_playwright_only(tmp_path: Path) -> dict[str, Any]:
    """Run the env step for Playwright MCP alone, under ``tmp_path``; return its JSON report."""
    out = tmp_path / "r"
    code = envs.main(
        ["--root", str(tmp_path / "prefixes"), "--only", "playwright-mcp",
         "--report-json", str(out / "f.json"), "--report-md", str(out / "f.md")]
    )  # fmt: skip
    assert code == 0
    document: dict[str, Any] = json.loads((out / "f.json").read_text("utf-8"))
    return document
