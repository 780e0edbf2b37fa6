"""Checks of the calls a host withholds before, or instead of, running a tool: the kill switch,
RBAC, an unknown tool, a rule that cannot be saved, and the approval queue's slots (design, step
[0], "Precedence" and "What the ledger records"; decisions R3.4, R3.5).

Each check drives one control or outcome of the driver protocol that no other check reaches:
the kill switch pulled for one tool and for every tool, before a call whose pre-pass would
refuse it; a tool the user may not use under every ALLOW, YOLO and session trust; a call to a
tool the host never registered; a broad answer the policy store fails to save; prompts answered
one after another past the pending limit; and a rule revoked twice while its prompt is open.
None of them may print a value: secrets are canaries, named by label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer, Control, HandlerKind, SecretSpec
from conformance.outcomes import accept, require
from conformance.scenario import (
    ECHO,
    PROVIDER,
    RECORDER,
    RecordingHost,
    acting,
    answering,
    args_json,
    config,
    ledger_records,
    make_secret,
    ref,
    tool,
)

#: Arguments whose pre-pass would refuse the call, by what refuses it: the kill switch must win
#: over each of them, and over a plain call and a call that would resolve.
_PREPASS_CASES = ("malformed", "bearing-deny", "feature-off", "resolvable", "plain")

#: Calls made one after another past the pending limit; more than twice the limit, so that a
#: host that never frees a slot runs out of them.
_SEQUENTIAL_CALLS = 5

#: The pending limit those calls run under.
_SMALL_PENDING_LIMIT = 2

#: A tool guarded by a permission the signed-in user never holds (RBAC, design step [0]).
_GUARDED: Final = tool("guarded", HandlerKind.RECORDER, permission="tool.guarded")


def _kill_args(mint: Mint, case: str) -> tuple[list[SecretSpec], dict[str, object] | None, str]:
    secret = make_secret(mint)
    policy: dict[str, object] | None = None
    if case == "malformed":
        members = {"x": ref("not-a-uuid")}
    elif case == "plain":
        members = {"x": "plain text"}
    else:
        members = {"x": ref(secret.id)}
    if case == "bearing-deny":
        policy = {"secretBearingCalls": "DENY"}
    elif case == "feature-off":
        policy = {"secretReferencesEnabled": False}
    return [secret], policy, args_json(members)


@pytest.mark.req("ORD-004", "LEDG-006")
@pytest.mark.parametrize("case", _PREPASS_CASES)
@pytest.mark.parametrize("scope", ["one-tool", "every-tool"])
def test_kill_switch_withholds_before_the_prepass(
    host: RecordingHost, mint: Mint, scope: str, case: str
) -> None:
    """A kill-switched tool is withheld first: KILL_SWITCHED, no vault read, no prompt, no run."""
    host.need("control.kill")
    secrets, policy, args = _kill_args(mint, case)
    host.reset(config(secrets, tools=(RECORDER, ECHO), policy=policy))
    host.control().kill(RECORDER.name if scope == "one-tool" else None)
    outcome = host.invoke(RECORDER.name, args)
    seen = host.observe()
    # What is seen first: over MCP a withheld call's disposition may be named nowhere (R6.3,
    # R9.8), and a judgment resting on it ends the check unchecked.
    require(
        outcome.is_error,
        "ORD-004",
        f"a kill-switched tool ({scope}, {case} arguments) was not refused",
    )
    require(
        seen.vault_reads == () and seen.approval_requests == () and seen.receipts == (),
        "ORD-004",
        "a kill-switched tool read the vault, prompted or ran",
    )
    accept("LEDG-006", "recorded" if ledger_records(seen) else "not-recorded")
    require(
        outcome.disposition == "KILL_SWITCHED",
        "ORD-004",
        f"a kill-switched tool ({scope}, {case} arguments) ended {outcome.disposition}",
    )


@pytest.mark.req("ORD-004")
def test_kill_switch_for_one_tool_spares_the_others(host: RecordingHost, mint: Mint) -> None:
    """Pulled for one tool, the kill switch spares the others; pulled for all, it spares none."""
    host.need("control.kill")
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER, ECHO)))
    host.control().kill(RECORDER.name)
    spared = host.invoke(ECHO.name, args_json({"x": "plain"}))
    require(
        spared.disposition != "KILL_SWITCHED" and not spared.is_error,
        "ORD-004",
        f"the kill switch for one tool withheld another ({spared.disposition})",
    )
    host.control().kill(None)
    withheld = host.invoke(ECHO.name, args_json({"x": ref(secret.id)}))
    # What a withheld call must not read or ask is judged, on the surfaces the host announces,
    # by test_kill_switch_withholds_before_the_prepass; here the refusal itself comes first.
    require(withheld.is_error, "ORD-004", "the kill switch for every tool let a call run")
    require(
        withheld.disposition == "KILL_SWITCHED",
        "ORD-004",
        f"the kill switch for every tool let a call end {withheld.disposition}",
    )


@pytest.mark.req("POL-004")
@pytest.mark.parametrize("rule", ["tool-allow", "provider-allow", "yolo", "session-trust"])
def test_kill_switch_outranks_every_rule(host: RecordingHost, mint: Mint, rule: str) -> None:
    """No ALLOW, YOLO or session trust lets a kill-switched tool run."""
    host.need("control.kill")
    policy: dict[str, object] = {}
    if rule == "tool-allow":
        policy["tools"] = {RECORDER.name: "ALLOW"}
    elif rule == "provider-allow":
        policy["providers"] = {PROVIDER: "ALLOW"}
    elif rule == "yolo":
        policy["yolo"] = True
    host.reset(config([make_secret(mint)], policy=policy or None))
    if rule == "session-trust":
        host.need("control.trust-session")
        host.control().trust_session(RECORDER.name)
    host.control().kill(RECORDER.name)
    outcome = host.invoke(RECORDER.name, args_json({"x": "plain"}))
    require(
        outcome.is_error and host.observe().receipts == (),
        "POL-004",
        f"under {rule} a kill-switched tool ran",
    )
    require(
        outcome.disposition == "KILL_SWITCHED",
        "POL-004",
        f"under {rule} a kill-switched tool ended {outcome.disposition}",
    )


@pytest.mark.req("POL-004", "ORD-004")
def test_kill_switch_outranks_rbac(host: RecordingHost, mint: Mint) -> None:
    """RBAC withholds a tool as RBAC_DENIED; with the kill switch pulled too, the switch wins."""
    host.need("control.kill")
    host.reset(config([make_secret(mint)], tools=(_GUARDED,)))
    rbac = host.invoke(_GUARDED.name, args_json({"x": "plain"}))
    require(rbac.is_error, "ORD-004", "a tool the user may not use was not refused")
    require(
        rbac.disposition == "RBAC_DENIED",
        "ORD-004",
        f"a tool the user may not use ended {rbac.disposition}",
    )
    host.control().kill(_GUARDED.name)
    both = host.invoke(_GUARDED.name, args_json({"x": "plain"}))
    require(
        both.is_error, "POL-004", "with the kill switch and RBAC both withholding, the call ran"
    )
    require(
        both.disposition == "KILL_SWITCHED",
        "POL-004",
        f"with the kill switch and RBAC both withholding, the call ended {both.disposition}",
    )


#: Every rule or trust that lets a tool run unasked, set in the policy file or at run time, with
#: the control capability a run-time one needs: none of them outranks the tool's RBAC.
_TRUSTS: Final[dict[str, tuple[Mapping[str, Any], str | None]]] = {
    "tool-allow": ({"tools": {_GUARDED.name: "ALLOW"}}, None),
    "provider-allow": ({"providers": {PROVIDER: "ALLOW"}}, None),
    "yolo-policy": ({"yolo": True}, None),
    "yolo": ({}, "control.set-yolo"),
    "session-trust": ({}, "control.trust-session"),
}


@pytest.mark.req("ORD-004", "POL-004")
@pytest.mark.parametrize("argument", ["plain", "reference"])
@pytest.mark.parametrize("trust", list(_TRUSTS))
def test_rbac_outranks_every_rule(
    host: RecordingHost, mint: Mint, trust: str, argument: str
) -> None:
    """No ALLOW, YOLO or session trust lets a user run a tool whose permission they lack: the
    call is RBAC_DENIED with no vault read, no prompt and no run, a secret-bearing call too."""
    policy, capability = _TRUSTS[trust]
    if capability is not None:
        host.need(capability)
    secret = make_secret(mint)
    host.reset(config([secret], tools=(_GUARDED,), policy=policy or None))
    if trust == "yolo":
        host.control().set_yolo(True)
    elif trust == "session-trust":
        host.control().trust_session(_GUARDED.name)
    value = ref(secret.id) if argument == "reference" else "plain"
    outcome = host.invoke(_GUARDED.name, args_json({"x": value}))
    what = f"under {trust} a {argument} call to a tool the user may not use"
    seen = host.observe()
    # What is seen first: over MCP a withheld call's disposition may be named nowhere (R6.3,
    # R9.8), and a judgment resting on it ends the check unchecked.
    require(outcome.is_error, ("ORD-004", "POL-004"), f"{what} was not refused")
    require(
        seen.approval_requests == () and seen.receipts == (),
        ("ORD-004", "POL-004"),
        f"{what} prompted or ran",
    )
    if seen.judges("observe.vault-reads", ("ORD-004", "POL-004")):
        require(seen.vault_reads == (), ("ORD-004", "POL-004"), f"{what} read the vault")
    require(
        outcome.disposition == "RBAC_DENIED",
        ("ORD-004", "POL-004"),
        f"{what} ended {outcome.disposition}",
    )


@pytest.mark.req("ORD-006")
@pytest.mark.parametrize("switch", ["off", "every-tool"])
@pytest.mark.parametrize("argument", ["reference", "malformed", "plain", "not-json"])
def test_unknown_tool_refused_first(
    host: RecordingHost, mint: Mint, argument: str, switch: str
) -> None:
    """A call to a tool nobody registered is UNKNOWN_TOOL: no vault read, no prompt, no run.
    With the kill switch pulled for every tool, the design does not say whether the lookup or
    the switch comes first, so KILL_SWITCHED is accepted too; nothing may be read or run."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    if switch == "every-tool":
        host.need("control.kill")
        host.control().kill(None)
    args = {
        "reference": args_json({"x": ref(secret.id)}),
        "malformed": args_json({"x": ref("not-a-uuid")}),
        "plain": args_json({"x": "plain"}),
        "not-json": "{" + ref(secret.id),
    }[argument]
    outcome = host.invoke("no-such-tool", args)
    seen = host.observe()
    require(
        outcome.is_error,
        "ORD-006",
        f"a call to an unknown tool ({argument} arguments, kill switch {switch}) was not refused",
    )
    require(
        seen.vault_reads == () and seen.approval_requests == () and seen.receipts == (),
        "ORD-006",
        "a call to an unknown tool read the vault, prompted or ran a tool",
    )
    # Last: over MCP an unknown tool's disposition may be named nowhere (R9.8).
    allowed = {"UNKNOWN_TOOL", "KILL_SWITCHED"} if switch == "every-tool" else {"UNKNOWN_TOOL"}
    require(
        outcome.disposition in allowed,
        "ORD-006",
        f"a call to an unknown tool ({argument} arguments, kill switch {switch}) ended "
        f"{outcome.disposition}",
    )


