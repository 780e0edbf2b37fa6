"""Checks of the approval queue and the approval timeout at every moment (decisions R3.5).

This module owns the count of open prompts as each way a prompt ends leaves it (an approval
aside, which test_slot_accounting owns): a denial, a timeout, an answer after the timeout, a
QUEUE_FULL refusal, a reset while prompts are open, and an approved call still running. After
each it probes the limit exactly: the limit's worth of prompts open, the next call QUEUE_FULL,
and the one after it QUEUE_FULL too. Every prompt counts against one limit for the whole host,
reference-free or secret-bearing, whatever its tool; the refusals of resolution are settled
before the queue is consulted; each prompt keeps its own timeout; and neither an answer after
the timeout nor a rule, trust or YOLO runs a call whose prompt went unanswered. A host's
approval timeout is its own clock: a judgment that needs prompts still open is made only while
they surely are (the calls holding them started less than the timeout ago, and none ended on
its own), and the probe is tried again otherwise. A check that lets prompts expire and then
probes the limit fits its short approval timeout to the host's measured round trip
(:mod:`conformance.latency`), so that a host behind a slow adapter is judged too. It never
answers a prompt it did not open, and names secrets by id only.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import (
    Answer,
    CallResult,
    Control,
    HandlerKind,
    HostConfig,
    OperatorScript,
    PendingCall,
)
from conformance.latency import fitted_timeout, prompted_round_trip
from conformance.outcomes import fail, not_applicable, require, unchecked
from conformance.scenario import (
    RECORDER,
    WAIT_SECONDS,
    HeldOperator,
    RecordingHost,
    answering,
    args_json,
    config,
    make_secret,
    new_id,
    ref,
    tool,
)

#: The approval timeout of a check that holds prompts open: far longer than any check takes, so
#: that no held prompt expires while the check looks.
_HOLD_S: Final = 30.0

#: The approval timeout of a check that lets prompts expire: a few tenths of a second (on a
#: host whose prompted call takes longer to travel, the limit checks fit it to the host).
_SHORT_S: Final = 0.3

#: How long after the approval timeout a late answer comes.
_LATE_S: Final = 0.15

#: How much earlier than configured a host's timer may fire and still be taken as on time.
_SLACK_S: Final = 0.05

#: Tries at a probe that a slow machine kept from judging (a held prompt might have expired).
_ATTEMPTS: Final = 3

#: The pending limit of the checks that probe it: two, so that one prompt open is not "full".
_LIMIT: Final = 2

#: Calls made beyond the limit in each probe: the second shows a slot freed by the first.
_BEYOND: Final = 2

#: The execution timeout and the slow handler's sleep of the check of a call still running:
#: the handler outlives the timeout, as the driver protocol's ``timeout`` handler must.
_EXECUTION_S: Final = 0.4
_HANDLER_SLEEP_S: Final = 2.0

#: How long a probe about to fail waits for a held call to end on its own: a host may close
#: an open prompt by itself (a reset dismissing it, say), and then its slot was free.
_CLOSED_GRACE_S: Final = 2.0

#: How often a waiting check looks again, in seconds.
_POLL_S: Final = 0.01

#: Tools beside the recorder: one of the same provider, one of another.
_SECOND: Final = tool("second", HandlerKind.RECORDER)
_OTHER: Final = tool("other", HandlerKind.RECORDER, provider="plugin.other")
_SLOW: Final = tool("slow", HandlerKind.TIMEOUT, seconds=_HANDLER_SLEEP_S)

#: A reference-free argument text.
_PLAIN: Final = args_json({"x": "plain"})


@dataclass(frozen=True, slots=True)
class _Call:
    """One call a check makes: its tool, its argument text, and whether it is reference-free."""

    tool: str
    args: str
    plain: bool = False


class _Held:
    """One call whose prompt the check holds open until :meth:`release`, then denies."""

    def __init__(self, host: RecordingHost, call: _Call) -> None:
        self.call = call
        self.shown = threading.Event()
        self._released = threading.Event()
        self._result: CallResult | None = None
        self.started = time.monotonic()
        self._pending = host.start(call.tool, call.args, self._operator)

    def _operator(self, _request: Mapping[str, Any], _control: Control) -> Answer:
        self.shown.set()
        self._released.wait(WAIT_SECONDS)
        return Answer.DENY

    def opened(self) -> CallResult | None:
        """Wait until the prompt shows (``None``) or the call ends without one (its result)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not self.shown.wait(_POLL_S):
            with contextlib.suppress(TimeoutError):
                return self.result(_POLL_S)
            if time.monotonic() > deadline:
                fail("APPR-009", "a held call neither prompted nor ended")
        return None

    def ended_unanswered(self, within: float) -> bool:
        """Return whether the call ends, though its prompt is still held, within ``within``
        seconds: the host closed the prompt by itself."""
        with contextlib.suppress(TimeoutError):
            self.result(within)
            return True
        return False

    def release(self) -> None:
        """Let the held prompt be answered (denied)."""
        self._released.set()

    def result(self, timeout: float = WAIT_SECONDS) -> CallResult:
        """Return the call's result, waiting at most ``timeout`` seconds for it."""
        if self._result is None:
            self._result = self._pending.result(timeout)
        return self._result


