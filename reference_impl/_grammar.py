"""Step [2], the grammar: JSON argument text to references, or one refusal.

This module owns the reference grammar and the walk over the argument tree. It reads the raw
text once, left to right, with no recursion, so depth is bounded by memory only; strings are
decoded by the standard library's C scanner. Every pattern is anchored and its character classes
exclude braces, so no input can make it backtrack (design, invariant 7).

It must never put candidate text into a refusal: a refusal names a JSON Pointer, an offset, a
length and one of four static reasons (decisions R2.1, R2.2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Final

from reference_impl._scan import MARKER_RE
from reference_impl._types import Disposition, Field, Reference, Refusal

# The standard library's C string scanner: (text, index after the opening quote, strict) to
# (decoded, index after the closing quote). Strict mode refuses raw control characters.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

# candidate = "{{" ("secret" in any ASCII case) ":" body "}}" ; body has no "{" and no "}"
# (decisions R1.1). The possessive body cannot backtrack.
_CANDIDATE_RE: Final = re.compile(r"\{\{secret:([^{}]*+)\}\}", re.IGNORECASE | re.ASCII)

# An unterminated marker reaches to the brace that stops it; a lone "}" is part of it, so that
# "{{secret:ID}" is reported whole (decisions R1.4).
_UNTERMINATED_RE: Final = re.compile(r"\{\{secret:[^{}]*+\}?", re.IGNORECASE | re.ASCII)

# uuid = 8-4-4-4-12 hexadecimal digits, any case (decisions R1.2).
_UUID_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

# JSON insignificant white space and number (RFC 8259, sections 2 and 6).
_WS_RE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?")

#: The static reasons of decisions R2.2, exactly.
REASON_BAD_ID: Final = "the id is not a secret id (expected a UUID)"
REASON_BAD_FIELD: Final = "unknown field (expected one of password, username, notes)"
REASON_UNTERMINATED: Final = "the reference is not terminated with }}"
REASON_KEY: Final = "a secret reference cannot be a JSON key"

#: Message prefixes of decisions R2 and R1.8.
MALFORMED_PREFIX: Final = "Malformed secret reference"
NOT_OBJECT_MESSAGE: Final = "Arguments carry a secret reference but are not a JSON object"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A valid reference inside one decoded string, at code-point offsets ``start:end``."""

    reference: Reference
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Malformed:
    """The first malformed candidate of a string: where it is and why, never what it says."""

    offset: int
    length: int
    reason: str


@dataclass(frozen=True, slots=True)
class StringSite:
    """A JSON string value that carries references.

    Attributes:
        start: Index of the opening quote in the raw text.
        end: Index just past the closing quote.
        text: The decoded string.
        occurrences: Its references, left to right.
    """

    start: int
    end: int
    text: str
    occurrences: tuple[Occurrence, ...]


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """Argument text that is a JSON object, with every reference it carries.

    Attributes:
        raw: The text as the agent sent it.
        sites: The string values that carry references, in document order.
        references: Each distinct reference once, in order of first use.
    """

    raw: str
    sites: tuple[StringSite, ...]
    references: tuple[Reference, ...]


class _JSONSyntaxError(ValueError):
    """The text is not RFC 8259 JSON."""


def judge_body(body: str) -> Reference | str:
    """Judge a candidate's body.

    The body splits at its first ``.``; the id is judged before the field (decisions R1.2).

    Args:
        body: The text between ``{{secret:`` and ``}}``.

    Returns:
        The reference, or the static reason it is malformed.
    """
    id_part, dot, field_part = body.partition(".")
    if _UUID_RE.fullmatch(id_part) is None:
        return REASON_BAD_ID
    if not dot:
        return Reference(id_part.lower(), Field.PASSWORD)
    try:
        return Reference(id_part.lower(), Field(field_part))
    except ValueError:
        return REASON_BAD_FIELD


