"""Checks of a pending limit configured well above small numbers (decisions R3.5).

This module owns the pending limit at sizes the other checks never configure: a host that
counts its open prompts in a way that holds only for small counts (a byte-sized counter, a
comparison by identity that only small integers pass) keeps its limit at 1, 2 or 4 and loses
it at 257. It holds the limit's worth of prompts open through the host interface, asks once
more, and must never answer a prompt it did not open.

Over MCP the check is reported not applicable, a deliberate reading of decisions S1.1: the rule
can arise there, but this check's case (64 or 257 elicitations open at once) cannot be put to a
host through the suite's one MCP client session, which answers elicitations one connection at a
time and closes for every later check once it gives up. Capping the count to what that session
holds would report a pass at 257 for a count never tried, and an ``unchecked`` reason would
leave APPR-009 unchecked for every host over MCP, the reference host included, although the
smaller checks of APPR-009 judge the pending limit there (test_approval). The counting fault
this check looks for lives in the host's approval core, which every path shares, and is judged
on the in-process and driver paths.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import Mint
from conformance.outcomes import not_applicable, require
from conformance.scenario import (
    RECORDER,
    HeldOperator,
    RecordingHost,
    args_json,
    config,
    make_secret,
    ref,
)
from conformance.via import via_mcp

#: Limits past the sizes a counter or an integer cache might keep exact: 64, and 257, one past
#: the 256 that CPython keeps one object for, so that a count compared by identity is caught.
LARGE_LIMITS: Final = (64, 257)

#: How long the held calls may take to finish once released, in seconds.
_RESULT_WAIT: Final = 60.0


@pytest.mark.req("APPR-009")
@pytest.mark.parametrize("limit", LARGE_LIMITS)
def test_large_pending_limit_holds(host: RecordingHost, mint: Mint, limit: int) -> None:
    """With a pending limit above small numbers and that many prompts open, one more call ends
    as QUEUE_FULL with its tool unused, and every held call runs once released."""
    host.need("start")
    if via_mcp(host):
        # The suite's one MCP client session answers elicitations one connection at a time:
        # it cannot hold this many open at once, and a session that gives up closes for every
        # later check. The pending limit is judged over MCP by the smaller checks of APPR-009.
        not_applicable(
            "over MCP the suite's client session cannot hold "
            f"{limit} elicitations open at once (APPR-009's smaller checks run over MCP)"
        )
    secret = make_secret(mint)
    host.reset(config([secret], pending_limit=limit, approval_timeout_s=60.0))
    args = args_json({"x": ref(secret.id)})
    held = HeldOperator()
    pending = []
    try:
        pending = [host.start(RECORDER.name, args, held) for _ in range(limit)]
        require(held.wait_seen(limit), "APPR-009", f"{limit} held prompts never all opened")
        extra = host.invoke(RECORDER.name, args)
    finally:
        held.release()
    results = [call.result(_RESULT_WAIT) for call in pending]
    require(
        extra.disposition == "QUEUE_FULL",
        "APPR-009",
        f"with {limit} prompts open and a pending limit of {limit}, one more call ended "
        f"{extra.disposition}",
    )
    require(
        sum(result.disposition == "APPROVED_ONCE" for result in results) == limit,
        "APPR-009",
        "the held calls did not all run once released",
    )
    require(
        len(host.observe().receipts) == limit,
        "APPR-009",
        "the QUEUE_FULL call reached its tool",
    )