@dataclass(frozen=True, slots=True)
class _Beyond:
    """A call made with the queue full: its outcome, and by when the host had decided it."""

    outcome: CallResult
    decided: float
    prompted: bool


def _beyond(host: RecordingHost, call: _Call) -> _Beyond:
    """Make ``call`` and note when its prompt showed (denied at once) or, without one, ended."""
    shown: list[float] = []

    def operator(_request: Mapping[str, Any], _control: Control) -> Answer:
        shown.append(time.monotonic())
        return Answer.DENY

    outcome = host.invoke(call.tool, call.args, operator)
    ended = time.monotonic()
    return _Beyond(outcome, shown[0] if shown else ended, bool(shown))


def _probe(
    host: RecordingHost,
    held: Sequence[_Call],
    beyond: Sequence[_Call],
    after: str,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Hold one prompt open per ``held`` call, run ``meanwhile``, then make each ``beyond`` call:
    every held prompt must open, and every call beyond must end QUEUE_FULL, its tool unused.

    A probe that could not judge (a call beyond was decided when a held prompt might have
    expired) is tried again, at most :data:`_ATTEMPTS` times, then left unchecked.
    """
    for _ in range(_ATTEMPTS):
        if _probe_once(host, held, beyond, after, meanwhile):
            return
    unchecked(
        "APPR-009",
        "the held prompts could not be opened, and the calls beyond them decided, within the "
        f"{host.config.approval_timeout_s:g} s approval timeout: the host or the machine was "
        "too slow to ask beyond the pending limit while the held prompts were surely open",
    )


def _probe_once(
    host: RecordingHost,
    held: Sequence[_Call],
    beyond: Sequence[_Call],
    after: str,
    meanwhile: Callable[[], None] | None,
) -> bool:
    """One try of :func:`_probe`; return whether it judged."""
    limit = host.config.pending_limit
    receipts = len(host.observe().receipts)
    holds: list[_Held] = []
    finished = False
    try:
        for call in held:
            hold = _Held(host, call)
            ended = hold.opened()
            if ended is not None:
                _held_ended(ended, call, len(holds), limit, after)
            holds.append(hold)
        if meanwhile is not None:
            meanwhile()
        # No held prompt can have expired before its call started plus the approval timeout.
        surely_open = min(hold.started for hold in holds) + host.config.approval_timeout_s
        for call in beyond:
            made = _beyond(host, call)
            if made.outcome.disposition == "QUEUE_FULL":
                continue
            if made.decided >= surely_open - _SLACK_S:
                return False
            if any(hold.ended_unanswered(_CLOSED_GRACE_S / len(holds)) for hold in holds):
                # The host closed a held prompt by itself, which frees its slot: the call beyond
                # may have been decided after that.
                return False
            did = "opened a prompt" if made.prompted else f"ended {made.outcome.disposition}"
            fail(
                "APPR-009",
                f"after {after}, with {len(holds)} prompt(s) open and a pending limit of {limit}, "
                f"a {_kind(call)} call {did} instead of ending QUEUE_FULL",
            )
        finished = True
    finally:
        for hold in holds:
            hold.release()
        if not finished:
            for hold in holds:
                with contextlib.suppress(Exception):  # the check's own failure goes first
                    hold.result()
    for hold in holds:
        hold.result()
    require(
        len(host.observe().receipts) == receipts,
        "APPR-009",
        f"after {after}, a call beyond the pending limit, or a held call denied, reached its tool",
    )
    return True


def _held_ended(ended: CallResult, call: _Call, opened: int, limit: int, after: str) -> None:
    """Judge a call meant to hold a prompt that ended without one."""
    if ended.disposition == "QUEUE_FULL":
        fail(
            "APPR-009",
            f"after {after}, a {_kind(call)} call ended QUEUE_FULL with {opened} prompt(s) open "
            f"and a pending limit of {limit}",
        )
    if call.plain:
        not_applicable(
            f"the host ended a reference-free call {ended.disposition} without a prompt, so "
            "its prompts cannot be counted"
        )
    fail(
        "APPR-009",
        f"after {after}, a secret-bearing call ended {ended.disposition} without a prompt, so "
        "the queue could not be filled",
    )


def _kind(call: _Call) -> str:
    return "reference-free" if call.plain else "secret-bearing"


def _alone(outcome: CallResult, expected: str, requirement: str, what: str) -> None:
    """Judge a call made with fewer prompts open than the limit: never QUEUE_FULL."""
    require(
        outcome.disposition != "QUEUE_FULL",
        "APPR-009",
        f"{what} ended QUEUE_FULL with fewer prompts open than the pending limit",
    )
    require(
        outcome.disposition == expected,
        requirement,
        f"{what} ended {outcome.disposition}, not {expected}",
    )


def _late(answer: Answer, timeout: float, seen: list[float] | None = None) -> OperatorScript:
    """Return an operator that answers ``answer`` :data:`_LATE_S` after the approval timeout
    ``timeout``.

    It sleeps from the moment it is asked, which is after the host's timer started: the answer
    is late whatever the machine's load.
    """

    def script(_request: Mapping[str, Any], _control: Control) -> Answer:
        if seen is not None:
            seen.append(time.monotonic())
        time.sleep(timeout + _LATE_S)
        return answer

    return script


# --- every way a prompt ends, then the limit, exactly ----------------------------------------


class _Running:
    """A started call whose end the check looks for without waiting on it."""

    def __init__(self, pending: PendingCall) -> None:
        self._pending = pending
        self._result: CallResult | None = None

    def ended(self) -> bool:
        """Return whether the call has ended, after a short look."""
        with contextlib.suppress(TimeoutError):
            self.result(_POLL_S)
        return self._result is not None

    def result(self, timeout: float = WAIT_SECONDS) -> CallResult:
        """Return the call's result, waiting at most ``timeout`` seconds for it."""
        if self._result is None:
            self._result = self._pending.result(timeout)
        return self._result


def _drive_deny(host: RecordingHost, args: str) -> None:
    for _ in range(_LIMIT + 1):
        outcome = host.invoke(RECORDER.name, args, answering(Answer.DENY))
        _alone(outcome, "DENIED", "APPR-010", "a denied call")


def _drive_persist_failed(host: RecordingHost, _args: str) -> None:
    # A broad answer to a reference-free call whose rule the store cannot save: the prompt
    # closes, the call ends POLICY_PERSIST_FAILED, and its slot must be free again.
    for _ in range(_LIMIT + 1):
        outcome = host.invoke(RECORDER.name, _PLAIN, answering(Answer.ALWAYS_ALLOW))
        _alone(outcome, "POLICY_PERSIST_FAILED", "APPR-012", "a broad answer that was not saved")


def _drive_unanswered(host: RecordingHost, args: str, operator: OperatorScript) -> None:
    pending = [host.start(RECORDER.name, args, operator) for _ in range(_LIMIT)]
    for call in pending:
        _alone(call.result(WAIT_SECONDS), "TIMEOUT", "APPR-008", "a call never answered in time")
    require(host.observe().receipts == (), "APPR-008", "a call that timed out reached its tool")


def _drive_timeout(host: RecordingHost, args: str) -> None:
    _drive_unanswered(host, args, answering(Answer.NONE))


def _drive_late(host: RecordingHost, args: str) -> None:
    _drive_unanswered(host, args, _late(Answer.APPROVE, host.config.approval_timeout_s))


def _drive_queue_full(host: RecordingHost, args: str) -> None:
    calls = [_Call(RECORDER.name, args)]
    _probe(host, calls * _LIMIT, calls * _BEYOND, "no call yet")


def _drive_reset(host: RecordingHost, args: str) -> None:
    host.need("control.reset")
    calls = [_Call(RECORDER.name, args)]
    _probe(host, calls * _LIMIT, calls * _BEYOND, "a reset", host.control().reset)


def _drive_executed(host: RecordingHost, args: str) -> None:
    running = [_Running(host.start(_SLOW.name, args)) for _ in range(_LIMIT)]
    deadline = time.monotonic() + WAIT_SECONDS
    # A receipt means the handler was called: that call's prompt was answered and has closed.
    while len(host.observe().receipts) < _LIMIT and time.monotonic() < deadline:
        if all(call.ended() for call in running):
            break
        time.sleep(_POLL_S)
    outcome = host.invoke(RECORDER.name, args)
    for call in running:
        call.result()
    _alone(
        outcome,
        "APPROVED_ONCE",
        "APPR-009",
        f"an approved call made while {_LIMIT} approved calls ran (their prompts closed)",
    )


#: Each way a prompt ends, and the approval timeout its check configures.
_ENDINGS: Final[dict[str, tuple[Callable[[RecordingHost, str], None], float]]] = {
    "denials": (_drive_deny, _HOLD_S),
    "timeouts": (_drive_timeout, _SHORT_S),
    "late-answers": (_drive_late, _SHORT_S),
    "queue-full": (_drive_queue_full, _HOLD_S),
    "reset-while-open": (_drive_reset, _HOLD_S),
    "while-executing": (_drive_executed, _HOLD_S),
    "persist-failures": (_drive_persist_failed, _HOLD_S),
}

#: The endings that need the policy store to fail.
_FAILING_STORE: Final = frozenset({"persist-failures"})


@pytest.mark.req("APPR-009", "APPR-008", "APPR-010", "APPR-012")
@pytest.mark.parametrize("ending", list(_ENDINGS))
def test_limit_exact_after(host: RecordingHost, mint: Mint, ending: str) -> None:
    """After prompts end each way, the limit's worth of prompts open and every call beyond them
    ends QUEUE_FULL, tool unused: no ending frees a slot twice, keeps one, or frees one it never
    took. Where the prompts are let expire, the short approval timeout is fitted to the host's
    round trip first: the probe after them must open the held prompts and decide the calls
    beyond them within it."""
    host.need("start", "observe.receipts")
    store = "working"
    if ending in _FAILING_STORE:
        host.need("policy.store-failing")
        store = "failing"
    drive, timeout = _ENDINGS[ending]
    secret = make_secret(mint)
    args = args_json({"x": ref(secret.id)})

    def configured(approval_timeout_s: float) -> HostConfig:
        return config(
            [secret],
            tools=(RECORDER, _SLOW),
            pending_limit=_LIMIT,
            approval_timeout_s=approval_timeout_s,
            execution_timeout_s=_EXECUTION_S,
            policy_store=store,
        )

    if timeout < _HOLD_S:
        trip = prompted_round_trip(host, configured(_HOLD_S), RECORDER.name, args)
        timeout = fitted_timeout(timeout, trip)
    host.reset(configured(timeout))
    drive(host, args)
    calls = [_Call(RECORDER.name, args)]
    _probe(host, calls * _LIMIT, calls * _BEYOND, ending.replace("-", " "))


# --- every prompt counts, on one limit for the host ------------------------------------------

#: (pending limit, the calls held, the calls beyond), by which kind of call is which: a
#: ``username`` call's references are all usernames, metadata the dialog shows anyway, and its
#: prompt counts all the same (decisions R3.5).
_MIXES: Final = {
    "plain-held-secret-beyond": (1, ("plain",), ("secret", "secret")),
    "secret-held-plain-beyond": (1, ("secret",), ("plain", "plain")),
    "plain-held-plain-beyond": (1, ("plain",), ("plain",)),
    "both-held-both-beyond": (2, ("plain", "secret"), ("secret", "plain")),
    "username-held-beyond": (1, ("username",), ("secret", "username")),
}


@pytest.mark.req("APPR-009")
@pytest.mark.parametrize("mix", list(_MIXES))
def test_every_prompt_counts(host: RecordingHost, mint: Mint, mix: str) -> None:
    """Reference-free and secret-bearing prompts, those of username-only calls included, count
    against the same pending limit, in either order: with the limit's worth of any kind open, a
    call of any kind is QUEUE_FULL."""
    host.need("start", "observe.receipts")
    limit, held, beyond = _MIXES[mix]
    secret = make_secret(mint)
    host.reset(config([secret], pending_limit=limit, approval_timeout_s=_HOLD_S))
    kinds = {
        "plain": _Call(RECORDER.name, _PLAIN, plain=True),
        "secret": _Call(RECORDER.name, args_json({"x": ref(secret.id)})),
        "username": _Call(RECORDER.name, args_json({"u": ref(secret.id, "username")})),
    }
    _probe(host, [kinds[k] for k in held], [kinds[k] for k in beyond], "no call yet")


@pytest.mark.req("APPR-009")
def test_limit_is_one_for_every_tool(host: RecordingHost, mint: Mint) -> None:
    """The pending limit counts the prompts of every tool and provider together: with prompts
    open for two tools, calls to a third tool and to each of the two are QUEUE_FULL."""
    host.need("start", "observe.receipts")
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            tools=(RECORDER, _SECOND, _OTHER),
            pending_limit=_LIMIT,
            approval_timeout_s=_HOLD_S,
        )
    )
    args = args_json({"x": ref(secret.id)})
    held = [_Call(RECORDER.name, args), _Call(_OTHER.name, args)]
    beyond = [_Call(_SECOND.name, args), _Call(_OTHER.name, args), _Call(RECORDER.name, args)]
    _probe(host, held, beyond, "no call yet")


