"""Mutants that break the refusal messages (decision R2).

This module owns the broken reference hosts whose refusal says the wrong thing: a wrong prefix,
a reason given as another, a vault error copied into the text, a candidate echoed back. Each
entry is a :class:`~conformance.selftest.base.Mutant`. It changes behaviour only and never
prints a value.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"
_local = threading.local()
_GRAMMAR = "reference_impl._grammar"
_RESOLVE = "reference_impl._resolve"


def _constant(value: Any) -> Callable[[Any], Any]:
    """The attribute becomes ``value``."""
    return lambda _original: value


def _echo_candidate(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def refuse(self: Any, call: Any, refusal: Any) -> Any:
        if refusal.reason == "malformed":
            refusal = dataclasses.replace(
                refusal, message=f"{refusal.message} in {call.args[:300]}"
            )
        return original(self, call, refusal)

    return refuse


def _switch_ignored(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        policy = self.policy
        if policy.secret_references_enabled:
            return original(self, call)
        self.policy = dataclasses.replace(policy, secret_references_enabled=True)
        try:
            return original(self, call)
        finally:
            self.policy = policy

    return prepass


def _prefix_for(*, keys: bool, prefix: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Malformed-reference refusals in keys (or, with ``keys`` false, in values) begin with
    ``prefix`` instead of the ruling's words."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._grammar import MALFORMED_PREFIX

        @functools.wraps(original)
        def refuse(path: Any, bad: Any, requirement: str) -> Any:
            refusal = original(path, bad, requirement)
            if (requirement == "GRAM-014") is keys:
                message = refusal.message.replace(MALFORMED_PREFIX, prefix, 1)
                refusal = dataclasses.replace(refusal, message=message)
            return refusal

        return refuse

    return transform


def _prepass_disposition(reason: str, disposition: str) -> Callable[..., Any]:
    """A pre-pass refusal with ``reason`` ends with another disposition."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Disposition

        @functools.wraps(original)
        def prepass(self: Any, call: Any) -> Any:
            refusal = original(self, call)
            if refusal is not None and refusal.reason == reason:
                refusal = dataclasses.replace(refusal, disposition=Disposition[disposition])
            return refusal

        return prepass

    return transform


def _resolution_message(reason: str, rewrite: Callable[[str], str]) -> Callable[..., Any]:
    """A resolution refusal with ``reason`` gets its message rewritten."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Refusal

        @functools.wraps(original)
        def resolve(vault: Any, references: Any) -> Any:
            found = original(vault, references)
            if isinstance(found, Refusal) and found.reason == reason:
                found = dataclasses.replace(found, message=rewrite(found.message))
            return found

        return resolve

    return transform


def _semicolon_list(message: str) -> str:
    prefix = "no secret with id "
    return prefix + "; ".join(message[len(prefix) :].split(", "))


def _remember_vault_error(original: Callable[..., Any]) -> Callable[..., Any]:
    """The vault walk keeps the exception that stopped it."""

    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        _local.vault_error = None
        try:
            return original(vault, wanted)
        except Exception as error:
            _local.vault_error = error
            raise

    return walk


def _failure_echoed(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """The vault-failure refusal quotes the exception itself rather than its kind."""

    @functools.wraps(original)
    def failure(kind: str) -> Any:
        error = getattr(_local, "vault_error", None)
        return original(repr(error) if error is not None else kind)

    return failure


def _failure_message_as_kind(original: Callable[..., None]) -> Callable[..., None]:
    """A vault failure's own message stands in for its kind, so the refusal repeats it."""

    def init(self: Any, kind: str, message: str | None = None) -> None:
        original(self, kind, message)
        if message is not None:
            self.kind = message

    return init


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "refusal-echoes-candidate",
        "MSG-012",
        "The malformed-reference refusal quotes the agent's argument text.",
        ((_REG, "Registry._refuse", _echo_candidate),),
    ),
    Mutant(
        "ai-provider-resolves",
        "MSG-011",
        "A secret tagged ai-provider resolves like any other.",
        (("reference_impl._resolve", "AI_PROVIDER_TAG", _constant("no-such-tag")),),
    ),
    Mutant(
        "feature-switch-ignored",
        "MSG-003",
        "secretReferencesEnabled false is ignored and references resolve.",
        ((_REG, "Registry._prepass", _switch_ignored),),
        via="driver",
    ),
    Mutant(
        "malformed-prefix-wrong",
        "MSG-001",
        "A malformed candidate's refusal begins 'Invalid secret reference'.",
        (
            (
                _GRAMMAR,
                "_refuse_malformed",
                _prefix_for(keys=False, prefix="Invalid secret reference"),
            ),
        ),
    ),
    Mutant(
        "key-prefix-wrong",
        "MSG-002",
        "A reference in a key is refused with a message beginning 'Misplaced secret reference'.",
        (
            (
                _GRAMMAR,
                "_refuse_malformed",
                _prefix_for(keys=True, prefix="Misplaced secret reference"),
            ),
        ),
    ),
    Mutant(
        "permission-message-wrong",
        "MSG-004",
        "A user without secret.read is refused with a message of the host's own wording.",
        ((_REG, "NO_PERMISSION_MESSAGE", _constant("You may not use secret references")),),
        via="driver",
    ),
    Mutant(
        "deny-as-forbidden",
        "MSG-005",
        "A tool or provider DENY of a secret-bearing call ends as SECRET_FORBIDDEN, not "
        "POLICY_DENIED.",
        ((_REG, "Registry._prepass", _prepass_disposition("policy-deny", "SECRET_FORBIDDEN")),),
        via="driver",
    ),
    Mutant(
        "bearing-deny-as-policy",
        "MSG-006",
        "secretBearingCalls DENY ends the call as POLICY_DENIED, not SECRET_FORBIDDEN.",
        ((_REG, "Registry._prepass", _prepass_disposition("bearing-denied", "POLICY_DENIED")),),
        via="driver",
    ),
    Mutant(
        "unknown-ids-semicolons",
        "MSG-007",
        "Unknown ids are listed joined by '; ' instead of ', '.",
        ((_REG, "resolve", _resolution_message("unknown-id", _semicolon_list)),),
        via="driver",
    ),
    Mutant(
        "empty-field-message",
        "MSG-008",
        "An empty field is refused as 'secret <id> has an empty <field>'.",
        (
            (
                _REG,
                "resolve",
                _resolution_message(
                    "empty-field", lambda message: message.replace(" has no ", " has an empty ", 1)
                ),
            ),
        ),
    ),
    Mutant(
        "vault-error-echoed",
        "MSG-009",
        "A vault failure's refusal quotes the exception itself instead of its kind.",
        (
            (_RESOLVE, "_walk", _remember_vault_error),
            (_RESOLVE, "_vault_failure", _failure_echoed),
        ),
        via="driver",
    ),
    Mutant(
        "no-vault-message",
        "MSG-010",
        "A host without a vault refuses with a message of its own wording.",
        ((_RESOLVE, "NO_VAULT_MESSAGE", _constant("This host has no secret vault")),),
    ),
    Mutant(
        "vault-failure-message-copied",
        "MSG-009",
        "The vault refusal repeats the failure's own message instead of its kind.",
        (("reference_impl._vault", "VaultError.__init__", _failure_message_as_kind),),
        via="driver",
    ),
)
