"""Checks of what one call leaves for the next (design: result scrubbing, invariants 1 and 5;
decisions R3, R5.4, R6.6, R7).

This module owns the result path across calls: a handler that outlives its execution timeout
and finishes while the host has moved on (its late result must reach no surface, and above all
not the next call), two secret-bearing calls whose prompts are open at once (each result is
scrubbed of its own call's values, whichever was approved first), a reference-free call after a
secret-bearing one (its result comes back byte for byte: the scrubber's scope is one call, and
scrubbing later results against earlier values is excluded because it breaks invariant 5), and
every operator control changed between two calls, after the tool was used, taking effect on the
very next call. It waits a few tenths of a second at most, and never prints a value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pytest

from conformance.canary import Mint, required_forms
from conformance.host import Answer, CallResult, Control, HandlerKind
from conformance.outcomes import not_applicable, require, unchecked
from conformance.scenario import (
    ECHO,
    PROVIDER,
    HeldOperator,
    RecordingHost,
    args_json,
    config,
    make_secret,
    placeholder,
    ref,
    tool,
)
from conformance.via import via_mcp

#: The execution timeout of the late-result check, and how long its handler sleeps: well past
#: the timeout, so the host gives up first on any machine.
_EXECUTION_TIMEOUT_S: Final = 0.05
_LATE_HANDLER_S: Final = 0.25

#: How long after the late handler's end the check looks again: time for anything the host does
#: with a late result (log it, queue it) to have happened on a loaded runner.
_SETTLE_S: Final = 0.3

#: How long a held call may take to finish once released, in seconds.
_RESULT_WAIT: Final = 20.0

#: What the reference-free tools of this module return.
_PLAIN_TEXT: Final = "plain result, line one\nline two"

#: The dispositions of a call whose tool ran.
_RAN: Final = frozenset(
    {"ALLOWED", "APPROVED_ONCE", "APPROVED_ALWAYS", "APPROVED_PROVIDER", "APPROVED_SESSION"}
)


def _forms_in(text: str, value: str) -> list[str]:
    """Return the names of the required forms of ``value`` found in ``text``."""
    return [name for name, form in required_forms(value).items() if form in text]


# --- a late result ------------------------------------------------------------------------------


@pytest.mark.req("LOG-001", "INV1", "CAP-003")
def test_late_result_reaches_no_surface(host: RecordingHost, mint: Mint) -> None:
    """A handler that finishes after the host's execution timeout ended its call leaves its
    late result on no surface: not the log, not the ledger, and not the next call's result,
    which is its own tool's text exactly."""
    secret = make_secret(mint)
    slow = tool("slow", HandlerKind.TIMEOUT, seconds=_LATE_HANDLER_S)
    plain = tool("plain", HandlerKind.STATIC, text=_PLAIN_TEXT)
    host.reset(config([secret], tools=(slow, plain), execution_timeout_s=_EXECUTION_TIMEOUT_S))
    started = time.monotonic()
    late = host.invoke(slow.name, args_json({"v": ref(secret.id), "n": ref(secret.id, "notes")}))
    if not late.is_error:
        unchecked(("LOG-001", "INV1"), "the slow handler's call was not ended by the timeout")
        return
    # Past the handler's end, and past what a host does with what it returns late.
    time.sleep(max(0.0, started + _LATE_HANDLER_S + _SETTLE_S - time.monotonic()))
    after = host.invoke(plain.name, "{}")
    values = (secret.password, secret.notes)
    for value in values:
        found = _forms_in(after.text, value)
        require(
            not found,
            "INV1",
            f"the call after a timed-out one returned forms {found} of the late call's value",
        )
    require(
        after.text == _PLAIN_TEXT,
        "CAP-003",
        f"the call after a timed-out one ended {after.disposition} with {len(after.text)} "
        f"characters, not its own tool's {len(_PLAIN_TEXT)}",
    )
    seen = host.observe()
    if seen.judges("observe.log", "LOG-001"):
        for number, record in enumerate(seen.log_records, start=1):
            for value in values:
                found = _forms_in(record.message, value)
                require(
                    not found,
                    "LOG-001",
                    f"host log record {number} ({record.level}), written after a handler "
                    f"outlived its timeout, holds forms {found} of its value",
                )


