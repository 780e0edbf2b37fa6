"""Checks of the approval flow at moments that span two prompts, and of the queue, the fence
and the approval timeout against controls the older checks apply only once, to one prompt, or
never while a prompt waits for a late answer (decisions R3.4, R3.5; design invariant 4).

This module owns five moments. A revocation, a reset or a lost and returned ``secret.read``
while one call's prompt is open, followed by a second call whose prompt opens after it: the
first call is bound to the state its own prompt opened under, whatever the second saw, so a
host that keeps one binding per tool (refreshed by the latest prompt) lets it run. A DENY saved
while a reference-free call's prompt is open and still in force at the answer refuses that call
too. A provider's DENY saved while the prompt is open refuses the call though the tool has an
ALLOW rule of its own, which never outranks a DENY. A control that does not touch the queue
(the kill-switch of another tool, YOLO, a rule, trust or revocation for another tool) leaves
the open prompts counted: with the limit's worth open, one more call is QUEUE_FULL. And an
operator who acts on the host while the prompt is open, then answers after the approval
timeout, restarts no countdown: the call times out. The operator acts through the host
interface only, the check never answers a prompt it did not open, and it names secrets by id
only.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer, CallResult, Control, HandlerKind, PendingCall, Receipt
from conformance.outcomes import fail, not_applicable, require, unchecked
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    WAIT_SECONDS,
    RecordingHost,
    acting,
    args_json,
    config,
    make_secret,
    ref,
    require_lost_read_refusal,
    tool,
)

#: The approval timeout of a check that holds prompts open: far longer than any check takes.
_HOLD_S: Final = 30.0

#: How often a waiting check looks again, in seconds.
_POLL_S: Final = 0.01

#: How long a probe about to fail waits for a held call to end on its own: a host may close an
#: open prompt by itself, and then its slot was free.
_CLOSED_GRACE_S: Final = 1.0

#: The pending limit of the queue check: two, so that one prompt open is not "full".
_LIMIT: Final = 2

#: The dispositions of a call whose tool ran.
_RAN: Final = frozenset(
    {"ALLOWED", "APPROVED_ONCE", "APPROVED_ALWAYS", "APPROVED_PROVIDER", "APPROVED_SESSION"}
)

#: A tool beside the recorder, of another provider: the target of the controls that must leave
#: the recorder's prompts alone.
_OTHER: Final = tool("bystander", HandlerKind.RECORDER, provider="plugin.bystander")

#: A reference-free argument text.
_PLAIN: Final = args_json({"x": "plain"})


class _Hold:
    """One call's operator: holds its prompt open until :meth:`release`, then approves."""

    def __init__(self) -> None:
        self.shown = threading.Event()
        self._released = threading.Event()

    def __call__(self, _request: Mapping[str, Any], _control: Control) -> Answer:
        self.shown.set()
        self._released.wait(WAIT_SECONDS)
        return Answer.APPROVE

    def release(self) -> None:
        """Let the held prompt be answered."""
        self._released.set()


def _shown_or_ended(pending: PendingCall, hold: _Hold, requirement: str) -> CallResult | None:
    """Wait until ``hold`` is shown its prompt (``None``) or the call ends without one."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not hold.shown.wait(_POLL_S):
        with contextlib.suppress(TimeoutError):
            return pending.result(_POLL_S)
        if time.monotonic() > deadline:
            fail(requirement, "a call neither prompted nor ended")
    return None


def _carries(receipt: Receipt, member: str) -> bool:
    """Return whether a handler's receipt is of a call whose arguments name ``member``."""
    if isinstance(receipt.view, Mapping):
        return member in receipt.view
    with contextlib.suppress(ValueError):
        parsed = json.loads(receipt.raw)
        if isinstance(parsed, dict):
            return member in parsed
    return f'"{member}"' in receipt.raw


# --- a change while one prompt is open, then a second call's prompt --------------------------


