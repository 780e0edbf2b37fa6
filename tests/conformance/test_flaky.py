"""Expectations never certify a failure, and a leak is never flaky (decisions S1.6).

A check the expectations file lists as flaky that failed without finding a value runs again, at
most ``MAX_FLAKY_RERUNS`` times: if a rerun passes, the check is ``flaky`` and its requirement
holds; if none does, it is the failure it found. A check that found a value on any attempt has
failed, and is never rerun. A MUST that fails gives at best ``non-conformant (baselined)``, and
only through a known-failure entry. The probes are small check modules written for each test,
run in a nested session (``suite_runs.run_suite``); the attack runs the console script against
a mutant.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conformance._rerun import MAX_FLAKY_RERUNS
from conformance.expectations import Entry, Expectations, apply, rerun_entry
from conformance.outcomes import Outcome
from conformance.report import BASELINED, NOT_CONFORMANT, CheckResult
from tests.conformance.suite_runs import SuiteRun, run_suite

HEADER = """
import pytest
from conformance.host import HandlerKind
from conformance.outcomes import require
from conformance.scenario import config, make_secret, tool

#: Each check's attempts, counted across reruns in this session.
ATTEMPTS = {}


def attempt(name):
    ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
    return ATTEMPTS[name]


def leak(host, mint):
    # A static result holding a value the call does not reference: the sweep must find it.
    secret = make_secret(mint)
    static = tool("static", HandlerKind.STATIC, text="leak " + secret.password)
    host.reset(config([secret], tools=(static,)))
    host.invoke("static", "{}")
"""


def probe(tmp_path: Path, body: str, expectations: str) -> SuiteRun:
    """Write a check module and an expectations file into ``tmp_path``; run them."""
    stem = "".join(char if char.isalnum() else "_" for char in tmp_path.name)
    module = tmp_path / f"test_flaky_probe_{stem}.py"
    module.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    listed = tmp_path / "expectations.yaml"
    listed.write_text("version: 1\n" + textwrap.dedent(expectations), encoding="utf-8")
    (tmp_path / "out").mkdir(exist_ok=True)
    target = [str(module), "--rootdir", str(tmp_path)]
    return run_suite(tmp_path / "out", "--expectations", str(listed), target=target)


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return the report's checks by their function's name."""
    return {check["id"].split("::")[-1]: check for check in report["checks"]}


def assert_no_canary(run: SuiteRun) -> None:
    """Assert no run of 8 characters of any canary the run minted reached a report."""
    texts = {
        "json": run.json_path.read_text(encoding="utf-8"),
        "markdown": run.md_path.read_text(encoding="utf-8"),
        "junit": run.junit_path.read_text(encoding="utf-8"),
    }
    assert run.canaries, "the probe minted no canary"
    for medium, text in texts.items():
        for canary in run.canaries:
            value = canary.value
            runs = {value[start : start + 8] for start in range(len(value) - 7)}
            assert not [piece for piece in runs if piece in text], f"a canary reached {medium}"


# --- the rules, unit by unit ---------------------------------------------------------------------


def test_a_flaky_entry_forgives_no_failure_after_the_run() -> None:
    """Applied after the run, a flaky entry turns no failure, error or leak into anything."""
    failed = CheckResult("m.py::test_a", ("APPR-003",), outcome=Outcome.FAIL, failed=("APPR-003",))
    errored = CheckResult("m.py::test_b", ("APPR-003",), outcome=Outcome.ERROR)
    leaked = CheckResult("m.py::test_c", ("INV1",), outcome=Outcome.FAIL, failed=("INV1",))
    leaked.leak = True
    rerun = CheckResult("m.py::test_d", ("APPR-003",), outcome=Outcome.FLAKY, attempts=2)
    entry = Entry("requirement", "APPR-003", "timing")
    applied = apply(
        Expectations("f", flaky=(entry, Entry("requirement", "INV1", "timing"))),
        [failed, errored, leaked, rerun],
    )
    assert [check.outcome for check in (failed, errored, leaked)] == [
        Outcome.FAIL,
        Outcome.ERROR,
        Outcome.FAIL,
    ]
    assert applied.flaky == [("m.py::test_d", entry.label)]


