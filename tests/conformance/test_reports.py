"""The reports: the JSON report validates against its schema, the JUnit XML carries vector and
requirement IDs, and no report, nor the terminal output, holds a canary in any form.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import jsonschema
import pytest

from conformance.canary import Detector, Guarded
from conformance.report import report_schema
from tests.conformance.suite_runs import SuiteRun, run_suite


def assert_no_canary(run: SuiteRun, *texts: str) -> None:
    """Fail if any report file or text holds any form of any canary of the run."""
    assert run.canaries, "the run minted no canaries, so the check would prove nothing"
    detector = Detector([Guarded(canary.label, canary.value) for canary in run.canaries])
    for path in (run.json_path, run.md_path, run.junit_path):
        content = path.read_text(encoding="utf-8")
        assert not detector.find(content), f"{path.name} holds a canary"
        assert not detector.find_hardening(content), f"{path.name} holds an encoded canary"
    for text in texts:
        assert not detector.find(text), "the terminal output holds a canary"


@pytest.mark.req("INV1")
def test_passing_run_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A passing run writes a schema-valid report, JUnit properties, and no canary anywhere."""
    run = run_suite(tmp_path, "--requirements", "INV1-ECHO,SCRUB-015,GRAM-014,APPR-007,FENCE-004")
    out = capsys.readouterr().out
    assert run.status == 0
    report = run.report()
    jsonschema.Draft202012Validator(report_schema()).validate(report)
    # A narrowed run: what it covered held, and it never says a plain "conformant" (S1.7).
    assert report["verdict"] == "conformant (narrowed)"
    assert report["exitCode"] == 0
    assert report["vectorsDigest"]
    assert report["host"]["name"]
    assert report["hardening"], "the hardening table is empty"
    outcomes = {item["id"]: item["outcome"] for item in report["requirements"]}
    assert outcomes["INV1-ECHO"] == "pass"
    assert outcomes["APPR-007"] == "accepted-alternative"
    assert outcomes["EXCL-001"] == "excluded"
    # A check that passed, took an alternative or missed a SHOULD explains no failure: the
    # placeholder a check carries until it is judged never outlives its judgment.
    passed = [c for c in report["checks"] if c["outcome"] in ("pass", "accepted-alternative")]
    assert passed
    assert [check["id"] for check in passed if check["detail"]] == []
    assert "secret-reference conformance" in out
    assert "verdict: conformant (only the checks of INV1-ECHO," in out
    # The file was written by this run's own pytest, so it is trusted input.
    root = ElementTree.parse(run.junit_path).getroot()  # noqa: S314
    # Each test case's properties are lines of its output, so the file stays xunit2-valid.
    lines = {line for out in root.iter("system-out") for line in (out.text or "").splitlines()}
    assert "secref requirement: GRAM-014" in lines
    assert any(line.startswith("secref vector: ") for line in lines)
    assert "# Conformance report" in run.md_path.read_text(encoding="utf-8")
    assert_no_canary(run, out)


@pytest.mark.req("INV1", "SCRUB-006")
def test_failing_run_reports_no_canary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that catches a leak names it by surface and form, and prints no canary."""
    run = run_suite(
        tmp_path,
        "--host",
        "mutant:pct20-not-scrubbed",
        "--requirements",
        "SCRUB-006",
        "--tb=long",
    )
    out = capsys.readouterr().out
    assert run.status == 1
    report = run.report()
    jsonschema.Draft202012Validator(report_schema()).validate(report)
    assert report["verdict"] == "not-conformant"
    failed = [check for check in report["checks"] if check["outcome"] == "fail"]
    assert failed
    assert any("SCRUB-006" in check["failedRequirements"] for check in failed)
    assert any("form d on the result" in (check["detail"] or "") for check in failed)
    assert_no_canary(run, out)


@pytest.mark.req("INV1")
def test_schema_is_a_valid_schema() -> None:
    """The report schema is itself a valid JSON Schema."""
    jsonschema.Draft202012Validator.check_schema(report_schema())
    assert json.dumps(report_schema())


def test_a_failing_test_beside_the_checks_is_a_harness_error(tmp_path: Path) -> None:
    """A test of the session that is not a conformance check failed: the report says a harness
    error, with the exit code pytest and the console script give (decisions S1.11)."""
    module = tmp_path / "test_beside_probe.py"
    module.write_text(
        "import pytest\n"
        "from conformance.scenario import config, make_secret\n\n\n"
        '@pytest.mark.req("APPR-003")\n'
        "def test_holds(host, mint):\n"
        "    host.reset(config([make_secret(mint)]))\n\n\n"
        "def test_not_a_check():\n"
        '    assert False, "a test of the project, not of the host"\n',
        encoding="utf-8",
    )
    (tmp_path / "out").mkdir()
    run = run_suite(tmp_path / "out", target=[str(module), "--rootdir", str(tmp_path)])
    report = run.report()
    assert run.status != 0
    assert report["verdict"] == "harness-error"
    assert report["exitCode"] == 2
    assert "a test that is not a conformance check failed" in report["problems"]
    # The file this test's own nested run just wrote: trusted input.
    junit = ElementTree.parse(run.junit_path).getroot()  # noqa: S314
    verdict = junit.find(".//testcase[@name='verdict']")
    assert verdict is not None
    failure = verdict.find("failure")
    assert failure is not None
    assert str(failure.text).startswith("exit code 2: harness-error")