# --- two calls at once --------------------------------------------------------------------------


@pytest.mark.req("INV1-ECHO", "SCRUB-007")
@pytest.mark.parametrize("first", ["opened-first", "opened-last"])
def test_open_calls_each_scrubbed_of_their_own(host: RecordingHost, mint: Mint, first: str) -> None:
    """Two echoing secret-bearing calls with their prompts open at once, approved one after
    the other, each come back with their own values replaced by their own placeholders and
    without the other call's values."""
    host.need("start")
    secrets = [make_secret(mint), make_secret(mint)]
    host.reset(config(secrets, tools=(ECHO,), approval_timeout_s=30.0))
    held = [HeldOperator(), HeldOperator()]
    pending = []
    try:
        for secret, operator in zip(secrets, held, strict=True):
            pending.append(host.start(ECHO.name, args_json({"v": ref(secret.id)}), operator))
            require(operator.wait_seen(1), "INV1-ECHO", "a prompt never opened")
        order = (0, 1) if first == "opened-first" else (1, 0)
        outcomes: dict[int, CallResult] = {}
        for index in order:
            held[index].release()
            outcomes[index] = pending[index].result(_RESULT_WAIT)
    finally:
        for operator in held:
            operator.release()
    for index, secret in enumerate(secrets):
        outcome = outcomes[index]
        require(
            outcome.disposition in _RAN and not outcome.is_error,
            "INV1-ECHO",
            f"call {index + 1} ended {outcome.disposition}",
        )
        for other, value in enumerate(s.password for s in secrets):
            found = _forms_in(outcome.text, value)
            require(
                not found,
                "INV1-ECHO",
                f"call {index + 1} returned forms {found} of call {other + 1}'s value",
            )
        require(
            placeholder(secret.id) in outcome.text,
            "SCRUB-007",
            f"call {index + 1}'s value was not replaced by its own placeholder",
        )


# --- the scrubber's scope ------------------------------------------------------------------------


@pytest.mark.req("INV5")
def test_reference_free_call_after_a_secret_call_untouched(host: RecordingHost, mint: Mint) -> None:
    """A reference-free call after a secret-bearing one returns its tool's text byte for byte,
    even when that text holds the value the earlier call delivered: scrubbing reaches one call's
    own values only (the design's result scrubbing; scrubbing later results is excluded, since
    it gives up invariant 5)."""
    if via_mcp(host):
        # Over MCP the suite searches every message of the run for every canary once the run
        # ends, and this check's later result holds a value by design. The scrubber's scope
        # lives in the host's result path, which every path shares; it is judged in process and
        # behind the driver.
        not_applicable(
            "over MCP every message of the run is searched for every value, and this check's "
            "reference-free result returns one by design (judged in process and via the driver)"
        )
    secret = make_secret(mint)
    text = f"written earlier: {secret.password}\nand its notes: {secret.notes}"
    later = tool("later", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(ECHO, later)))
    first = host.invoke(ECHO.name, args_json({"v": ref(secret.id), "n": ref(secret.id, "notes")}))
    require(
        first.disposition in _RAN and not first.is_error,
        "INV5",
        f"the secret-bearing call ended {first.disposition}",
    )
    # Every surface is searched now, for the secret-bearing call. The later call returns the
    # values by design, so it is judged here alone, not by the sweep.
    host.sweep()
    outcome = host.invoke(later.name, "{}")
    require(
        outcome.text == text,
        "INV5",
        f"a reference-free call after a secret-bearing one ended {outcome.disposition} with "
        f"{len(outcome.text)} characters, not its tool's {len(text)} unchanged",
    )