def test_only_a_failure_without_a_value_may_run_again() -> None:
    """A leak, a pass, a skip and a harness error are never rerun; an unlisted check neither."""
    entries = (Entry("check", "test_a", "timing"),)
    failed = CheckResult("m.py::test_a", ("APPR-003",), outcome=Outcome.FAIL)
    assert rerun_entry(entries, failed) == entries[0]
    assert rerun_entry(entries, CheckResult("m.py::test_a", (), outcome=Outcome.ERROR))
    leaked = CheckResult("m.py::test_a", ("INV1",), outcome=Outcome.FAIL, leak=True)
    assert rerun_entry(entries, leaked) is None
    changed = CheckResult("m.py::test_a", (), outcome=Outcome.ERROR, harness=True)
    assert rerun_entry(entries, changed) is None
    for outcome in (Outcome.PASS, Outcome.SKIPPED, Outcome.NON_STRICT):
        assert rerun_entry(entries, CheckResult("m.py::test_a", (), outcome=outcome)) is None
    assert rerun_entry(entries, CheckResult("m.py::test_b", (), outcome=Outcome.FAIL)) is None
    assert MAX_FLAKY_RERUNS >= 1


# --- nested runs ---------------------------------------------------------------------------------


def test_a_check_that_fails_once_then_passes_is_flaky_and_holds(tmp_path: Path) -> None:
    """Conformant, the check shown flaky after two attempts, its requirement held and shown
    flaky; the first attempt's canary, quoted in its failure, reaches no report."""
    run = probe(
        tmp_path,
        """
        @pytest.mark.req("APPR-003")
        def test_wobbly(host, mint):
            secret = make_secret(mint)
            host.reset(config([secret]))
            if attempt("wobbly") == 1:
                require(False, "APPR-003", "saw " + secret.password)
        """,
        "flaky:\n  - check: test_wobbly\n    reason: timing on slow runners\n",
    )
    report = run.report()
    assert run.status == 0, report["checks"]
    assert report["exitCode"] == 0
    assert report["verdict"].startswith("conformant")
    check = checks(report)["test_wobbly"]
    assert check["outcome"] == "flaky"
    assert check["attempts"] == 2
    assert check["failedRequirements"] == []
    assert "failed 1 of 2 attempts, then passed" in check["detail"]
    assert "[flaky: timing on slow runners]" in check["detail"]
    outcome = {item["id"]: item for item in report["requirements"]}["APPR-003"]
    assert outcome["outcome"] == "flaky"
    listed = {"check": check["id"], "entry": "check test_wobbly"}
    assert report["expectations"]["flaky"] == [listed]
    assert len(run.canaries) >= 2, "each attempt mints its own canaries"
    assert_no_canary(run)


def test_a_check_that_never_passes_stays_a_failure(tmp_path: Path) -> None:
    """Every attempt failed: the check is the failure, counted, and the run not conformant;
    a check that is not listed is never run again."""
    run = probe(
        tmp_path,
        """
        @pytest.mark.req("APPR-003")
        def test_broken(host):
            attempt("broken")
            require(False, "APPR-003", "the prompt never opened")

        @pytest.mark.req("APPR-003")
        def test_unlisted(host):
            attempt("unlisted")
            require(False, "APPR-003", "the prompt never opened")
        """,
        "flaky:\n  - check: test_broken\n    reason: timing\n",
    )
    report = run.report()
    assert run.status == 1
    assert report["verdict"] == NOT_CONFORMANT
    broken, unlisted = checks(report)["test_broken"], checks(report)["test_unlisted"]
    assert broken["outcome"] == "fail"
    assert broken["attempts"] == 1 + MAX_FLAKY_RERUNS
    assert f"none of {1 + MAX_FLAKY_RERUNS} attempts passed" in broken["detail"]
    assert unlisted["outcome"] == "fail"
    assert unlisted["attempts"] == 1
    assert report["expectations"]["flaky"] == []


