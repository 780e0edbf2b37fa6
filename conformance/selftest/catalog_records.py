"""Mutants that name the wrong secrets, change a value on its way, or misrecord an ending.

This module owns the broken reference hosts behind four check modules: refusals that name the
first secret or field of a call instead of the right one, or cut a long list of unknown ids
short (``test_message_lists``); values tidied on their way to the handler, or rewritten a
second time (``test_awkward_values``); a parser that stops reading past 64 levels and lets the
deeper strings through unread (``test_deep_nesting``); and ledger records of QUEUE_FULL calls
and of execution timeouts that do not say how the call ended (``test_ledger_endings``). Each
is written with :func:`~conformance.selftest.base.line_patch` as the line or lines it changes.
``tests/conformance/test_record_mutants.py`` checks that the older checks miss each one and
the new module catches it. A mutant here changes behaviour only, and never prints a value.
"""

from __future__ import annotations

from typing import Final

from conformance.selftest.base import Mutant, line_patch

#: The registry imports ``resolve`` and ``substitute`` by name: they are patched where it
#: calls them. It calls the parser through its module.
_REG: Final = "reference_impl._registry"
_GRAMMAR: Final = "reference_impl._grammar"

#: The AI-provider refusal's first line, as ``resolve`` has it.
_AI_LINE: Final = (
    'f"secret {secret_id} is an AI provider key; configure the provider in the "\n'
    '                "host\'s AI settings",'
)

#: The reference host's refusal record, as ``Registry._refuse`` writes it.
_REFUSAL_RECORD: Final = (
    "call, refusal.disposition, True, cut(refusal.message, ERROR_SNIPPET_CHARS)"
)

