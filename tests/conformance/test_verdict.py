"""The suite's own verdict (decisions S1): nothing unseen is certified.

Unit tests pin the folding of check results into requirement outcomes and the verdict; the
guards a check's ``host`` puts on surfaces, controls and features; the sweep's record of what
it searched; and the capability-stripping proxy. End-to-end runs put the proxy in front of the
reference driver and of broken hosts, as a hostile adapter would, and pin that the verdict is
never ``conformant`` for what the suite could not see.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from conformance import outcomes
from conformance.canary import CallRecord, Detector, Guarded, Surface
from conformance.host import (
    CallResult,
    Control,
    HostConfig,
    HostInfo,
    Observation,
    OperatorScript,
    PendingCall,
)
from conformance.kernel import Entry, Expectations
from conformance.outcomes import Outcome
from conformance.report import (
    CONFORMANT,
    DECLARED,
    INCOMPLETE,
    NOT_APPLICABLE,
    UNCHECKED,
    CheckResult,
    RequirementInfo,
    RunData,
    build_report,
    requirement_outcomes,
    summary_lines,
    verdict_text,
)
from conformance.scenario import RecordingHost
from conformance.strip import Stripper
from tests.conformance.suite_runs import console

PYTHON = sys.executable
BROKEN_HOST = Path(__file__).parent / "broken_hosts" / "broken_host.py"

MUST = RequirementInfo("LOG-001", "MUST", "R6.6", "no value in the log")
OTHER = RequirementInfo("VAULT-003", "MUST", "R7.1", "no read without references")
REF_ONLY = RequirementInfo("LEDG-009", "MUST", "R6.7", "owner-only ledger", "reference-only")


def _run(checks: list[CheckResult], expectations: Expectations | None = None) -> RunData:
    return RunData(
        host={"name": "h", "version": "1", "language": "x", "capabilities": []},
        vectors_digest=None,
        checks=checks,
        catalog=[MUST, OTHER, REF_ONLY],
        hardening=[],
        problems=[],
        started=datetime.datetime.now(datetime.UTC),
        duration_s=0.0,
        expectations=expectations,
    )


# --- folding and the verdict -----------------------------------------------------------------


def test_requirement_judged_nowhere_is_unchecked_not_passed() -> None:
    """A check that passed without judging a requirement it cites does not pass it."""
    check = CheckResult("c1", ("LOG-001", "VAULT-003"))
    check.unchecked.append(("LOG-001", "the host did not announce observe.log"))
    folded = {item.info.id: item for item in requirement_outcomes([MUST, OTHER], [check])}
    assert folded["LOG-001"].outcome == UNCHECKED
    assert folded["LOG-001"].details == ["the host did not announce observe.log"]
    assert folded["LOG-001"].counts == {
        "pass": 0,
        "fail": 0,
        "error": 0,
        "skipped": 0,
        "unchecked": 1,
    }
    assert folded["VAULT-003"].outcome == "pass"


def test_all_skipped_is_unchecked_and_not_applicable_is_its_own_outcome() -> None:
    """Skipped checks leave a requirement unchecked, unless each said it cannot arise."""
    skipped = CheckResult("c1", ("LOG-001",), outcome=Outcome.SKIPPED, detail="no log")
    inapplicable = CheckResult(
        "c2", ("VAULT-003",), outcome=Outcome.SKIPPED, detail="not applicable: over MCP"
    )
    folded = {
        item.info.id: item.outcome
        for item in requirement_outcomes([MUST, OTHER], [skipped, inapplicable])
    }
    assert folded == {"LOG-001": UNCHECKED, "VAULT-003": NOT_APPLICABLE}


def test_a_check_that_failed_at_another_requirement_judged_nothing_else() -> None:
    """A requirement whose only check failed naming another is unchecked, never not-applicable;
    one passed by a check is still unchecked when another of its checks stopped at a failure of
    another requirement before judging it (decisions S1.1, S1.12)."""
    stopped = CheckResult(
        "c1", ("LOG-001", "VAULT-003"), outcome=Outcome.FAIL, failed=("VAULT-003",)
    )
    passed = CheckResult("c2", ("LOG-001",), outcome=Outcome.PASS)
    alone = {item.info.id: item for item in requirement_outcomes([MUST, OTHER], [stopped])}
    assert alone["LOG-001"].outcome == UNCHECKED
    assert "failed at VAULT-003 before judging it" in alone["LOG-001"].details[0]
    assert alone["VAULT-003"].outcome == "fail"
    both = {item.info.id: item.outcome for item in requirement_outcomes([MUST], [stopped, passed])}
    assert both["LOG-001"] == UNCHECKED


def test_one_unseen_case_leaves_the_requirement_unchecked() -> None:
    """Cases that passed do not certify a case the suite could not see."""
    passed = CheckResult("revoke-case", ("LOG-001",))
    blind = CheckResult("reset-case", ("LOG-001",), outcome=Outcome.SKIPPED, detail="no reset")
    (folded,) = requirement_outcomes([MUST], [passed, blind])
    assert folded.outcome == UNCHECKED
    assert folded.details == ["1 of 2 checks judged it; the others could not", "no reset"]
    inapplicable = CheckResult(
        "mcp-case", ("LOG-001",), outcome=Outcome.SKIPPED, detail="not applicable: off the wire"
    )
    (folded,) = requirement_outcomes([MUST], [passed, inapplicable])
    assert folded.outcome == "pass"


def test_unchecked_must_makes_the_run_incomplete() -> None:
    """An undeclared unchecked MUST: incomplete, exit 1, and the reports name it and why."""
    passing = CheckResult("c1", ("VAULT-003",))
    blind = CheckResult("c2", ("LOG-001",), outcome=Outcome.SKIPPED, detail="no observe.log")
    report = build_report(_run([passing, blind]))
    assert report["verdict"] == INCOMPLETE
    assert report["exitCode"] == 1
    assert report["unchecked"]["undeclared"] == [{"id": "LOG-001", "reasons": ["no observe.log"]}]
    lines = summary_lines(report)
    assert "unchecked MUST LOG-001: no observe.log" in lines
    assert lines[-1] == "verdict: incomplete (exit code 1)"


def test_declared_unchecked_must_is_conformant_and_listed() -> None:
    """A MUST declared unchecked, with a reason, leaves a conformant verdict that says so."""
    passing = CheckResult("c1", ("VAULT-003",))
    blind = CheckResult("c2", ("LOG-001",), outcome=Outcome.SKIPPED, detail="no observe.log")
    declared = Expectations("f", unchecked=(Entry("requirement", "LOG-001", "no log capture"),))
    report = build_report(_run([passing, blind], declared))
    assert report["verdict"] == DECLARED
    assert report["exitCode"] == 0
    assert verdict_text(report) == "conformant, with 1 MUST unchecked by declaration"
    assert report["unchecked"]["declared"][0]["declaration"] == "no log capture"


def test_reference_only_rule_is_not_applicable_to_another_host() -> None:
    """A rule about the reference host's own files neither passes nor blocks another host."""
    checks = [CheckResult("c1", ("VAULT-003", "LOG-001"))]
    report = build_report(_run(checks))
    outcome = {item["id"]: item["outcome"] for item in report["requirements"]}
    assert outcome["LEDG-009"] == NOT_APPLICABLE
    assert report["verdict"] == CONFORMANT


