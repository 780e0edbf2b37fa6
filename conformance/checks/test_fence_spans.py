"""Checks of revocations that span the prompts of more than one call (decisions R3.4).

This module owns the fence across calls: a host's revocation stamps live as long as the host,
so the second and third revocation of one rule must move them as the first did, and one
revocation while two calls' prompts are open must refuse both. The other fence checks start
each scenario on a fresh host and revoke once, so a stamp that moves only on its first change,
or a fence that remembers one open prompt, passed them. The operator acts through the host
interface only, and the check never answers a prompt it did not open.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import Mint
from conformance.host import Control
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    HeldOperator,
    RecordingHost,
    acting,
    args_json,
    config,
    make_secret,
    ref,
)

#: What is revoked: the tool's rule or its provider's.
KINDS: Final = {"tool": RECORDER.name, "provider": PROVIDER}

#: How many calls, or pairs of calls, each meet a revocation of the same rule.
ROUNDS: Final = 3

#: How long a held call may take to finish once released, in seconds.
_RESULT_WAIT: Final = 20.0


@pytest.mark.req("FENCE-001", "INV4")
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_of_several_revocations_refuses_its_call(
    host: RecordingHost, mint: Mint, kind: str
) -> None:
    """Calls in turn, each meeting a revocation of the same rule while its prompt is open, are
    each refused: the second and third revocations fence as the first did."""
    host.need("control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json({"x": ref(secret.id)})

    def revoke(control: Control) -> None:
        control.revoke(kind, KINDS[kind])

    for round_ in range(1, ROUNDS + 1):
        outcome = host.invoke(RECORDER.name, args, acting(revoke))
        require(
            outcome.disposition == "POLICY_DENIED",
            ("FENCE-001", "INV4"),
            f"revocation {round_} of the {kind} rule, while its call's prompt was open, ended "
            f"the call {outcome.disposition}",
        )
    require(host.observe().receipts == (), ("FENCE-001", "INV4"), "a fenced call's tool ran")


@pytest.mark.req("FENCE-001", "INV4")
@pytest.mark.parametrize("kind", list(KINDS))
def test_one_revocation_refuses_every_open_prompt(
    host: RecordingHost, mint: Mint, kind: str
) -> None:
    """One revocation while two calls' prompts are open refuses both calls, round after round
    on the same host."""
    host.need("start", "control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=30.0))
    args = args_json({"x": ref(secret.id)})
    for round_ in range(1, ROUNDS + 1):
        held = HeldOperator()
        pending = [host.start(RECORDER.name, args, held) for _ in range(2)]
        try:
            require(held.wait_seen(2), "FENCE-001", "the two held prompts never opened")
            host.control().revoke(kind, KINDS[kind])
        finally:
            held.release()
        ended = [call.result(_RESULT_WAIT).disposition for call in pending]
        require(
            ended == ["POLICY_DENIED", "POLICY_DENIED"],
            ("FENCE-001", "INV4"),
            f"revocation {round_} of the {kind} rule while two prompts were open ended the "
            f"calls {ended}",
        )
    require(host.observe().receipts == (), ("FENCE-001", "INV4"), "a fenced call's tool ran")