#: The helper the sequential-replace mutant's loop names: every spelling of one reference.
_SPELLING: Final = """
import re

def _spelling(reference):
    field = (
        r"(?:\\.password)?"
        if reference.field.value == "password"
        else r"\\." + reference.field.value
    )
    return re.compile(
        r"\\{\\{secret:" + re.escape(reference.id) + field + r"\\}\\}", re.IGNORECASE | re.ASCII
    )
"""

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "ai-refusal-reworded",
        "MSG-011",
        "The AI-provider refusal does not begin with 'secret <id> is an AI provider key'.",
        (
            line_patch(
                _REG,
                "resolve",
                _AI_LINE,
                'f"secret {secret_id} is reserved for the host\'s AI provider settings",',
            ),
        ),
    ),
    Mutant(
        "ai-refusal-names-first-id",
        "MSG-011",
        "The AI-provider refusal names the call's first secret, not the tagged one.",
        (
            line_patch(
                _REG,
                "resolve",
                'f"secret {secret_id} is an AI provider key;',
                'f"secret {ids[0]} is an AI provider key;',
            ),
        ),
    ),
    Mutant(
        "ai-tag-password-only",
        "MSG-011",
        "Only the password of an AI-provider key is refused; its username and notes run.",
        (
            line_patch(
                _REG,
                "resolve",
                "for secret_id in ids:",
                "for secret_id in dict.fromkeys(\n"
                "        r.id for r in references if r.field is Field.PASSWORD\n"
                "    ):",
                extra="from reference_impl._types import Field",
            ),
        ),
    ),
    Mutant(
        "unknown-ids-capped",
        "MSG-007",
        "The unknown-id refusal names the first three ids and counts the rest.",
        (
            line_patch(
                _REG,
                "resolve",
                '"no secret with id " + ", ".join(missing),',
                '"no secret with id " + ", ".join(missing[:3])'
                ' + (f" and {len(missing) - 3} more" if len(missing) > 3 else ""),',
            ),
        ),
    ),
    Mutant(
        "empty-field-names-first-field",
        "MSG-008",
        "The empty-field refusal names the field its secret was first asked for.",
        (
            line_patch(
                _REG,
                "resolve",
                'f"secret {reference.id} has no {reference.field.value}",',
                'f"secret {reference.id} has no '
                '{next(r.field for r in references if r.id == reference.id).value}",',
            ),
        ),
    ),
    Mutant(
        "sequential-replace",
        "SUBST-005",
        "Each reference of a string is replaced in turn, so a value holding another "
        "reference's spelling is resolved a second time.",
        (
            line_patch(
                _REG,
                "substitute",
                "parts: list[str] = []\n"
                "        cursor = 0\n"
                "        for occurrence in site.occurrences:\n"
                "            parts.append(text[cursor : occurrence.start])\n"
                "            parts.append(values[occurrence.reference].reveal())\n"
                "            cursor = occurrence.end\n"
                "        parts.append(text[cursor:])",
                "for reference in dict.fromkeys(o.reference for o in site.occurrences):\n"
                "            value = values[reference].reveal()\n"
                "            text = _spelling(reference).sub(lambda _m, v=value: v, text)\n"
                "        parts = [text]",
                extra=_SPELLING,
            ),
        ),
    ),
    Mutant(
        "value-newline-stripped",
        "SUBST-005",
        "A value's trailing line break is stripped before it reaches the handler.",
        (
            line_patch(
                _REG,
                "substitute",
                "parts.append(values[occurrence.reference].reveal())",
                'parts.append(values[occurrence.reference].reveal().rstrip("\\r\\n"))',
            ),
        ),
    ),
    Mutant(
        "value-nfc-normalised",
        "SUBST-005",
        "A value is normalised to NFC before it reaches the handler.",
        (
            line_patch(
                _REG,
                "substitute",
                "parts.append(values[occurrence.reference].reveal())",
                'parts.append(unicodedata.normalize("NFC", values[occurrence.reference].reveal()))',
                extra="import unicodedata",
            ),
        ),
    ),
    Mutant(
        "deep-strings-unread",
        "GRAM-041",
        "Strings nested past 64 levels are not read for references and reach the tool as written.",
        (
            line_patch(
                _GRAMMAR,
                "parse_arguments",
                "                continue\n            if is_key:",
                "                continue\n"
                "            if len(walker.stack) > 64:\n"
                "                continue\n"
                "            if is_key:",
            ),
        ),
        # The driver protocol and the MCP wire nest at most 64 levels: in process only.
        driver=False,
    ),
    Mutant(
        "queue-full-recorded-as-no-error",
        "LEDG-001",
        "A QUEUE_FULL call is recorded with isError false and no snippet.",
        (
            line_patch(
                _REG,
                "Registry._refuse",
                _REFUSAL_RECORD,
                "call,\n"
                "            refusal.disposition,\n"
                "            refusal.disposition is not Disposition.QUEUE_FULL,\n"
                "            None\n"
                "            if refusal.disposition is Disposition.QUEUE_FULL\n"
                "            else cut(refusal.message, ERROR_SNIPPET_CHARS),",
            ),
        ),
    ),
    Mutant(
        "queue-full-recorded-as-timeout",
        "LEDG-005",
        "A QUEUE_FULL call is recorded as TIMEOUT.",
        (
            line_patch(
                _REG,
                "Registry._refuse",
                _REFUSAL_RECORD,
                "call,\n"
                "            Disposition.TIMEOUT\n"
                "            if refusal.disposition is Disposition.QUEUE_FULL\n"
                "            else refusal.disposition,\n"
                "            True,\n"
                "            cut(refusal.message, ERROR_SNIPPET_CHARS),",
            ),
        ),
    ),
    Mutant(
        "execution-timeout-recorded-as-timeout",
        "LEDG-005",
        "An approved call whose tool ran past the execution timeout is recorded as TIMEOUT.",
        (
            line_patch(
                _REG,
                "Registry._govern",
                "ledger_id = self._record(call, disposition, result.is_error, snippet)",
                "ledger_id = self._record(\n"
                "            call,\n"
                "            Disposition.TIMEOUT\n"
                "            if result.is_error\n"
                '            and text.startswith(f"Tool {tool.name} timed out after")\n'
                "            else disposition,\n"
                "            result.is_error,\n"
                "            snippet,\n"
                "        )",
            ),
        ),
    ),
)
