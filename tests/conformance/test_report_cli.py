"""``secref-conformance report``: a saved JSON report shown again, several side by side, and
the self-contained HTML page, opened in a real headless Chromium when there is one.

Reports are built from check records (:func:`conformance.report.build_report`) and written
with :func:`conformance.report.write_json`, as a run writes them, so no test runs the suite.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from conformance import cli, report_cli, report_html
from conformance.report import render_markdown, summary_lines, write_json
from tests.conformance.test_report_views import _mixed

#: A host name that would run a script, were it written into the page as markup.
HOSTILE = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED'\">"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "no chromium on PATH (Debian: apt-get install -y chromium)"


def _saved(tmp_path: Path, name: str = "a.json", host: str = "h") -> Path:
    report = _mixed()
    report["host"]["name"] = host
    path = tmp_path / name
    write_json(report, path, canaries=())
    return path


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    return report_cli.main(args, stdout=out), out.getvalue()


def test_formats_rerender_the_saved_report(tmp_path: Path) -> None:
    """terminal and markdown are exactly what the run printed and wrote."""
    path = _saved(tmp_path)
    report = json.loads(path.read_text())
    code, out = _run([str(path), "--color", "no"])
    assert code == 0
    assert out == "\n".join(summary_lines(report, [])) + "\n"
    code, out = _run([str(path), "--format", "markdown"])
    assert (code, out) == (0, render_markdown(report))


def test_the_console_script_dispatches_report(tmp_path: Path, capsys: Any) -> None:
    """``secref-conformance report FILE`` reaches the subcommand."""
    assert cli.main(["report", str(_saved(tmp_path)), "--format", "problems"]) == 0
    assert capsys.readouterr().out.startswith("verdict: not-conformant (exit code 1)\n")


def test_problems_shows_only_what_went_wrong(tmp_path: Path) -> None:
    """The problems format keeps the verdict, the failed and unchecked rows, and the causes,
    and drops the held requirement."""
    code, out = _run([str(_saved(tmp_path)), "--format", "problems", "--color", "no"])
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == lines[-1] == "verdict: not-conformant (exit code 1)"
    assert any(line.lstrip().startswith("ORD-004") for line in lines)
    assert any(line.lstrip().startswith("VAULT-003") for line in lines)
    assert "20 checks failed: the vault was read" in lines
    assert not any(line.lstrip().startswith("LOG-001") for line in lines)


def test_junit_has_every_check_and_the_verdict(tmp_path: Path) -> None:
    """The JUnit format is XML with one case per check and a failing verdict case."""
    code, out = _run([str(_saved(tmp_path)), "--format", "junit"])
    assert code == 0
    root = ElementTree.fromstring(out.encode())  # noqa: S314 (the suite's own text)
    cases = list(root.iter("testcase"))
    assert len(cases) == 23
    verdict = [case for case in cases if case.get("name") == "verdict"]
    assert len(verdict) == 1
    failure = verdict[0].find("failure")
    assert failure is not None
    assert failure.get("message") == "not-conformant"
    assert sum(1 for case in cases if case.find("failure") is not None) == 21
    # Each requirement is a property of the suite, its title beside its ID, as in a run's file.
    properties = {item.get("name"): item.get("value") for item in root.iter("property")}
    assert properties["secref-verdict"] == "not-conformant"
    assert str(properties["requirement:ORD-004"]).endswith(
        "): Kill-switch and tool RBAC come first"
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "not JSON (Expecting value at line 1 column 1)"),
        ('{"format": 1}', "not a conformance report: at /: 'suite' is a required property"),
        (None, "cannot be read"),
    ],
)
def test_a_bad_file_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, capsys: Any, content: str | None, said: str
) -> None:
    """A file that is missing, not JSON or not a report is refused in one line."""
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    assert report_cli.main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert said in captured.err


def test_a_broken_report_field_is_refused(tmp_path: Path, capsys: Any) -> None:
    """A report whose exit code is not one of the kernel's is refused, naming where."""
    path = _saved(tmp_path)
    report = json.loads(path.read_text())
    report["exitCode"] = "zero"
    path.write_text(json.dumps(report))
    assert report_cli.main([str(path)]) == 2
    assert "at /exitCode" in capsys.readouterr().err