# --- the guards on a check's host ------------------------------------------------------------


class _Bare:
    """An in-memory host that announces only ``capabilities``."""

    def __init__(self, capabilities: Sequence[str]) -> None:
        self.capabilities = frozenset(capabilities)
        self.controls: list[str] = []

    def info(self) -> HostInfo:
        return HostInfo("bare", "0", "python", self.capabilities)

    def reset(self, config: HostConfig) -> None:
        del config

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        del tool, args
        if operator is not None:
            operator({}, self)  # type: ignore[arg-type]
        return CallResult("ALLOWED", "ok", False)

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> PendingCall:
        raise AssertionError("start must not reach a host that did not announce it")

    def observe(self) -> Observation:
        return Observation(b"", (), (), (), ())

    def control(self) -> Control:
        return cast(Control, self)

    def close(self) -> None:
        pass

    def revoke(self, kind: str, name: str) -> None:
        self.controls.append(f"revoke {kind} {name}")


def test_reading_an_unannounced_surface_skips_the_check() -> None:
    """An empty ledger from a host that never announced one is not evidence: the check skips."""
    host = RecordingHost(_Bare(["observe.log"]))
    seen = host.observe()
    assert seen.log_records == ()
    with pytest.raises(pytest.skip.Exception, match=r"observe\.ledger"):
        _ = seen.ledger_bytes
    assert host.blind == ["the host did not announce observe.ledger"]
    assert {"observe.log", "observe.ledger"} <= host.reads