# --- refusals of resolution come before the queue --------------------------------------------

#: Each refusal settled at resolution or before it: (requirement, disposition, capability).
_REFUSALS: Final = {
    "unknown-id": ("MSG-007", "SECRET_UNRESOLVED", None),
    "empty-field": ("MSG-008", "SECRET_UNRESOLVED", None),
    "ai-provider-key": ("MSG-011", "SECRET_FORBIDDEN", None),
    "malformed": ("MSG-001", "SECRET_UNRESOLVED", None),
    "vault-failure": ("MSG-009", "SECRET_UNRESOLVED", "vault.failing"),
}


@pytest.mark.req("ORD-003", "MSG-001", "MSG-007", "MSG-008", "MSG-009", "MSG-011", "APPR-009")
@pytest.mark.parametrize("refusal", list(_REFUSALS))
def test_resolution_refusal_while_queue_full(host: RecordingHost, mint: Mint, refusal: str) -> None:
    """With the queue full, a call refused at resolution or before it still ends with its own
    disposition and message (refusals come before the prompt), and the queue stays full."""
    requirement, disposition, capability = _REFUSALS[refusal]
    host.need("start", "observe.receipts", *([capability] if capability else []))
    good = make_secret(mint)
    bare = make_secret(mint, notes=False)
    key = make_secret(mint, tags=("ai-provider",))
    missing = new_id()
    refused, prefix = {
        "unknown-id": (ref(missing), f"no secret with id {missing}"),
        "empty-field": (ref(bare.id, "notes"), f"secret {bare.id} has no notes"),
        "ai-provider-key": (ref(key.id), f"secret {key.id} is an AI provider key"),
        "malformed": ("{{secret:not-a-uuid}}", "Malformed secret reference"),
        "vault-failure": (ref(good.id), "the vault could not be read ("),
    }[refusal]
    failing = refusal == "vault-failure"
    host.reset(
        config(
            [good, bare, key],
            pending_limit=1,
            approval_timeout_s=_HOLD_S,
            vault="failing:offline" if failing else "present",
        )
    )
    # With a failing vault no secret-bearing call can prompt: a reference-free one fills the queue.
    filler = (
        _Call(RECORDER.name, _PLAIN, plain=True)
        if failing
        else _Call(RECORDER.name, args_json({"x": ref(good.id)}))
    )

    def refuse() -> None:
        outcome = host.invoke(RECORDER.name, args_json({"y": refused}))
        require(
            outcome.disposition == disposition,
            (requirement, "ORD-003"),
            f"with the queue full, a call refused for {refusal} ended {outcome.disposition}, "
            f"not {disposition}",
        )
        require(
            outcome.text.startswith(prefix),
            (requirement, "ORD-003"),
            f"with the queue full, the refusal for {refusal} does not begin with its message",
        )

    _probe(host, [filler], [filler], f"a refusal for {refusal}", refuse)


