"""Checks that the revocation fence still sees a change after earlier changes (decisions R3.4).

This module owns the fence on a host whose rules have already moved: after a reset of every
rule, a later revocation while a prompt is open must still refuse the approved call, and
several changes made while one prompt is open must not cancel out, from any count a rule's
earlier revocations left. A host that folds its change counters together badly (OR, XOR, a
mask) sees one change and misses the next. A DENY that ASK or ALLOW
replaced before the answer, with nothing else in between, leaves the host a choice (v1.2):
refusing, or judging by the rule in force at the answer; both are accepted and reported. It
acts on the host only from inside prompts, and must never let a refused call's tool run
unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.canary import Mint
from conformance.host import CallResult, Control
from conformance.outcomes import accept, require
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


_SCOPES: dict[str, str] = {"tool": RECORDER.name, "provider": PROVIDER}

#: A change of one scope's rule, made while the prompt is open: (capability, action).
_Change = tuple[str, Callable[[Control, str, str], None]]


def _save(rule: str) -> _Change:
    return "control.save-rule", lambda c, kind, name: c.save_rule(kind, name, rule)


_REVOKE: _Change = ("control.revoke", lambda c, kind, name: c.revoke(kind, name))
_RESET: _Change = ("control.reset", lambda c, _kind, _name: c.reset())

#: Changes made while one prompt is open, after which the call must be refused whatever else
#: was saved (decisions R3.4, v1.2): a DENY still in force at the answer (FENCE-002), or a
#: revocation or reset at any point (FENCE-001). A DENY that ASK or ALLOW replaced with nothing
#: else in between is FENCE-005's choice instead (test_deny_replaced_before_the_answer).
_REFUSING: dict[str, tuple[str, tuple[_Change, ...]]] = {
    "deny-then-deny-again": ("FENCE-002", (_save("DENY"), _save("DENY"))),
    "deny-then-ask-then-deny": ("FENCE-002", (_save("DENY"), _save("ASK"), _save("DENY"))),
    "deny-then-revoke": ("FENCE-001", (_save("DENY"), _REVOKE)),
    "deny-then-reset": ("FENCE-001", (_save("DENY"), _RESET)),
    "deny-then-revoke-then-ask": ("FENCE-001", (_save("DENY"), _REVOKE, _save("ASK"))),
    "revoke-then-ask": ("FENCE-001", (_REVOKE, _save("ASK"))),
    "revoke-then-allow": ("FENCE-001", (_REVOKE, _save("ALLOW"))),
    "reset-then-allow": ("FENCE-001", (_RESET, _save("ALLOW"))),
}


def _changing(kind: str, changes: tuple[_Change, ...]) -> Callable[[Control], None]:
    name = _SCOPES[kind]

    def act(control: Control) -> None:
        for _capability, change in changes:
            change(control, kind, name)

    return act


@pytest.mark.req("FENCE-002", "FENCE-001", "INV4")
@pytest.mark.parametrize("after", list(_REFUSING))
@pytest.mark.parametrize("kind", list(_SCOPES))
def test_deny_saved_then_replaced_in_one_prompt(
    host: RecordingHost, mint: Mint, kind: str, after: str
) -> None:
    """Several changes of the tool's or the provider's rule while the prompt is open refuse the
    approved call when a DENY is still in force at the answer, or when any of them is a
    revocation or reset, whatever is saved after it: a later change must not bring an earlier
    one's count back."""
    requirement, changes = _REFUSING[after]
    host.need(*dict.fromkeys(capability for capability, _ in changes))
    secret = make_secret(mint)
    host.reset(config([secret]))
    outcome = host.invoke(
        RECORDER.name, args_json({"x": ref(secret.id)}), acting(_changing(kind, changes))
    )
    require(
        outcome.disposition == "POLICY_DENIED",
        (requirement, "INV4"),
        f"{after} for the {kind} while the prompt was open ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        (requirement, "INV4"),
        f"the tool ran after {after} for the {kind} while the prompt was open",
    )


#: How many revocations of the scope's rule come before the prompt opens: a host's count for
#: the rule starts there, at zero or above.
_HISTORY: tuple[int, ...] = (0, 1, 2, 3)

