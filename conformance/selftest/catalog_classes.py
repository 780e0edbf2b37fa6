"""Mutants of the fault classes that only many references, long texts, a forced order, a
generated name or a field in an unusual role show.

This module owns the broken reference hosts whose fault hides below a count the older checks
never reach, or behind an order the dice chose: a resolver that looks only at the ends of a
call's references, one that keeps sixteen of them in a fixed array, a scrubber that stops after
a few hundred replacements, a cap that spares a handler's failure text, a refusal or a prompt
that sorts the ids or descriptors it lists, a grammar with one field too many, a YOLO that
waves usernames through, a vault failure of a kind the host does not know reported by its own
message, a rule lookup that folds the case of tool names, and a tool lookup that does the
same. Each entry is a
:class:`~conformance.selftest.base.Mutant`. It changes behaviour only and never prints a value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"

#: The slots of the fixed array the ``sixteen-reference-slots`` mutant keeps values in.
_SLOTS: Final = 16

#: The replacements the ``scrub-stops-after-500`` mutant makes before it gives up on a text.
_REPLACEMENTS: Final = 500

#: The kinds of vault failure the ``unknown-vault-kinds-echoed`` mutant reports by kind.
_KNOWN_KINDS: Final = ("offline", "signed out", "rpc failure")

#: How every failure text of the reference host's executor begins, after the tool's name.
_FAILURE_MARKS: Final = (" failed: ", " timed out after ")


def _ends_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """Only the first and the last reference are looked up; one between them that the vault
    does not hold is delivered empty."""
    from reference_impl._types import Refusal, SecretRecord, SecretValue

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        if len(references) < 3 or not isinstance(found, Refusal) or found.reason != "unknown-id":
            return found
        if isinstance(original(vault, [references[0], references[-1]]), Refusal):
            return found
        pairs: list[Any] = []
        records: list[Any] = []
        for reference in references:
            single = original(vault, [reference])
            if isinstance(single, Refusal):
                empty = SecretValue("")
                pairs.append((reference, empty))
                records.append(SecretRecord(reference.id, "?", empty, empty, empty))
            else:
                pairs.extend(single[0])
                records.extend(single[1])
        return tuple(pairs), tuple(records)

    return resolve


def _fixed_slots(original: Callable[..., Any]) -> Callable[..., Any]:
    """Values are kept in an array of sixteen slots: the seventeenth reference gets the first
    one's value, and so on round the array."""

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        if not isinstance(found, tuple) or len(found[0]) <= _SLOTS:
            return found
        pairs, records = found
        slots = [value for _, value in pairs[:_SLOTS]]
        wrapped = tuple(
            (reference, slots[index % _SLOTS]) for index, (reference, _) in enumerate(pairs)
        )
        return wrapped, records

    return resolve


def _stops_after(original: Callable[..., Any]) -> Callable[..., Any]:
    """The scrubber replaces the leftmost, longest occurrence 500 times, then returns the rest of
    the text as it is."""

    @functools.wraps(original)
    def scrub(self: Any, text: str) -> str:
        needles = self._needles
        # Each form's next occurrence, looked for again only once the cursor passes it, so the
        # mutant stays as linear as the pass it replaces (INV7 is not what it breaks).
        found = [text.find(form) for form, _ in needles]
        pieces: list[str] = []
        cursor = 0
        for _ in range(_REPLACEMENTS):
            for index, (form, _) in enumerate(needles):
                if 0 <= found[index] < cursor:
                    found[index] = text.find(form, cursor)
            live = [index for index, position in enumerate(found) if position >= 0]
            if not live:
                break
            # Leftmost; at one position the lowest index, which is the longest form.
            best = min(live, key=lambda index: (found[index], index))
            form, replacement = needles[best]
            pieces += [text[cursor : found[best]], replacement]
            cursor = found[best] + len(form)
        pieces.append(text[cursor:])
        return "".join(pieces)

    return scrub


def _failures_uncapped(original: Callable[..., Any]) -> Callable[..., Any]:
    """The cap is applied to results only: a handler's failure or timeout text passes whole."""

    @functools.wraps(original)
    def cap(text: str, *args: Any, **kwargs: Any) -> Any:
        head = text[:512]
        if head.startswith("Tool ") and any(mark in head for mark in _FAILURE_MARKS):
            return text
        return original(text, *args, **kwargs)

    return cap


def _ids_sorted(original: Callable[..., Any]) -> Callable[..., Any]:
    """The unknown ids of a refusal are listed sorted, not in order of first use."""

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        found = original(vault, references)
        prefix = "no secret with id "
        if getattr(found, "reason", None) != "unknown-id" or not found.message.startswith(prefix):
            return found
        missing = found.message[len(prefix) :].split(", ")
        return dataclasses.replace(found, message=prefix + ", ".join(sorted(missing)))

    return resolve


def _descriptors_sorted(original: Callable[..., Any]) -> Callable[..., Any]:
    """The approval request lists its descriptors sorted, not in order of first use."""

    @functools.wraps(original)
    def request(*args: Any, **kwargs: Any) -> Any:
        built = original(*args, **kwargs)
        return dataclasses.replace(built, descriptors=tuple(sorted(built.descriptors)))

    return request