def test_judges_marks_unchecked_instead_of_skipping() -> None:
    """A check may go on without a surface, leaving what it would judge by it unchecked."""
    host = RecordingHost(_Bare([]))
    with outcomes.recording("c") as record:
        assert host.observe().judges("observe.receipts", ("INV2",)) is False
    assert record.unchecked == [("INV2", "the host did not announce observe.receipts")]
    assert host.blind == []


def test_unannounced_control_is_never_sent_and_blinds_the_check() -> None:
    """An operator's action the host did not announce does not reach it; the check skips."""
    inner = _Bare([])
    host = RecordingHost(inner)
    host.reset(HostConfig())

    def operator(_request: Mapping[str, Any], control: Any) -> Any:
        control.revoke("tool", "echo")
        return outcomes_answer()

    host.invoke("echo", "{}", operator)
    assert inner.controls == []
    assert host.blind == ["the host did not announce control.revoke"]


def outcomes_answer() -> Any:
    """Return an approve answer."""
    from conformance.host import Answer

    return Answer.APPROVE


@pytest.mark.parametrize(
    ("config", "capability"),
    [
        (HostConfig(vault="absent"), "vault.absent"),
        (HostConfig(vault="failing:offline"), "vault.failing"),
        (HostConfig(policy_text="{"), "policy.text"),
    ],
)
def test_unannounced_feature_skips_before_reset(config: HostConfig, capability: str) -> None:
    """A configuration the host cannot take skips the check rather than erroring it."""
    host = RecordingHost(_Bare([]))
    with pytest.raises(pytest.skip.Exception, match=capability.replace(".", r"\.")):
        host.reset(config)


def test_start_without_the_capability_skips() -> None:
    """Concurrent calls are never started on a host that did not announce ``start``."""
    host = RecordingHost(_Bare([]))
    with pytest.raises(pytest.skip.Exception, match="start"):
        host.start("echo", "{}")


def test_sweep_records_what_it_searched_per_call() -> None:
    """A surface the host did not announce is reported unsearched, never clean."""
    value = "VALUE-canary-12345"
    detector = Detector([Guarded("s.password", value)])
    observation = Observation(value.encode(), (), (), (), ())
    sweep = detector.sweep(
        [CallRecord("echo", "clean", False, "ALLOWED")],
        observation,
        visible={Surface.RESULT, Surface.FAILURE, Surface.LOG, Surface.PRINTED},
    )
    assert sweep.leaks == []  # the ledger holds the value, but it was not searched
    assert Surface.LEDGER in sweep.unsearched
    assert sweep.calls == [("call 1 to echo", ("result", "host log", "printed output"))]
    full = detector.sweep([CallRecord("echo", "clean", False, "ALLOWED")], observation)
    assert [finding.surface for finding in full.leaks] == [Surface.LEDGER]


# --- the stripping proxy -----------------------------------------------------------------------


def test_stripper_hides_capabilities_members_and_actions() -> None:
    """The handshake, observe answers and unsupported actions all lose the stripped ones."""
    stripper = Stripper(["observe.log", "control.revoke"])
    assert stripper.from_suite({"id": 0, "method": "start", "params": {}}) is None
    hello: dict[str, Any] = {
        "id": 0,
        "result": {"protocol": 1, "host": {"capabilities": ["observe.log", "x"]}},
    }
    assert stripper.from_host(hello) is True
    assert hello["result"]["host"]["capabilities"] == ["x"]
    assert stripper.from_suite({"id": 1, "method": "observe", "params": {}}) is None
    seen: dict[str, Any] = {"id": 1, "result": {"log": [], "requests": []}}
    stripper.from_host(seen)
    assert seen["result"] == {"requests": []}
    refused = stripper.from_suite(
        {"id": 2, "method": "control", "params": {"op": "revoke", "kind": "tool", "name": "t"}}
    )
    assert refused is not None
    assert refused["error"]["code"] == "unsupported"
    prompt = {"id": 9, "method": "prompt", "params": {}}
    assert stripper.from_host(prompt) is False


def test_strip_all_hides_configure_features() -> None:
    """``ALL`` refuses a configure that needs any feature."""
    stripper = Stripper(["ALL"])
    answer = stripper.from_suite({"id": 3, "method": "configure", "params": {"vault": "absent"}})
    assert answer is not None
    assert "vault.absent" in answer["error"]["message"]


# --- end to end: hostile adapters in front of real hosts ---------------------------------------


def _conformance(tmp_path: Path, *arguments: str) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    done, _ = console(
        tmp_path,
        "--report-json",
        str(report),
        "--report-md",
        str(tmp_path / "report.md"),
        *arguments,
        timeout=600,
    )
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, data, done.stdout + done.stderr


