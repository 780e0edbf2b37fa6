"""Bugs planted in the reference host, as pytest monkeypatches, for the planted-bug tests.

Each function breaks one rule of the design the way a real host might, only for the test that
applies it; nothing here is imported by the reference host or by a shipped code path.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from unittest import mock

import pytest

import reference_impl
from reference_impl import CallOutcome, _grammar, _registry, _scrub
from reference_impl._grammar import Malformed, Occurrence
from reference_impl._policy import Rules
from reference_impl._scan import MARKER_RE, unescape_u


def scrub_without_plus_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scrubber forgets form c (``+`` for a space) and keeps only the ``%20`` form."""
    original = _scrub.forms

    def forms(value: str) -> tuple[str, ...]:
        plus = _scrub.form_encode(value)
        return tuple(form for form in original(value) if form != plus or " " not in value)

    monkeypatch.setattr(_scrub, "forms", forms)


def missed_key_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser never looks at object keys, so a marker in a key passes as literal text."""
    original = _grammar._Walker.strings

    def strings(self: _grammar._Walker) -> Iterator[tuple[bool, int, int, str]]:
        for item in original(self):
            if not item[0]:
                yield item

    monkeypatch.setattr(_grammar._Walker, "strings", strings)


def missed_unterminated_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner skips a marker that does not begin a candidate instead of refusing it."""
    candidate = re.compile(r"\{\{secret:([^{}]*+)\}\}", re.IGNORECASE | re.ASCII)

    def scan_string(text: str) -> tuple[list[Occurrence], Malformed | None]:
        found: list[Occurrence] = []
        pos = 0
        while (marker := MARKER_RE.search(text, pos)) is not None:
            match = candidate.match(text, marker.start())
            if match is None:
                pos = marker.end()
                continue
            judged = _grammar.judge_body(match.group(1))
            if isinstance(judged, str):
                return found, Malformed(marker.start(), match.end() - marker.start(), judged)
            found.append(Occurrence(judged, marker.start(), match.end()))
            pos = match.end()
        return found, None

    monkeypatch.setattr(_grammar, "scan_string", scan_string)
    monkeypatch.setattr(reference_impl, "scan_string", scan_string)


def fence_ignores_revocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The revocation stamps never move, so a revocation while the prompt is open is missed."""
    monkeypatch.setattr(Rules, "stamp", lambda self, tool, provider: (0, 0))


class CaseSensitiveRegistry(_registry.Registry):
    """A third-party host's bug: its pre-scan matches ``{{secret:`` in lower case only, so
    ``{{SECRET:...}}`` passes through as literal text. Only this registry is affected."""

    def invoke(self, tool_name: str, args_json: str) -> CallOutcome:
        """Run the call with the case-sensitive pre-scan."""
        with _SCAN_LOCK, mock.patch.object(_registry, "has_marker", _lower_case_scan):
            return super().invoke(tool_name, args_json)


_SCAN_LOCK = threading.Lock()


def _lower_case_scan(raw: str) -> bool:
    return "{{secret:" in raw or "{{secret:" in unescape_u(raw)