def _token_field(original: Callable[..., Any]) -> Callable[..., Any]:
    """The grammar accepts ``.token`` as one more spelling of the password."""
    from reference_impl._types import Field, Reference

    @functools.wraps(original)
    def judge_body(body: str) -> Any:
        id_part, _, field_part = body.partition(".")
        judged = original(id_part)
        if field_part == "token" and isinstance(judged, Reference):
            return Reference(judged.id, Field.PASSWORD)
        return original(body)

    return judge_body


def _yolo_usernames_unasked(original: Callable[..., Any]) -> Callable[..., Any]:
    """Under YOLO a call whose only references are usernames counts as carrying no secret."""
    from reference_impl._types import Disposition

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        usernames = bool(call.refs) and all(ref.field.value == "username" for ref in call.refs)
        if usernames and self.rules._yolo:
            return Disposition.APPROVED_ONCE
        return original(self, call, records)

    return approve


def _unknown_kinds_echoed(original: Callable[..., None]) -> Callable[..., None]:
    """A vault failure of a kind the host knows (``offline``, ``signed out``, ``rpc failure``)
    is reported by its kind; any other by the failure's own message, its exception's text."""

    def init(self: Any, kind: str, message: str | None = None) -> None:
        original(self, kind, message)
        if kind not in _KNOWN_KINDS:
            self.kind = str(self)

    return init


def _rule_case_folded(original: Callable[..., Any]) -> Callable[..., Any]:
    """A tool without a rule of its own takes the rule of a tool whose name differs from its
    name in case only."""

    @functools.wraps(original)
    def lookup(self: Any, tool: str, *args: Any) -> Any:
        if tool not in self._tools:
            folded = [name for name in list(self._tools) if name.casefold() == tool.casefold()]
            tool = folded[0] if folded else tool
        return original(self, tool, *args)

    return lookup


def _tool_case_folded(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call to a name nobody registered runs the tool whose name differs from it in case
    only."""

    @functools.wraps(original)
    def invoke(self: Any, tool_name: str, args_json: str) -> Any:
        if tool_name not in self._tools:
            folded = [name for name in list(self._tools) if name.casefold() == tool_name.casefold()]
            tool_name = folded[0] if folded else tool_name
        return original(self, tool_name, args_json)

    return invoke


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "ends-only-resolved",
        "SUBST-004",
        "Only a call's first and last references are looked up, so an unknown one between them "
        "is delivered empty and the tool runs.",
        ((_REG, "resolve", _ends_only),),
        via="driver",
    ),
    Mutant(
        "sixteen-reference-slots",
        "SUBST-005",
        "Values are kept in a fixed array of sixteen slots, so the seventeenth reference of a "
        "call gets the first one's value.",
        ((_REG, "resolve", _fixed_slots),),
        via="driver",
    ),
    Mutant(
        "scrub-stops-after-500",
        "SCRUB-009",
        "The scrubber stops after 500 replacements and leaves the rest of the text as it is.",
        (("reference_impl._scrub", "Scrubber.scrub", _stops_after),),
        via="driver",
    ),
    Mutant(
        "failure-text-uncapped",
        "CAP-001",
        "The cap is applied to a handler's result but not to its failure or timeout text.",
        ((_REG, "cap", _failures_uncapped),),
        via="driver",
    ),
    Mutant(
        "unknown-ids-sorted",
        "MSG-007",
        "A refusal lists the unknown ids sorted, not in order of first use.",
        ((_REG, "resolve", _ids_sorted),),
        via="driver",
    ),
    Mutant(
        "descriptors-sorted",
        "APPR-002",
        "The approval request lists its descriptors sorted, not in order of first use.",
        ((_REG, "ApprovalRequest", _descriptors_sorted),),
        via="driver",
    ),
    Mutant(
        "token-field-accepted",
        "GRAM-005",
        "A reference may name a fourth field, .token, which is read as the password.",
        (("reference_impl._grammar", "judge_body", _token_field),),
        via="driver",
    ),
    Mutant(
        "yolo-usernames-unasked",
        "APPR-001",
        "Under YOLO a call whose only references are usernames runs without a prompt.",
        ((_REG, "Registry._approve", _yolo_usernames_unasked),),
        via="driver",
    ),
    Mutant(
        "unknown-vault-kinds-echoed",
        "MSG-009",
        "A vault failure of a kind the host knows (offline, signed out, rpc failure) is reported "
        "by its kind; any other by the failure's own message.",
        (("reference_impl._vault", "VaultError.__init__", _unknown_kinds_echoed),),
        via="driver",
    ),
    Mutant(
        "tool-rules-case-folded",
        "POL-004",
        "A tool without a rule of its own takes the rule of a tool whose name differs from its "
        "name in case only.",
        (
            ("reference_impl._policy", "Rules.denied", _rule_case_folded),
            ("reference_impl._policy", "Rules.decide", _rule_case_folded),
        ),
        via="driver",
    ),
    Mutant(
        "tool-lookup-case-folded",
        "ORD-006",
        "A call to a tool name nobody registered runs the registered tool whose name differs "
        "from it in case only, instead of ending UNKNOWN_TOOL.",
        ((_REG, "Registry.invoke", _tool_case_folded),),
        via="driver",
    ),
)