# --- the approval timeout: late answers, permissive rules, one countdown per prompt ----------


@pytest.mark.req("APPR-008")
@pytest.mark.parametrize("kind", ["secret-bearing", "reference-free"])
def test_late_answer_never_runs(host: RecordingHost, mint: Mint, kind: str) -> None:
    """An approval that comes after the configured approval timeout does not run the call: it
    ends as TIMEOUT, for a reference-free prompt as for a secret-bearing one."""
    host.need("observe.receipts")
    secret = make_secret(mint)
    host.reset(config([secret], approval_timeout_s=_SHORT_S))
    plain = kind == "reference-free"
    args = _PLAIN if plain else args_json({"x": ref(secret.id)})
    seen: list[float] = []
    outcome = host.invoke(RECORDER.name, args, _late(Answer.APPROVE, _SHORT_S, seen))
    if not seen and plain:
        not_applicable(f"the host ended a reference-free call {outcome.disposition} unasked")
    require(bool(seen), "APPR-008", f"a secret-bearing call ended {outcome.disposition} unasked")
    require(
        outcome.disposition == "TIMEOUT",
        "APPR-008",
        f"a {kind} call approved {_LATE_S:g} s after its {_SHORT_S:g} s approval timeout ended "
        f"{outcome.disposition}",
    )
    require(host.observe().receipts == (), "APPR-008", "a late approval ran the call")


