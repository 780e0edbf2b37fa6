"""Mutants whose fault lies in one character of a value or one digit of an id, which the rest of the
suite sees only when its random draws fall on them.

This module owns the broken reference hosts behind ``test_dice_hunt``: a form b that escapes U+2028
and U+2029, as Go's and Gson's JSON writers always do; one that escapes the no-break and ideographic
spaces, as a writer that escapes every space but U+0020 does; one that leaves a ``\\u00e9`` the
value holds as it is, taking it for an escape made before; a form c whose UTF-8 of an astral
character is right only in plane 1, where every drawn astral character lies; a grammar that takes
only RFC 9562 ids (a version digit 1 to 8 and the variant bits ``10``), as schema validators'
``uuid`` formats do, so that a reference to any other 8-4-4-4-12 id is refused as malformed; and a
vault searched by an id's first group, so that an unknown id that shares it with a known one
resolves to that secret. The first two are seen elsewhere only when a ``classes`` canary draws the
character; the last four nowhere else, since no canary's shuffle puts ``u`` and four hex digits
after its backslash, no astral character the suite draws or holds lies above plane 1, every id it
draws or holds is a version 4 one, and no id it names as unknown shares a first group with a known
one. Each entry is a :class:`~conformance.selftest.base.Mutant`;
``tests/conformance/test_dice_mutants.py`` shows that the new checks catch each on every run. A
mutant changes behaviour only and never prints a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from conformance.selftest.base import Mutant, line_patch

_GRAMMAR: Final = "reference_impl._grammar"
_RESOLVE: Final = "reference_impl._resolve"
_SCRUB: Final = "reference_impl._scrub"


def _escaping(characters: str) -> Callable[[Callable[[str], str]], Callable[[str], str]]:
    """Form b as the host's writer spells it: the right escape, then each of ``characters``
    written as a lower-case ``\\u`` escape."""

    def transform(original: Callable[[str], str]) -> Callable[[str], str]:
        def json_escape(value: str) -> str:
            escaped = original(value)
            for char in characters:
                escaped = escaped.replace(char, f"\\u{ord(char):04x}")
            return escaped

        return json_escape

    return transform


def _u_escapes_kept(original: Callable[[str], str]) -> Callable[[str], str]:
    """Form b that leaves a ``\\uXXXX`` the value holds as it is, taking it for an escape
    made before, and escapes the rest."""

    def json_escape(value: str) -> str:
        pieces = re.split(r"(\\u[0-9A-Fa-f]{4})", value)
        return "".join(
            piece if index % 2 else original(piece) for index, piece in enumerate(pieces)
        )

    return json_escape


def _astral_planes_folded(original: Callable[[str], str]) -> Callable[[str], str]:
    """Form c from UTF-16 units whose surrogate pair gives a code point from six bits of the
    high unit, not ten: right in plane 1, where every drawn astral character is, and wrong
    above it."""

    def point(char: str) -> str:
        code = ord(char)
        if code > 0xFFFF:
            high, low = (code - 0x10000) >> 10, (code - 0x10000) & 0x3FF
            code = 0x10000 + ((high & 0x3F) << 10) + low
        return chr(code)

    def form_encode(value: str) -> str:
        return original("".join(point(char) for char in value))

    return form_encode


def _rfc_ids_only(_original: object) -> re.Pattern[str]:
    """An id is an RFC 9562 UUID: a version digit 1 to 8 and a variant digit 8, 9, a or b."""
    return re.compile(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    )


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "json-escape-line-separators",
        "SCRUB-004",
        "Form b escapes U+2028 and U+2029 as a script-safe JSON writer does, so the real form b "
        "of a value holding either survives scrubbing.",
        ((_SCRUB, "json_escape", _escaping("\u2028\u2029")),),
    ),
    Mutant(
        "json-escape-space-separators",
        "SCRUB-004",
        "Form b escapes the no-break and ideographic spaces, as a writer that escapes every "
        "space but U+0020 does, so the real form b of a value holding either survives scrubbing.",
        ((_SCRUB, "json_escape", _escaping("\u00a0\u3000")),),
    ),
    Mutant(
        "json-escape-keeps-u-escapes",
        "SCRUB-004",
        "Form b leaves a backslash, u and four hex digits in a value as they are, taking them "
        "for an escape made before, so the real form b of such a value survives scrubbing.",
        ((_SCRUB, "json_escape", _u_escapes_kept),),
    ),
    Mutant(
        "form-c-astral-planes-folded",
        "SCRUB-005",
        "Form c takes an astral character's code point from six bits of its high surrogate, "
        "not ten, so the real form c of a value holding a character above plane 1 survives "
        "scrubbing.",
        ((_SCRUB, "form_encode", _astral_planes_folded),),
    ),
    Mutant(
        "ids-rfc-version-variant-only",
        "GRAM-003",
        "The grammar takes only RFC 9562 ids, a version digit 1 to 8 and a variant digit 8 to b, "
        "so a reference to any other 8-4-4-4-12 id is refused as malformed.",
        ((_GRAMMAR, "_UUID_RE", _rfc_ids_only),),
    ),
    Mutant(
        "ids-matched-by-first-group",
        "MSG-007",
        "The vault is searched by an id's first group, as a short id shows it, so an id that "
        "shares it with a known one resolves to that secret instead of being refused as unknown.",
        (
            line_patch(
                _RESOLVE,
                "_walk",
                "            if key in wanted:\n"
                "                found[key] = record\n"
                "                wanted.discard(key)",
                "            for asked in [w for w in wanted if w[:8] == key[:8]]:\n"
                "                found[asked] = record\n"
                "                wanted.discard(asked)",
            ),
        ),
    ),
)