def scan_string(text: str) -> tuple[list[Occurrence], Malformed | None]:
    """Find the references in one decoded string, up to its first malformed candidate.

    Markers are taken left to right; a candidate consumed is never looked at again, so taking it
    out cannot create a marker (decisions R1.1, R1.4).

    Args:
        text: A decoded JSON string value.

    Returns:
        The valid references before the first malformed candidate, and that candidate or
        ``None``.
    """
    found: list[Occurrence] = []
    pos = 0
    while (marker := MARKER_RE.search(text, pos)) is not None:
        start = marker.start()
        candidate = _CANDIDATE_RE.match(text, start)
        if candidate is None:
            span = _UNTERMINATED_RE.match(text, start)
            assert span is not None  # the marker itself matches
            return found, Malformed(start, span.end() - start, REASON_UNTERMINATED)
        judged = judge_body(candidate.group(1))
        if isinstance(judged, str):
            return found, Malformed(start, candidate.end() - start, judged)
        found.append(Occurrence(judged, start, candidate.end()))
        pos = candidate.end()
    return found, None


def _first_candidate_span(text: str) -> tuple[int, int]:
    """Return the offset and length of the first candidate or marker in a key."""
    marker = MARKER_RE.search(text)
    assert marker is not None  # callers check first
    start = marker.start()
    span = _CANDIDATE_RE.match(text, start) or _UNTERMINATED_RE.match(text, start)
    assert span is not None
    return start, span.end() - start


# A surrogate code point left alone in a decoded string (a lone "\ud800" escape): valid JSON
# text, but no UTF-8 encoder accepts it raw, so it is written back as its escape.
_LONE_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")


def encode_string(text: str) -> str:
    """Return ``text`` as a JSON string token: non-ASCII kept, lone surrogates escaped.

    Args:
        text: A decoded string, possibly holding lone surrogates.

    Returns:
        The quoted JSON string, which any UTF-8 encoder accepts.
    """
    token = json.dumps(text, ensure_ascii=False)
    return _LONE_SURROGATE_RE.sub(lambda match: f"\\u{ord(match.group()):04x}", token)


def escape_pointer_token(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901, section 3)."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(path: tuple[str | int, ...]) -> str:
    """Return the RFC 6901 JSON Pointer of ``path``."""
    return "".join("/" + escape_pointer_token(str(step)) for step in path)


def malformed_message(path: tuple[str | int, ...], offset: int, length: int, reason: str) -> str:
    """Return the located malformed-reference message of decisions R2.2."""
    return f"{MALFORMED_PREFIX} at {pointer(path)} offset {offset} length {length}: {reason}"


def _refuse_malformed(path: tuple[str | int, ...], bad: Malformed, requirement: str) -> Refusal:
    return Refusal(
        Disposition.SECRET_UNRESOLVED,
        malformed_message(path, bad.offset, bad.length, bad.reason),
        "malformed",
        requirement,
    )


def not_object_refusal() -> Refusal:
    """Return the refusal for marker-bearing arguments that are not a JSON object (R1.8)."""
    return Refusal(Disposition.SECRET_UNRESOLVED, NOT_OBJECT_MESSAGE, "not-an-object", "GRAM-016")


#: What the walk yields for each string: (is_key, start, end, decoded); a key's walk returns the
#: position of its member's value.
_Strings = Generator[tuple[bool, int, int, str], None, int]


class _Container:
    """One open object or array during the walk, and the step to its current child."""

    __slots__ = ("index", "is_object", "key")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.key = ""
        self.index = 0

    def step(self) -> str | int:
        return self.key if self.is_object else self.index