def _stripped(capabilities: str, adapter: str) -> str:
    return f"{PYTHON} -m conformance.strip {capabilities} -- {adapter}"


def _mutant(name: str) -> str:
    return f"{PYTHON} -m conformance.selftest driver {name}"


def _outcomes(report: Mapping[str, Any]) -> dict[str, str]:
    return {item["id"]: item["outcome"] for item in report["requirements"]}


@pytest.mark.slow
@pytest.mark.req("LOG-001", "INV1")
def test_hidden_log_never_certifies_a_leaking_log(tmp_path: Path) -> None:
    """A host that logs the value and hides its log is incomplete, never conformant."""
    code, report, out = _conformance(
        tmp_path,
        "--host",
        _stripped("observe.log", _mutant("debug-log-holds-value")),
        "--requirements",
        "LOG-001,INV1",
    )
    assert code == 1, out[-3000:]
    assert report["verdict"] == INCOMPLETE
    outcome = _outcomes(report)
    assert outcome["LOG-001"] == UNCHECKED
    assert outcome["INV1"] == UNCHECKED
    assert {item["id"] for item in report["unchecked"]["undeclared"]} >= {"LOG-001", "INV1"}
    assert "verdict: incomplete" in out


@pytest.mark.slow
@pytest.mark.req("VAULT-001", "VAULT-002", "VAULT-003", "INV3", "INV5")
def test_hidden_vault_reads_neither_pass_nor_fail(tmp_path: Path) -> None:
    """With vault reads hidden, the vault rules are unchecked: not passed, not failed."""
    expectations = tmp_path / "expect.json"
    expectations.write_text(
        json.dumps(
            {
                "version": 1,
                "knownFailures": [{"requirement": "VAULT-002", "reason": "walks one page"}],
            }
        )
    )
    code, report, out = _conformance(
        tmp_path,
        "--host",
        _stripped("observe.vault-reads", _mutant("reference-free-reads-vault")),
        "--requirements",
        "VAULT-001,VAULT-002,VAULT-003",
        "--expectations",
        str(expectations),
    )
    assert code == 1, out[-3000:]
    outcome = _outcomes(report)
    for requirement in ("VAULT-001", "VAULT-002", "VAULT-003"):
        assert outcome[requirement] == UNCHECKED, requirement
    assert report["verdict"] == INCOMPLETE


@pytest.mark.slow
@pytest.mark.req("LOG-001")
def test_declared_unchecked_must_passes_with_the_declaration(tmp_path: Path) -> None:
    """A faithful host without a log capture, declaring what that leaves unseen, is conformant
    with those MUSTs listed as unchecked by declaration."""
    expectations = tmp_path / "expect.yaml"
    # Without a log, invariant 1 (every surface) cannot be certified either.
    expectations.write_text(
        "version: 1\nunchecked:\n"
        "  - requirement: LOG-001\n    reason: our logger cannot be captured in tests\n"
        "  - requirement: INV1\n    reason: the log is one of its surfaces\n"
    )
    code, report, out = _conformance(
        tmp_path,
        "--host",
        _stripped("observe.log", f"{PYTHON} -m reference_impl.driver"),
        "--requirements",
        "LOG-001",
        "--expectations",
        str(expectations),
    )
    assert code == 0, out[-3000:]
    assert report["verdict"] == DECLARED
    # INV1 is cited by the selected checks but lies outside the selection: not selected, so
    # neither unchecked nor passed (decisions S1.7), and the line names the selection.
    assert "conformant, with 1 MUST unchecked by declaration (only the checks of LOG-001)" in out
    assert {item["id"] for item in report["unchecked"]["declared"]} == {"LOG-001"}
    assert _outcomes(report)["INV1"] == "not-selected"
    assert report["unchecked"]["undeclared"] == []


@pytest.mark.slow
@pytest.mark.req("INV1")
def test_adapter_that_announces_nothing_passes_nothing(tmp_path: Path) -> None:
    """An adapter that answers every call ALLOWED with 'ok' gets no requirement passed."""
    code, report, out = _conformance(
        tmp_path, "--host", _stripped("ALL", f"{PYTHON} {BROKEN_HOST} good")
    )
    assert code == 1, out[-3000:]
    passed = [rid for rid, outcome in _outcomes(report).items() if outcome == "pass"]
    assert passed == []
    assert report["verdict"] != CONFORMANT
    accepted = [
        rid for rid, outcome in _outcomes(report).items() if outcome == "accepted-alternative"
    ]
    assert accepted == []
