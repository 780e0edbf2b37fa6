"""Mutants that break substitution and the vault (decisions R4 and R7).

This module owns the broken reference hosts that substitute a value where it does not belong
(part of an argument, the wrong field, a view that disagrees) or read the vault when they must
not (before a deny, twice, for a call without a reference). Each entry is a
:class:`~conformance.selftest.base.Mutant`. It changes behaviour only and never prints a value.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"


def _read_vault_first(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if call.refs and self.vault is not None:
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, call)

    return prepass


def _partial_resolution(original: Callable[..., Any]) -> Callable[..., Any]:
    from reference_impl._types import Refusal, SecretRecord, SecretValue

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        if not isinstance(found, Refusal) or found.reason != "unknown-id":
            return found
        pairs, records = [], []
        for reference in references:
            single = original(vault, [reference])
            if isinstance(single, Refusal):
                pairs.append((reference, SecretValue("")))
                records.append(
                    SecretRecord(
                        reference.id, "?", SecretValue(""), SecretValue(""), SecretValue("")
                    )
                )
            else:
                pairs.extend(single[0])
                records.extend(single[1])
        return tuple(pairs), tuple(records)

    return resolve


def _walk_twice(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        original(vault, set(wanted))
        return original(vault, wanted)

    return walk


def _view_from_agents_text(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        try:
            stale = json.loads(parsed.raw)
        except ValueError:
            return arguments
        if isinstance(stale, dict):
            arguments._view = stale  # the per-key view keeps the references
        return arguments

    return substitute


def _reencoded(original: Callable[[str], Any]) -> Callable[[str], Any]:
    def build(raw: str) -> Any:
        try:
            return original(json.dumps(json.loads(raw)))
        except ValueError:
            return original(raw)

    return build


def _read_vault_always(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepass(self: Any, call: Any) -> Any:
        if not call.refs and self.vault is not None:
            with contextlib.suppress(Exception):
                self.vault.read_page(0, 200)
        return original(self, call)

    return prepass


def _values_by_id(original: Callable[..., Any]) -> Callable[..., Any]:
    """Values are looked up by secret id only, so one field's value stands for every field."""

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        by_id = {reference.id: value for reference, value in resolved}
        return original(
            parsed, tuple((reference, by_id[reference.id]) for reference, _ in resolved)
        )

    return substitute


def _string_accessor_stringifies(original: Callable[..., Any]) -> Callable[..., Any]:
    """``args.string(key)`` returns the text of any member, numbers and objects included."""

    @functools.wraps(original)
    def string(self: Any, key: str) -> str | None:
        value = self.get(key)
        return None if value is None else str(value)

    return string


def _files_unbounded(original: int) -> int:
    """The host reads a file of any size."""
    return 1 << 62


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "vault-read-before-deny",
        "VAULT-001",
        "The vault's first page is read before the pre-pass refusals are decided.",
        ((_REG, "Registry._prepass", _read_vault_first),),
    ),
    Mutant(
        "partial-substitution",
        "SUBST-004",
        "With an unknown id the known references are substituted and the tool runs.",
        ((_REG, "resolve", _partial_resolution),),
    ),
    Mutant(
        "vault-read-twice",
        "VAULT-002",
        "Each call walks the vault twice.",
        (("reference_impl._resolve", "_walk", _walk_twice),),
    ),
    Mutant(
        "views-disagree",
        "SUBST-001",
        "The handler's per-key view is parsed from the agent's text, so it keeps the references "
        "while the raw JSON holds the values.",
        ((_REG, "substitute", _view_from_agents_text),),
        via="driver",
    ),
    Mutant(
        "reference-free-reencoded",
        "SUBST-003",
        "A call without references reaches its handler re-encoded instead of byte for byte.",
        ((_REG, "ToolArguments", _reencoded),),
        via="driver",
    ),
    Mutant(
        "reference-free-reads-vault",
        "VAULT-003",
        "A call without references reads the vault's first page.",
        ((_REG, "Registry._prepass", _read_vault_always),),
        via="driver",
    ),
    Mutant(
        "wrong-field-substituted",
        "SUBST-005",
        "Values are substituted by secret id, so every field of a secret gets the same value.",
        ((_REG, "substitute", _values_by_id),),
        via="driver",
    ),
    Mutant(
        "vault-file-unbounded",
        "VAULT-005",
        "The vault file is read whatever its size.",
        (("reference_impl._files", "INPUT_FILE_MAX_BYTES", _files_unbounded),),
        driver=False,
    ),
    Mutant(
        "string-accessor-stringifies",
        "SUBST-001",
        "args.string(key) returns the text of any member, so the handler's view of a number or "
        "an object is a string.",
        (("reference_impl._arguments", "ToolArguments.string", _string_accessor_stringifies),),
        via="driver",
    ),
)
