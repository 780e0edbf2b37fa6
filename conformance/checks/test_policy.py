"""Checks of the policy file and decision precedence (decisions R7.2; design "Approval
semantics").

The three fields take their defaults and their legal values; any other value, ``ALLOW``
included, or a file that cannot be parsed, fails closed so that every tool is DENY, and no
control used at run time (a reset, a revocation, a saved ALLOW, session trust, YOLO) lifts that;
decisions follow the design's precedence.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.checks._controls import RELAXING, relax
from conformance.host import Answer
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    acting,
    answering,
    args_json,
    config,
    make_secret,
    ref,
)

_VALID = {
    "empty-object": ("{}", "APPROVED_ONCE"),
    "all-defaults": (
        '{"secretReferencesEnabled": true, "secretBearingCalls": "ASK", '
        '"resultScrubbingEnabled": true}',
        "APPROVED_ONCE",
    ),
    "bearing-deny": ('{"secretBearingCalls": "DENY"}', "SECRET_FORBIDDEN"),
    "feature-off": ('{"secretReferencesEnabled": false}', "SECRET_FORBIDDEN"),
    "scrubbing-off": ('{"resultScrubbingEnabled": false}', "APPROVED_ONCE"),
}


@pytest.mark.req("POL-001")
@pytest.mark.parametrize("case", list(_VALID))
def test_valid_policy_fields(host: RecordingHost, mint: Mint, case: str) -> None:
    """The three fields accept their legal values and default as the design says."""
    host.need("policy.text")
    text, disposition = _VALID[case]
    secret = make_secret(mint)
    host.reset(config([secret], policy_text=text))
    free = host.invoke(RECORDER.name, args_json({"x": "plain"}))
    require(not free.is_error, "POL-001", f"a valid policy file ({case}) refused a plain call")
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    require(
        outcome.disposition == disposition,
        "POL-001",
        f"under {case} a secret call ended {outcome.disposition}, not {disposition}",
    )


_INVALID = {
    "bearing-allow": '{"secretBearingCalls": "ALLOW"}',
    "bearing-lower": '{"secretBearingCalls": "ask"}',
    "bearing-number": '{"secretBearingCalls": 1}',
    "enabled-string": '{"secretReferencesEnabled": "true"}',
    "scrubbing-null": '{"resultScrubbingEnabled": null}',
    "not-json": '{"secretBearingCalls": ',
    "array": "[]",
    "garbage": "\u0000\u0001 not a policy",
}

#: The design's two switches, each given every JSON value that is not a boolean: numbers that a
#: loose reader takes for one (0 and 1 compare equal to false and true in several languages),
#: strings that spell one, null, and containers. Each makes the file invalid (POL-002).
_SWITCHES: Final = {"enabled": "secretReferencesEnabled", "scrubbing": "resultScrubbingEnabled"}
_NOT_BOOLEANS: Final = {
    "zero": "0",
    "one": "1",
    "zero-float": "0.0",
    "one-float": "1.0",
    "string-false": '"false"',
    "string-true": '"true"',
    "null": "null",
    "array": "[]",
    "object": "{}",
}
_INVALID |= {
    f"{short}-{label}": text
    for short, member in _SWITCHES.items()
    for label, value in _NOT_BOOLEANS.items()
    # A file the fixed cases above already send is not sent twice.
    if (text := f'{{"{member}": {value}}}') not in _INVALID.values()
}


@pytest.mark.req("POL-002")
@pytest.mark.parametrize("case", list(_INVALID))
def test_invalid_policy_fails_closed(host: RecordingHost, mint: Mint, case: str) -> None:
    """An invalid or unparseable policy file denies every tool, calls with no reference too."""
    host.need("policy.text")
    secret = make_secret(mint)
    host.reset(config([secret], policy_text=_INVALID[case]))
    free = host.invoke(RECORDER.name, args_json({"x": "plain"}))
    secret_call = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    seen = host.observe()
    require(
        free.disposition == "POLICY_DENIED",
        "POL-002",
        f"a plain call under an invalid policy ({case}) ended {free.disposition}",
    )
    require(
        secret_call.is_error and seen.receipts == (),
        "POL-002",
        f"a secret call under an invalid policy ({case}) ran",
    )
    require(
        seen.vault_reads == (), ("POL-002", "VAULT-001"), "an invalid policy let the vault be read"
    )


@pytest.mark.req("POL-002", "POL-004", "VAULT-001")
@pytest.mark.parametrize("case", ["bearing-allow", "not-json"])
@pytest.mark.parametrize("control", list(RELAXING))
def test_invalid_policy_outlasts_every_control(
    host: RecordingHost, mint: Mint, control: str, case: str
) -> None:
    """An invalid policy file still denies every tool after a reset, a revocation, a saved
    ALLOW, session trust or YOLO: plain calls end POLICY_DENIED, and secret-bearing calls are
    refused with no vault read, no prompt and no run."""
    host.need("policy.text")
    secret = make_secret(mint)
    host.reset(config([secret], policy_text=_INVALID[case]))
    relax(host, control)
    free = host.invoke(RECORDER.name, args_json({"x": "plain"}))
    secret_call = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    seen = host.observe()
    what = f"under an invalid policy ({case}), after {control},"
    require(
        seen.receipts == () and seen.approval_requests == (),
        ("POL-002", "POL-004"),
        f"{what} a call prompted or ran",
    )
    if seen.judges("observe.vault-reads", ("POL-002", "VAULT-001")):
        require(seen.vault_reads == (), ("POL-002", "VAULT-001"), f"{what} the vault was read")
    require(secret_call.is_error, ("POL-002", "POL-004"), f"{what} a secret call was not refused")
    require(
        free.disposition == "POLICY_DENIED",
        ("POL-002", "POL-004"),
        f"{what} a plain call ended {free.disposition}",
    )


_PRECEDENCE: dict[str, tuple[dict[str, Any], bool, str]] = {
    "tool-deny-beats-provider-allow": (
        {"tools": {RECORDER.name: "DENY"}, "providers": {PROVIDER: "ALLOW"}},
        False,
        "POLICY_DENIED",
    ),
    "provider-deny-beats-tool-allow": (
        {"tools": {RECORDER.name: "ALLOW"}, "providers": {PROVIDER: "DENY"}},
        False,
        "POLICY_DENIED",
    ),
    "tool-allow-runs-unasked": ({"tools": {RECORDER.name: "ALLOW"}}, False, "ALLOWED"),
    "tool-ask-beats-provider-allow": (
        {"tools": {RECORDER.name: "ASK"}, "providers": {PROVIDER: "ALLOW"}},
        False,
        "APPROVED_ONCE",
    ),
    "provider-allow-runs-unasked": ({"providers": {PROVIDER: "ALLOW"}}, False, "ALLOWED"),
    "deny-beats-secret-policy": (
        {"tools": {RECORDER.name: "DENY"}, "secretBearingCalls": "DENY"},
        True,
        "POLICY_DENIED",
    ),
    "secret-policy-beats-tool-allow": (
        {"tools": {RECORDER.name: "ALLOW"}, "secretBearingCalls": "DENY"},
        True,
        "SECRET_FORBIDDEN",
    ),
    "tool-allow-still-asks-for-secret": (
        {"tools": {RECORDER.name: "ALLOW"}},
        True,
        "APPROVED_ONCE",
    ),
}


@pytest.mark.req("POL-004")
@pytest.mark.parametrize("case", list(_PRECEDENCE))
def test_precedence(host: RecordingHost, mint: Mint, case: str) -> None:
    """Decisions follow the design's precedence of rules."""
    policy, with_reference, disposition = _PRECEDENCE[case]
    secret = make_secret(mint)
    host.reset(config([secret], policy=policy))
    value = ref(secret.id) if with_reference else "plain"
    outcome = host.invoke(RECORDER.name, args_json({"x": value}))
    require(
        outcome.disposition == disposition,
        "POL-004",
        f"{case}: the call ended {outcome.disposition}, not {disposition}",
    )


@pytest.mark.req("POL-004")
def test_session_trust_loses_to_deny(host: RecordingHost, mint: Mint) -> None:
    """Session trust does not outrank a DENY saved later for the tool."""
    host.need("control.trust-session", "control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(
        RECORDER.name,
        args_json({"x": "plain"}),
        acting(lambda control: control.trust_session(RECORDER.name)),
    )
    # A secret-bearing call always prompts: the operator saves the DENY from there.
    host.invoke(
        RECORDER.name,
        args_json({"x": ref(secret.id)}),
        acting(lambda control: control.save_rule("tool", RECORDER.name, "DENY"), Answer.DENY),
    )
    outcome = host.invoke(RECORDER.name, args_json({"x": "plain"}), answering(Answer.APPROVE))
    require(
        outcome.disposition == "POLICY_DENIED",
        "POL-004",
        f"session trust outranked a tool DENY: the call ended {outcome.disposition}",
    )