class _Walker:
    """Walks RFC 8259 text once and yields every string in document order.

    The path of the string just yielded is built only on request, so the walk stays linear in
    the text however deep it nests.
    """

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.stack: list[_Container] = []

    def path(self, is_key: bool) -> tuple[str | int, ...]:
        """Return the path of the last string yielded; for a key, the object that holds it."""
        holders = self.stack[:-1] if is_key else self.stack
        return tuple(container.step() for container in holders)

    def strings(self) -> _Strings:
        """Yield (is_key, start, end, decoded) for every string; raise ``_JSONSyntaxError``."""
        raw = self.raw
        n = len(raw)
        stack = self.stack
        ws = _WS_RE.match
        pos = ws(raw, 0).end()  # type: ignore[union-attr]  # "*" always matches
        while True:
            # Expect a value at pos.
            char = raw[pos] if pos < n else ""
            if char == '"':
                text, end = _decode(raw, pos)
                yield False, pos, end, text
                pos = end
            elif char in ("{", "["):
                container = _Container(char == "{")
                pos = ws(raw, pos + 1).end()  # type: ignore[union-attr]
                if pos < n and raw[pos] == ("}" if container.is_object else "]"):
                    pos += 1
                else:
                    stack.append(container)
                    if container.is_object:
                        pos = yield from self._key(pos, container)
                    continue
            elif raw.startswith("true", pos) or raw.startswith("null", pos):
                pos += 4
            elif raw.startswith("false", pos):
                pos += 5
            else:
                number = _NUMBER_RE.match(raw, pos)
                if number is None:
                    raise _JSONSyntaxError(pos)
                pos = number.end()
            # After a value: close containers, or move on to the next member or item.
            while True:
                pos = ws(raw, pos).end()  # type: ignore[union-attr]
                if not stack:
                    if pos != n:
                        raise _JSONSyntaxError(pos)
                    return pos
                top = stack[-1]
                char = raw[pos] if pos < n else ""
                if char == ",":
                    pos = ws(raw, pos + 1).end()  # type: ignore[union-attr]
                    if top.is_object:
                        pos = yield from self._key(pos, top)
                    else:
                        top.index += 1
                    break
                if char == ("}" if top.is_object else "]"):
                    stack.pop()
                    pos += 1
                    continue
                raise _JSONSyntaxError(pos)

    def _key(self, pos: int, container: _Container) -> _Strings:
        """Read ``"key" :`` at pos, yield the key, and return where the member's value starts."""
        raw = self.raw
        if not raw.startswith('"', pos):
            raise _JSONSyntaxError(pos)
        key, end = _decode(raw, pos)
        yield True, pos, end, key
        container.key = key
        pos = _WS_RE.match(raw, end).end()  # type: ignore[union-attr]
        if not raw.startswith(":", pos):
            raise _JSONSyntaxError(pos)
        return _WS_RE.match(raw, pos + 1).end()  # type: ignore[union-attr]


def _decode(raw: str, quote: int) -> tuple[str, int]:
    """Decode the JSON string whose opening quote is at ``quote``; strict RFC 8259."""
    try:
        return _scanstring(raw, quote + 1, True)
    except json.JSONDecodeError as error:
        raise _JSONSyntaxError(quote) from error


def parse_arguments(raw: str) -> ParsedArguments | Refusal:
    """Parse argument text that the pre-scan flagged, and collect its references.

    Args:
        raw: The arguments exactly as the agent sent them.

    Returns:
        The parsed arguments (possibly with no reference at all, when the scan's "maybe" was a
        false alarm), or the refusal for the first problem in document order (decisions R1.7).
    """
    sites: list[StringSite] = []
    first_problem: Refusal | None = None
    is_object = raw.lstrip(" \t\n\r").startswith("{")
    walker = _Walker(raw)
    try:
        for is_key, start, end, text in walker.strings():
            if first_problem is not None or "{{" not in text or not MARKER_RE.search(text):
                continue
            if is_key:
                offset, length = _first_candidate_span(text)
                first_problem = _refuse_malformed(
                    walker.path(True), Malformed(offset, length, REASON_KEY), "GRAM-014"
                )
                continue
            found, bad = scan_string(text)
            if bad is not None:
                requirement = "GRAM-009" if bad.reason == REASON_UNTERMINATED else "GRAM-008"
                first_problem = _refuse_malformed(walker.path(False), bad, requirement)
            elif not is_object:
                first_problem = not_object_refusal()
            else:
                sites.append(StringSite(start, end, text, tuple(found)))
    except _JSONSyntaxError:
        return not_object_refusal()
    if not is_object and (first_problem is not None or sites):
        # A marker in arguments that are not an object wins over a candidate's own reason.
        return not_object_refusal()
    if first_problem is not None:
        return first_problem
    seen: dict[Reference, None] = {}
    for site in sites:
        for occurrence in site.occurrences:
            seen.setdefault(occurrence.reference, None)
    return ParsedArguments(raw, tuple(sites), tuple(seen))
