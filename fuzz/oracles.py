"""Naive oracles written from the design's words, never from the reference host's code.

This module owns the slow, obviously-correct versions the properties compare a host with: the
scrubbed forms of a value (decisions R5.2), a leftmost-longest scrubber that tries every form at
every position (R5.3), and a character-by-character scan of one decoded string (R1.1, R1.2,
R1.4). Each is quadratic or worse on purpose: clarity is the point. It must never import the
reference host's private modules, and it must never print a value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from conformance.canary import json_escape, required_forms, url_form
from reference_impl import Field, Reference

#: Values shorter than this are never scrubbed (decisions R5.1).
MIN_SCRUBBED: Final = 8

# Forms b and c come from the conformance suite's own oracles, written from the rulings
# without the reference host: one independent definition serves the suite and the fuzzers.
own_json_escape = json_escape
own_form_encode = url_form


def own_forms(value: str) -> tuple[str, ...]:
    """Return forms a to d of a value, without repeats, or none under 8 code points."""
    if len(value) < MIN_SCRUBBED:
        return ()
    return tuple(required_forms(value).values())


def own_placeholder(reference: Reference) -> str:
    """Return ``[secret:<lower-case id>.<field>]`` (decisions R5.3)."""
    return f"[secret:{reference.id.lower()}.{reference.field.value}]"


def naive_scrub(resolved: Sequence[tuple[Reference, str]], text: str) -> str:
    """Scrub ``text`` leftmost-longest, trying every form at every position.

    When two references share a form, the first in order of use names it (the reference host's
    choice under R5.3). Placeholders written are never rescanned.
    """
    needles: dict[str, str] = {}
    for reference, value in resolved:
        for form in own_forms(value):
            needles.setdefault(form, own_placeholder(reference))
    out: list[str] = []
    index = 0
    while index < len(text):
        best = ""
        for form in needles:
            if len(form) > len(best) and text.startswith(form, index):
                best = form
        if best:
            out.append(needles[best])
            index += len(best)
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def surviving_forms(
    resolved: Sequence[tuple[Reference, str]], scrubbed: str
) -> list[tuple[str, int]]:
    """Return (reference name, value length) for each value with a form left in ``scrubbed``.

    Text is split at every placeholder first: a form that exists only by touching a placeholder
    the scrubber wrote was not in the result (R5.3 puts values inside placeholders outside the
    contract), so only the text between placeholders is searched.
    """
    holders = sorted({own_placeholder(ref) for ref, _ in resolved}, key=len, reverse=True)
    pieces = re.split("|".join(map(re.escape, holders)), scrubbed) if holders else [scrubbed]
    left = []
    for reference, value in resolved:
        if any(form in piece for form in own_forms(value) for piece in pieces):
            left.append((reference.name, len(value)))
    return left


# --- the grammar, one decoded string at a time ----------------------------------------------

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_GROUPS: Final = (8, 4, 4, 4, 12)


def _is_uuid(text: str) -> bool:
    parts = text.split("-")
    return len(parts) == 5 and all(
        len(part) == size and all(char in _HEX for char in part)
        for part, size in zip(parts, _GROUPS, strict=True)
    )


def own_judge(body: str) -> Reference | str:
    """Judge a body by decisions R1.2; return the reference or ``"id"``/``"field"``."""
    head, dot, tail = body.partition(".")
    if not _is_uuid(head):
        return "id"
    if not dot:
        return Reference(head.lower(), Field.PASSWORD)
    if tail in ("password", "username", "notes"):
        return Reference(head.lower(), Field(tail))
    return "field"


def _marker_at(text: str, index: int) -> bool:
    return (
        text.startswith("{{", index)
        and text[index + 2 : index + 9].lower() == "secret:"
        and (text[index + 2 : index + 9].isascii())
    )


def own_scan(text: str) -> tuple[list[tuple[Reference, int, int]], tuple[int, int, str] | None]:
    """Scan one decoded string by hand: the references before the first problem, and it.

    Returns:
        (reference, start, end) triples, and (offset, length, kind) of the first malformed
        candidate, where kind is ``"id"``, ``"field"`` or ``"unterminated"``; or ``None``.
    """
    found: list[tuple[Reference, int, int]] = []
    index = text.find("{{")
    while 0 <= index < len(text):
        if not _marker_at(text, index):
            index = text.find("{{", index + 1)
            continue
        end = index + 9
        while end < len(text) and text[end] not in "{}":
            end += 1
        if not text.startswith("}}", end):
            length = end - index + (1 if text.startswith("}", end) else 0)
            return found, (index, length, "unterminated")
        judged = own_judge(text[index + 9 : end])
        if isinstance(judged, str):
            return found, (index, end + 2 - index, judged)
        found.append((judged, index, end + 2))
        index = text.find("{{", end + 2)
    return found, None
