"""Checks that a call's ledger record says how the call ended (decisions R6.2, R6.3, R6.5).

This module owns the record's account of the outcome, for every way a call can end: refused in
the pre-pass, refused by the operator or the clock, run and succeeded, run and failed, and (on
the reference host) failed inside the host itself. A record must carry the disposition the
agent was given and the same ``isError``; a call that did not fail carries no ``errorSnippet``,
a handler's failure carries the head of its failure text, and a snippet never says more than
the agent was told; and the host's own reader, where it reports one, gives all three back as
the file holds them. The other ledger checks looked at refusals' dispositions only, so a host
that recorded a refusal or a host failure as a success passed them. It never prints a value.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer, CallResult, HandlerKind, SecretSpec
from conformance.outcomes import fail, require
from conformance.scenario import (
    RECORDER,
    REFERENCE_CAPABILITY,
    RecordingHost,
    answering,
    args_json,
    config,
    ledger_records,
    make_secret,
    new_id,
    ref,
    require_record_says_how_it_ended,
    require_snippet_fits,
    tool,
)
from reference_impl import STEP_ORDER

#: The failing handler every failure case binds.
_THROWER: Final = tool("thrower", HandlerKind.THROWER)

#: Each case: the policy, the arguments (None: one reference to the secret; "unknown": an id the
#: vault lacks; "malformed": a candidate that is not a reference), the operator's answer, the
#: tool, and whether the call is refused before its tool runs.
_CASES: Final[dict[str, tuple[dict[str, Any], str | None, Answer, str, bool]]] = {
    "malformed": ({}, "malformed", Answer.APPROVE, RECORDER.name, True),
    "feature-off": ({"secretReferencesEnabled": False}, None, Answer.APPROVE, RECORDER.name, True),
    "bearing-deny": ({"secretBearingCalls": "DENY"}, None, Answer.APPROVE, RECORDER.name, True),
    "tool-deny": ({"tools": {RECORDER.name: "DENY"}}, None, Answer.APPROVE, RECORDER.name, True),
    "unknown-id": ({}, "unknown", Answer.APPROVE, RECORDER.name, True),
    "operator-deny": ({}, None, Answer.DENY, RECORDER.name, True),
    "timeout": ({}, None, Answer.NONE, RECORDER.name, True),
    "approved": ({}, None, Answer.APPROVE, RECORDER.name, False),
    "handler-fails": ({}, None, Answer.APPROVE, _THROWER.name, False),
}

#: The fields of a record that say how its call ended.
_OUTCOME_FIELDS: Final = ("approvalDisposition", "isError", "errorSnippet")

#: A short approval timeout for the ``timeout`` case, in seconds; every other case waits long,
#: so that an answer that travels a few tenths of a second still comes in time.
_APPROVAL_TIMEOUT_S: Final = 0.3
_ANSWERED_TIMEOUT_S: Final = 30.0


def _check_record(case: str, record: Mapping[str, Any], outcome: CallResult) -> None:
    """The record agrees with the outcome: disposition, isError and which snippet it carries."""
    require_record_says_how_it_ended(case, record, outcome)
    snippet = record.get("errorSnippet")
    require_snippet_fits(f"a {case} call", snippet, failed=outcome.is_error)
    if outcome.is_error and snippet:
        # A snippet is cut from the failure text the agent got: never more, never other text.
        head = str(snippet).rstrip("…. ")[:40]
        require(
            head in outcome.text,
            "LEDG-001",
            f"a {case} call's errorSnippet is not cut from the text the agent was given",
        )


@pytest.mark.req("LEDG-001", "LEDG-005", "LEDG-008", "LEDG-020")
@pytest.mark.parametrize("case", list(_CASES))
def test_record_says_how_the_call_ended(host: RecordingHost, mint: Mint, case: str) -> None:
    """A call's one record carries the disposition and isError the agent got; a call that did
    not fail carries no errorSnippet, and a handler's failure carries one."""
    policy, args, answer, tool_name, _refused = _CASES[case]
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            tools=(RECORDER, _THROWER),
            policy=policy or None,
            approval_timeout_s=(
                _APPROVAL_TIMEOUT_S if answer is Answer.NONE else _ANSWERED_TIMEOUT_S
            ),
        )
    )
    if args is None:
        args = args_json({"x": ref(secret.id)})
    elif args == "unknown":
        args = args_json({"x": ref(new_id())})
    elif args == "malformed":
        args = args_json({"x": "{{secret:not-a-uuid}}"})
    outcome = host.invoke(tool_name, args, answering(answer))
    seen = host.observe()
    records = ledger_records(seen)
    require(len(records) == 1, "LEDG-005", f"a {case} call left {len(records)} records, not one")
    _check_record(case, records[0], outcome)
    if seen.ledger_read is not None:
        # The host's own reader must give the outcome back as the file holds it.
        read = list(seen.ledger_read)
        require(
            len(read) == 1 and all(read[0].get(k) == records[0].get(k) for k in _OUTCOME_FIELDS),
            "LEDG-020",
            f"the host's reader gives a {case} call's outcome otherwise than its file holds it",
        )
    if tool_name == _THROWER.name:
        snippet = records[0].get("errorSnippet")
        require_snippet_fits(f"a {case} call", snippet, failed=True, raised=True)


