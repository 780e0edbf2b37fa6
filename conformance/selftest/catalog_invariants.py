"""Mutants that break the design's invariants (INV1 to INV7).

This module owns the broken reference hosts that break a property of the whole governed path
rather than one step's rule: a value left in a result in one of its forms (INV1), an empty field
resolved (INV2), a permission read only after the prompt (INV3), a stamp kept across a reset
(INV4), stale references recorded (INV5), a view of the top level only (INV6), a scrub that takes
quadratic time (INV7). Each entry is a :class:`~conformance.selftest.base.Mutant`. It changes
behaviour only and never prints a value.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"
_local = threading.local()


def _quadratic_scrub(original: type) -> type:
    class Rescanning(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            for start in range(0, len(text), 32):
                text.find("\x00", start)  # rescans the whole tail at every step
            return str(super().scrub(text))

    return Rescanning


def _reset_keeps_stamps(original: Callable[..., None]) -> Callable[..., None]:
    """A reset forgets the saved rules but leaves every revocation stamp in place."""

    @functools.wraps(original)
    def reset(self: Any) -> None:
        generation = self._generation
        original(self)
        with self._lock:
            self._generation = generation

    return reset


def _empty_is_a_value(original: Callable[..., bool]) -> Callable[..., bool]:
    """An empty value counts as present, so a reference to an empty field resolves."""

    def present(self: Any) -> bool:
        return True

    return present


def _permission_at_fence_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """The pre-pass skips the secret.read check, leaving it to the fence after the prompt."""
    from reference_impl._types import SECRET_READ

    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        user = self.user
        if user.may(SECRET_READ):
            return original(self, call)
        self._user = dataclasses.replace(user, permissions=user.permissions | {SECRET_READ})
        try:
            return original(self, call)
        finally:
            self._user = user

    return prepass


def _stale_refs(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call without markers is recorded with the references of the registry's last call."""

    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if call.refs:
            self._last_refs = call.refs
        elif not call.marked:
            call.refs = getattr(self, "_last_refs", ())
        return original(self, call, *args)

    return record


def _view_top_level_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """The per-key view substitutes top-level strings only; nested members keep references."""

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        try:
            view = json.loads(parsed.raw)
        except ValueError:
            return arguments
        if not isinstance(view, dict):
            return arguments
        substituted = json.loads(arguments.raw)
        arguments._view = {
            key: substituted[key] if isinstance(item, str) else item for key, item in view.items()
        }
        return arguments

    return substitute


def _with_sha256(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """The value's SHA-256 in hex is scrubbed as if it were a form of the value."""
    import hashlib

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        found = original(value)
        if not found:
            return found
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return (*found, digest)

    return forms


def _first_occurrence_only(original: type) -> type:
    """Each form is replaced at its first occurrence only."""

    class FirstOnly(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            for form, replacement in self._needles:
                text = text.replace(form, replacement, 1)
            return text

    return FirstOnly


def _one_field_per_secret(original: type) -> type:
    """The scrubber keeps one field per secret, so a second field of a secret is not scrubbed."""

    class FirstFieldOnly(original):  # type: ignore[misc]
        def __init__(self, resolved: Any) -> None:
            seen: dict[str, Any] = {}
            for reference, value in resolved:
                seen.setdefault(reference.id, (reference, value))
            super().__init__(tuple(seen.values()))

    return FirstFieldOnly


def _remember_failure_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """Remember a failed handler's text as it came back, before scrubbing."""

    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.failure_text = result.text if result.is_error else None
        return result

    return run


def _snippet_from_failure_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger's error snippet is cut from the failure text before it was scrubbed."""
    from reference_impl._limits import ERROR_SNIPPET_CHARS

    @functools.wraps(original)
    def record(self: Any, call: Any, disposition: Any, is_error: bool, snippet: Any) -> Any:
        text = getattr(_local, "failure_text", None)
        _local.failure_text = None
        if is_error and text is not None:
            snippet = text[:ERROR_SNIPPET_CHARS]
        return original(self, call, disposition, is_error, snippet)

    return record


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "quadratic-scrub",
        "INV7",
        "Scrubbing rescans the rest of the result at every step, so it takes quadratic time.",
        ((_REG, "Scrubber", _quadratic_scrub),),
    ),
    Mutant(
        "one-field-per-secret-scrubbed",
        "INV1",
        "The scrubber keeps one field per secret, so a second field of one secret leaks.",
        ((_REG, "Scrubber", _one_field_per_secret),),
    ),
    Mutant(
        "first-occurrence-scrubbed",
        "INV1-ECHO",
        "Each form is scrubbed at its first occurrence only, so an echo's repeats leak.",
        ((_REG, "Scrubber", _first_occurrence_only),),
    ),
    Mutant(
        "sha256-scrubbed-away",
        "INV1-SHA256",
        "The value's SHA-256 is scrubbed like a form, so the hash never reaches the agent.",
        (("reference_impl._scrub", "forms", _with_sha256),),
        via="driver",
    ),
    Mutant(
        "failure-snippet-unscrubbed",
        "INV1-THROW",
        "The ledger's error snippet is cut from a failed handler's text before scrubbing.",
        (
            ("reference_impl._execute", "Executor.run", _remember_failure_text),
            (_REG, "Registry._record", _snippet_from_failure_text),
        ),
    ),
    Mutant(
        "empty-field-resolves",
        "INV2",
        "A reference to an empty field resolves to the empty string and the call runs.",
        (("reference_impl._types", "SecretValue.__bool__", _empty_is_a_value),),
        via="driver",
    ),
    Mutant(
        "permission-checked-after-prompt",
        "INV3",
        "Without secret.read the call is resolved and prompted, and only the fence refuses it.",
        ((_REG, "Registry._prepass", _permission_at_fence_only),),
        via="driver",
    ),
    Mutant(
        "reset-keeps-stamps",
        "INV4",
        "A reset during the prompt leaves the stamps in place, so the approval still holds.",
        (("reference_impl._policy", "Rules.reset", _reset_keeps_stamps),),
        via="driver",
    ),
    Mutant(
        "stale-secret-refs",
        "INV5",
        "A reference-free call is recorded with the secretRefs of the call before it.",
        ((_REG, "Registry._record", _stale_refs),),
        via="driver",
    ),
    Mutant(
        "view-top-level-only",
        "INV6",
        "The per-key view substitutes top-level strings only, so nested members keep references.",
        ((_REG, "substitute", _view_top_level_only),),
        via="driver",
    ),
)
