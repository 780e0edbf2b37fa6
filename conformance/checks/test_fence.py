"""Checks of the revocation fence (decisions R3.4; design invariant 4).

The operator script acts on the host while the prompt is open (revoke or reset a rule, save a
DENY, drop ``secret.read``) and then approves. The approval is bound to the state the prompt
opened under, so the call must be refused and its tool never called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import pytest

from conformance.canary import Mint
from conformance.host import Control, SecretSpec
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
    require_lost_read_refused,
)

_RULE_CASES: dict[str, tuple[str, str, Callable[[Control], None]]] = {
    "revoke-tool": ("FENCE-001", "control.revoke", lambda c: c.revoke("tool", RECORDER.name)),
    "revoke-provider": ("FENCE-001", "control.revoke", lambda c: c.revoke("provider", PROVIDER)),
    "reset": ("FENCE-001", "control.reset", lambda c: c.reset()),
    "deny-tool": (
        "FENCE-002",
        "control.save-rule",
        lambda c: c.save_rule("tool", RECORDER.name, "DENY"),
    ),
    "deny-provider": (
        "FENCE-002",
        "control.save-rule",
        lambda c: c.save_rule("provider", PROVIDER, "DENY"),
    ),
}


#: What the call carries: one reference, or several in each role (two secrets, two fields of
#: one secret, three references). A fence that is checked for one reference only is a fence.
_SHAPES: Final = ("one", "two-secrets", "two-fields", "three")


def _references(mint: Mint, shape: str) -> tuple[list[SecretSpec], dict[str, str]]:
    first, second = make_secret(mint), make_secret(mint)
    members = {
        "one": {"x": ref(first.id)},
        "two-secrets": {"x": ref(first.id), "y": ref(second.id, "username")},
        "two-fields": {"x": ref(first.id), "y": ref(first.id, "notes")},
        "three": {"x": ref(first.id), "y": ref(second.id), "z": ref(first.id, "username")},
    }[shape]
    return [first, second], members


@pytest.mark.req("FENCE-001", "FENCE-002", "INV4")
@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("case", list(_RULE_CASES))
def test_rule_change_while_prompt_open(
    host: RecordingHost, mint: Mint, case: str, shape: str
) -> None:
    """A revocation, reset or DENY saved while the prompt is open refuses the approved call,
    whatever references the call carries."""
    requirement, capability, action = _RULE_CASES[case]
    host.need(capability)
    secrets, members = _references(mint, shape)
    host.reset(config(secrets))
    outcome = host.invoke(RECORDER.name, args_json(members), acting(action))
    require(
        outcome.disposition == "POLICY_DENIED",
        (requirement, "INV4"),
        f"{case} while the prompt was open ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), (requirement, "INV4"), f"the tool ran after {case}")


@pytest.mark.req("FENCE-001", "INV4")
def test_trusted_rule_revoked_while_prompt_open(host: RecordingHost, mint: Mint) -> None:
    """Revoking a saved ALLOW while the prompt is open still refuses the approved call."""
    host.need("control.revoke", "control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret], policy={"tools": {RECORDER.name: "ALLOW"}}))

    def revoke(control: Control) -> None:
        control.save_rule("tool", RECORDER.name, "ALLOW")
        control.revoke("tool", RECORDER.name)

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(revoke))
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-001", "INV4"),
        f"a revocation while the prompt was open ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), "FENCE-001", "the tool ran after the revocation")


#: Ways to lose secret.read while the prompt is open: for good, or given back before the answer
#: (by the permission, or by an admin role). A loss while the prompt is open refuses the call
#: whatever follows it: R3.4 lists the loss among the events that refuse, and its one EITHER
#: is for a DENY replaced before the answer, not for a permission.
_LOSSES: Final[dict[str, tuple[tuple[bool, tuple[str, ...]], ...]]] = {
    "dropped": ((False, ()),),
    "given-back": ((False, ()), (False, ("secret.read",))),
    "given-back-as-admin": ((False, ()), (True, ())),
}


@pytest.mark.req("FENCE-003", "FENCE-004")
@pytest.mark.parametrize("loss", list(_LOSSES))
@pytest.mark.parametrize("shape", _SHAPES)
def test_secret_read_lost_while_prompt_open(
    host: RecordingHost, mint: Mint, shape: str, loss: str
) -> None:
    """Losing secret.read while the prompt is open refuses the call, SECRET_FORBIDDEN ideally,
    whatever references the call carries, and even when it is given back before the answer."""
    host.need("control.set-permissions")
    secrets, members = _references(mint, shape)
    host.reset(config(secrets))

    def drop(control: Control) -> None:
        for admin, permissions in _LOSSES[loss]:
            control.set_permissions(admin, permissions)

    outcome = host.invoke(RECORDER.name, args_json(members), acting(drop))
    require_lost_read_refused(host, outcome, f"a call whose user lost secret.read ({loss})")


@pytest.mark.req("INV4", "FENCE-001")
def test_untouched_approval_runs(host: RecordingHost, mint: Mint) -> None:
    """An action on another tool's rule leaves the approval bound and the call runs."""
    host.need("control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret]))
    outcome = host.invoke(
        RECORDER.name,
        args_json({"x": ref(secret.id)}),
        acting(lambda c: c.save_rule("tool", "some-other-tool", "DENY")),
    )
    require(
        outcome.disposition == "APPROVED_ONCE",
        "INV4",
        f"an unrelated rule change refused the call as {outcome.disposition}",
    )
