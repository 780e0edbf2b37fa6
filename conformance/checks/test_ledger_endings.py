"""Checks the ledger records of two endings the outcome checks leave out (decisions R3.5, R6).

This module owns the record of a call refused because the pending limit was full, and of an
approved call whose tool ran past the host's execution timeout. Like every other call, each
leaves one record carrying the disposition the agent was given and the same ``isError``: a
QUEUE_FULL call is a refusal (failed, tool unused), and an execution timeout is a failure of a
call the operator approved, which is not an approval that timed out. The pending limit's own
counting belongs to other modules; this one reads only what the ledger says. It never prints
a value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import HandlerKind
from conformance.outcomes import require
from conformance.scenario import (
    RECORDER,
    HeldOperator,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    ref,
    require_record_says_how_it_ended,
    tool,
)

#: How long a held call may take to finish once released, in seconds; generous for a busy
#: runner, far below the approval timeout the QUEUE_FULL check configures.
_RESULT_WAIT: Final = 20.0

#: The execution timeout the timeout check configures, in seconds, and how long its handler
#: would run: far past the timeout, so the host ends the call first on any machine.
_EXECUTION_TIMEOUT_S: Final = 0.3
_HANDLER_SLEEP_S: Final = 3.0

#: The dispositions that say a call's tool never ran (decisions R3.5, R6.5).
_TOOL_UNUSED: Final = frozenset({"TIMEOUT", "QUEUE_FULL", "DENIED"})


def _record_of(records: list[dict[str, Any]], member: str, ending: str) -> Mapping[str, Any]:
    """Return the one record whose sanitizedArgs hold the member name ``member``; fail unless
    there is one. A member name holds no reference, so no redaction a host makes can hide it.
    """
    quoted = json.dumps(member)

    def text(record: Mapping[str, Any]) -> str:
        recorded = record.get("sanitizedArgs")
        return recorded if isinstance(recorded, str) else json.dumps(recorded)

    mine = [record for record in records if quoted in text(record)]
    require(
        len(mine) == 1,
        "LEDG-005",
        f"a call that ended {ending} left {len(mine)} records with its arguments, not one",
    )
    return mine[0]


@pytest.mark.req("LEDG-001", "LEDG-005", "LEDG-008", "APPR-009")
def test_queue_full_recorded_as_queue_full(host: RecordingHost, mint: Mint) -> None:
    """A call refused as QUEUE_FULL leaves a record saying QUEUE_FULL, failed, as the agent
    was told: not a success, and not the TIMEOUT of a prompt that was shown."""
    host.need("start")
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,), pending_limit=1, approval_timeout_s=30.0))
    held_args = args_json({"held": ref(secret.id)})
    extra_args = args_json({"extra": ref(secret.id)})
    held = HeldOperator()
    pending = host.start(RECORDER.name, held_args, held)
    try:
        require(held.wait_seen(1), "APPR-009", "the held prompt never opened")
        extra = host.invoke(RECORDER.name, extra_args)
    finally:
        held.release()
    done = pending.result(_RESULT_WAIT)
    require(
        extra.disposition == "QUEUE_FULL",
        "APPR-009",
        f"a prompt beyond the limit of 1 ended {extra.disposition}, not QUEUE_FULL",
    )
    require(
        extra.is_error,
        "APPR-009",
        "a call refused as QUEUE_FULL was not reported to the agent as failed",
    )
    records = ledger_records(host.observe())
    record = _record_of(records, "extra", "QUEUE_FULL")
    require_record_says_how_it_ended("QUEUE_FULL", record, extra)
    require_record_says_how_it_ended("held", _record_of(records, "held", done.disposition), done)


@pytest.mark.req("LEDG-001", "LEDG-005", "LEDG-008")
def test_execution_timeout_recorded_as_approved(host: RecordingHost, mint: Mint) -> None:
    """An approved call whose tool ran past the execution timeout is recorded with the
    disposition it ended with, failed: never as a TIMEOUT, which says no operator answered."""
    secret = make_secret(mint)
    slow = tool("slow", HandlerKind.TIMEOUT, seconds=_HANDLER_SLEEP_S)
    host.reset(config([secret], tools=(slow,), execution_timeout_s=_EXECUTION_TIMEOUT_S))
    outcome = host.invoke(slow.name, args_json({"slow-call": ref(secret.id)}))
    seen = host.observe()
    require(
        len(seen.receipts) == 1,
        "LEDG-005",
        f"an approved call's tool ran {len(seen.receipts)} times, not once",
    )
    require(
        outcome.is_error,
        "LEDG-001",
        f"a tool that outlived the execution timeout ended {outcome.disposition}, not failed",
    )
    record = _record_of(ledger_records(seen), "slow-call", "past the execution timeout")
    require_record_says_how_it_ended("timed-out", record, outcome)
    # The operator answered and the tool ran: a disposition saying otherwise is false.
    require(
        record.get("approvalDisposition") not in _TOOL_UNUSED,
        "LEDG-005",
        "an approved call whose tool ran past the execution timeout was recorded as "
        f"{record.get('approvalDisposition')}, a disposition of a call whose tool never ran",
    )
