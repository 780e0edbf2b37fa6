"""The hostile-input corpus: each attack pins the verdict, the exit code and the JUnit file.

Every case here was once reproduced against an older suite (decisions S1.6 to S1.8, S1.11). Each
runs the real console script as a child process, with ``-- --junitxml``, and asserts three things
of that one run: the verdict word of the JSON report, the exit code, and the JUnit file, which
validates against the xunit2 schema and whose counts and verdict case are the run's own
(:func:`tests.conformance.junit_file.assert_agrees`). A case that cannot give one of the three
(an adapter refused before any check) says what stands in for it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from conformance.report import (
    BASELINED,
    EXIT_CODES,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_CONFORMANT,
    NOT_SELECTED,
    verdict_text,
)
from tests.conformance.junit_file import assert_agrees, kinds

PYTHON: Final = sys.executable
BROKEN: Final = Path(__file__).parent / "broken_hosts"
DRIVER: Final = f"{shlex.quote(PYTHON)} -m reference_impl.driver"

#: Seconds one run may take; the longest here runs about a hundred checks against a mutant.
RUN_LIMIT_S: Final = 300.0


@dataclass(frozen=True, slots=True)
class Run:
    """One run of the console script: its exit code, its output and its report files."""

    code: int
    output: str
    json_path: Path
    junit_path: Path

    def report(self) -> dict[str, Any]:
        """Return the JSON report."""
        loaded: dict[str, Any] = json.loads(self.json_path.read_text(encoding="utf-8"))
        return loaded

    def outcomes(self) -> dict[str, str]:
        """Return each requirement's outcome."""
        return {row["id"]: row["outcome"] for row in self.report()["requirements"]}


def console(tmp_path: Path, *arguments: str, pytest_args: tuple[str, ...] = ()) -> Run:
    """Run ``secref-conformance`` with ``arguments`` and ``-- --junitxml`` in ``tmp_path``."""
    json_path, junit_path = tmp_path / "report.json", tmp_path / "junit.xml"
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "conformance.cli",
            *arguments,
            "--report-json",
            str(json_path),
            "--report-md",
            str(tmp_path / "report.md"),
            "--",
            f"--junitxml={junit_path}",
            *pytest_args,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PY_COLORS="0"),
        timeout=RUN_LIMIT_S,
        check=False,
    )
    return Run(done.returncode, done.stdout[-3000:] + done.stderr[-3000:], json_path, junit_path)


def pinned(run: Run, verdict: str, code: int) -> dict[str, Any]:
    """Assert the verdict word, the exit code and the JUnit file of ``run`` together."""
    assert run.code == code, run.output
    report = run.report()
    assert report["verdict"] == verdict, verdict_text(report)
    assert report["exitCode"] == EXIT_CODES[verdict] == code
    assert_agrees(run.junit_path, report, code)
    return report


def expectations(tmp_path: Path, text: str) -> str:
    """Write an expectations file into ``tmp_path``; return its path."""
    path = tmp_path / "expectations.yaml"
    path.write_text("version: 1\n" + text, encoding="utf-8")
    return str(path)


# --- expectations never certify a failure (S1.6) ------------------------------------------------


def test_flaky_inv1_and_ledger_against_a_leaking_ledger(tmp_path: Path) -> None:
    """INV1 and LEDG-004 listed flaky against a host writing substituted arguments to its
    ledger: every leak fails, never flaky; non-conformant, exit 1, red in JUnit."""
    listed = expectations(
        tmp_path,
        "flaky:\n"
        "  - requirement: INV1\n    reason: timing on slow runners\n"
        "  - requirement: LEDG-004\n    reason: timing on slow runners\n",
    )
    run = console(
        tmp_path,
        "--host",
        "mutant:ledger-substituted-args",
        "--expectations",
        listed,
        "--requirements",
        "INV1,LEDG-004",
    )
    report = pinned(run, NOT_CONFORMANT, 1)
    assert not [check for check in report["checks"] if check["outcome"] == "flaky"]
    assert run.outcomes()["INV1"] == run.outcomes()["LEDG-004"] == "fail"


def test_baselined_failures_are_skips_and_the_gate_is_open(tmp_path: Path) -> None:
    """A known-failure entry naming the failures: non-conformant (baselined), exit 0; in JUnit
    those failures are skips with the entry's reason, no failure, and the verdict case passes."""
    listed = expectations(
        tmp_path, "knownFailures:\n  - requirement: SCRUB-001\n    reason: floor of nine, tracked\n"
    )
    run = console(
        tmp_path,
        "--host",
        "mutant:floor-nine",
        "--requirements",
        "SCRUB-001",
        "--expectations",
        listed,
    )
    report = pinned(run, BASELINED, 0)
    baselined = [check for check in report["checks"] if check["outcome"] == "baselined"]
    assert baselined
    suite = assert_agrees(run.junit_path, report, 0)
    assert suite.failures == 0
    skipped = [case for case in suite if kinds(case) == ["Skipped"]]
    assert len(skipped) == len(baselined)
    assert all("floor of nine, tracked" in case.result[0].message for case in skipped)


def test_declared_unchecked_never_hides_a_failing_check(tmp_path: Path) -> None:
    """A MUST listed unchecked whose check ran and failed is a failure, not a declaration."""
    listed = expectations(
        tmp_path, "unchecked:\n  - requirement: SCRUB-001\n    reason: we cannot expose it\n"
    )
    run = console(
        tmp_path,
        "--host",
        "mutant:floor-nine",
        "--requirements",
        "SCRUB-001",
        "--expectations",
        listed,
    )
    pinned(run, NOT_CONFORMANT, 1)
    assert run.outcomes()["SCRUB-001"] == "fail"


