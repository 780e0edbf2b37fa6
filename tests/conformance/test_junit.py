"""The JUnit file agrees with the verdict (decisions S1.11), and a narrowed run says so (S1.7).

Each run writes its JUnit file through pytest's own writer; the file is validated against the
xunit2 schema, read back with junitparser, as a CI dashboard would, and its counts, skips,
errors and the verdict test case are held to the JSON report's verdict and exit code
(:mod:`tests.conformance.junit_file`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import junitparser
import pytest

from conformance.junit import SUITE_NAME, VERDICT_CASE, JunitVerdict, case_key, rewrite
from conformance.report import NARROWED, verdict_text
from tests.conformance.junit_file import assert_agrees, read_suite, schema_errors
from tests.conformance.suite_runs import SuiteRun, run_suite

PYTHON = sys.executable
BROKEN_HOST = Path(__file__).parent / "broken_hosts" / "broken_host.py"


def _suite(run: SuiteRun) -> junitparser.TestSuite:
    """Return the one test suite of the run's JUnit file, held to the run's report and exit
    code: valid, its counts the run's own, its verdict case red exactly when the gate is."""
    report = run.report()
    return assert_agrees(run.junit_path, report, JunitVerdict.exit_code(report, run.status))


def _verdict_case(suite: junitparser.TestSuite) -> junitparser.TestCase:
    """Return the verdict's test case, which every rewritten file holds once."""
    found = [case for case in suite if case.classname == SUITE_NAME and case.name == VERDICT_CASE]
    assert len(found) == 1
    return found[0]


def _kinds(case: junitparser.TestCase) -> list[str]:
    return sorted(type(result).__name__ for result in case.result)


@pytest.mark.req("INV1")
def test_passing_run_has_a_passing_verdict_case(tmp_path: Path) -> None:
    """A run of a narrowed selection that held: no failure, and the verdict case passes."""
    run = run_suite(tmp_path, "--requirements", "APPR-003")
    report = run.report()
    assert report["exitCode"] == 0
    suite = _suite(run)
    assert suite.name == SUITE_NAME
    assert (suite.failures, suite.errors) == (0, 0)
    case = _verdict_case(suite)
    assert case.is_passed
    assert suite.tests == len(list(suite))


@pytest.mark.req("SCRUB-001")
def test_baselined_failure_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    """A run whose only failures are baselined exits 0, and JUnit shows them skipped, not red."""
    expectations = tmp_path / "expect.json"
    entry = {"requirement": "SCRUB-001", "reason": "floor of nine, tracked"}
    expectations.write_text(json.dumps({"version": 1, "knownFailures": [entry]}))
    run = run_suite(
        tmp_path,
        "--host",
        "mutant:floor-nine",
        "--requirements",
        "SCRUB-001",
        "--expectations",
        str(expectations),
    )
    report = run.report()
    assert report["exitCode"] == 0, report["verdict"]
    assert run.status == 0
    baselined = [check for check in report["checks"] if check["outcome"] == "baselined"]
    assert baselined
    suite = _suite(run)
    assert (suite.failures, suite.errors) == (0, 0)
    assert suite.skipped >= len(baselined)
    by_key = {(case.classname, case.name): case for case in suite}
    for check in baselined:
        case = by_key[case_key(check["id"])]
        assert _kinds(case) == ["Skipped"]
        assert "floor of nine, tracked" in case.result[0].message
    assert _verdict_case(suite).is_passed


@pytest.mark.req("LEDG-004")
def test_incomplete_run_fails_the_verdict_case(tmp_path: Path) -> None:
    """A run that could not see what a MUST needs exits 1, and the verdict case fails."""
    host = f"{PYTHON} -m conformance.strip observe.ledger -- {PYTHON} -m reference_impl.driver"
    run = run_suite(tmp_path, "--host", host, "--requirements", "LEDG-004")
    report = run.report()
    assert report["verdict"] == "incomplete"
    assert report["exitCode"] == 1
    suite = _suite(run)
    assert suite.failures == 1
    case = _verdict_case(suite)
    assert _kinds(case) == ["Failure"]
    assert case.result[0].message == verdict_text(report)


@pytest.mark.req("INV1")
def test_crashing_host_gives_errors_not_failures(tmp_path: Path) -> None:
    """Checks a crashing host could not answer are errors; only the verdict case fails."""
    run = run_suite(
        tmp_path,
        "--host",
        f"{PYTHON} {BROKEN_HOST} crash",
        "--requirements",
        "APPR-003",
        "--host-start-timeout",
        "5",
    )
    report = run.report()
    assert report["exitCode"] == 2
    errored = [check for check in report["checks"] if check["outcome"] == "error"]
    assert errored
    suite = _suite(run)
    assert suite.errors >= len(errored)
    assert suite.failures == 1
    by_key = {(case.classname, case.name): case for case in suite}
    for check in errored:
        assert "Failure" not in _kinds(by_key[case_key(check["id"])])
    assert _kinds(_verdict_case(suite)) == ["Failure"]