def test_colour_on_a_tty_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto colours a terminal, not a pipe, and never when NO_COLOR is set."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert report_cli.use_colour("auto", Tty())
    assert not report_cli.use_colour("auto", io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not report_cli.use_colour("auto", Tty())
    assert report_cli.use_colour("yes", io.StringIO())
    painted = report_cli.paint(report_cli.problem_lines(_mixed()), True)
    assert painted.startswith("\x1b[1;31mverdict: not-conformant")


def test_compare_prints_hosts_by_requirements(tmp_path: Path) -> None:
    """One row per listed requirement, one column per host, each cell that host's outcome."""
    first = _saved(tmp_path, "a.json", "alpha")
    second = tmp_path / "b.json"
    report = _mixed()
    report["host"]["name"] = "beta"
    report["requirements"][0]["outcome"] = "pass"
    write_json(report, second, canaries=())
    code, out = _run(["--compare", str(first), str(second), "--color", "no"])
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("  H1 alpha 1 via driver: verdict: not-conformant")
    assert lines[2].startswith("  H2 beta 1 via driver")
    row = next(line for line in lines if line.startswith("ORD-004"))
    assert row.split()[1:3] == ["fail", "pass"]
    code, out = _run(["--compare", str(first), str(second), "--format", "markdown"])
    assert "| ORD-004 | Kill-switch and tool RBAC come first | fail | pass |" in out


def test_several_files_need_compare(tmp_path: Path, capsys: Any) -> None:
    """Two files without --compare is a usage error."""
    path = _saved(tmp_path)
    assert report_cli.main([str(path), str(path)]) == 2
    assert "--compare" in capsys.readouterr().err


def test_the_html_page_fetches_nothing_and_escapes_host_text(tmp_path: Path) -> None:
    """The page loads nothing, allows no script, and shows a hostile host name as text."""
    page_path = tmp_path / "page.html"
    code, _out = _run([str(_saved(tmp_path, host=HOSTILE)), "--html", str(page_path)])
    assert code == 0
    page = page_path.read_text()
    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;document.title=&#x27;PWNED&#x27;&lt;/script&gt;" in page
    assert not re.search(r"(src|href)=\"(?!#)", page)
    assert "<link" not in page
    assert "http://" not in page
    assert "https://" not in page
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    rules = html.unescape(policy.group(1))
    assert "script-src 'none'" in rules
    assert "default-src 'none'" in rules


def _dump(page: str, tmp_path: Path) -> str:
    """Return the DOM Chromium built from ``page``, after any script it ran."""
    assert CHROMIUM is not None
    path = tmp_path / "page.html"
    path.write_text(page)
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_chromium_renders_the_verdict_and_runs_no_host_script(tmp_path: Path) -> None:
    """Chromium shows the verdict, and the title stays the page's own: no script ran."""
    report = _mixed()
    report["host"]["name"] = HOSTILE
    dom = _dump(report_html.page([report, _mixed()]), tmp_path)
    assert "<title>Secret-reference conformance</title>" in dom
    assert "PWNED</title>" not in dom
    assert "verdict: not-conformant (exit code 1)" in dom


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_chromium_check_sees_a_script_run(tmp_path: Path, monkeypatch: Any) -> None:
    """The same check catches a page that writes host text raw and allows scripts."""
    monkeypatch.setattr(report_html, "text", str)
    monkeypatch.setattr(report_html, "CSP", "default-src *; script-src 'unsafe-inline'")
    report = _mixed()
    report["host"]["name"] = HOSTILE
    dom = _dump(report_html.page([report]), tmp_path)
    assert "<title>PWNED</title>" in dom


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_chromium_screenshot_of_the_matrix(tmp_path: Path) -> None:
    """A screenshot of the page is a PNG of some size: the page paints."""
    path = tmp_path / "page.html"
    path.write_text(report_html.page([_mixed(), _mixed()]))
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,700",
            f"--screenshot={shot}",
            path.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 700)
    assert len(data) > 20_000  # a blank page compresses to a few kilobytes
