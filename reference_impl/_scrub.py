"""Step [12], the result scrubber: defense in depth for a handler that echoes its input.

This module owns the four encoded forms of a value (decisions R5.2) and one scrubbing pass over
a result or failure text: leftmost match first, the longest at a position, each occurrence
replaced by ``[secret:<id>.<field>]``, and no placeholder ever rescanned (R5.3). Each form is
located with ``str.find``, which runs in C and in linear time, so the pass costs one sweep per
form plus one step per occurrence (design, invariant 7). When no two occurrences overlap, which
is every result but a contrived one, the pass is a sort of the occurrences and one join; only
overlapping occurrences go through the step-by-step merge that decides leftmost-longest.

It must never scrub a value shorter than 8 code points (R5.1), keep a value past the call it
was built for, or print a value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final

from reference_impl._limits import SCRUB_MIN_CODE_POINTS
from reference_impl._types import Reference, SecretValue

# URL form encoding (R5.2c): A-Z a-z 0-9 . - * _ stay, space becomes +, every other UTF-8 byte
# becomes %HH in upper case. One table entry per byte value.
_FORM_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-*_")
_FORM_TABLE: Final = tuple(
    "+" if byte == 0x20 else chr(byte) if byte in _FORM_SAFE else f"%{byte:02X}"
    for byte in range(256)
)


#: A code point a Python string can hold only as a lone surrogate (a vault can store one through
#: a JSON escape).
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def json_escape(value: str) -> str:
    """Return form b: the value's JSON string escape without the quotes (decisions R5.2b).

    ``json.dumps`` escapes exactly the quote, the backslash and the characters below U+0020
    (``\\b \\f \\n \\r \\t`` short, the rest as lower-case ``\\u00xx``), and with
    ``ensure_ascii=False`` leaves ``/`` and non-ASCII characters as they are. It leaves a lone
    surrogate as it is too; R5.2b spells it ``\\udxxx`` in lower-case hex, as a JSON writer must.
    """
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    if _LONE_SURROGATE.search(escaped) is None:
        return escaped
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", escaped)


def form_encode(value: str) -> str:
    """Return form c: the URL form encoding of the value's UTF-8 bytes (decisions R5.2c)."""
    # Lone surrogates cannot be UTF-8; "surrogatepass" encodes them as their three bytes, so
    # the form exists for every string rather than raising.
    return "".join(_FORM_TABLE[byte] for byte in value.encode("utf-8", "surrogatepass"))


def forms(value: str) -> tuple[str, ...]:
    """Return the scrubbed forms of ``value``, each only if it differs from those before it.

    Args:
        value: A resolved value.

    Returns:
        Forms a to d of decisions R5.2, or nothing when the value is shorter than 8 code points.
    """
    if len(value) < SCRUB_MIN_CODE_POINTS:
        return ()
    form_c = form_encode(value)
    found: dict[str, None] = {}
    for form in (value, json_escape(value), form_c, form_c.replace("+", "%20")):
        found.setdefault(form, None)
    return tuple(found)


#: Characters the overlap merge searches first after a replacement. CPython's ``str.find``
#: switches to a search with a set-up cost per call once the text passes a few thousand
#: characters; in the merge, which runs only on overlapping, hence dense, text, the next match is
#: usually near, and looking in a small window first avoids that set-up. The common pass does not
#: use it: on sparse text a window that misses costs a second search per occurrence.
_NEAR_WINDOW: Final = 256


def _find_after(text: str, form: str, start: int) -> int:
    """Return the first occurrence of ``form`` in ``text`` at or after ``start``, or -1."""
    end = start + _NEAR_WINDOW
    at = text.find(form, start, end)
    if at < 0 and end < len(text):
        # An occurrence may straddle the window's end: start again just before it.
        at = text.find(form, max(start, end - len(form) + 1))
    return at


def placeholder(reference: Reference) -> str:
    """Return the text that replaces a scrubbed occurrence of ``reference``'s value."""
    return f"[secret:{reference.name}]"


