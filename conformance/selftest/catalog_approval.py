"""Mutants that break approval and the fence (decision R3).

This module owns the broken reference hosts whose approval request shows the wrong thing or is
answered wrongly (a denial approving, a broad answer granting, a timeout approving, a queue
without bound), and those whose fence lets a call through that a changed permission or rule
should have stopped. Each entry is a :class:`~conformance.selftest.base.Mutant`. It changes
behaviour only and never prints a value.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_local = threading.local()
_REG = "reference_impl._registry"
_UNSET: Final = object()


def _trust_answers_secret_calls(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Disposition, Rule

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        rules = self.rules
        trusted = (
            call.tool.name in rules._session_trusted
            or rules._yolo
            or rules._tools.get(call.tool.name) is Rule.ALLOW
            or rules._providers.get(call.tool.provider_id) is Rule.ALLOW
        )
        if call.refs and trusted:
            return Disposition.APPROVED_ONCE
        return original(self, call, records)

    return approve


def _request_with(**changes: Any) -> Callable[[Any], Any]:
    def transform(original: Any) -> Any:
        def build(**fields: Any) -> Any:
            return original(**{**fields, **changes})

        return build

    return transform


def _tool_risk_kept(original: Any) -> Callable[..., Any]:
    from reference_impl._types import Risk

    def build(**fields: Any) -> Any:
        return original(**{**fields, "risk": min(fields["risk"], Risk.MEDIUM)})

    return build


def _stamp_frozen(original: Callable[..., Any]) -> Callable[..., Any]:
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        return (0, 0)

    return stamp


def _never_times_out(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        return Answer.APPROVE if answer is Answer.TIMEOUT else answer

    return ask


def _remember_answer(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        _local.answer = answer
        return answer

    return ask


def _broad_answer_grants(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._registry import _BROAD_DISPOSITIONS
    from reference_impl._types import Answer, Disposition, Rule

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.answer = None
        result = original(self, call, records)
        answer = getattr(_local, "answer", None)
        broad = (Answer.ALWAYS_ALLOW, Answer.TRUST_PROVIDER, Answer.TRUST_SESSION)
        if call.refs and result is Disposition.APPROVED_ONCE and answer in broad:
            if answer is Answer.ALWAYS_ALLOW:
                self.rules.save_tool_rule(call.tool.name, Rule.ALLOW)
            elif answer is Answer.TRUST_PROVIDER:
                self.rules.save_provider_rule(call.tool.provider_id, Rule.ALLOW)
            else:
                self.rules.trust_session(call.tool.name)
            return _BROAD_DISPOSITIONS[answer]
        return result

    return approve


def _unbounded_queue(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def init(self: Any, operator: Any, timeout: float, limit: int) -> None:
        original(self, operator, timeout, 1_000_000)

    return init


def _fence_sees_snapshot(original: Callable[..., bool]) -> Callable[..., bool]:
    """The fence asks the user taken as the prompt opened, who held secret.read."""
    del original

    def read_lost_since(self: Any, losses: int) -> bool:
        del losses
        snapshot = getattr(_local, "user", None)
        return not (snapshot if snapshot is not None else self.user).may("secret.read")

    return read_lost_since


def _approve_with_snapshot(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.user = self.user  # the fence then sees the user as the prompt opened
        try:
            return original(self, call, records)
        finally:
            _local.user = None

    return approve


def _substituted_text(call: Any, records: Any) -> str | None:
    """Return the call's arguments with its values substituted, or ``None`` without references."""
    from reference_impl._arguments import substitute
    from reference_impl._grammar import ParsedArguments, parse_arguments

    parsed = parse_arguments(call.args) if call.refs else None
    if not isinstance(parsed, ParsedArguments):
        return None
    pairs = tuple(
        (reference, record.value(reference.field))
        for reference, record in zip(call.refs, records, strict=True)
    )
    return str(substitute(parsed, pairs).raw)


