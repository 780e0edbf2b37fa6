"""Mutants of the approval queue and the approval timeout at the moments the older checks skip.

This module owns the broken reference hosts behind ``conformance/checks/test_queue_moments.py``:
a timed-out prompt that frees its slot twice or never, a QUEUE_FULL refusal that frees a slot it
never took, reference-free prompts left out of the count, a limit counted per tool, an approved
call that keeps its slot while it runs, a reset that empties the count while prompts are open, a
full queue consulted before resolution, an answer after the timeout that still runs the call, a
timeout that falls back to the tool's rule, one countdown restarted for every open prompt, and
reference-free prompts that keep the standard timeout. Each is a
:class:`~conformance.selftest.base.Mutant`; each changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_GATE = "reference_impl._approve"
_REG = "reference_impl._registry"
_HARNESS = "reference_impl.harness"

#: What a patched registry hands the patched gate on the same call's thread.
_local = threading.local()


def _after_answer(change: Callable[[Any, Any, Any], Any]) -> Callable[..., Any]:
    """Return a patch of ``ApprovalGate.ask`` that lets ``change(gate, request, answer)`` see
    each answer (and move the count) once the original has freed its slot; it returns the
    answer the call gets."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def ask(self: Any, request: Any) -> Any:
            return change(self, request, original(self, request))

        return ask

    return transform


def _timeout_frees_twice(gate: Any, _request: Any, answer: Any) -> Any:
    from reference_impl._types import Answer

    if answer is Answer.TIMEOUT:
        with gate._lock:
            gate._open -= 1
    return answer


def _timeout_keeps_slot(gate: Any, _request: Any, answer: Any) -> Any:
    from reference_impl._types import Answer

    if answer is Answer.TIMEOUT:
        with gate._lock:
            gate._open += 1
    return answer


def _queue_full_frees(gate: Any, _request: Any, answer: Any) -> Any:
    if answer is None:
        with gate._lock:
            gate._open -= 1
    return answer


