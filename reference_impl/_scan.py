"""Step [1], the marker pre-scan: the only work a call without references pays for.

This module owns the question "could these argument bytes hold a ``{{secret:`` marker?", asked
of the raw text before anything parses it. The answer must never be a false "no": a marker
spelled in any ASCII case, or written with ``\\uXXXX`` escapes that JSON unescaping would turn
into a marker, is always found. A false "yes" only costs a parse. The module must never parse
JSON, allocate in proportion to the text on the common path, or look at anything but the text.

The common path is a call without references, so the scan first asks a cheaper question that
every marker must answer "yes" to: does the text hold two braces in a row, each written as ``{``
or as the escape ``\\u007b``/``\\u007B``? Two searches in C answer it without allocating; only a
text that passes pays for the exact check, once, in linear time.
"""

from __future__ import annotations

import re
from typing import Final

#: The design's marker: ``{{secret:``, whose word is matched in any ASCII case (design, "Syntax";
#: decisions R1.1). ``re.ASCII`` keeps non-ASCII look-alikes such as U+017F literal text, the
#: reference host's choice under R1.3.
MARKER_RE: Final = re.compile(r"\{\{secret:", re.IGNORECASE | re.ASCII)

#: One JSON escape sequence: ``\uXXXX`` or a backslash and the character after it. Consuming
#: escapes as pairs, left to right, keeps ``\\u007b`` (an escaped backslash, then text) apart
#: from ``\u007b`` (an escaped brace), exactly as JSON unescaping does (RFC 8259, section 7).
_ESCAPE_RE: Final = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.DOTALL)


def _unescape_match(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    if hex_digits is not None:
        return chr(int(hex_digits, 16))
    return match.group(0)


def unescape_u(raw: str) -> str:
    """Decode the ``\\uXXXX`` escapes of ``raw`` the way JSON unescaping would.

    Other escapes are left as written: none of them can produce a character of the marker.

    Args:
        raw: Argument text, valid JSON or not.

    Returns:
        The text with every ``\\uXXXX`` escape replaced by its character.
    """
    return _ESCAPE_RE.sub(_unescape_match, raw)


# The marker as raw JSON text: each of its nine characters written literally or as a \uXXXX
# escape, hexadecimal digits in either case. The letters of the escapes are the upper and lower
# case of each letter of the word, in ASCII only.
_RAW_LETTERS: Final = "".join(
    f"(?:[{c.upper()}{c}]|\\\\u00(?:{ord(c.upper()):02x}|{ord(c):02x}))" for c in "secret"
)
_RAW_BRACE: Final = r"(?:\{|\\u007[bB])"
_RAW_REST: Final = _RAW_BRACE + _RAW_LETTERS + r"(?::|\\u003[aA])"

#: A marker whose first brace is literal. Taken out of a pair ``\{``, which JSON unescaping
#: keeps as written, the brace is still there, so no check of what precedes it is needed.
_LITERAL_FIRST_RE: Final = re.compile(r"\{" + _RAW_REST)

#: A marker whose first brace is an escape; it is one only if an even run of backslashes, none
#: of them escaping its backslash, comes before it.
_ESCAPED_FIRST_RE: Final = re.compile(r"\\u007[bB]" + _RAW_REST)


def _marker_in(raw: str) -> bool:
    """Return whether ``raw`` holds a marker, literally or after ``\\u`` unescaping; exact.

    Matching the marker in its raw spellings gives the same answer as unescaping the whole text
    and searching it, without building the unescaped text.
    """
    if _LITERAL_FIRST_RE.search(raw) is not None:
        return True
    for match in _ESCAPED_FIRST_RE.finditer(raw):
        start = match.start()
        before = start
        while before and raw[before - 1] == "\\":
            before -= 1
        # Runs of backslashes before distinct matches do not overlap: linear in all.
        if (start - before) % 2 == 0:
            return True
    return False


#: Two literal braces in a row. The pattern's literal prefix makes ``re`` skip ahead in C.
_BRACE_PAIR_RE: Final = re.compile(r"\{\{")

#: A brace written as an escape; its hexadecimal digits are matched in either case, as JSON does.
_ESCAPED_BRACE_RE: Final = re.compile(r"\\u007[bB]")


def has_marker(raw: str) -> bool:
    """Return whether ``raw`` may carry a secret-reference marker.

    Args:
        raw: The arguments exactly as the agent sent them.

    Returns:
        ``True`` when a marker is present literally or after ``\\u`` unescaping; ``False`` only
        when no marker can be there.
    """
    # Decoded, every marker starts with "{{". Each of those braces comes from one piece of the
    # raw text, a literal "{" or an escape \u007b in either case, and the two pieces are next
    # to each other. So the raw text holds "{{" or an escaped brace, or no marker at all. An
    # escaped brace needs a backslash and a "7", which single-character searches (memchr)
    # rule out at once in most texts.
    if _BRACE_PAIR_RE.search(raw) is None and (
        "7" not in raw or "\\" not in raw or _ESCAPED_BRACE_RE.search(raw) is None
    ):
        return False
    return _marker_in(raw)