@pytest.mark.req("APPR-012", "LEDG-005")
@pytest.mark.parametrize("answer", [Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER])
def test_unsaved_broad_answer_fails_closed(host: RecordingHost, answer: Answer) -> None:
    """A broad answer the policy store cannot save ends POLICY_PERSIST_FAILED and grants nothing."""
    host.need("policy.store-failing")
    host.reset(config((), tools=(RECORDER,), policy_store="failing"))
    outcome = host.invoke(RECORDER.name, args_json({"x": "plain"}), answering(answer))
    seen = host.observe()
    require(
        outcome.disposition == "POLICY_PERSIST_FAILED" and outcome.is_error,
        "APPR-012",
        f"a {answer.value} answer that could not be saved ended {outcome.disposition}",
    )
    require(seen.receipts == (), "APPR-012", "the tool ran although its rule was not saved")
    records = ledger_records(seen)
    require(
        [record.get("approvalDisposition") for record in records] == ["POLICY_PERSIST_FAILED"],
        "LEDG-005",
        "the ledger does not record the call once, as POLICY_PERSIST_FAILED",
    )
    again = host.invoke(RECORDER.name, args_json({"x": "plain"}), answering(Answer.APPROVE))
    require(
        len(host.observe().approval_requests) == 2 and again.disposition == "APPROVED_ONCE",
        "APPR-012",
        "an answer the store could not save was still granted",
    )