def _lose_and_regain_read(control: Control) -> None:
    """Take ``secret.read`` from the (non-admin) user, then give it back."""
    control.set_permissions(False, ())
    control.set_permissions(False, ("secret.read",))


#: Each change made while the first call's prompt is open: the requirement it judges, the
#: capability it needs, and what it does.
_SPANS: Final[dict[str, tuple[str, str, Callable[[Control], None]]]] = {
    "revoke-tool": ("FENCE-001", "control.revoke", lambda c: c.revoke("tool", RECORDER.name)),
    "revoke-provider": ("FENCE-001", "control.revoke", lambda c: c.revoke("provider", PROVIDER)),
    "reset": ("FENCE-001", "control.reset", lambda c: c.reset()),
    "secret-read-given-back": ("FENCE-003", "control.set-permissions", _lose_and_regain_read),
}


@pytest.mark.req("FENCE-001", "FENCE-003", "FENCE-004", "INV4")
@pytest.mark.parametrize("change", list(_SPANS))
def test_change_binds_the_prompt_it_met(host: RecordingHost, mint: Mint, change: str) -> None:
    """A change made while a call's prompt is open refuses that call once approved, though a
    second call's prompt opened after the change and is still open at the answer: each
    approval is bound to the state its own prompt opened under."""
    requirement, capability, action = _SPANS[change]
    host.need("start", "observe.receipts", capability)
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=_HOLD_S))
    first_hold, second_hold = _Hold(), _Hold()
    second: PendingCall | None = None
    first = host.start(RECORDER.name, args_json({"first": ref(secret.id)}), first_hold)
    try:
        ended = _shown_or_ended(first, first_hold, requirement)
        if ended is not None:
            fail(requirement, f"the first call ended {ended.disposition} without a prompt")
        action(host.control())
        second = host.start(RECORDER.name, args_json({"second": ref(secret.id)}), second_hold)
        _shown_or_ended(second, second_hold, requirement)
        first_hold.release()
        outcome = first.result(WAIT_SECONDS)
    finally:
        first_hold.release()
        second_hold.release()
    if second is not None:
        second.result(WAIT_SECONDS)
    what = f"a call whose prompt met {change}, answered while a later call's prompt was open,"
    if requirement == "FENCE-003":
        require_lost_read_refusal(outcome, what)
    else:
        require(
            outcome.disposition == "POLICY_DENIED",
            (requirement, "INV4"),
            f"{what} ended {outcome.disposition}",
        )
    ran = [r for r in host.observe().receipts if _carries(r, "first")]
    require(not ran, (requirement, "INV4"), f"{what} reached its tool")


# --- the rule in force at the answer: reference-free calls, and a tool's own ALLOW ------------


@pytest.mark.req("FENCE-002", "INV4")
@pytest.mark.parametrize("kind", ["tool", "provider"])
def test_deny_refuses_an_open_reference_free_prompt(host: RecordingHost, kind: str) -> None:
    """A DENY saved for the tool or its provider while a reference-free call's prompt is open,
    and still in force at the answer, refuses the approved call: it never reaches the tool."""
    host.need("control.save-rule", "observe.receipts")
    host.reset(config())
    name = RECORDER.name if kind == "tool" else PROVIDER
    asked: list[bool] = []

    def deny(control: Control) -> None:
        asked.append(True)
        control.save_rule(kind, name, "DENY")

    outcome = host.invoke(RECORDER.name, _PLAIN, acting(deny))
    if not asked:
        not_applicable(
            f"the host ended a reference-free call under ASK {outcome.disposition} without a "
            "prompt, so no DENY could be saved while one was open"
        )
    require(
        outcome.is_error and outcome.disposition not in _RAN,
        ("FENCE-002", "INV4"),
        f"a reference-free call whose open prompt met a {kind} DENY ended {outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-002", "INV4"),
        f"a reference-free call whose open prompt met a {kind} DENY reached its tool",
    )