#: Each rule or trust that would let a reference-free call run unasked: the policy file, the
#: operator's action on the host, and the capability that action needs.
_PERMISSIVE: Final[
    dict[str, tuple[Mapping[str, Any] | None, Callable[[Control], None] | None, str | None]]
] = {
    "policy-allow": ({"tools": {RECORDER.name: "ALLOW"}}, None, None),
    "saved-allow": (
        None,
        lambda control: control.save_rule("tool", RECORDER.name, "ALLOW"),
        "control.save-rule",
    ),
    "session-trust": (
        None,
        lambda control: control.trust_session(RECORDER.name),
        "control.trust-session",
    ),
    "yolo": (None, lambda control: control.set_yolo(True), "control.set-yolo"),
}


@pytest.mark.req("APPR-008", "APPR-001")
@pytest.mark.parametrize("grant", list(_PERMISSIVE))
def test_timeout_ignores_permissive_rules(host: RecordingHost, mint: Mint, grant: str) -> None:
    """A secret-bearing call whose prompt goes unanswered ends as TIMEOUT and never runs, though
    a rule, session trust or YOLO would let the tool run unasked."""
    policy, action, capability = _PERMISSIVE[grant]
    host.need("observe.receipts", *([capability] if capability else []))
    secret = make_secret(mint)
    host.reset(config([secret], policy=policy, approval_timeout_s=_SHORT_S))
    if action is not None:
        action(host.control())
    if policy is not None:
        free = host.invoke(RECORDER.name, _PLAIN)
        if free.disposition == "POLICY_DENIED":
            pytest.skip(f"the host does not accept the {grant} policy field")
    before = len(host.observe().receipts)
    outcome = host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}), answering(Answer.NONE))
    require(
        outcome.disposition == "TIMEOUT",
        ("APPR-008", "APPR-001"),
        f"under {grant}, a secret-bearing call whose prompt went unanswered ended "
        f"{outcome.disposition}",
    )
    require(
        len(host.observe().receipts) == before,
        ("APPR-008", "APPR-001"),
        f"under {grant}, an unanswered secret-bearing call reached its tool",
    )


