"""The JUnit file agrees with the verdict (decisions S1.11), and a narrowed run says so (S1.7).

Each run writes its JUnit file through pytest's own writer; the file is read back with
junitparser, as a CI dashboard would, and its counts, skips, errors and the verdict test case
are held to the JSON report's verdict and exit code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import junitparser
import pytest

from conformance.junit import SUITE_NAME, VERDICT_CASE, case_key, rewrite
from conformance.report import NARROWED, verdict_text
from tests.conformance.suite_runs import SuiteRun, run_suite

PYTHON = sys.executable
BROKEN_HOST = Path(__file__).parent / "broken_hosts" / "broken_host.py"


def _suite(run: SuiteRun) -> junitparser.TestSuite:
    """Return the one test suite of the run's JUnit file."""
    xml = junitparser.JUnitXml.fromfile(str(run.junit_path))
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    assert len(suites) == 1
    suite = suites[0]
    assert isinstance(suite, junitparser.TestSuite)
    return suite


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