#: Changes made while one prompt is open, each holding a revocation, so each must refuse the
#: call (FENCE-001) whatever is saved around it: however a host folds its counts (a mask, a
#: toggle, a modulus), none may come back to where it stood when the prompt opened.
_ROUND_TRIPS: dict[str, tuple[_Change, ...]] = {
    "revoke-revoke": (_REVOKE, _REVOKE),
    "revoke-allow-revoke": (_REVOKE, _save("ALLOW"), _REVOKE),
    "allow-revoke-allow": (_save("ALLOW"), _REVOKE, _save("ALLOW")),
    "revoke-ask-allow-revoke": (_REVOKE, _save("ASK"), _save("ALLOW"), _REVOKE),
}


@pytest.mark.req("FENCE-001", "INV4")
@pytest.mark.parametrize("changes", list(_ROUND_TRIPS))
@pytest.mark.parametrize("history", _HISTORY, ids=[f"after-{n}" for n in _HISTORY])
@pytest.mark.parametrize("kind", list(_SCOPES))
def test_no_count_comes_back_after_a_history(
    host: RecordingHost, mint: Mint, kind: str, history: int, changes: str
) -> None:
    """After 0 to 3 revocations of the tool's or the provider's rule, revocations and saves
    while one prompt is open refuse the approved call: a rule's count never returns to the
    value it had when the prompt opened, from any starting value."""
    host.need("control.revoke", "control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret]))
    for _ in range(history):
        host.control().revoke(kind, _SCOPES[kind])
    outcome = host.invoke(
        RECORDER.name,
        args_json({"x": ref(secret.id)}),
        acting(_changing(kind, _ROUND_TRIPS[changes])),
    )
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-001", "INV4"),
        f"{changes} for the {kind} after {history} earlier revocations, while the prompt was "
        f"open, ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-001", "INV4"),
        f"the tool ran after {changes} for the {kind} following {history} revocations",
    )


def _refused_or_run_once(
    host: RecordingHost,
    outcome: CallResult,
    requirement: str,
    refused_as: str,
    alternatives: tuple[str, str],
    what: str,
) -> None:
    """Accept either side of an EITHER about an approved call: refused as ``refused_as`` with
    its tool never called (``alternatives[0]``), or run once as APPROVED_ONCE
    (``alternatives[1]``); anything else fails ``requirement``."""
    ran = len(host.observe().receipts)
    if outcome.disposition == refused_as:
        require(ran == 0, requirement, f"the tool ran after {what}, though the call was refused")
        accept(requirement, alternatives[0])
        return
    require(
        outcome.disposition == "APPROVED_ONCE" and ran == 1,
        requirement,
        f"{what} ended {outcome.disposition} with the tool run {ran} times: neither refused as "
        f"{refused_as} nor run once as APPROVED_ONCE",
    )
    accept(requirement, alternatives[1])


@pytest.mark.req("FENCE-005")
@pytest.mark.parametrize("rule", ["ASK", "ALLOW"])
@pytest.mark.parametrize("kind", list(_SCOPES))
def test_deny_replaced_before_the_answer(
    host: RecordingHost, mint: Mint, kind: str, rule: str
) -> None:
    """A DENY saved and then replaced by ASK or ALLOW before the answer, with no revocation or
    reset: the host refuses the call (the DENY counted) or judges it by the rule in force at the
    answer, which runs it once as approved; either is accepted and reported."""
    host.need("control.save-rule")
    secret = make_secret(mint)
    host.reset(config([secret]))
    act = _changing(kind, (_save("DENY"), _save(rule)))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), acting(act))
    what = f"a DENY for the {kind} replaced by {rule} before the answer"
    _refused_or_run_once(
        host, outcome, "FENCE-005", "POLICY_DENIED", ("refused", "rule-at-answer"), what
    )


@pytest.mark.req("FENCE-006")
def test_kill_switch_pulled_while_prompt_open(host: RecordingHost, mint: Mint) -> None:
    """The kill switch pulled for the tool while its prompt is open: the fence's events
    (decisions R3.4) leave it out, so the host refuses the approved call as KILL_SWITCHED, its
    tool never called, or runs it once as approved; either is accepted and reported, and
    anything else fails."""
    host.need("control.kill")
    secret = make_secret(mint)
    host.reset(config([secret]))
    act = acting(lambda control: control.kill(RECORDER.name))
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), act)
    what = "the kill switch pulled while the prompt was open"
    _refused_or_run_once(host, outcome, "FENCE-006", "KILL_SWITCHED", ("refused", "runs"), what)