@pytest.mark.req("APPR-009", "POL-004")
@pytest.mark.parametrize("grant", list(_PERMISSIVE))
def test_unprompted_call_runs_while_the_queue_is_full(
    host: RecordingHost, mint: Mint, grant: str
) -> None:
    """With the pending limit's worth of prompts open, a reference-free call that a rule,
    session trust or YOLO lets run unasked still runs: QUEUE_FULL is for a prompt beyond the
    limit, and this call asks for none."""
    policy, action, capability = _PERMISSIVE[grant]
    host.need("start", "observe.receipts", *([capability] if capability else []))
    secret = make_secret(mint)
    host.reset(config([secret], policy=policy, pending_limit=_LIMIT, approval_timeout_s=_HOLD_S))
    if action is not None:
        action(host.control())
    held = HeldOperator()
    pending = [
        host.start(RECORDER.name, args_json({"x": ref(secret.id), "n": n}), held)
        for n in range(_LIMIT)
    ]
    try:
        require(held.wait_seen(_LIMIT), "APPR-009", "the held prompts never opened")
        before = len(host.observe().receipts)
        outcome = host.invoke(RECORDER.name, _PLAIN)
        ran = len(host.observe().receipts) - before
    finally:
        held.release()
    for call in pending:
        call.result(WAIT_SECONDS)
    if policy is not None and outcome.disposition == "POLICY_DENIED":
        pytest.skip(f"the host does not accept the {grant} policy field")
    require(
        outcome.disposition != "QUEUE_FULL",
        "APPR-009",
        f"under {grant}, a reference-free call that asks for no prompt ended QUEUE_FULL with "
        f"the limit's {_LIMIT} prompts open",
    )
    require(
        not outcome.is_error and ran == 1,
        "POL-004",
        f"under {grant}, a reference-free call made while the queue was full ended "
        f"{outcome.disposition}",
    )