def _request_shows_substituted(
    only_with_scrubbing_off: bool,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The request's arguments are the substituted text (only with scrubbing off, if asked)."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def approve(self: Any, call: Any, records: Any) -> Any:
            if only_with_scrubbing_off and self.policy.result_scrubbing_enabled:
                return original(self, call, records)
            call.sanitized = _substituted_text(call, records)
            try:
                return original(self, call, records)
            finally:
                call.sanitized = None  # the ledger still gets the agent's own text

        return approve

    return transform


def _risk_note(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The request gains a note on its risk that repeats every descriptor, usernames and all."""

    @functools.wraps(original)
    def to_dict(request: Any) -> dict[str, Any]:
        data = original(request)
        if request.descriptors:
            data["riskNote"] = f"{request.risk.name}: reads " + "; ".join(request.descriptors)
        return data

    return to_dict


def _denial_approves(original: Callable[..., Any]) -> Callable[..., Any]:
    """The gate reads the operator's denial as an approval."""
    from reference_impl._types import Answer

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        return Answer.APPROVE if answer is Answer.DENY else answer

    return ask


def _stamp_without_provider(original: Callable[..., Any]) -> Callable[..., Any]:
    """The revocation stamp counts the tool's changes only, never the provider's."""

    @functools.wraps(original)
    def stamp(self: Any, tool: str, provider: str) -> tuple[int, int]:
        tool_stamp, _ = original(self, tool, provider)
        return (tool_stamp, 0)

    return stamp


def save_keeps_stamp(stamps_attribute: str) -> Callable[[Callable[..., None]], Any]:
    """Saving a rule leaves the revocation stamp (``_tool_stamps`` or ``_provider_stamps``)."""

    def transform(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def save(self: Any, name: str, rule: Any) -> None:
            stamps = getattr(self, stamps_attribute)
            before = stamps.get(name, _UNSET)
            original(self, name, rule)
            with self._lock:
                if before is _UNSET:
                    stamps.pop(name, None)
                else:
                    stamps[name] = before

        return save

    return transform


def _denied_as_before_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """While a prompt is open, the DENY verdict is the one read before it opened."""

    @functools.wraps(original)
    def denied(self: Any, tool: str, provider: str) -> Any:
        verdict = getattr(_local, "deny_verdict", _UNSET)
        return original(self, tool, provider) if verdict is _UNSET else verdict

    return denied


def _fence_reuses_verdict(original: Callable[..., Any]) -> Callable[..., Any]:
    """The fence re-uses the pre-pass's DENY verdict instead of reading the rules again."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        _local.deny_verdict = self.rules.denied(call.tool.name, call.tool.provider_id)
        try:
            return original(self, call, records)
        finally:
            _local.deny_verdict = _UNSET

    return approve


def _persist_failure_ignored(original: Callable[..., None]) -> Callable[..., None]:
    """A rule the policy store cannot save is reported saved, and the call runs."""
    from reference_impl._policy import PolicyPersistError

    @functools.wraps(original)
    def save(self: Any, name: str, rule: Any) -> None:
        with contextlib.suppress(PolicyPersistError):
            original(self, name, rule)

    return save


def _slots_never_freed(original: Callable[..., Any]) -> Callable[..., Any]:
    """An answered prompt keeps its slot in the approval queue."""

    @functools.wraps(original)
    def ask(self: Any, request: Any) -> Any:
        answer = original(self, request)
        if answer is not None:
            with self._lock:
                self._open += 1
        return answer

    return ask


def _stamp_parity(stamps_attribute: str) -> Callable[[Callable[..., None]], Any]:
    """A revocation flips the stamp between two states, so a second one undoes the first."""

    def transform(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def revoke(self: Any, name: str) -> None:
            original(self, name)
            with self._lock:
                stamps = getattr(self, stamps_attribute)
                stamps[name] = stamps[name] % 2

        return revoke

    return transform


def _read_held_now(original: Callable[..., bool]) -> Callable[..., bool]:
    """Ask only whether the signed-in user holds secret.read now, forgetting a loss since the
    prompt opened."""
    del original

    def read_lost_since(self: Any, losses: int) -> bool:
        del losses
        return not self.user.may("secret.read")

    return read_lost_since


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "trust-answers-secret-call",
        "APPR-001",
        "Session trust, YOLO or an ALLOW rule runs a secret-bearing call without a prompt.",
        ((_REG, "Registry._approve", _trust_answers_secret_calls),),
    ),
    Mutant(
        "fence-stamp-ignored",
        "FENCE-001",
        "Revocation stamps never move, so a revocation or reset during the prompt is missed.",
        (("reference_impl._policy", "Rules.stamp", _stamp_frozen),),
        via="driver",
    ),
    Mutant(
        "descriptors-missing",
        "APPR-002",
        "The approval request carries no descriptors.",
        ((_REG, "ApprovalRequest", _request_with(descriptors=())),),
        via="driver",
    ),
    Mutant(
        "risk-not-raised",
        "APPR-003",
        "The approval request keeps the tool's own risk, below HIGH for most tools.",
        ((_REG, "ApprovalRequest", _tool_risk_kept),),
    ),
    Mutant(
        "timeout-approves",
        "APPR-008",
        "An unanswered prompt counts as an approval when it times out.",
        (("reference_impl._approve", "ApprovalGate.ask", _never_times_out),),
    ),
    Mutant(
        "broad-answer-grants",
        "APPR-006",
        "A broad answer to a secret-bearing call is recorded and saved as a broad grant.",
        (
            ("reference_impl._approve", "ApprovalGate.ask", _remember_answer),
            (_REG, "Registry._approve", _broad_answer_grants),
        ),
        via="driver",
    ),
    Mutant(
        "queue-unbounded",
        "APPR-009",
        "The pending-prompt limit is ignored, so no call ends as QUEUE_FULL.",
        (("reference_impl._approve", "ApprovalGate.__init__", _unbounded_queue),),
        via="driver",
    ),
    Mutant(
        "lost-permission-ignored",
        "FENCE-003",
        "The fence checks secret.read against the user as the prompt opened, not as it closed.",
        (
            (_REG, "Registry._read_lost_since", _fence_sees_snapshot),
            (_REG, "Registry._approve", _approve_with_snapshot),
        ),
        via="driver",
    ),
    Mutant(
        "request-args-substituted",
        "APPR-004",
        "The approval request shows the arguments after substitution, not as the agent wrote them.",
        ((_REG, "Registry._approve", _request_shows_substituted(False)),),
        via="driver",
    ),
    Mutant(
        "risk-note-repeats-usernames",
        "APPR-005",
        "The approval request gains a risk note that repeats each descriptor, usernames included.",
        (("reference_impl.harness", "request_to_dict", _risk_note),),
        via="driver",
    ),
    Mutant(
        "denial-approves",
        "APPR-010",
        "The operator's denial is treated as an approval and the tool runs.",
        (("reference_impl._approve", "ApprovalGate.ask", _denial_approves),),
        via="driver",
    ),
    Mutant(
        "stamp-without-provider",
        "APPR-011",
        "The approval's stamp leaves out the provider, so a provider revocation is not seen.",
        (("reference_impl._policy", "Rules.stamp", _stamp_without_provider),),
        via="driver",
    ),
    Mutant(
        "saved-deny-not-rechecked",
        "FENCE-002",
        "Saving a rule does not move the stamp and the fence re-uses the pre-pass's DENY verdict, "
        "so a DENY saved during the prompt is missed.",
        (
            ("reference_impl._policy", "Rules.save_tool_rule", save_keeps_stamp("_tool_stamps")),
            (
                "reference_impl._policy",
                "Rules.save_provider_rule",
                save_keeps_stamp("_provider_stamps"),
            ),
            ("reference_impl._policy", "Rules.denied", _denied_as_before_prompt),
            (_REG, "Registry._approve", _fence_reuses_verdict),
        ),
        via="driver",
    ),
    Mutant(
        "scrubbing-off-request-substituted",
        "SCRUB-014",
        "With result scrubbing off, the approval request shows the substituted arguments.",
        ((_REG, "Registry._approve", _request_shows_substituted(True)),),
        via="driver",
    ),
    Mutant(
        "persist-failure-ignored",
        "APPR-012",
        "A broad answer the policy store cannot save runs the call as if it were saved.",
        (
            ("reference_impl._policy", "Rules.save_tool_rule", _persist_failure_ignored),
            ("reference_impl._policy", "Rules.save_provider_rule", _persist_failure_ignored),
        ),
        via="driver",
    ),
    Mutant(
        "queue-slots-never-freed",
        "APPR-009",
        "An answered prompt keeps its slot, so calls made one after another end QUEUE_FULL.",
        (("reference_impl._approve", "ApprovalGate.ask", _slots_never_freed),),
        via="driver",
    ),
    Mutant(
        "secret-read-given-back-forgiven",
        "FENCE-003",
        "The fence asks only whether the user holds secret.read at the answer, so a loss while "
        "the prompt is open, given back before the answer, lets the call run.",
        ((_REG, "Registry._read_lost_since", _read_held_now),),
        via="driver",
    ),
    Mutant(
        "second-revocation-restores-stamp",
        "FENCE-001",
        "A revocation flips the stamp, so revoking the same rule twice during a prompt is missed.",
        (
            ("reference_impl._policy", "Rules.revoke_tool", _stamp_parity("_tool_stamps")),
            (
                "reference_impl._policy",
                "Rules.revoke_provider",
                _stamp_parity("_provider_stamps"),
            ),
        ),
    ),
)