@pytest.mark.req("APPR-009")
def test_answered_prompts_free_their_slots(host: RecordingHost) -> None:
    """Prompts answered one after another never fill the queue: no QUEUE_FULL, every call runs."""
    host.reset(config((), tools=(RECORDER,), pending_limit=_SMALL_PENDING_LIMIT))
    ended = [
        host.invoke(RECORDER.name, args_json({"n": str(number)})).disposition
        for number in range(_SEQUENTIAL_CALLS)
    ]
    require(
        "QUEUE_FULL" not in ended and len(host.observe().receipts) == _SEQUENTIAL_CALLS,
        "APPR-009",
        f"calls made one at a time under a pending limit of {_SMALL_PENDING_LIMIT} ended {ended}",
    )


@pytest.mark.req("FENCE-001")
@pytest.mark.parametrize("kind", ["tool", "provider"])
def test_rule_revoked_twice_during_prompt(host: RecordingHost, mint: Mint, kind: str) -> None:
    """A rule revoked twice while the prompt is open still refuses the approved call."""
    host.need("control.revoke")
    secret = make_secret(mint)
    host.reset(config([secret]))
    name = RECORDER.name if kind == "tool" else PROVIDER

    def twice(control: Control) -> None:
        control.revoke(kind, name)
        control.revoke(kind, name)

    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(twice))
    require(
        outcome.disposition == "POLICY_DENIED" and host.observe().receipts == (),
        "FENCE-001",
        f"a {kind} rule revoked twice during the prompt let the call end {outcome.disposition}",
    )
