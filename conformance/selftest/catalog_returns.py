"""Mutants that escape a control character wrongly, read number and separator text in
arguments otherwise than RFC 8259 does, or change a result on its way to the agent.

This module owns the broken reference hosts behind ``test_returns_hunt``: a form b whose
``\\u00xx`` escapes start at U+0001, so U+0000 is left as it is and the value's real form b
survives scrubbing; a parser that reads a number as any run of digits, signs, points and
exponent letters, so that ``1e`` or ``-`` beside a reference is resolved; one that ends a
string at a raw U+2028 or U+2029, as a script's lexer does, so that valid JSON carrying a
reference is refused; a result that ends at its first U+0000, as a C string does; an empty
result replaced by words of the host's own; and a result whose opening byte-order mark is
taken off. Each entry is a
:class:`~conformance.selftest.base.Mutant`; ``tests/conformance/test_returns_mutants.py`` shows
that the older checks miss each and the new ones catch it. A mutant changes behaviour only and
never prints a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from conformance.canary import SHORT_ESCAPES
from conformance.selftest.base import Mutant, line_patch

_GRAMMAR: Final = "reference_impl._grammar"
_REG: Final = "reference_impl._registry"
_SCRUB: Final = "reference_impl._scrub"


def _nul_kept(_original: Any) -> Callable[[str], str]:
    """Form b written one character at a time, its ``\\u00xx`` range starting at U+0001."""

    def json_escape(value: str) -> str:
        out = []
        for char in value:
            if char in SHORT_ESCAPES:
                out.append(SHORT_ESCAPES[char])
            elif "\x00" < char < " " or "\ud800" <= char <= "\udfff":
                out.append(f"\\u{ord(char):04x}")
            else:
                out.append(char)
        return "".join(out)

    return json_escape


def _numbers_by_characters(_original: Any) -> re.Pattern[str]:
    """A number is any run of digits, signs, points and exponent letters."""
    return re.compile(r"[-+0-9.eE]+")


def _separators_end_strings(original: Callable[[str, int], Any]) -> Callable[[str, int], Any]:
    """A string holding a raw U+2028 or U+2029 is not read, as a script's lexer ends a line
    there."""

    def decode(raw: str, quote: int) -> Any:
        text, end = original(raw, quote)
        if "\u2028" in raw[quote:end] or "\u2029" in raw[quote:end]:
            from reference_impl._grammar import _JSONSyntaxError

            raise _JSONSyntaxError(quote)
        return text, end

    return decode


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "json-escape-keeps-nul",
        "SCRUB-004",
        "Form b escapes the control characters from U+0001 up, leaving U+0000 as it is, so the "
        "real form b of a value holding U+0000 survives scrubbing.",
        ((_SCRUB, "json_escape", _nul_kept),),
    ),
    Mutant(
        "numbers-read-by-characters",
        "GRAM-020",
        "The parser reads a number as any run of digits, signs, points and exponent letters, "
        "so a reference beside '1e' or '-' is resolved.",
        ((_GRAMMAR, "_NUMBER_RE", _numbers_by_characters),),
    ),
    Mutant(
        "line-separator-ends-strings",
        "GRAM-020",
        "The parser ends a string at a raw U+2028 or U+2029, as a script's lexer does, so valid "
        "JSON carrying a reference beside one is refused.",
        ((_GRAMMAR, "_decode", _separators_end_strings),),
    ),
    Mutant(
        "result-ends-at-nul",
        "CAP-003",
        "A result or failure text ends at its first U+0000, as a C string does, so a result "
        "within the cap that holds one does not reach the agent whole.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "text = cap(text)",
                'text = cap(text.split("\\x00", 1)[0])',
            ),
        ),
    ),
    Mutant(
        "empty-result-replaced",
        "CAP-003",
        "An empty result reaches the agent as words of the host's own saying the tool returned "
        "no output, not as the empty text the tool returned.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "text = cap(text)",
                'text = cap(text) if text else "(the tool returned no output)"',
            ),
        ),
    ),
    Mutant(
        "result-bom-stripped",
        "CAP-003",
        "A byte-order mark that opens a result is taken off, as a reader decoding a Windows "
        "tool's output drops it, so the result does not reach the agent whole.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "text = result.text\n",
                'text = result.text.removeprefix("\\ufeff")\n',
            ),
        ),
    ),
)