def test_a_failure_listed_flaky_and_known_is_at_best_baselined(tmp_path: Path) -> None:
    """Only a known-failure entry naming it lets a failed MUST pass the run, as baselined."""
    run = probe(
        tmp_path,
        """
        @pytest.mark.req("APPR-003")
        def test_broken(host):
            require(False, "APPR-003", "the prompt never opened")
        """,
        "flaky:\n  - check: test_broken\n    reason: timing\n"
        "knownFailures:\n  - requirement: APPR-003\n    reason: no prompts yet\n",
    )
    report = run.report()
    assert report["verdict"] == BASELINED
    assert checks(report)["test_broken"]["outcome"] == "baselined"
    outcome = {item["id"]: item for item in report["requirements"]}["APPR-003"]
    assert outcome["outcome"] == BASELINED


def test_a_leak_is_never_flaky(tmp_path: Path) -> None:
    """A check that found a value fails at once, listed flaky or not; a value found on a rerun
    fails the check as well."""
    run = probe(
        tmp_path,
        """
        @pytest.mark.req("INV1-ECHO")
        def test_leaks(host, mint):
            attempt("leaks")
            leak(host, mint)

        @pytest.mark.req("INV1-ECHO")
        def test_leaks_later(host, mint):
            if attempt("later") == 1:
                require(False, "INV1-ECHO", "the first attempt fails without a value")
            leak(host, mint)
        """,
        "flaky:\n  - requirement: INV1\n    reason: r\n  - requirement: INV1-ECHO\n    reason: r\n",
    )
    report = run.report()
    assert run.status == 1
    assert report["verdict"] == NOT_CONFORMANT
    leaks, later = checks(report)["test_leaks"], checks(report)["test_leaks_later"]
    assert (leaks["outcome"], leaks["leak"], leaks["attempts"]) == ("fail", True, 1)
    assert (later["outcome"], later["leak"], later["attempts"]) == ("fail", True, 2)
    assert "a value found is never flaky" in later["detail"]
    assert report["expectations"]["flaky"] == []
    assert_no_canary(run)


def test_the_attack_flaky_inv1_and_ledger_is_not_conformant(tmp_path: Path) -> None:
    """The attack of S1.6: INV1 and LEDG-004 listed flaky against a host that writes the
    substituted arguments to its ledger. Every leak fails; exit 1."""
    listed = tmp_path / "f.yaml"
    listed.write_text(
        "version: 1\nflaky:\n"
        "  - requirement: INV1\n    reason: timing on slow runners\n"
        "  - requirement: LEDG-004\n    reason: timing on slow runners\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "--host",
            "mutant:ledger-substituted-args",
            "--expectations",
            str(listed),
            "--requirements",
            "INV1,LEDG-004",
            "--report-json",
            str(tmp_path / "report.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["verdict"] == NOT_CONFORMANT
    assert report["expectations"]["flaky"] == []
    failed = [check for check in report["checks"] if check["outcome"] == "fail"]
    assert failed
    assert all(check["leak"] for check in failed)
    assert not [check for check in report["checks"] if check["outcome"] == "flaky"]
    outcomes = {item["id"]: item["outcome"] for item in report["requirements"]}
    assert outcomes["LEDG-004"] == "fail"
    assert outcomes["INV1"] == "fail"


def test_a_flaky_check_holds_its_requirement() -> None:
    """A check that passed on a rerun holds its requirement, shown flaky and counted as a pass;
    the verdict it leaves is conformant."""
    import datetime

    from conformance.report import CONFORMANT, RequirementInfo, RunData, requirement_outcomes

    info = RequirementInfo("APPR-003", "MUST", "R3", "prompts")
    rerun = CheckResult("c", ("APPR-003",), outcome=Outcome.FLAKY, attempts=2, detail="d")
    (folded,) = requirement_outcomes([info], [rerun])
    assert folded.outcome == "flaky"
    assert folded.counts == {"pass": 1, "fail": 0, "error": 0, "skipped": 0, "unchecked": 0}
    run = RunData({}, None, [rerun], [info], [], [], datetime.datetime.now(datetime.UTC), 0.0)
    assert run.verdict() == CONFORMANT
