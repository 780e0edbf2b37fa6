"""One-line mutants of the survivor classes of mutation testing, each written as the line it
changes.

This module owns the broken reference hosts that fresh-seed mutation runs left alive, until a
check was written for each: what the ledger records for refused calls and host failures, which
calls carry an errorSnippet, stray characters at JSON's separator places, a pending limit above
small numbers, a revocation spanning the prompts of several calls, a look-alike marker beside a
real reference, the error for a policy file with one unknown member, and a value inside another
at the start of a scrubbed text. Each is the one-line
change mutation testing made (cosmic-ray's operators, or the same kind of change), written with
:func:`~conformance.selftest.base.line_patch` as the function that holds the line, recompiled
with the line changed. ``tests/conformance/test_mutation_classes.py`` checks that the check
module written for each catches it on its own. A mutant here changes behaviour only, and never
prints a value.
"""

from __future__ import annotations

from typing import Final

from conformance.selftest.base import Mutant, line_patch

_REG: Final = "reference_impl._registry"
_GRAMMAR: Final = "reference_impl._grammar"
_POLICY: Final = "reference_impl._policy"
_SCRUB: Final = "reference_impl._scrub"

#: The candidate pattern as it was before the scan was bound to the ASCII marker, so that it
#: also reads a long s: the helper the ``look-alike-read-beside-a-real-marker`` line names.
_LOOSE: Final = '_LOOSE_RE = re.compile(r"\\{\\{secret:([^{}]*+)\\}\\}", re.IGNORECASE)\n'