@pytest.mark.parametrize("requirement", ["COST-001", "NOPE-999"])
def test_declaring_a_should_or_an_unknown_id_unchecked_is_a_usage_error(
    tmp_path: Path, requirement: str
) -> None:
    """Only a MUST of the catalog can be declared unchecked: a SHOULD, or an ID the catalog does
    not hold (a typo would declare nothing), is refused before the run with exit 2."""
    listed = expectations(
        tmp_path, f"unchecked:\n  - requirement: {requirement}\n    reason: cannot\n"
    )
    run = console(tmp_path, "--requirements", "APPR-003", "--expectations", listed)
    assert run.code == 2, run.output
    assert requirement in run.output
    assert not run.json_path.exists()


def test_baselining_marks_only_the_requirements_the_failure_named(tmp_path: Path) -> None:
    """A known-failure entry naming a check baselines that check's failure; a requirement the
    check cites but whose rule it did not see broken is never non-conformant (baselined)."""
    listed = expectations(
        tmp_path, "knownFailures:\n  - check: test_echo_leaks_nothing\n    reason: tracked\n"
    )
    run = console(
        tmp_path,
        "--host",
        "mutant:ledger-substituted-args",
        "--requirements",
        "SCRUB-003",
        "--expectations",
        listed,
    )
    report = pinned(run, NOT_CONFORMANT, 1)
    baselined = [check for check in report["checks"] if check["outcome"] == "baselined"]
    assert baselined, "the entry baselined nothing, so the test proves nothing"
    assert all("SCRUB-003" in check["requirements"] for check in baselined)
    named = {rid for check in report["checks"] for rid in check["failedRequirements"]}
    assert "SCRUB-003" not in named
    assert run.outcomes()["SCRUB-003"] != BASELINED


# --- the host's description is data (S1.8) -----------------------------------------------------


def test_proxy_announcing_via_mcp_is_refused_at_start(tmp_path: Path) -> None:
    """An adapter adding ``via.mcp`` to its capabilities is refused at the handshake, exit 2,
    with the cause named; no check runs, so no report and no JUnit file is written."""
    host = f"{shlex.quote(PYTHON)} {BROKEN / 'announcing_proxy.py'} via.mcp -- {DRIVER}"
    run = console(tmp_path, "--host", host, "--requirements", "APPR-003")
    assert run.code == 2, run.output
    assert "via.mcp" in run.output
    assert not run.json_path.exists()
    assert not run.junit_path.exists()


# --- a narrowed run says so (S1.7) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("pytest_args", "narrowing"),
    [
        (
            ("-k", "test_request_risk_at_least_high and (LOW or MEDIUM)"),
            "-k 'test_request_risk_at_least_high and (LOW or MEDIUM)'",
        ),
        (
            (
                "--deselect",
                "conformance/checks/test_approval.py::test_request_risk_at_least_high[LOW]",
            ),
            "--deselect",
        ),
        (("-m", "req"), "-m req"),
    ],
    ids=["keyword", "deselect", "marker"],
)
def test_narrowed_run_is_never_plain_conformant(
    tmp_path: Path, pytest_args: tuple[str, ...], narrowing: str
) -> None:
    """``-k``, ``--deselect`` and ``-m`` each name themselves in the verdict line, which the
    JUnit verdict case carries; requirements outside the selection are not-selected."""
    arguments = () if pytest_args[0] == "-k" else ("--requirements", "APPR-003")
    run = console(tmp_path, *arguments, pytest_args=pytest_args)
    report = pinned(run, NARROWED, 0)
    line = verdict_text(report)
    assert narrowing in line
    assert line != "conformant"
    if pytest_args[0] == "-k":
        assert len(report["checks"]) == 2
    outcomes = run.outcomes()
    assert outcomes["SCRUB-001"] == NOT_SELECTED
    assert "pass" not in {outcomes[rid] for rid in outcomes if rid != "APPR-003"}


def test_maxfail_stop_is_named_and_red(tmp_path: Path) -> None:
    """A ``--maxfail=1`` stop at the first failure: not-conformant, exit 1, the stop named."""
    run = console(
        tmp_path,
        "--host",
        "mutant:floor-nine",
        "--requirements",
        "SCRUB-001",
        pytest_args=("--maxfail=1",),
    )
    report = pinned(run, NOT_CONFORMANT, 1)
    assert report["stopped"]
    assert report["stopped"] in verdict_text(report)


# --- what the suite cannot see, and what breaks under it (S1.1, S1.2, S1.11) --------------------


def test_host_not_announcing_a_surface_is_incomplete(tmp_path: Path) -> None:
    """A host that does not announce its ledger leaves LEDG-004 unchecked: incomplete, exit 1,
    and the JUnit verdict case fails."""
    host = f"{shlex.quote(PYTHON)} -m conformance.strip observe.ledger -- {DRIVER}"
    run = console(tmp_path, "--host", host, "--requirements", "LEDG-004")
    pinned(run, INCOMPLETE, 1)


def test_crashing_host_gives_errors_not_failures(tmp_path: Path) -> None:
    """A host that crashes at every call: harness error, exit 2; in JUnit its checks are errors
    and the only failure is the verdict case."""
    host = f"{shlex.quote(PYTHON)} {BROKEN / 'broken_host.py'} crash"
    run = console(tmp_path, "--host", host, "--requirements", "APPR-003")
    report = pinned(run, HARNESS_ERROR, 2)
    outcomes = [check["outcome"] for check in report["checks"]]
    # Checks that need a control the host never announced are skipped before it is reached;
    # every other check errored, and none failed.
    assert "fail" not in outcomes
    assert outcomes.count("error") >= 3
    suite = assert_agrees(run.junit_path, report, 2)
    assert suite.failures == 1
    assert suite.errors == outcomes.count("error")