# --- controls between calls ---------------------------------------------------------------------

#: The permission the tool of the control checks needs (RBAC).
_TOOL_PERMISSION: Final = "tool.use"

#: The tool of the control checks.
_GUARDED: Final = tool("recorder", HandlerKind.RECORDER, permission=_TOOL_PERMISSION)


@dataclass(frozen=True, slots=True)
class _Call:
    """One call of a control scenario and what it must do.

    Attributes:
        secret: Whether it carries a reference.
        ends: The dispositions it may end with.
        prompts: Whether it must open a prompt.
        requirement: What it judges.
    """

    secret: bool
    ends: frozenset[str]
    prompts: bool
    requirement: str


@dataclass(frozen=True, slots=True)
class _Act:
    """One operator action between calls.

    Attributes:
        capability: The control capability it needs.
        act: What it does.
    """

    capability: str
    act: Callable[[Control], None]


_Step = _Call | _Act

_USED_SECRET: Final = _Call(True, frozenset({"APPROVED_ONCE"}), True, "APPR-001")
_USED_PLAIN: Final = _Call(False, frozenset({"APPROVED_ONCE"}), True, "POL-004")


def _refused(disposition: str, requirement: str, secret: bool = True) -> _Call:
    return _Call(secret, frozenset({disposition}), False, requirement)


def _save(kind: str, rule: str) -> _Act:
    name = PROVIDER if kind == "provider" else _GUARDED.name
    return _Act("control.save-rule", lambda control: control.save_rule(kind, name, rule))


def _revoke(kind: str) -> _Act:
    name = PROVIDER if kind == "provider" else _GUARDED.name
    return _Act("control.revoke", lambda control: control.revoke(kind, name))


def _permissions(*permissions: str) -> _Act:
    return _Act(
        "control.set-permissions",
        lambda control: control.set_permissions(False, permissions),
    )


_RUNS_UNASKED: Final = _Call(False, _RAN, False, "POL-004")

#: Each scenario: the tool is used, then each control is followed by the call it must govern.
_SCENARIOS: Final[Mapping[str, tuple[_Step, ...]]] = {
    "provider-deny": (
        _USED_SECRET,
        _save("provider", "DENY"),
        _refused("POLICY_DENIED", "MSG-005"),
    ),
    "tool-deny": (_USED_SECRET, _save("tool", "DENY"), _refused("POLICY_DENIED", "MSG-005")),
    "provider-deny-plain": (
        _USED_PLAIN,
        _save("provider", "DENY"),
        _refused("POLICY_DENIED", "POL-004", secret=False),
    ),
    "provider-deny-revoked": (
        _USED_SECRET,
        _save("provider", "DENY"),
        _refused("POLICY_DENIED", "MSG-005"),
        _revoke("provider"),
        _USED_SECRET,
    ),
    "tool-deny-revoked": (
        _USED_SECRET,
        _save("tool", "DENY"),
        _refused("POLICY_DENIED", "MSG-005"),
        _revoke("tool"),
        _USED_SECRET,
    ),
    "deny-reset": (
        _USED_SECRET,
        _save("tool", "DENY"),
        _refused("POLICY_DENIED", "MSG-005"),
        _Act("control.reset", lambda control: control.reset()),
        _USED_SECRET,
    ),
    "deny-then-allow": (
        _USED_PLAIN,
        _save("tool", "DENY"),
        _refused("POLICY_DENIED", "POL-004", secret=False),
        _save("tool", "ALLOW"),
        _Call(False, frozenset({"ALLOWED"}), False, "POL-004"),
    ),
    "secret-read-removed": (
        _USED_SECRET,
        _permissions(_TOOL_PERMISSION),
        _refused("SECRET_FORBIDDEN", "MSG-004"),
        _permissions(_TOOL_PERMISSION, "secret.read"),
        _USED_SECRET,
    ),
    "tool-permission-removed": (
        _USED_SECRET,
        _permissions("secret.read"),
        _refused("RBAC_DENIED", "ORD-004"),
    ),
    "kill-tool": (
        _USED_SECRET,
        _Act("control.kill", lambda control: control.kill(_GUARDED.name)),
        _refused("KILL_SWITCHED", "ORD-004"),
    ),
    "kill-all": (
        _USED_SECRET,
        _Act("control.kill", lambda control: control.kill(None)),
        _refused("KILL_SWITCHED", "ORD-004"),
    ),
    "trust-session": (
        _USED_PLAIN,
        _Act("control.trust-session", lambda control: control.trust_session(_GUARDED.name)),
        _RUNS_UNASKED,
        _USED_SECRET,
    ),
    "yolo": (
        _USED_PLAIN,
        _Act("control.set-yolo", lambda control: control.set_yolo(True)),
        _RUNS_UNASKED,
        _USED_SECRET,
    ),
}