#: The line before the second ``char = ...`` of the JSON walk, indented as the module has it,
#: so that the change lands after a value and not before one.
_AFTER_A_VALUE: Final = "top = stack[-1]\n" + " " * 16

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "refusal-recorded-as-no-error",
        "LEDG-001",
        "A refused call is recorded with isError false.",
        (
            line_patch(
                _REG,
                "Registry._refuse",
                "call, refusal.disposition, True, cut(refusal.message, ERROR_SNIPPET_CHARS)",
                "call, refusal.disposition, False, cut(refusal.message, ERROR_SNIPPET_CHARS)",
            ),
        ),
    ),
    Mutant(
        "host-failure-recorded-without-snippet",
        "LEDG-016",
        "A host failure is recorded without its errorSnippet.",
        (
            line_patch(
                _REG,
                "Registry._internal_failure",
                "ledger_id = self._record(call, disposition, True, INTERNAL_FAILURE_MESSAGE)",
                "ledger_id = self._record(call, disposition, True, None)",
            ),
        ),
        # The checks that fail the reference host's own steps need it in process.
        driver=False,
    ),
    Mutant(
        "host-failure-hides-its-lost-record",
        "LEDG-013",
        "A host failure whose record could not be written does not say so in its outcome.",
        (
            line_patch(
                _REG,
                "Registry._internal_failure",
                "ledger_error=call.ledger_error if ledger_id is None else None,",
                "ledger_error=call.ledger_error if not ledger_id is None else None,",
            ),
        ),
        # The checks that fail the reference host's own steps need it in process.
        driver=False,
    ),
    Mutant(
        "snippet-on-every-call",
        "LEDG-001",
        "Every governed call that runs its tool is recorded with an errorSnippet, the "
        "successful ones too.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "if result.is_error:",
                "if result.is_error or True:",
            ),
        ),
    ),
    Mutant(
        "reader-inverts-error-snippet",
        "LEDG-020",
        "The ledger reader reads a record's errorSnippet as absent when it is there, and as the "
        "text None when it is not.",
        (
            line_patch(
                "reference_impl._ledger",
                "decode_record",
                "error_snippet=None if snippet is None else str(snippet),",
                "error_snippet=None if not snippet is None else str(snippet),",
            ),
        ),
    ),
    Mutant(
        "low-characters-taken-for-a-comma",
        "GRAM-016",
        "After a value the JSON walk takes any character up to the comma for a comma.",
        (line_patch(_GRAMMAR, "_Walker.strings", 'if char == ",":', 'if char <= ",":'),),
    ),
    Mutant(
        "high-characters-close-a-container",
        "GRAM-016",
        "After a value the JSON walk takes any character from the closing bracket on for the "
        "bracket.",
        (
            line_patch(
                _GRAMMAR,
                "_Walker.strings",
                'if char == ("}" if top.is_object else "]"):',
                'if char >= ("}" if top.is_object else "]"):',
            ),
        ),
    ),
    Mutant(
        "parse-position-compared-by-identity",
        "GRAM-016",
        "After a value the JSON walk compares its position with the text's length by identity, "
        "which past the small integers never holds, so it reads past the end of a long text.",
        (
            line_patch(
                _GRAMMAR,
                "_Walker.strings",
                _AFTER_A_VALUE + 'char = raw[pos] if pos < n else ""',
                _AFTER_A_VALUE + 'char = raw[pos] if pos is not n else ""',
            ),
        ),
        # Behind the driver the walk's fault ends the call as the driver's own error, which
        # the check reports as an error of the host, not as the refusal it judges.
        driver=False,
    ),
    Mutant(
        "pending-count-compared-by-identity",
        "APPR-009",
        "The pending limit compares the open prompts with the limit by identity, so a limit "
        "past the small integers is never reached.",
        (
            line_patch(
                "reference_impl._approve",
                "ApprovalGate.ask",
                "if self._open >= self.limit:",
                "if self._open is self.limit:",
            ),
        ),
    ),
    Mutant(
        "tool-stamp-moves-once",
        "FENCE-001",
        "Revoking a tool sets the low bit of its stamp instead of adding one, so a revocation "
        "after the tool's first change moves nothing.",
        (
            line_patch(
                _POLICY,
                "Rules.revoke_tool",
                "self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) + 1",
                "self._tool_stamps[tool] = self._tool_stamps.get(tool, 0) | 1",
            ),
        ),
    ),
    Mutant(
        "provider-stamp-moves-once",
        "FENCE-001",
        "Revoking a provider sets the low bit of its stamp instead of adding one, so a "
        "revocation after the provider's first change moves nothing.",
        (
            line_patch(
                _POLICY,
                "Rules.revoke_provider",
                "self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) + 1",
                "self._provider_stamps[provider] = self._provider_stamps.get(provider, 0) | 1",
            ),
        ),
    ),
    Mutant(
        "look-alike-read-beside-a-real-marker",
        "GRAM-007",
        "A string that holds a real reference also has its look-alike markers read as references.",
        (
            line_patch(
                _GRAMMAR,
                "scan_string",
                "while (marker := MARKER_RE.search(text, pos)) is not None:",
                "while (marker := _LOOSE_RE.search(text, pos) or MARKER_RE.search(text, pos)) "
                "is not None:",
                extra=_LOOSE,
            ),
        ),
    ),
    Mutant(
        "policy-error-names-second-unknown",
        "POL-002",
        "The policy file's error names the second of its unknown members, so loading a file with "
        "only one raises an index error instead of failing closed.",
        (
            line_patch(
                _POLICY,
                "parse_policy",
                'raise PolicyError(f"the policy file has {unknown_member(unknown[0])}")',
                'raise PolicyError(f"the policy file has {unknown_member(unknown[1])}")',
            ),
        ),
        # The reference host's own file checks run in process.
        driver=False,
    ),
    Mutant(
        "overlap-test-inverted",
        "SCRUB-020",
        "The scrubber's pass leaves for its overlap merge at a gap between occurrences instead "
        "of at an overlap, so a text that opens with occurrences back to back and ends its "
        "occurrences with a value inside another gets both placeholders and the outer value's "
        "rest after the inner one repeated in clear.",
        (line_patch(_SCRUB, "Scrubber.scrub", "if at < cursor:", "if at > cursor:"),),
    ),
)
