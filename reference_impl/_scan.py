"""Step [1], the marker pre-scan: the only work a call without references pays for.

This module owns the question "could these argument bytes hold a ``{{secret:`` marker?", asked
of the raw text before anything parses it. The answer must never be a false "no": a marker
spelled in any ASCII case, or written with ``\\uXXXX`` escapes that JSON unescaping would turn
into a marker, is always found. A false "yes" only costs a parse. The module must never parse
JSON, allocate in proportion to the text on the common path, or look at anything but the text.
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


def has_marker(raw: str) -> bool:
    """Return whether ``raw`` may carry a secret-reference marker.

    Args:
        raw: The arguments exactly as the agent sent them.

    Returns:
        ``True`` when a marker is present literally or after ``\\u`` unescaping; ``False`` only
        when no marker can be there.
    """
    # A literal marker needs "{{"; the few "{{" in ordinary arguments are confirmed in C.
    if "{{" in raw and MARKER_RE.search(raw) is not None:
        return True
    # Without "\u" no escape can produce a marker character.
    if "\\u" not in raw:
        return False
    return MARKER_RE.search(unescape_u(raw)) is not None