class Scrubber:
    """Scrubs the values resolved for one call out of that call's texts.

    Build it once per call from the call's (reference, value) pairs, in order of first use;
    when two references share a form, the first one names it (decisions R5.3).
    """

    __slots__ = ("_forms", "_needles", "_replacements", "_shift", "_sizes")

    def __init__(self, resolved: Iterable[tuple[Reference, SecretValue]]) -> None:
        needles: dict[str, str] = {}
        for reference, value in resolved:
            for form in forms(value.reveal()):
                needles.setdefault(form, placeholder(reference))
        # Longest first, so that among matches at one position the first found is the longest.
        ordered = sorted(needles.items(), key=lambda item: -len(item[0]))
        self._needles: tuple[tuple[str, str], ...] = tuple(ordered)
        self._forms = tuple(form for form, _ in ordered)
        self._replacements = tuple(replacement for _, replacement in ordered)
        self._sizes = tuple(len(form) for form in self._forms)
        self._shift = max(1, len(ordered).bit_length())

    def __bool__(self) -> bool:
        return bool(self._needles)

    def scrub(self, text: str) -> str:
        """Replace every occurrence of every form in one left-to-right pass.

        Args:
            text: A result or failure text of the call.

        Returns:
            The text with each occurrence replaced by its placeholder.
        """
        find = text.find
        shift = self._shift
        # Each form's occurrences, found greedily left to right, as one int each: the start
        # shifted left past the form's index, so that sorting orders them by start and, at one
        # start, longest first. One int per occurrence keeps the extra memory small.
        keys: list[int] = []
        add_key = keys.append
        for index, form in enumerate(self._forms):
            at = find(form)
            if at < 0:
                continue
            size = len(form)
            while at >= 0:
                add_key(at << shift | index)
                at = find(form, at + size)
        if not keys:
            return text
        keys.sort()
        sizes = self._sizes
        replacements = self._replacements
        mask = (1 << shift) - 1
        pieces: list[str] = []
        append = pieces.append
        cursor = 0
        for key in keys:
            at = key >> shift
            if at < cursor:
                # Two occurrences overlap: which one the pass takes depends on the order of the
                # replacements, so the merge below decides, from the start.
                return self._merge(text)
            index = key & mask
            append(text[cursor:at])
            append(replacements[index])
            cursor = at + sizes[index]
        append(text[cursor:])
        return "".join(pieces)

    def _merge(self, text: str) -> str:
        """Replace occurrences one at a time, leftmost first and longest at one position.

        Each form's next occurrence is kept; after a replacement, a form whose occurrence the
        replacement overlapped is looked for again from the cursor, so no search ever revisits
        text it has passed and the pass stays linear.
        """
        needles = self._needles
        found = [text.find(form) for form, _ in needles]
        active = [index for index, position in enumerate(found) if position >= 0]
        if not active:
            return text
        pieces: list[str] = []
        cursor = 0
        while active:
            # Leftmost match; at one position the lowest index, which is the longest form.
            best = min(active, key=found.__getitem__)
            form, replacement = needles[best]
            pieces.append(text[cursor : found[best]])
            pieces.append(replacement)
            cursor = found[best] + len(form)
            survivors: list[int] = []
            for index in active:
                if found[index] < cursor:
                    # A match that overlaps the one just replaced is looked for again from the
                    # cursor: no form's search ever revisits text it has passed.
                    found[index] = _find_after(text, needles[index][0], cursor)
                    if found[index] < 0:
                        continue
                survivors.append(index)
            active = survivors
        pieces.append(text[cursor:])
        return "".join(pieces)


def scrub_tree(scrubber: Scrubber, node: object) -> object:
    """Return a JSON-ready tree with every string and member name scrubbed (decisions R9.3).

    Args:
        scrubber: The call's scrubber.
        node: Strings, numbers, booleans, ``None``, lists and string-keyed dicts.

    Returns:
        A new tree of the same shape; the input is not changed.
    """
    if isinstance(node, str):
        return scrubber.scrub(node)
    if isinstance(node, dict):
        return {
            scrubber.scrub(str(key)): scrub_tree(scrubber, child) for key, child in node.items()
        }
    if isinstance(node, list | tuple):
        return [scrub_tree(scrubber, child) for child in node]
    return node
