"""Making text that came from the host inert, for each medium the suite writes it to.

This module owns the escaping of host text (names, versions, error messages, details, skip
reasons) at the place it is written: for the terminal, control characters are shown as escapes
such as ``\\x1b``; for Markdown, the HTML inside it and table cells, ``&``, ``<``, ``>``, pipes,
backticks and the emphasis and link characters are escaped and line breaks shown as escapes,
so no host text can add a line, a tag, a comment or a verdict; and for every report, canary text
is redacted down to runs shorter than 8 characters. XML is left to pytest's JUnit writer, which
escapes every property and message it writes. It never escapes once upstream "for all" media,
and never changes text that holds nothing to escape.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any, Final

#: Characters shown escaped wherever host text is written: C0 and C1 controls, DEL, the
#: Unicode line, paragraph and bidirectional-control characters that break or reorder a line,
#: and lone surrogates, which a host may send as JSON escapes but no UTF-8 file or terminal
#: can hold (writing one would end the run with an encoding error).
CONTROL_CHARACTERS: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

#: The same, less the newline and tab a multi-line traceback needs.
_CONTROLS_BUT_LAYOUT: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)

#: Markdown characters that can open emphasis, code, a link, a table cell or strike-through
#: anywhere in a line (CommonMark and GitHub's tables); the ones special only at the start of a
#: line need nothing, since host text never starts one.
_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_\[\]|~])")

_LONGEST_BACKTICKS: Final = re.compile(r"`+")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """Return ``text`` for the terminal: every control character shown as an escape.

    Newlines included, so one host text stays on one line.
    """
    return CONTROL_CHARACTERS.sub(_shown, text)


def escape_controls_keep_lines(text: str) -> str:
    """Return ``text`` with every control character but newline and tab shown as an escape."""
    return _CONTROLS_BUT_LAYOUT.sub(_shown, text)


def markdown_text(text: str) -> str:
    """Return ``text`` escaped for running Markdown text or a table cell.

    Controls (line breaks included) become visible escapes, HTML's ``&``, ``<`` and ``>``
    become entities (so neither a tag nor ``<!--`` survives), and Markdown's inline characters
    get a backslash.
    """
    text = html.escape(escape_controls(text), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_code(text: str) -> str:
    """Return ``text`` as a Markdown code span that holds it whole, fit for a table cell.

    The fence is one backtick longer than the longest run inside; pipes keep the backslash
    GitHub's tables need even inside code; controls become visible escapes.
    """
    text = escape_controls(text).replace("|", "\\|")
    longest = max((len(run) for run in _LONGEST_BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def map_strings(document: Any, change: Callable[[str], str]) -> Any:
    """Return a copy of a JSON document with ``change`` applied to every string, keys included.

    Args:
        document: Decoded JSON: dicts, lists and scalars.
        change: What to do with each string.

    Returns:
        The changed copy; ``document`` itself is not modified.
    """
    if isinstance(document, str):
        return change(document)
    if isinstance(document, dict):
        return {change(str(key)): map_strings(value, change) for key, value in document.items()}
    if isinstance(document, list | tuple):
        return [map_strings(value, change) for value in document]
    return document
