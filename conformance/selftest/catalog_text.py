"""Mutants of the grammar, substitution, the scrubber and the refusal messages at sizes and in
shapes no ordinary call reaches.

This module owns the broken reference hosts behind ``test_text_hunt``: a scrubber whose table
keeps the first 32 values of a call, one that skips values longer than 1 KiB, a marker scan
that reads the first megabyte of the arguments, a parse that skips strings past 64 KiB, a scan
of each string that stops after 64 references, a list of unknown ids cut to 4,096 characters,
a parser that skips form feeds and vertical tabs as C's ``isspace`` does, and one that reads
the JSON inside a Markdown code fence. Each entry is a :class:`~conformance.selftest.base.Mutant`;
``tests/conformance/test_text_mutants.py`` shows that the older checks miss each and the new
ones catch it. A mutant changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_GRAMMAR: Final = "reference_impl._grammar"
_REG: Final = "reference_impl._registry"
_SCRUB: Final = "reference_impl._scrub"

#: The values of one call the ``scrub-table-first-values`` mutant scrubs.
_TABLE: Final = 32

#: The longest value, in code points, the ``long-values-unscrubbed`` mutant scrubs.
_LONGEST: Final = 1024

#: The characters of arguments the ``marker-scan-window`` mutant's scan reads.
_WINDOW: Final = 1 << 20

#: The longest string, in characters, the ``long-strings-unscanned`` mutant reads references in.
_LONGEST_STRING: Final = 64 * 1024

#: The references of one string the ``string-scan-stops-at-64`` mutant reads.
_PER_STRING: Final = 64

#: The characters the ``unknown-ids-message-cut`` mutant keeps of its refusal.
_MESSAGE: Final = 4096

#: A Markdown code fence around the whole argument text, as a model writes one.
_FENCE: Final = re.compile(r"\s*```(?:json)?\s*(.*?)\s*```\s*", re.DOTALL)


def _isspace_whitespace(_original: Any) -> Any:
    """JSON white space read as C's ``isspace`` reads it: form feed and vertical tab too."""
    return re.compile(r"[ \t\n\r\f\v]*")


def _unfenced(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """Arguments wrapped in a Markdown code fence are parsed from what the fence holds."""

    @functools.wraps(original)
    def parse_arguments(raw: str) -> Any:
        fenced = _FENCE.fullmatch(raw)
        return original(fenced.group(1) if fenced is not None else raw)

    return parse_arguments


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "scrub-table-first-values",
        "SCRUB-001",
        f"The scrubber's table holds the first {_TABLE} values of a call: the others are left "
        "in its result and failure text.",
        (
            line_patch(
                _SCRUB,
                "Scrubber.__init__",
                "for reference, value in resolved:",
                f"for reference, value in list(resolved)[:{_TABLE}]:",
            ),
        ),
    ),
    Mutant(
        "long-values-unscrubbed",
        "SCRUB-001",
        f"A value longer than {_LONGEST} code points (a key file in a secret's notes) is not "
        "scrubbed in any form.",
        (
            line_patch(
                _SCRUB,
                "forms",
                "if len(value) < SCRUB_MIN_CODE_POINTS:",
                f"if not SCRUB_MIN_CODE_POINTS <= len(value) <= {_LONGEST}:",
            ),
        ),
    ),
    Mutant(
        "marker-scan-window",
        "GRAM-011",
        "The marker scan reads the first megabyte of the arguments: a reference past it "
        "reaches the tool as text.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "call.marked = has_marker(args_json)",
                f"call.marked = has_marker(args_json[:{_WINDOW}])",
            ),
        ),
    ),
    Mutant(
        "long-strings-unscanned",
        "GRAM-011",
        f"A string longer than {_LONGEST_STRING:,} characters is taken for file content and "
        "not read for references: one inside it reaches the tool as text.",
        (
            line_patch(
                _GRAMMAR,
                "parse_arguments",
                'if first_problem is not None or "{{" not in text or not MARKER_RE.search(text):',
                'if first_problem is not None or "{{" not in text or not MARKER_RE.search(text) '
                f"or len(text) > {_LONGEST_STRING}:",
            ),
        ),
    ),
    Mutant(
        "string-scan-stops-at-64",
        "SUBST-005",
        f"The scan of one string stops after {_PER_STRING} references: the rest reach the "
        "tool as text.",
        (
            line_patch(
                _GRAMMAR,
                "scan_string",
                "while (marker := MARKER_RE.search(text, pos)) is not None:",
                f"while len(found) < {_PER_STRING} and "
                "(marker := MARKER_RE.search(text, pos)) is not None:",
            ),
        ),
    ),
    Mutant(
        "unknown-ids-message-cut",
        "MSG-007",
        f"The refusal that lists unknown ids is cut to {_MESSAGE:,} characters, so a call with "
        "hundreds of them is told of some only.",
        (
            line_patch(
                _REG,
                "resolve",
                '"no secret with id " + ", ".join(missing),',
                f'("no secret with id " + ", ".join(missing))[:{_MESSAGE}],',
            ),
        ),
    ),
    Mutant(
        "json-whitespace-isspace",
        "GRAM-016",
        "The parser skips a form feed or a vertical tab between tokens as white space, so "
        "arguments RFC 8259 does not read are resolved.",
        ((_GRAMMAR, "_WS_RE", _isspace_whitespace),),
    ),
    Mutant(
        "fenced-arguments-unwrapped",
        "GRAM-016",
        "Arguments wrapped in a Markdown code fence are read as the JSON object inside it and "
        "resolved.",
        ((_GRAMMAR, "parse_arguments", _unfenced),),
    ),
)