@pytest.mark.usefixtures("full_model_budget")
@pytest.mark.req("INV1")
def test_keyword_narrowed_run_names_its_narrowing(tmp_path: Path) -> None:
    """A ``-k`` run is never plain conformant: the verdict names the narrowing, and the
    requirements its checks left out are not selected, never passed."""
    run = run_suite(tmp_path, "-k", "ledger")
    report = run.report()
    assert report["verdict"] == NARROWED
    assert report["narrowed"] == ["-k ledger"]
    line = verdict_text(report)
    assert line == "conformant (narrowed: -k ledger)"
    assert f"Verdict: {line}" in run.md_path.read_text(encoding="utf-8").replace("*", "")
    outcomes = {row["id"]: row["outcome"] for row in report["requirements"]}
    assert outcomes["SCRUB-001"] == "not-selected"
    assert "not-checked" not in outcomes.values()
    case = _verdict_case(_suite(run))
    assert case.is_passed
    # junitparser leaves this method unannotated.
    listed = _suite(run).properties()  # type: ignore[no-untyped-call]
    properties = {(p.name, p.value) for p in listed}
    assert ("secref-narrowed", "-k ledger") in properties


@pytest.mark.req("INV1")
def test_requirements_outside_the_selection_are_not_selected(tmp_path: Path) -> None:
    """A requirement a selected check cites but the selection does not name never passes."""
    run = run_suite(tmp_path, "--requirements", "LOG-001")
    report = run.report()
    outcomes = {row["id"]: row["outcome"] for row in report["requirements"]}
    cited = {rid for check in report["checks"] for rid in check["requirements"]} - {"LOG-001"}
    assert cited, "the selected checks cite nothing else, so the test proves nothing"
    assert {outcomes[rid] for rid in cited} == {"not-selected"}
    assert outcomes["LOG-001"] == "pass"


def test_rewrite_leaves_a_file_it_cannot_read(tmp_path: Path) -> None:
    """A missing or foreign file is left alone rather than replaced."""
    assert not rewrite(tmp_path / "missing.xml", [], "x", 0)
    foreign = tmp_path / "foreign.xml"
    foreign.write_text("<html/>", encoding="utf-8")
    assert not rewrite(foreign, [], "x", 1)
    assert foreign.read_text(encoding="utf-8") == "<html/>"


#: A file as pytest's writer of the ``xunit1`` family writes it, with per-test properties.
RAW_XUNIT1 = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="0"
 tests="2" time="0.5" timestamp="2026-01-01T00:00:00" hostname="h"><properties>
<property name="secref-verdict" value="not-conformant" /></properties>
<testcase classname="conformance.checks.test_a" name="test_one" file="conformance/checks/test_a.py"
 line="3" time="0.1"><properties><property name="requirement" value="APPR-003" />
<property name="outcome" value="fail" /></properties><failure message="boom">trace</failure>
<system-out>printed</system-out></testcase>
<testcase classname="conformance.checks.test_a" name="test_two" file="conformance/checks/test_a.py"
 line="9" time="0.1"><properties><property name="requirement" value="APPR-003" /></properties>
</testcase></testsuite></testsuites>
"""


def test_rewrite_leaves_a_schema_valid_file_whatever_pytest_wrote(tmp_path: Path) -> None:
    """Per-test properties and the ``xunit1`` attributes break the xunit2 schema; the rewritten
    file is valid, and what the properties said is kept in each case's output."""
    path = tmp_path / "junit.xml"
    path.write_text(RAW_XUNIT1, encoding="utf-8")
    assert schema_errors(path), "the raw file is valid already, so the test proves nothing"
    checks: list[dict[str, Any]] = [
        {"id": "conformance/checks/test_a.py::test_one", "outcome": "fail", "detail": "boom"},
        {"id": "conformance/checks/test_a.py::test_two", "outcome": "pass", "detail": None},
    ]
    assert rewrite(path, checks, "not-conformant", 1)
    suite = read_suite(path)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 2, 0, 0)
    one = next(case for case in suite if case.name == "test_one")
    assert one.system_out == "secref requirement: APPR-003\nsecref outcome: fail\nprinted"
    assert 'file="' not in path.read_text(encoding="utf-8")


def test_a_check_judged_after_its_report_gets_the_result_it_ended_with(tmp_path: Path) -> None:
    """A check pytest's writer recorded as a pass but the run judged failed (a late search) or
    errored is a failure or an error in the file, so the counts stay the run's own."""
    path = tmp_path / "junit.xml"
    path.write_text(RAW_XUNIT1, encoding="utf-8")
    checks = [
        {"id": "conformance/checks/test_a.py::test_one", "outcome": "error", "detail": "hung"},
        {"id": "conformance/checks/test_a.py::test_two", "outcome": "fail", "detail": "late"},
    ]
    assert rewrite(path, checks, "harness-error", 2)
    suite = read_suite(path)
    assert (suite.failures, suite.errors) == (2, 1)
    two = next(case for case in suite if case.name == "test_two")
    assert [type(result).__name__ for result in two.result] == ["Failure"]
    assert two.result[0].message == "late"
