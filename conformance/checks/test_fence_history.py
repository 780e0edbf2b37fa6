"""Checks that the revocation fence still sees a change after earlier changes (decisions R3.4).

This module owns the fence on a host whose rules have already moved: after a reset of every
rule, a later revocation while a prompt is open must still refuse the approved call, and
several changes made while one prompt is open must not cancel out. A host that folds its change
counters together badly (OR, XOR) sees one change and misses the next. It acts
on the host only from inside prompts, and must never let a refused call's tool run unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.canary import Mint
from conformance.host import Control
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    acting,
    args_json,
    config,
    make_secret,
    ref,
)

_REVOCATIONS: dict[str, Callable[[Control], None]] = {
    "revoke-tool": lambda c: c.revoke("tool", RECORDER.name),
    "revoke-provider": lambda c: c.revoke("provider", PROVIDER),
}


@pytest.mark.req("FENCE-001", "INV4")
@pytest.mark.parametrize("case", list(_REVOCATIONS))
def test_revocation_after_reset_while_prompt_open(
    host: RecordingHost, mint: Mint, case: str
) -> None:
    """After a reset of every rule, a revocation while a later prompt is open still refuses the
    approved call, and its tool never runs."""
    host.need("control.reset", "control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json({"x": ref(secret.id)})
    first = host.invoke(RECORDER.name, args, acting(lambda c: c.reset()))
    require(
        first.disposition == "POLICY_DENIED",
        ("FENCE-001", "INV4"),
        f"a reset while the prompt was open ended {first.disposition}",
    )
    outcome = host.invoke(RECORDER.name, args, acting(_REVOCATIONS[case]))
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-001", "INV4"),
        f"{case} after an earlier reset, while the prompt was open, ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-001", "INV4"),
        f"the tool ran after {case} following a reset",
    )


@pytest.mark.req("FENCE-001", "INV4")
def test_reset_and_revocations_in_one_prompt(host: RecordingHost, mint: Mint) -> None:
    """A reset and revocations of the tool's and the provider's rules, all made while one
    prompt is open, refuse the approved call: the changes must not cancel out."""
    host.need("control.reset", "control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))

    def all_of_them(control: Control) -> None:
        control.reset()
        for revoke in _REVOCATIONS.values():
            revoke(control)

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(all_of_them))
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-001", "INV4"),
        f"a reset and two revocations in one prompt ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-001", "INV4"),
        "the tool ran after a reset and two revocations",
    )


#: What follows a DENY saved while the prompt is open: a second change of the same rule, which
#: must not undo the first in the fence's eyes. The last saved rule may let the call through
#: when decided afresh (ASK, ALLOW), so only the fence can refuse it.
_AFTER_DENY: dict[str, Callable[[Control, str, str], None]] = {
    "then-ask": lambda c, kind, name: c.save_rule(kind, name, "ASK"),
    "then-allow": lambda c, kind, name: c.save_rule(kind, name, "ALLOW"),
    "then-deny-again": lambda c, kind, name: c.save_rule(kind, name, "DENY"),
    "then-revoke": lambda c, kind, name: c.revoke(kind, name),
}

_SCOPES: dict[str, str] = {"tool": RECORDER.name, "provider": PROVIDER}


@pytest.mark.req("FENCE-002", "FENCE-001", "INV4")
@pytest.mark.parametrize("after", list(_AFTER_DENY))
@pytest.mark.parametrize("kind", list(_SCOPES))
def test_deny_saved_then_replaced_in_one_prompt(
    host: RecordingHost, mint: Mint, kind: str, after: str
) -> None:
    """A DENY saved for the tool or the provider while the prompt is open refuses the approved
    call even when the same rule is changed again before the answer: the fence counts changes,
    so a second change must not bring the first one's count back."""
    host.need("control.save-rule", "control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))
    name = _SCOPES[kind]

    def deny_then(control: Control) -> None:
        control.save_rule(kind, name, "DENY")
        _AFTER_DENY[after](control, kind, name)

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(deny_then))
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-002", "INV4"),
        f"a DENY saved for the {kind} and then changed ({after}) while the prompt was open "
        f"ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-002", "INV4"),
        f"the tool ran after a DENY for the {kind} was saved and then changed ({after})",
    )
