"""Which stripped runs the self-test's mutant table makes: what a catch rested on, and no more.

The table reruns each mutant once per capability its catch rested on, with that capability
stripped. A check's report lists what its body read and, apart, what only the canary sweep read
on its behalf (``sweptOnly``), and, for a leak, the surfaces the value was found on
(``leakedOn``). A catch rests on the body's reads and on the surfaces a value was found on, so a
surface only the sweep read, and found nothing on, is left out: the same failure decides that
run. These tests pin the split in the report, the rule in
:func:`conformance.selftest.runner.judge`, and the argument itself on real mutants.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from conformance.host import HostInfo, HostUnderTest
from conformance.model.machine import Context, machine_for
from conformance.scenario import RecordingHost
from conformance.selftest import runner
from conformance.selftest.catalog import BY_NAME
from conformance.selftest.hosts import driver_command
from conformance.selftest.strip import CERTIFYING, stripped_command
from tests.conformance.suite_runs import run_suite

#: A mutant caught by a check's own body (the fence check sees the call run), never a leak.
BODY_CAUGHT = "tool-stamp-moves-once"


def _report(check: dict[str, Any]) -> dict[str, Any]:
    base = {
        "id": "conformance/checks/test_x.py::test_x",
        "outcome": "fail",
        "failedRequirements": ["FENCE-001"],
        "nonStrict": [],
    }
    return {"checks": [{**base, **check}], "problems": [], "stopped": None}


@pytest.mark.req("FENCE-001")
def test_a_body_catch_rests_on_what_the_body_read() -> None:
    """Beside a failure of the check's body, a capability only the sweep read is left out."""
    mutant = BY_NAME[BODY_CAUGHT]
    report = _report(
        {
            "reads": ["control.revoke", "observe.ledger", "observe.log"],
            "sweptOnly": ["observe.ledger", "observe.log"],
            "leak": False,
        }
    )
    verdict = runner.judge(mutant, report, 0.0)
    assert verdict.caught
    assert verdict.reads == ("control.revoke",)
    assert verdict.swept == ("observe.ledger", "observe.log")


@pytest.mark.req("INV1")
def test_a_leak_rests_on_the_surfaces_it_was_found_on() -> None:
    """A value the sweep found rests on the surfaces it was found on and on the body's reads;
    a surface the sweep searched and found nothing on is left out."""
    mutant = BY_NAME[BODY_CAUGHT]
    report = _report(
        {
            "reads": ["control.revoke", "observe.ledger", "observe.log"],
            "sweptOnly": ["observe.ledger", "observe.log"],
            "leakedOn": ["observe.log"],
            "leak": True,
        }
    )
    verdict = runner.judge(mutant, report, 0.0)
    assert verdict.reads == ("control.revoke", "observe.log")
    assert verdict.swept == ("observe.ledger",)


@pytest.mark.req("INV1")
def test_a_leak_of_a_report_that_does_not_say_where_rests_on_every_surface() -> None:
    """A report without ``leakedOn`` (written before it was kept) leaves nothing out."""
    mutant = BY_NAME[BODY_CAUGHT]
    report = _report(
        {
            "reads": ["control.revoke", "observe.ledger", "observe.log"],
            "sweptOnly": ["observe.ledger", "observe.log"],
            "leak": True,
        }
    )
    verdict = runner.judge(mutant, report, 0.0)
    assert verdict.reads == ("control.revoke", "observe.ledger", "observe.log")
    assert verdict.swept == ()


class _Announcing:
    """A host that only describes itself: the model check's steps are drawn from this."""

    def __init__(self, capabilities: frozenset[str]) -> None:
        self.capabilities = capabilities

    def info(self) -> HostInfo:
        return HostInfo("announcing", "0", "python", self.capabilities)


@pytest.mark.req("INV1")
def test_the_model_check_reads_every_capability_announced() -> None:
    """The model check draws its steps from what the host announces, so a run with any of them
    stripped is another run: every one is among its body's reads, never left out beside it."""
    announced = frozenset({"start", "control.revoke", "observe.ledger", "observe.log"})
    host = RecordingHost(_Announcing(announced))  # type: ignore[arg-type]
    machine_for(Context(host, cast(HostUnderTest, _Announcing(announced))))
    assert host.reads == set(announced)
    assert host.swept == set()


