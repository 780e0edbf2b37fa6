"""``secref-conformance --workers N``: a run spread over N processes ends as a one-process run does.

Each comparison runs the console script twice, as a user does, in a subprocess: once with one
process and once with ``--workers 2``, narrowed with ``--requirements`` to stay quick, and
compares what a user reads: the exit code, the verdict, every check's outcome and failed
requirements, the requirement rows of the report and of the terminal, the hardening table and
the JUnit file. Durations, timestamps and the order the checks ran in are left out, and so is
text that differs between any two runs (a check's detail names the run's random secret ids).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance import _xdist, cli
from conformance.arguments import base_arguments
from conformance.canary import Kind, adopt_canaries, issued_canaries, required_forms
from conformance.outcomes import HardeningRow, Outcome
from conformance.report import CheckResult

pytest.importorskip("xdist")

#: A terminal row of the requirement table: ID, level, outcome, counts.
_ROW = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)* +(MUST|SHOULD|EITHER|excluded) ")

#: Requirements whose checks on the reference host pass, pick alternatives, skip, and fill
#: the hardening table: every kind of result the controller rebuilds.
REFERENCE_SELECTION = "SCRUB-002,SCRUB-015,APPR-005,CAP-001,GRAM-007"


@dataclass(frozen=True, slots=True)
class Run:
    """One run of the console script: its exit code, its output and its report files."""

    code: int
    out: str
    report: dict[str, Any]
    junit: Path


def secref_conformance(
    tmp_path: Path, name: str, *arguments: str, pytest_arguments: Sequence[str] = ()
) -> Run:
    """Run the console script with every report written under ``tmp_path / name``, and
    ``pytest_arguments`` after its ``--``."""
    out = tmp_path / name
    junit = out / "junit.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "--report-json",
            str(out / "report.json"),
            "--report-md",
            str(out / "report.md"),
            *arguments,
            "--",
            "--junitxml",
            str(junit),
            *pytest_arguments,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    path = out / "report.json"
    report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return Run(done.returncode, done.stdout + done.stderr, report, junit)


def _junit(path: Path) -> dict[str, Any]:
    """Return the JUnit file's suite properties and, per test case, its properties and result."""
    root = ET.parse(path).getroot()  # noqa: S314 - the file this test's own run wrote
    suite = root if root.tag == "testsuite" else root[0]
    properties = suite.find("properties")
    cases = {
        (case.get("classname"), case.get("name")): (
            [(item.get("name"), item.get("value")) for item in case.iter("property")],
            sorted(child.tag for child in case if child.tag != "properties"),
        )
        for case in suite.iter("testcase")
    }
    counts = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped")}
    return {
        "properties": [] if properties is None else [dict(item.attrib) for item in properties],
        "cases": cases,
        "counts": counts,
    }


def verdict_view(run: Run) -> dict[str, Any]:
    """Return what a user reads of ``run`` that must not depend on how many processes ran it."""
    report = run.report
    assert report, run.out[-3000:]
    return {
        "exit code": run.code,
        "verdict": report["verdict"],
        "report exit code": report["exitCode"],
        "problems": report["problems"],
        "summary": report["summary"],
        "host": report["host"],
        "unchecked": [item["id"] for item in report["unchecked"]["undeclared"]],
        "checks": {
            check["id"]: (
                check["outcome"],
                check["failedRequirements"],
                check["requirements"],
                check["vectors"],
                [item["requirement"] for item in check["nonStrict"]],
                check["alternatives"],
                [item["requirement"] for item in check["unchecked"]],
                check["leak"],
                check["sweep"]["notSearched"],
            )
            for check in report["checks"]
        },
        "check order": [check["id"] for check in report["checks"]],
        "requirements": [
            (row["id"], row["outcome"], row["counts"], row["checks"], row["alternatives"])
            for row in report["requirements"]
        ],
        "hardening": report["hardening"],
        "terminal rows": [line for line in run.out.splitlines() if _ROW.match(line)],
        "junit": _junit(run.junit),
    }