class _CountingOperator:
    """Approves every prompt and counts them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seen = 0

    def __call__(self, _request: Mapping[str, Any], _control: Control) -> Answer:
        with self._lock:
            self.seen += 1
        return Answer.APPROVE


@pytest.mark.req("MSG-005", "MSG-004", "ORD-004", "POL-004", "APPR-001", "INV3")
@pytest.mark.parametrize("scenario", list(_SCENARIOS))
def test_control_between_calls_governs_next_call(
    host: RecordingHost, mint: Mint, scenario: str
) -> None:
    """An operator control changed between two calls, after the tool was used, governs the
    very next call: a DENY, a lost permission or the kill-switch refuse it before any vault
    read or prompt; a revocation, a reset, an ALLOW, session trust or YOLO let it through,
    and a secret-bearing call still prompts."""
    steps = _SCENARIOS[scenario]
    for step in steps:
        if isinstance(step, _Act):
            host.need(step.capability)
    secret = make_secret(mint)
    host.reset(
        config(
            [secret],
            tools=(_GUARDED,),
            permissions=("secret.read", _TOOL_PERMISSION),
        )
    )
    operator = _CountingOperator()
    control = host.control()
    reads = host.has("observe.vault-reads")
    if not reads:
        unchecked(("MSG-005", "MSG-004", "ORD-004", "INV3"), "no vault reads observed")
    for number, step in enumerate(steps, start=1):
        if isinstance(step, _Act):
            step.act(control)
            continue
        args = args_json({"v": ref(secret.id)} if step.secret else {"k": "plain"})
        prompts_before = operator.seen
        reads_before = len(host.observe().vault_reads) if reads else 0
        outcome = host.invoke(_GUARDED.name, args, operator)
        what = f"{scenario}, step {number}"
        # What is seen comes first, the disposition last: over MCP a call withheld by the
        # kill switch or RBAC may have its disposition named nowhere (R6.3, R9.8), and a
        # judgment resting on it ends the check unchecked.
        refused = not (step.ends & _RAN)
        require(
            outcome.is_error is refused,
            step.requirement,
            f"{what}: the call {'ran' if refused else 'was refused'}, where it should not",
        )
        prompted = operator.seen > prompts_before
        require(
            prompted is step.prompts,
            "APPR-001" if step.secret and step.prompts else step.requirement,
            f"{what}: the call {'opened' if prompted else 'did not open'} a prompt",
        )
        if reads and not step.prompts and refused:
            read = len(host.observe().vault_reads) - reads_before
            require(
                read == 0,
                (step.requirement, "INV3") if step.requirement != "ORD-004" else "ORD-004",
                f"{what}: a refused call read {read} vault pages",
            )
        require(
            outcome.disposition in step.ends,
            step.requirement,
            f"{what}: the call ended {outcome.disposition}, not {' or '.join(sorted(step.ends))}",
        )