@pytest.mark.req("LEDG-002", "INV1")
def test_the_report_keeps_the_sweeps_reads_apart(tmp_path: Path) -> None:
    """A check that reads the ledger itself has it in ``reads`` and not in ``sweptOnly``; the
    log, which only its sweep searched, is in both."""
    run = run_suite(
        tmp_path,
        "-k",
        "test_secret_refs_once_in_order",
        target=["--pyargs", "conformance.checks.test_ledger"],
    )
    checks = run.report()["checks"]
    assert checks, "the check was not selected"
    for check in checks:
        assert check["outcome"] == "pass", check["id"]
        assert "observe.ledger" in check["reads"]
        assert "observe.ledger" not in check["sweptOnly"]
        assert "observe.log" in check["reads"]
        assert "observe.log" in check["sweptOnly"]


def _caught(tmp_path: Path, name: str) -> dict[str, Any]:
    """Run the mutant's requirement behind the driver as the self-test does; return the report."""
    mutant = BY_NAME[name]
    return run_suite(
        tmp_path / "caught",
        "--host",
        driver_command(name),
        "--requirements",
        mutant.requirement,
        "--stop-when-decided",
        mutant.requirement,
        "-k",
        "not gen-",
    ).report()


def _stripped_verdict(tmp_path: Path, name: str, capability: str) -> str:
    """Rerun the mutant's requirement with ``capability`` stripped; return the verdict."""
    verdict: str = run_suite(
        tmp_path / "stripped",
        "--host",
        stripped_command([capability], driver_command(name)),
        "--requirements",
        BY_NAME[name].requirement,
        "--stop-when-decided",
        "-k",
        "not gen-",
    ).report()["verdict"]
    return verdict


@pytest.mark.req("FENCE-001")
def test_a_row_left_out_is_decided_without_it(tmp_path: Path) -> None:
    """The argument on a real mutant: caught by its check's body, it is rerun behind the driver
    with a surface only the sweep read stripped, and the verdict is still not conformant."""
    verdict = runner.judge(BY_NAME[BODY_CAUGHT], _caught(tmp_path, BODY_CAUGHT), 0.0)
    assert verdict.caught
    assert "observe.log" in verdict.swept, verdict
    assert _stripped_verdict(tmp_path, BODY_CAUGHT, "observe.log") not in CERTIFYING


#: A mutant caught by a leak on the host log alone: its ledger is swept and holds nothing.
LOG_LEAKED = "debug-log-holds-value"


@pytest.mark.req("LOG-001", "INV1")
def test_a_leak_row_left_out_is_decided_without_it(tmp_path: Path) -> None:
    """The argument on a real leak: the value is found on the host log, the ledger the sweep
    also searched is left out of the rows, and with the ledger stripped the verdict is still
    not conformant (the same leak decides it)."""
    report = _caught(tmp_path, LOG_LEAKED)
    verdict = runner.judge(BY_NAME[LOG_LEAKED], report, 0.0)
    assert verdict.caught
    leaks = [check for check in report["checks"] if check["leak"]]
    assert leaks, "the mutant was not caught by a leak"
    assert all(check["leakedOn"] == ["observe.log"] for check in leaks), leaks[0]["leakedOn"]
    assert "observe.log" in verdict.reads
    assert "observe.ledger" in verdict.swept, verdict
    assert _stripped_verdict(tmp_path, LOG_LEAKED, "observe.ledger") not in CERTIFYING


def test_the_stripping_relay_ends_with_its_adapter_while_the_suite_keeps_its_pipe_open() -> None:
    """``python -m conformance.strip`` around the reference driver, sent ``start`` and
    ``shutdown`` by a client that keeps its end of the pipe open: the relay exits with the
    adapter's status, 0, and says nothing on standard error. Its reader of the client's stream
    was still blocked then, and finalizing the interpreter under it aborted the relay (exit -6,
    "Fatal Python error" on standard error)."""
    adapter = [sys.executable, "-m", "reference_impl.driver"]
    with subprocess.Popen(
        [sys.executable, "-m", "conformance.strip", "observe.log", "--", *adapter],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as relay:
        assert relay.stdin is not None
        assert relay.stdout is not None
        assert relay.stderr is not None
        try:
            for number, method, params in (
                (0, "start", {"protocol": 1, "suite": {}}),
                (1, "shutdown", {}),
            ):
                line = {"id": number, "method": method, "params": params}
                relay.stdin.write((json.dumps(line) + "\n").encode())
                relay.stdin.flush()
                assert json.loads(relay.stdout.readline())["id"] == number
            # The client's end of the pipe stays open until the relay has ended.
            status = relay.wait(timeout=30)
            assert relay.stderr.read() == b""
            assert status == 0
        finally:
            relay.kill()