def assert_same(serial: Run, parallel: Run) -> None:
    """Assert that the two runs agree on everything :func:`verdict_view` holds."""
    one, two = verdict_view(serial), verdict_view(parallel)
    assert "bringing up nodes" in parallel.out, parallel.out[-2000:]
    for key in one:
        assert one[key] == two[key], key


def test_reference_host_parallel_run_matches_serial(tmp_path: Path) -> None:
    """On the reference host, --workers 2 gives the one-process run's verdict, rows and code."""
    serial = secref_conformance(tmp_path, "serial", "--requirements", REFERENCE_SELECTION)
    parallel = secref_conformance(
        tmp_path, "parallel", "--requirements", REFERENCE_SELECTION, "--workers", "2"
    )
    assert serial.code == 0, serial.out[-3000:]
    assert serial.report["hardening"], "the selection should fill the hardening table"
    assert_same(serial, parallel)


def test_broken_host_parallel_run_matches_serial(tmp_path: Path) -> None:
    """On a mutant that breaks SCRUB-001, --workers 2 fails the same checks with the same rows."""
    arguments = ("--host", "mutant:floor-nine", "--requirements", "SCRUB-001")
    serial = secref_conformance(tmp_path, "serial", *arguments)
    parallel = secref_conformance(tmp_path, "parallel", *arguments, "--workers", "2")
    assert serial.code == 1, serial.out[-3000:]
    assert serial.report["summary"]["checks"].get("fail"), serial.report["summary"]
    assert_same(serial, parallel)


def test_failed_self_check_fails_a_parallel_run_as_a_serial_one(tmp_path: Path) -> None:
    """An unknown --requirements ID, found in each worker's collection, is one harness error."""
    selection = ("--requirements", "NOPE-999")
    serial = secref_conformance(tmp_path, "serial", *selection)
    parallel = secref_conformance(tmp_path, "parallel", *selection, "--workers", "2")
    for run in (serial, parallel):
        assert run.code == 2, run.out[-3000:]
        assert "conformance self-check failed" in run.out
    assert parallel.report["problems"] == serial.report["problems"]
    assert parallel.report["verdict"] == serial.report["verdict"] == "harness-error"


def test_unknown_host_ends_a_parallel_run_as_a_serial_one(tmp_path: Path) -> None:
    """A --host naming no mutant ends a parallel run with the serial run's message and problems."""
    arguments = ("--host", "mutant:no-such-mutant", "--requirements", "APPR-003")
    serial = secref_conformance(tmp_path, "serial", *arguments)
    parallel = secref_conformance(tmp_path, "parallel", *arguments, "--workers", "2")
    for run in (serial, parallel):
        assert run.code == 2, run.out[-3000:]
        assert "no mutant named 'no-such-mutant'" in run.out
        assert "INTERNALERROR" not in run.out
    assert parallel.report["problems"] == serial.report["problems"]


class _CanaryProbe:
    """Reads, at the end of a parallel run, the canaries the controller took from each worker."""

    def __init__(self) -> None:
        self.by_worker: dict[str, tuple[str, ...]] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        gathered = session.config.stash[_xdist.GATHERED_KEY]
        self.by_worker = {
            worker: tuple(canary.value for canary in canaries)
            for worker, canaries in gathered.canaries.items()
        }