#: When the second prompt opens, and how late the first answer comes, in the countdown check:
#: the second opens halfway through the first's timeout, the first answer comes a little after
#: it. A countdown restarted by the second prompt would still be running at that answer.
_COUNTDOWN_S: Final = 0.5
_SECOND_AT_S: Final = 0.25
_FIRST_LATE_S: Final = 0.05


@pytest.mark.req("APPR-008")
def test_each_prompt_keeps_its_own_timeout(host: RecordingHost, mint: Mint) -> None:
    """A prompt opened while another is open does not restart the first one's timeout: an
    answer after the first prompt's own timeout still ends it as TIMEOUT."""
    host.need("start", "observe.receipts")
    secret = make_secret(mint)
    host.reset(config([secret], pending_limit=_LIMIT, approval_timeout_s=_COUNTDOWN_S))
    asked: list[float] = []
    first_shown = threading.Event()

    def late(_request: Mapping[str, Any], _control: Control) -> Answer:
        asked.append(time.monotonic())
        first_shown.set()
        time.sleep(_COUNTDOWN_S + _FIRST_LATE_S)
        return Answer.APPROVE

    first = host.start(RECORDER.name, args_json({"x": ref(secret.id)}), late)
    require(first_shown.wait(WAIT_SECONDS), "APPR-008", "the first call never prompted")
    time.sleep(max(0.0, asked[0] + _SECOND_AT_S - time.monotonic()))
    second = host.start(RECORDER.name, args_json({"y": ref(secret.id)}), answering(Answer.NONE))
    first_outcome = first.result(WAIT_SECONDS)
    second_outcome = second.result(WAIT_SECONDS)
    require(
        first_outcome.disposition == "TIMEOUT",
        "APPR-008",
        f"an approval {_FIRST_LATE_S:g} s after its prompt's {_COUNTDOWN_S:g} s timeout, with a "
        f"second prompt opened meanwhile, ended {first_outcome.disposition}",
    )
    require(
        second_outcome.disposition == "TIMEOUT",
        "APPR-008",
        f"an unanswered second prompt ended {second_outcome.disposition}",
    )
    require(host.observe().receipts == (), "APPR-008", "a call answered late reached its tool")