#: How the tool holds an ALLOW rule of its own before the call: written in the policy file, or
#: saved at run time (and the capability that needs).
_ALLOWS: Final[dict[str, str | None]] = {"policy-file": None, "saved": "control.save-rule"}


@pytest.mark.req("FENCE-002", "INV4")
@pytest.mark.parametrize("allow", list(_ALLOWS))
def test_provider_deny_beats_the_tools_allow_at_the_answer(
    host: RecordingHost, mint: Mint, allow: str
) -> None:
    """A provider's DENY saved while a secret-bearing call's prompt is open refuses the approved
    call though the tool has an ALLOW rule of its own: a tool's ALLOW never outranks a DENY."""
    capability = _ALLOWS[allow]
    host.need("control.save-rule", "observe.receipts", *([capability] if capability else []))
    secret = make_secret(mint)
    policy = {"tools": {RECORDER.name: "ALLOW"}} if capability is None else None
    host.reset(config([secret], policy=policy))
    if capability is not None:
        host.control().save_rule("tool", RECORDER.name, "ALLOW")
    outcome = host.invoke(
        RECORDER.name,
        args_json({"x": ref(secret.id)}),
        acting(lambda control: control.save_rule("provider", PROVIDER, "DENY")),
    )
    require(
        outcome.disposition == "POLICY_DENIED",
        ("FENCE-002", "INV4"),
        f"a call whose prompt met a provider DENY, its tool holding an ALLOW ({allow}), ended "
        f"{outcome.disposition}",
    )
    require(
        host.observe().receipts == (),
        ("FENCE-002", "INV4"),
        f"a call whose prompt met a provider DENY, its tool holding an ALLOW ({allow}), reached "
        "its tool",
    )


# --- controls that leave the queue alone ------------------------------------------------------

#: Each control applied while the limit's worth of the recorder's prompts are open, none of
#: which touches them (a reset, which may, is the queue moments' own case): the capability it
#: needs, and what it does.
_BYSTANDERS: Final[dict[str, tuple[str, Callable[[Control], None]]]] = {
    "kill-other-tool": ("control.kill", lambda c: c.kill(_OTHER.name)),
    "yolo": ("control.set-yolo", lambda c: c.set_yolo(True)),
    "allow-other-tool": (
        "control.save-rule",
        lambda c: c.save_rule("tool", _OTHER.name, "ALLOW"),
    ),
    "trust-other-tool": ("control.trust-session", lambda c: c.trust_session(_OTHER.name)),
    "revoke-other-tool": ("control.revoke", lambda c: c.revoke("tool", _OTHER.name)),
}


@pytest.mark.req("APPR-009")
@pytest.mark.parametrize("control", list(_BYSTANDERS))
def test_limit_holds_through_a_control(host: RecordingHost, mint: Mint, control: str) -> None:
    """With the pending limit's worth of prompts open, a control that does not touch them (the
    kill-switch of another tool, YOLO, a rule, trust or revocation for another tool) leaves them
    counted: one more secret-bearing call ends QUEUE_FULL, its tool unused."""
    capability, action = _BYSTANDERS[control]
    host.need("start", "observe.receipts", capability)
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            tools=(RECORDER, _OTHER),
            pending_limit=_LIMIT,
            approval_timeout_s=_HOLD_S,
        )
    )
    args = args_json({"x": ref(secret.id)})
    holds = [_Hold() for _ in range(_LIMIT)]
    held: list[PendingCall] = []
    shown: list[bool] = []
    try:
        for hold in holds:
            held.append(host.start(RECORDER.name, args, hold))
            ended = _shown_or_ended(held[-1], hold, "APPR-009")
            if ended is not None:
                fail(
                    "APPR-009",
                    f"with {len(held) - 1} prompt(s) open and a pending limit of {_LIMIT}, a "
                    f"secret-bearing call ended {ended.disposition} without a prompt",
                )
        action(host.control())

        def deny(_request: Mapping[str, Any], _control: Control) -> Answer:
            shown.append(True)
            return Answer.DENY

        outcome = host.invoke(RECORDER.name, args, deny)
        if outcome.disposition != "QUEUE_FULL":
            closed = False
            for pending in held:
                with contextlib.suppress(TimeoutError):
                    pending.result(_CLOSED_GRACE_S / _LIMIT)
                    closed = True
            if closed:
                # The host closed a held prompt by itself, which frees its slot.
                not_applicable(f"the host closed an open prompt by itself after {control}")
            did = "opened a prompt" if shown else f"ended {outcome.disposition}"
            fail(
                "APPR-009",
                f"after {control}, with {_LIMIT} prompts open and a pending limit of {_LIMIT}, "
                f"a secret-bearing call {did} instead of ending QUEUE_FULL",
            )
    finally:
        for hold in holds:
            hold.release()
    for pending in held:
        pending.result(WAIT_SECONDS)
    ran = len(host.observe().receipts)
    require(ran <= _LIMIT, "APPR-009", f"{ran} calls reached the tool, more than the {_LIMIT} held")