def test_canaries_of_two_workers_never_collide(tmp_path: Path) -> None:
    """Two workers mint disjoint canaries, and the controller redacts every one from its reports."""
    probe = _CanaryProbe()
    before = len(issued_canaries())
    json_path, md_path = tmp_path / "report.json", tmp_path / "report.md"
    status = pytest.main(
        [
            *base_arguments(),
            "-n",
            "2",
            "--dist",
            "load",
            "--requirements",
            "SCRUB-002,SCRUB-015,APPR-005",
            "--report-json",
            str(json_path),
            "--report-md",
            str(md_path),
        ],
        plugins=[probe],
    )
    assert status == pytest.ExitCode.OK
    assert sorted(probe.by_worker) == ["gw0", "gw1"]
    first, second = (set(values) for values in probe.by_worker.values())
    assert first, "each worker should have run checks that mint canaries"
    assert second, "each worker should have run checks that mint canaries"
    assert not first & second
    minted = [value for values in probe.by_worker.values() for value in values]
    assert len(minted) == len(set(minted))
    adopted = {canary.value for canary in issued_canaries()[before:]}
    assert adopted == first | second
    texts = json_path.read_text(encoding="utf-8") + md_path.read_text(encoding="utf-8")
    for value in minted:
        for form in required_forms(value).values():
            assert form not in texts


def test_check_result_crosses_from_worker_to_controller_unchanged() -> None:
    """A check's full result and hardening rows survive the plain-data trip a worker sends."""
    result = CheckResult(
        "conformance/checks/test_x.py::test_y[v-1]",
        ("SCRUB-001", "INV1"),
        ("v-1",),
        outcome=Outcome.NON_STRICT,
        failed=("SCRUB-001",),
        non_strict=[("SCRUB-015", "kept base64@1 on the result")],
        alternatives=[("SCRUB-002", "refuse")],
        detail="value leaked: <c1.value> in form a",
        duration_s=0.25,
        unchecked=[("INV1", "the host log was not searched")],
        leak=True,
        reads=("observe.ledger", "observe.log"),
        sweeps=[{"call": "call 1 to echo", "searched": ["result", "ledger"]}],
        not_searched=("host log",),
    )
    rows = [HardeningRow("base64@1", "result", False, result.nodeid)]
    payload = _xdist.result_payload(result, rows)
    assert json.loads(json.dumps(payload)) == payload  # plain data only
    assert _xdist.result_from_payload(payload) == (result, rows)


def test_adopted_canaries_keep_label_kind_and_value() -> None:
    """A canary handed over by another process is counted as issued here, as it was minted."""
    before = len(issued_canaries())
    adopted = adopt_canaries([("c1.password", Kind.SPECIAL.value, "Xq7" * 8)])
    assert issued_canaries()[before:] == adopted
    assert (adopted[0].label, adopted[0].kind, adopted[0].value) == (
        "c1.password",
        Kind.SPECIAL,
        "Xq7" * 8,
    )


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", ""])
def test_bad_worker_count_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--workers takes a whole number of at least 1; anything else exits 2 naming the option."""
    with pytest.raises(SystemExit) as exited:
        cli._parser().parse_args(["--workers", value])
    assert exited.value.code == 2
    assert "--workers" in capsys.readouterr().err


def test_help_says_what_workers_does() -> None:
    """--help names --workers, its processes and that the results are a one-process run's."""
    text = " ".join(cli._parser().format_help().split())
    assert "--workers N" in text
    assert "run the checks in N processes" in text
    assert cli._parser().parse_args([]).workers == 1


@pytest.mark.slow
def test_whole_suite_parallel_run_matches_serial(tmp_path: Path) -> None:
    """The whole suite on the reference host ends the same with --workers 2 as with one process:
    every check module, every hand-written check; the generated grammar corpus (a thousand
    parameters of a few check functions, sharded like any others) is left out for time, and
    ``test_reference_host_parallel_run_matches_serial`` runs part of it."""
    corpus_left_out = ("-k", "not gen-")
    serial = secref_conformance(tmp_path, "serial", pytest_arguments=corpus_left_out)
    parallel = secref_conformance(
        tmp_path, "parallel", "--workers", "2", pytest_arguments=corpus_left_out
    )
    assert serial.code == 0, serial.out[-3000:]
    assert_same(serial, parallel)
