"""The argument sanitizer behind the ledger's ``sanitizedArgs`` and the approval request.

This module owns turning the agent's argument text into text that is safe to persist and show:
valid references stay legible, and each malformed candidate is redacted to
``{{secret:[REDACTED]}}`` up to the first unbalanced closing brace (decisions R6.4). It works on
the arguments the agent wrote and must never see a substituted value.
"""

from __future__ import annotations

import re
from typing import Final

from reference_impl._grammar import (
    _CANDIDATE_RE,
    _JSONSyntaxError,
    _Walker,
    encode_string,
    judge_body,
)
from reference_impl._limits import SANITIZED_ARGS_CHARS
from reference_impl._scan import MARKER_RE, has_marker, unescape_u
from reference_impl._types import Reference

REDACTED_CANDIDATE: Final = "{{secret:[REDACTED]}}"
_BRACE_RE: Final = re.compile(r"[{}]")


def _redaction_end(text: str, body_start: int) -> int:
    """Return where the redaction of the candidate whose body starts at ``body_start`` ends.

    Braces opened inside the body are balanced first; the first ``}`` left unbalanced closes
    the candidate, together with a second ``}`` right after it. Without one, the candidate runs
    to the end of the string.
    """
    depth = 0
    for brace in _BRACE_RE.finditer(text, body_start):
        if brace.group() == "{":
            depth += 1
        elif depth:
            depth -= 1
        else:
            end = brace.end()
            return end + 1 if text.startswith("}", end) else end
    return len(text)


def redact_text(text: str) -> str:
    """Redact every malformed candidate of one decoded string, keeping valid references.

    Args:
        text: A decoded string value or key, or argument text that is not JSON.

    Returns:
        The text with each malformed candidate replaced by ``{{secret:[REDACTED]}}``.
    """
    pieces: list[str] = []
    pos = 0
    while (marker := MARKER_RE.search(text, pos)) is not None:
        start = marker.start()
        candidate = _CANDIDATE_RE.match(text, start)
        if candidate is not None and isinstance(judge_body(candidate.group(1)), Reference):
            pieces.append(text[pos : candidate.end()])
            pos = candidate.end()
            continue
        pieces.append(text[pos:start])
        pieces.append(REDACTED_CANDIDATE)
        pos = _redaction_end(text, marker.end())
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def _redact_json(raw: str) -> str:
    """Redact inside each string token of JSON text, leaving every other byte as written."""
    pieces: list[str] = []
    last = 0
    for _is_key, start, end, text in _Walker(raw).strings():
        if "{{" not in text or MARKER_RE.search(text) is None:
            continue
        redacted = redact_text(text)
        if redacted != text:
            pieces.append(raw[last:start])
            pieces.append(encode_string(redacted))
            last = end
    pieces.append(raw[last:])
    return "".join(pieces)


def cut(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, saying so at the end."""
    if len(text) <= limit:
        return text
    note = f"... [{len(text)} characters, cut]"
    return text[: max(0, limit - len(note))] + note


def sanitize_arguments(
    raw: str, limit: int = SANITIZED_ARGS_CHARS, *, marked: bool | None = None
) -> str:
    """Return the agent's arguments as the ledger and the approval request show them.

    Args:
        raw: The arguments exactly as the agent sent them.
        limit: The most characters to keep.
        marked: What the marker scan said of ``raw``, when the caller has already asked it;
            ``None`` scans here.

    Returns:
        The arguments with malformed candidates redacted, cut to ``limit`` characters.
    """
    if marked if marked is not None else has_marker(raw):
        try:
            raw = _redact_json(raw)
        except _JSONSyntaxError:
            raw = redact_text(unescape_u(raw))
    return cut(raw, limit)
