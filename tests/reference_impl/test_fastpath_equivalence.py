"""The fast paths of the scan and the scrubber agree with slow, obviously correct oracles.

Both fast paths answer a cheaper question first and fall back to exact work; these properties
pin that the answers never change, on generated text built from the pieces that make the edge
cases: braces, backslashes, ``u``, hexadecimal digits of a brace in both cases, the word in
mixed case, colons, quotes and non-ASCII characters. The scrubber is also checked on texts past
the size where ``str.find`` changes its search, and the registry's cheap call id against
``uuid``.
"""

from __future__ import annotations

import random
import re
import uuid
from unittest.mock import patch

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference_impl import Field, Reference, Scrubber, SecretValue, forms, has_marker, placeholder
from reference_impl._registry import _new_id

_MARKER = re.compile(r"\{\{secret:", re.IGNORECASE | re.ASCII)
_HEX = frozenset("0123456789abcdefABCDEF")


def _oracle_unescape(raw: str) -> str:
    """Decode ``\\uXXXX`` escapes as JSON does, one character at a time; keep other escapes."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char != "\\" or i + 1 == len(raw):
            out.append(char)
            i += 1
            continue
        digits = raw[i + 2 : i + 6]
        if raw[i + 1] == "u" and len(digits) == 4 and set(digits) <= _HEX:
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            # Any other escape is a pair: its second character never starts an escape.
            out.append(raw[i : i + 2])
            i += 2
    return "".join(out)


def _oracle_has_marker(raw: str) -> bool:
    return _MARKER.search(_oracle_unescape(raw)) is not None


_SCAN_PIECES = (
    "{",
    "{{",
    "}",
    "\\",
    "\\\\",
    "\\u",
    "u",
    "007b",
    "007B",
    "\\u007b",
    "\\u007B",
    "\\u0073",
    "\\u0053",
    "\\u003a",
    "\\u003A",
    "7",
    "secret",
    "SeCrEt",
    "SECRET",
    "secre",
    ":",
    '"',
    "\\n",
    "é",
    "\u017f",  # the long s, which case-folds to "s" but is not ASCII (R1.3)
    "€",
    " ",
    "x",
)

_scan_texts = st.lists(st.sampled_from(_SCAN_PIECES), max_size=40).map("".join) | st.text(
    alphabet=st.sampled_from("{}\\u07bBsecrtSECRT: \"'é"), max_size=60
)


@pytest.mark.req("GRAM-001", "GRAM-012")
@given(_scan_texts)
@example("{{secret:")
@example("{\\u007bsecret:")
@example("\\u007B{SECRET:")
@example("{{\\u0073ecret\\u003A")
@example("\\\\u007b\\\\u007bsecret:")
@example("\\\\\\u007b{secret:")
@example("{{\u017fecret:")
def test_has_marker_matches_the_unescaping_oracle(raw: str) -> None:
    """The fast scan says "yes" exactly when decoding escapes then searching finds a marker."""
    assert has_marker(raw) == _oracle_has_marker(raw)


def _oracle_scrub(text: str, pairs: list[tuple[Reference, str]]) -> str:
    """Scrub one position at a time, trying the longest form first; never rescan a placeholder."""
    names: dict[str, str] = {}
    for reference, value in pairs:
        for form in forms(value):
            names.setdefault(form, placeholder(reference))
    ordered = sorted(names, key=len, reverse=True)
    out: list[str] = []
    i = 0
    while i < len(text):
        for form in ordered:
            if text.startswith(form, i):
                out.append(names[form])
                i += len(form)
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


_REFERENCES = tuple(
    Reference(f"{index:08x}-0000-4000-8000-000000000000", field)
    for index, field in enumerate((Field.PASSWORD, Field.USERNAME, Field.NOTES), start=1)
)

# Values built from few characters so that their forms overlap each other in the text, with the
# characters whose forms differ: quote, backslash, space, non-ASCII.
_values = st.text(alphabet=st.sampled_from('ab "\\é+%2'), min_size=6, max_size=12)


@st.composite
def _scrub_cases(draw: st.DrawFn) -> tuple[str, list[tuple[Reference, str]]]:
    values = draw(st.lists(_values, min_size=1, max_size=3))
    pairs = list(zip(_REFERENCES, values, strict=False))
    pieces = [form for value in values for form in forms(value)]
    pieces += [form[: len(form) // 2] for form in pieces] + ["a", "b", " ", "\\", "%", "é", "x"]
    text = "".join(draw(st.lists(st.sampled_from(pieces), max_size=30)))
    return text, pairs


@pytest.mark.req("SCRUB-009", "SCRUB-016")
@given(_scrub_cases())
@example(("abababababab", [(_REFERENCES[0], "abababab")]))
@example(("aaaaaaaaaaaaaaaaa", [(_REFERENCES[0], "aaaaaaaa"), (_REFERENCES[1], "aaaaaaaaa")]))
@example(("xabcdefghijk", [(_REFERENCES[0], "abcdefgh"), (_REFERENCES[1], "defghijk")]))
def test_scrubber_matches_the_leftmost_longest_oracle(
    case: tuple[str, list[tuple[Reference, str]]],
) -> None:
    """The scrubber's result is the naive leftmost-longest pass's result, overlaps included."""
    text, pairs = case
    scrubber = Scrubber((reference, SecretValue(value)) for reference, value in pairs)
    assert scrubber.scrub(text) == _oracle_scrub(text, pairs)


def _long_text(pieces: list[str], gap: int, seed: int) -> str:
    """Return the pieces with ``gap`` filler characters around each, a text past 30,000."""
    rng = random.Random(seed)
    filler = "ab \\%é+x2"
    parts = ["".join(rng.choice(filler) for _ in range(gap))]
    for piece in pieces:
        parts.append(piece)
        parts.append("".join(rng.choice(filler) for _ in range(gap)))
    return "".join(parts)


@pytest.mark.req("SCRUB-009", "SCRUB-016")
@pytest.mark.parametrize("gap", [0, 1, 255, 257, 4_000])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "overlapping"])
def test_scrubber_matches_the_oracle_on_long_sparse_text(gap: int, overlap: bool) -> None:
    """Past 30,000 characters, where ``str.find`` changes search: the join, and the merge."""
    # The end of the first value is the start of the second, and the filler cannot spell any
    # form, so occurrences overlap only where the test puts the two values together.
    values = ['qrst uvwx"1', 'uvwx"1 yz\\2', 'M\u00e9\\m0 n"\u20ac8']
    pairs = list(zip(_REFERENCES, values, strict=True))
    pieces = [form for value in values for form in forms(value)] * 3
    if overlap:
        pieces.insert(len(pieces) // 2, 'qrst uvwx"1 yz\\2')
    text = _long_text(pieces, gap, seed=gap)
    text += "x" * max(0, 31_000 - len(text))
    scrubber = Scrubber((reference, SecretValue(value)) for reference, value in pairs)
    assert scrubber.scrub(text) == _oracle_scrub(text, pairs)


@pytest.mark.req("LEDG-001")
@given(st.binary(min_size=16, max_size=16))
def test_call_ids_are_what_uuid4_would_build(raw: bytes) -> None:
    """The registry's call id is ``uuid.UUID(bytes=..., version=4).hex`` of the same bytes."""
    with patch("os.urandom", return_value=raw):
        built = _new_id()
    assert built == uuid.UUID(bytes=raw, version=4).hex