def _failing_registry(
    secret: SecretSpec, step: str, ledger: Any, *, always: bool = False
) -> tuple[Any, list[str]]:
    """A reference registry whose own step ``step`` fails once (every time, when ``always``),
    with one echo tool, and the steps it has reached so far."""
    from reference_impl import InMemoryVault, Registry, SecretRecord, SecretValue, Tool, User

    heard: list[str] = []

    def tracer(name: str) -> None:
        heard.append(name)
        if name == step and (always or heard.count(name) == 1):
            raise RuntimeError(f"the host failed at {name}")

    record = SecretRecord(
        secret.id,
        secret.website,
        SecretValue(secret.username),
        SecretValue(secret.password),
        SecretValue(secret.notes),
    )
    registry = Registry(
        vault=InMemoryVault([record]),
        ledger=ledger,
        user=User(permissions=frozenset({"secret.read"})),
        tracer=tracer,
    )
    registry.register(Tool("echo", "plugin.canary", lambda arguments: arguments.raw))
    return registry, heard


@pytest.mark.req("LEDG-016")
@pytest.mark.parametrize("step", STEP_ORDER)
def test_host_failure_record_says_it_failed(host: RecordingHost, mint: Mint, step: str) -> None:
    """A call the reference host itself fails on at any step is recorded as failed: isError,
    the disposition the agent got, and the failure's text as its snippet."""
    if not host.has(REFERENCE_CAPABILITY):
        pytest.skip("not applicable: this check fails the reference implementation's own steps")
    from reference_impl import MemoryLedger

    secret = make_secret(mint)
    ledger = MemoryLedger()
    registry, heard = _failing_registry(secret, step, ledger)
    outcome = registry.invoke("echo", json.dumps({"x": "{{secret:" + secret.id + "}}"}))
    require(step in heard, "LEDG-016", f"the registry never reached the {step} step")
    require(len(ledger.records) == 1, "LEDG-016", f"a failure at {step} was not recorded once")
    written = ledger.records[0]
    require(
        outcome.is_error and written.is_error,
        "LEDG-016",
        f"a host failure at {step} was recorded with isError {written.is_error}",
    )
    require(
        written.approval_disposition == outcome.disposition,
        "LEDG-016",
        f"a host failure at {step} ended {outcome.disposition.value} but was recorded as "
        f"{written.approval_disposition.value}",
    )
    require(
        bool(written.error_snippet) and str(written.error_snippet) in outcome.text,
        "LEDG-016",
        f"a host failure at {step} was recorded without the failure's text as its snippet",
    )


@pytest.mark.req("LEDG-013")
@pytest.mark.parametrize("step", STEP_ORDER)
def test_host_failure_with_its_record_lost_says_so(
    host: RecordingHost, mint: Mint, step: str
) -> None:
    """A call the reference host fails on, whose record of that failure cannot be written
    either, reports the lost record on the call (decisions R6.7)."""
    if not host.has(REFERENCE_CAPABILITY):
        pytest.skip("not applicable: this check fails the reference implementation's own steps")
    from reference_impl import MemoryLedger

    class FullLedger(MemoryLedger):
        def append(self, record: Any) -> None:
            raise OSError(errno.ENOSPC, "no space left")

    secret = make_secret(mint)
    registry, heard = _failing_registry(secret, step, FullLedger())
    outcome = registry.invoke("echo", json.dumps({"x": "{{secret:" + secret.id + "}}"}))
    require(step in heard, "LEDG-013", f"the registry never reached the {step} step")
    require(
        outcome.is_error and outcome.ledger_error is not None,
        "LEDG-013",
        f"a host failure at {step} whose record could not be written did not say so on the call",
    )


@pytest.mark.req("LEDG-016", "LEDG-013")
def test_host_failure_whose_record_cannot_be_built_says_so(host: RecordingHost, mint: Mint) -> None:
    """A call whose record the reference host fails to build, and fails again to build as the
    record of that failure, still ends: invoke does not raise, the result is withheld, nothing
    is written, and the call says its record was lost."""
    if not host.has(REFERENCE_CAPABILITY):
        pytest.skip("not applicable: this check fails the reference implementation's own steps")
    from reference_impl import MemoryLedger

    secret = make_secret(mint)
    ledger = MemoryLedger()
    registry, heard = _failing_registry(secret, "ledger", ledger, always=True)
    try:
        outcome = registry.invoke("echo", json.dumps({"x": "{{secret:" + secret.id + "}}"}))
    except Exception as error:  # the host's contract is that invoke never raises
        fail("LEDG-016", f"invoke raised {type(error).__name__} when no record could be built")
    require(heard.count("ledger") >= 2, "LEDG-016", "the registry never tried the record twice")
    require(
        not ledger.records,
        "LEDG-016",
        f"a record that could not be built left {len(ledger.records)} records",
    )
    require(
        outcome.is_error and outcome.ledger_error is not None,
        "LEDG-013",
        "a call whose record could not be built did not say so on the call",
    )
