"""Checks that give each reference field every role the approval path has (decisions R3.1, R3.2,
R3.4; invariants 3 and 4).

The older approval and fence checks use password references; a host that judges a call by its
fields (a username is "only metadata", so a call carrying nothing else needs no prompt) passes
them. Here the only reference of a call is a username or a note, under a trusting policy, a
granted trust and YOLO, on a low-risk tool and with the fence moved while its prompt is open;
and one call carries two and three fields of one secret. Nothing here prints a value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from conformance.canary import Mint
from conformance.host import Control, HandlerKind
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    acting,
    args_json,
    config,
    ledger_records,
    make_secret,
    name_of,
    ref,
    tool,
    value_of,
)

#: The fields whose roles the older checks never gave them.
FIELDS = ("username", "notes")

#: Trust granted by the policy file (``None``) or at run time (a control and its capability).
_GRANTS: dict[
    str, tuple[Mapping[str, Any] | None, str | None, Callable[[Control], None] | None]
] = {
    "yolo-policy": ({"yolo": True}, None, None),
    "tool-allow-policy": ({"tools": {RECORDER.name: "ALLOW"}}, None, None),
    "session-trust": (None, "control.trust-session", lambda c: c.trust_session(RECORDER.name)),
    "yolo": (None, "control.set-yolo", lambda c: c.set_yolo(True)),
}


@pytest.mark.req("APPR-001", "APPR-002", "APPR-003", "INV3")
@pytest.mark.parametrize("grant", list(_GRANTS))
@pytest.mark.parametrize("field_name", FIELDS)
def test_single_field_call_is_asked(
    host: RecordingHost, mint: Mint, field_name: str, grant: str
) -> None:
    """A call whose only reference is a username or a note prompts, with risk HIGH or above and
    its one descriptor, under every trust a host can grant."""
    policy, capability, action = _GRANTS[grant]
    if capability is not None:
        host.need(capability)
    secret = make_secret(mint)
    low = tool(RECORDER.name, HandlerKind.RECORDER, risk="LOW")
    host.reset(config([secret], tools=(low,), policy=policy))
    free = host.invoke(low.name, args_json({"x": "plain"}), acting(action) if action else None)
    if free.disposition == "POLICY_DENIED":
        pytest.skip(f"the host does not accept the {grant} policy field")
    before = len(host.observe().approval_requests)
    outcome = host.invoke(low.name, args_json({"x": ref(secret.id, field_name)}))
    after = host.observe().approval_requests[before:]
    require(
        len(after) == 1
        and list(after[0].get("secretRefs") or []) == [name_of(secret.id, field_name)],
        ("APPR-001", "INV3"),
        f"under {grant} a call whose only reference is a {field_name} ran without a prompt",
    )
    require(not outcome.is_error, "APPR-001", f"the approved call ended {outcome.disposition}")
    shown = str(after[0].get("risk"))
    require(
        shown in ("HIGH", "CRITICAL"),
        "APPR-003",
        f"a {field_name}-only call on a LOW tool was asked at risk {shown}",
    )
    require(
        list(after[0].get("descriptors") or [])
        == [f"{secret.website} ({secret.username}) - {field_name}"],
        "APPR-002",
        f"the prompt of a {field_name}-only call does not carry its one descriptor",
    )


@pytest.mark.req("APPR-001", "INV3")
@pytest.mark.parametrize("grant", list(_GRANTS))
def test_usernames_only_call_is_asked(host: RecordingHost, mint: Mint, grant: str) -> None:
    """A call whose references are two usernames, and nothing else, prompts once under every
    trust a host can grant: more usernames make it no less secret-bearing."""
    policy, capability, action = _GRANTS[grant]
    if capability is not None:
        host.need(capability)
    first, second = make_secret(mint), make_secret(mint)
    low = tool(RECORDER.name, HandlerKind.RECORDER, risk="LOW")
    host.reset(config([first, second], tools=(low,), policy=policy))
    free = host.invoke(low.name, args_json({"x": "plain"}), acting(action) if action else None)
    if free.disposition == "POLICY_DENIED":
        pytest.skip(f"the host does not accept the {grant} policy field")
    before = len(host.observe().approval_requests)
    arguments = {"a": ref(first.id, "username"), "b": ref(second.id, "username")}
    outcome = host.invoke(low.name, args_json(arguments))
    after = host.observe().approval_requests[before:]
    require(
        len(after) == 1,
        ("APPR-001", "INV3"),
        f"under {grant} a call whose only references are two usernames ran without one prompt",
    )
    require(not outcome.is_error, "APPR-001", f"the approved call ended {outcome.disposition}")


@pytest.mark.req("FENCE-001", "FENCE-002", "INV4")
@pytest.mark.parametrize("case", ["revoke-tool", "deny-provider"])
@pytest.mark.parametrize("field_name", FIELDS)
def test_single_field_call_is_fenced(
    host: RecordingHost, mint: Mint, field_name: str, case: str
) -> None:
    """A revocation or DENY while the prompt of a username- or notes-only call is open refuses it
    once approved, and the tool never runs."""
    requirement, capability, action = {
        "revoke-tool": ("FENCE-001", "control.revoke", lambda c: c.revoke("tool", RECORDER.name)),
        "deny-provider": (
            "FENCE-002",
            "control.save-rule",
            lambda c: c.save_rule("provider", PROVIDER, "DENY"),
        ),
    }[case]
    host.need(capability)
    secret = make_secret(mint)
    host.reset(config([secret]))
    outcome = host.invoke(
        RECORDER.name, args_json({"x": ref(secret.id, field_name)}), acting(action)
    )
    require(
        outcome.disposition == "POLICY_DENIED",
        (requirement, "INV4"),
        f"{case} while a {field_name}-only prompt was open ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), (requirement, "INV4"), f"the tool ran after {case}")


@pytest.mark.req("SUBST-005", "APPR-002", "LEDG-002")
@pytest.mark.parametrize(
    "fields", [("username", "password"), ("notes", "username", "password")], ids=["two", "three"]
)
def test_fields_of_one_secret_in_one_call(
    host: RecordingHost, mint: Mint, fields: tuple[str, ...]
) -> None:
    """Two or three fields of one secret in one call: each its own value, its own descriptor and
    its own name in the ledger, in order of use."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    args = args_json({f"f{index}": ref(secret.id, name) for index, name in enumerate(fields)})
    outcome = host.invoke(RECORDER.name, args)
    require(not outcome.is_error, "SUBST-005", f"the call ended {outcome.disposition}")
    seen = host.observe()
    delivered = json.loads(seen.receipts[0].raw)
    wrong = [
        name
        for index, name in enumerate(fields)
        if delivered.get(f"f{index}") != value_of(secret, name)
    ]
    require(not wrong, "SUBST-005", f"the field(s) {', '.join(wrong)} got another field's value")
    names = [name_of(secret.id, name) for name in fields]
    if seen.judges("observe.requests", "APPR-002"):
        request = seen.approval_requests[-1]
        require(
            list(request.get("descriptors") or [])
            == [f"{secret.website} ({secret.username}) - {name}" for name in fields],
            "APPR-002",
            "the prompt does not carry one descriptor per field of the secret",
        )
    if seen.judges("observe.ledger", "LEDG-002"):
        require(
            list(ledger_records(seen)[-1].get("secretRefs") or []) == names,
            "LEDG-002",
            "secretRefs does not name each field of the secret once, in order of use",
        )
