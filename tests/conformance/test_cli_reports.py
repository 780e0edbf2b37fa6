"""The console script writes only the reports asked for, refuses a bad expectations file by line
and column, and lists what the suite holds.

When no report is asked for, the JSON and Markdown reports go to ``reports/``; asking for any
of ``--report-json``, ``--report-md`` and ``--junit-xml`` writes only those. One narrowed run in
a subprocess shows it end to end; the rest is checked in process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import cli, expectations, listing, report


def _options(*argv: str) -> argparse.Namespace:
    return cli._parser().parse_args(list(argv))


def test_no_report_asked_writes_both_defaults() -> None:
    assert cli._reports(_options()) == (cli.DEFAULT_JSON, cli.DEFAULT_MD, [])


def test_asking_for_one_report_writes_only_that_one(tmp_path: Path) -> None:
    json_path, md_path, xml_path = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.xml"
    assert cli._reports(_options("--report-json", str(json_path))) == (json_path, None, [])
    assert cli._reports(_options("--report-md", str(md_path))) == (None, md_path, [])
    assert cli._reports(_options("--junit-xml", str(xml_path))) == (
        None,
        None,
        [f"--junitxml={xml_path}"],
    )


@pytest.mark.slow
def test_a_run_asked_for_json_and_junit_writes_no_markdown(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "--report-json",
            "out/r.json",
            "--junit-xml",
            "out/r.xml",
            "--requirements",
            "APPR-003",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["r.json", "r.xml"]
    assert not (tmp_path / "reports").exists()
    assert "<testsuite" in (tmp_path / "out" / "r.xml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("bad.yaml", "version: 1\nknownFailures:\n  - [a\n", "line 4 column 1: expected ','"),
        ("bad.json", '{"version": 1,\n "x": }', "line 2 column 7: Expecting value"),
    ],
)
def test_a_bad_expectations_file_is_named_by_line_and_column(
    tmp_path: Path, name: str, text: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(expectations.ExpectationsError, match=where):
        expectations.load(path)
    assert cli._main(["--expectations", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    kind = "JSON" if name.endswith(".json") else "YAML"
    assert err.startswith(
        f"secref-conformance: --expectations: {path} is not valid {kind}: {where}"
    )
    assert err.count("\n") == 1
    assert "Error" not in err  # the message, not an exception class


def test_list_requirements_gives_every_requirement_a_short_title() -> None:
    from conformance.catalog import load_catalog

    rows = listing.requirement_rows()
    assert [row[0] for row in rows] == list(load_catalog().ids())
    assert all(0 < len(row[2]) <= listing.TITLE_WIDTH and "\n" not in row[2] for row in rows)
    assert listing.short("word " * 40).endswith("…")
    assert len(listing.short("word " * 40)) == listing.TITLE_WIDTH


def test_list_mutants_names_what_each_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.selftest.catalog import MUTANTS

    assert listing.main(["mutants"]) == 0
    out, err = capsys.readouterr()
    rows = [line.split("\t") for line in out.splitlines()]
    assert [row[0] for row in rows] == [mutant.name for mutant in MUTANTS]
    assert all(len(row) == 4 and row[1] and row[3] for row in rows)
    assert err == f"{len(MUTANTS)} mutants\n"


@pytest.mark.slow
def test_list_checks_gives_every_check_with_its_requirements() -> None:
    rows = listing.check_rows()
    assert len(rows) > 100
    assert all(row[0].startswith("conformance/checks/") and row[1] for row in rows)
    assert len({row[0] for row in rows}) == len(rows)


def test_the_closing_line_is_the_reports_verdict_line_and_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console script's last line prints the kernel's verdict line, narrowing and early
    stop named, and the report's exit code, which it returns (decisions S1.7, S1.11)."""
    report_json = tmp_path / "r.json"
    written = {
        "verdict": "incomplete",
        "verdictLine": "incomplete (only the checks of LEDG-004) (stopped early)",
        "exitCode": 1,
        "durationS": 2.0,
    }

    def main(arguments: list[str]) -> int:
        report.write_json(written, report_json, ())
        return int(pytest.ExitCode.TESTS_FAILED)

    monkeypatch.setattr(pytest, "main", main)
    assert cli.run(None, report_json, keep_json=False) == 1
    assert capsys.readouterr().out == (
        "secref-conformance: incomplete (only the checks of LEDG-004) (stopped early) "
        "(exit code 1) in 2.0 s\n"
    )


def test_a_report_another_run_overwrote_is_a_harness_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs side by side with one report path: the run whose file now holds the other's
    report neither takes that report's exit code nor passes; it says what happened, its own
    verdict, and how to avoid it (decisions S1)."""
    report_json = tmp_path / "r.json"
    mine = {"verdict": "not-conformant", "verdictLine": "not-conformant", "exitCode": 1}
    theirs = {"verdict": "conformant", "verdictLine": "conformant", "exitCode": 0}

    def main(arguments: list[str]) -> int:
        report.write_json(mine, report_json, ())
        # The other run writes the same path as this one ends.
        report_json.write_text(json.dumps(theirs), encoding="utf-8")
        return int(pytest.ExitCode.TESTS_FAILED)

    monkeypatch.setattr(pytest, "main", main)
    assert cli.run(None, report_json, keep_json=False) == cli.HARNESS_FAILURE
    said = capsys.readouterr()
    assert said.out == ""
    assert "now holds another run's report" in said.err
    assert "--report-json" in said.err
    assert "not-conformant (exit code 1)" in said.err


def test_a_report_is_replaced_whole(tmp_path: Path) -> None:
    """A report is written to a file of its own and renamed over the old one: a reader sees
    the old report or the new one, never half of either, and no temporary file stays."""
    report_json = tmp_path / "r.json"
    report_json.write_text("old", encoding="utf-8")
    before = report_json.stat().st_ino
    report.write_json({"verdict": "conformant", "exitCode": 0}, report_json, ())
    assert report_json.stat().st_ino != before
    assert json.loads(report_json.read_text(encoding="utf-8"))["exitCode"] == 0
    assert [path.name for path in tmp_path.iterdir()] == ["r.json"]
    assert report.written_here(report_json) == report_json.read_text(encoding="utf-8")
    # Only the last report is kept in memory: a process that runs the suite hundreds of times
    # (the self-test, these tests) keeps one report, not hundreds.
    other = tmp_path / "other.json"
    report.write_json({"verdict": "incomplete", "exitCode": 1}, other, ())
    assert report.written_here(report_json) is None
    assert report.written_here(other) == other.read_text(encoding="utf-8")
