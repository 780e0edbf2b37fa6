"""Checks that a host's count of open prompts stays true across many calls (decisions R3.5).

This module owns the pending limit as it stands after earlier prompts have opened and closed: a
host that frees a slot twice, or never, drifts from the limit it was given. It drives prompts
only through the host interface, and must never answer a prompt it did not open.
"""

from __future__ import annotations

import pytest

from conformance.canary import Mint
from conformance.outcomes import require
from conformance.scenario import (
    RECORDER,
    HeldOperator,
    RecordingHost,
    args_json,
    config,
    make_secret,
    ref,
)

#: How long a held call may take to finish once released, in seconds; generous for a busy
#: runner, far below the 30 s approval timeout the check configures.
_RESULT_WAIT = 20.0


@pytest.mark.req("APPR-009")
@pytest.mark.parametrize("limit", [1, 2])
def test_limit_holds_after_prompts_closed(host: RecordingHost, mint: Mint, limit: int) -> None:
    """After more prompts than the limit have opened and closed, one call beyond the limit of
    open prompts still ends as QUEUE_FULL, tool unused."""
    host.need("start")
    secret = make_secret(mint)
    host.reset(config([secret], pending_limit=limit, approval_timeout_s=30.0))
    args = args_json({"x": ref(secret.id)})
    earlier = limit + 1
    for _ in range(earlier):
        done = host.invoke(RECORDER.name, args)
        require(
            done.disposition == "APPROVED_ONCE",
            "APPR-009",
            f"an approved call ended {done.disposition} with no other prompt open",
        )
    held = HeldOperator()
    pending = [host.start(RECORDER.name, args, held) for _ in range(limit)]
    try:
        require(held.wait_seen(limit), "APPR-009", "the held prompts never opened")
        extra = host.invoke(RECORDER.name, args)
    finally:
        held.release()
    results = [call.result(_RESULT_WAIT) for call in pending]
    require(
        extra.disposition == "QUEUE_FULL",
        "APPR-009",
        f"after {earlier} closed prompts, a prompt beyond the limit of {limit} ended "
        f"{extra.disposition}",
    )
    require(
        all(result.disposition == "APPROVED_ONCE" for result in results),
        "APPR-009",
        "the held calls did not run once released",
    )
    require(
        len(host.observe().receipts) == earlier + limit,
        "APPR-009",
        "the QUEUE_FULL call reached its tool",
    )