def _plain_uncounted(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        if not request.secret_refs:
            return self.operator.ask(request, self.timeout)
        return original(self, request)

    return ask


def _per_tool(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        tool = request.tool_name
        with self._lock:
            counts = self.__dict__.setdefault("_open_by_tool", {})
            if counts.get(tool, 0) >= self.limit:
                return None
            counts[tool] = counts.get(tool, 0) + 1
        try:
            return self.operator.ask(request, self.timeout)
        finally:
            with self._lock:
                counts[tool] -= 1

    return ask


def _plain_standard_timeout(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._limits import APPROVAL_TIMEOUT_SECONDS

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        with self._lock:
            if self._open >= self.limit:
                return None
            self._open += 1
        try:
            timeout = self.timeout if request.secret_refs else APPROVAL_TIMEOUT_SECONDS
            return self.operator.ask(request, timeout)
        finally:
            with self._lock:
                self._open -= 1

    return ask


# --- a slot held while the approved call runs ------------------------------------------------


def _keep_approved_slot(gate: Any, _request: Any, answer: Any) -> Any:
    from reference_impl._types import Answer

    if answer not in (None, Answer.DENY, Answer.TIMEOUT):
        with gate._lock:
            gate._open += 1
        _local.queued = gate
    return answer


def _release_queued() -> None:
    gate = getattr(_local, "queued", None)
    if gate is not None:
        _local.queued = None
        with gate._lock:
            gate._open -= 1


def _release_after_run(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        try:
            return original(self, tool, arguments, timeout)
        finally:
            _release_queued()

    return run


def _release_at_refusal(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def refuse(self: Any, call: Any, refusal: Any) -> Any:
        _release_queued()
        return original(self, call, refusal)

    return refuse


# --- a reset that empties the queue ----------------------------------------------------------


def _reset_clears(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def control(self: Any, op: str, params: Any) -> None:
        original(self, op, params)
        if op == "reset" and self.registry is not None:
            gate = self.registry.gate
            with gate._lock:
                gate._open = 0

    return control


def _count_floored(gate: Any, _request: Any, answer: Any) -> Any:
    with gate._lock:
        gate._open = max(0, gate._open)
    return answer


# --- the queue consulted before resolution ---------------------------------------------------


def _note_registry(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def method(self: Any, *args: Any) -> Any:
        _local.registry = self
        return original(self, *args)

    return method


def _full_before_resolve(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Disposition, Refusal

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        registry = getattr(_local, "registry", None)
        if registry is not None:
            gate = registry.gate
            with gate._lock:
                full = gate._open >= gate.limit
            if full:
                return Refusal(
                    Disposition.QUEUE_FULL,
                    "Too many approval requests are pending",
                    "queue-full",
                    "APPR-009",
                )
        return original(vault, references)

    return resolve


# --- a timeout that falls back to the tool's rule --------------------------------------------


def _timeout_by_rule(gate: Any, request: Any, answer: Any) -> Any:
    from reference_impl._types import Answer, Rule

    registry = getattr(_local, "registry", None)
    if answer is Answer.TIMEOUT and registry is not None:
        decision = registry.rules.decide(request.tool_name, request.provider_id, False)
        if decision.rule is Rule.ALLOW:
            return Answer.APPROVE
    return answer


# --- one countdown for every open prompt ----------------------------------------------------


def _shared_countdown(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl import harness
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any, timeout: float) -> Any:
        host = self._host
        host._dialog_shown = time.monotonic()
        data = harness.request_to_dict(request)
        host._record_request(data)
        callback = getattr(host._local, "on_prompt", None) or harness._approve
        answer = harness.ANSWERS.get(callback(data))
        if answer is None:
            while time.monotonic() < host._dialog_shown + timeout:
                time.sleep(max(0.0, host._dialog_shown + timeout - time.monotonic()))
            return Answer.TIMEOUT
        if time.monotonic() > host._dialog_shown + timeout:
            return Answer.TIMEOUT
        return answer

    return ask


MUTANTS: Final = (
    Mutant(
        "timeout-frees-slot-twice",
        "APPR-009",
        "A prompt that times out frees its pending slot twice, so the limit grows by one with "
        "each timeout.",
        ((_GATE, "ApprovalGate.ask", _after_answer(_timeout_frees_twice)),),
    ),
    Mutant(
        "queue-full-frees-a-slot",
        "APPR-009",
        "Each QUEUE_FULL refusal frees a slot it never took, so the second call past the limit "
        "opens a prompt.",
        ((_GATE, "ApprovalGate.ask", _after_answer(_queue_full_frees)),),
    ),
    Mutant(
        "plain-prompts-uncounted",
        "APPR-009",
        "Prompts of reference-free calls bypass the pending limit: they neither count against "
        "it nor end as QUEUE_FULL.",
        ((_GATE, "ApprovalGate.ask", _plain_uncounted),),
    ),
    Mutant(
        "pending-limit-per-tool",
        "APPR-009",
        "The pending limit is counted per tool, so prompts for different tools open beyond it.",
        ((_GATE, "ApprovalGate.ask", _per_tool),),
    ),
    Mutant(
        "late-answer-accepted",
        "APPR-008",
        "An answer that arrives after the approval timeout still runs the call.",
        (
            line_patch(
                _HARNESS,
                "_CallbackOperator.ask",
                "if time.monotonic() > deadline:",
                "if False:",
            ),
        ),
        driver=False,
    ),
    Mutant(
        "timeout-keeps-its-slot",
        "APPR-009",
        "A prompt that times out never frees its pending slot, so calls after a timeout end "
        "QUEUE_FULL with fewer prompts open than the limit.",
        ((_GATE, "ApprovalGate.ask", _after_answer(_timeout_keeps_slot)),),
    ),
    Mutant(
        "queue-full-before-resolution",
        "ORD-003",
        "With the approval queue full, a secret-bearing call is refused QUEUE_FULL before its "
        "references are resolved, so an unknown id, an empty field, a vault failure or an AI "
        "provider key loses its own refusal.",
        (
            (_REG, "Registry._prepass", _note_registry),
            (_REG, "resolve", _full_before_resolve),
        ),
    ),
    Mutant(
        "timeout-falls-back-to-rule",
        "APPR-008",
        "An unanswered prompt is decided by the tool's rule when it times out, so under ALLOW, "
        "session trust or YOLO a never-answered secret-bearing call runs.",
        (
            (_REG, "Registry._approve", _note_registry),
            (_GATE, "ApprovalGate.ask", _after_answer(_timeout_by_rule)),
        ),
    ),
    Mutant(
        "countdown-restarts-for-all",
        "APPR-008",
        "The approval dialog keeps one countdown that every new prompt restarts, so an answer "
        "after a prompt's own timeout runs the call when another prompt opened meanwhile.",
        ((_HARNESS, "_CallbackOperator.ask", _shared_countdown),),
        driver=False,
    ),
    Mutant(
        "plain-prompt-standard-timeout",
        "APPR-008",
        "Reference-free prompts keep the standard 45 s approval timeout whatever is configured, "
        "so a late answer to one still runs the call.",
        ((_GATE, "ApprovalGate.ask", _plain_standard_timeout),),
        driver=False,
    ),
    Mutant(
        "slot-held-while-executing",
        "APPR-009",
        "An approved call keeps its pending slot until its handler returns, so a call made while "
        "approved calls run ends QUEUE_FULL with no prompt open.",
        (
            (_GATE, "ApprovalGate.ask", _after_answer(_keep_approved_slot)),
            ("reference_impl._execute", "Executor.run", _release_after_run),
            (_REG, "Registry._refuse", _release_at_refusal),
        ),
    ),
    Mutant(
        "reset-empties-queue",
        "APPR-009",
        "The reset control zeroes the count of open prompts while prompts are still open, so "
        "prompts open beyond the limit after a reset.",
        (
            (_HARNESS, "HarnessHost.control", _reset_clears),
            (_GATE, "ApprovalGate.ask", _after_answer(_count_floored)),
        ),
    ),
)