# --- a late answer after a control ------------------------------------------------------------

#: The approval timeout of the late-answer check, and when, after its prompt shows, the
#: operator acts (before the timeout) and answers (after it). The action and the answer are
#: closer together than the timeout, so a countdown restarted by the action would still run.
_SHORT_S: Final = 0.3
_ACT_AT_S: Final = 0.25
_ANSWER_AT_S: Final = 0.45

#: The controls applied while the late-answered prompt is open: none answers a secret-bearing
#: prompt, so the call must still time out.
_MEANWHILE: Final = ("yolo", "allow-other-tool", "trust-other-tool")

#: The scales of those times, tried in turn while a call times out before its prompt reaches
#: the operator: over MCP on a loaded machine, an elicitation took longer than 0.3 s to arrive.
_SCALES: Final = (1.0, 4.0)


@pytest.mark.req("APPR-008")
@pytest.mark.parametrize("control", _MEANWHILE)
def test_late_answer_after_a_control_never_runs(
    host: RecordingHost, mint: Mint, control: str
) -> None:
    """An operator who acts on the host while the prompt is open, then approves after the
    approval timeout, does not run the call: the action restarts no countdown, and the call ends
    as TIMEOUT with its tool unused."""
    capability, action = _BYSTANDERS[control]
    host.need("observe.receipts", capability)
    secret = make_secret(mint)
    for scale in _SCALES:
        timeout_s = _SHORT_S * scale
        host.reset(config([secret], tools=(RECORDER, _OTHER), approval_timeout_s=timeout_s))
        asked: list[float] = []

        def late(
            _request: Mapping[str, Any],
            operator: Control,
            scale: float = scale,
            asked: list[float] = asked,
        ) -> Answer:
            # Timed from the moment the operator is asked, after the host's timer started:
            # the answer is late whatever the machine's load.
            asked.append(time.monotonic())
            time.sleep(_ACT_AT_S * scale)
            action(operator)
            time.sleep(max(0.0, asked[0] + _ANSWER_AT_S * scale - time.monotonic()))
            return Answer.APPROVE

        outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), late)
        if asked or outcome.disposition != "TIMEOUT" or host.observe().receipts:
            break
    else:
        # Timed out each time before the prompt reached the operator: whether a late answer
        # after a control runs the call was never put to the host.
        unchecked("APPR-008", "the prompt never reached the operator before the approval timeout")
        return
    require(bool(asked), "APPR-008", f"a secret-bearing call ended {outcome.disposition} unasked")
    require(
        outcome.disposition == "TIMEOUT",
        "APPR-008",
        f"a call approved {(_ANSWER_AT_S - _SHORT_S) * scale:g} s after its {timeout_s:g} s "
        f"approval timeout, the operator having applied {control} while its prompt was open, "
        f"ended {outcome.disposition}",
    )
    require(host.observe().receipts == (), "APPR-008", f"a late approval after {control} ran")
