"""Mutants that break the reference grammar (decision R1).

This module owns the broken reference hosts whose scanner, parser or JSON reader misreads a
reference: a marker let through, a body misparsed, an escape or an encoding missed, a string
left unread. Each entry is a :class:`~conformance.selftest.base.Mutant`; each transform takes
the original attribute of a ``reference_impl`` module or class and returns its broken
replacement. It changes behaviour only and never prints a value.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from conformance.selftest.base import Mutant

_REG = "reference_impl._registry"
_GRAMMAR = "reference_impl._grammar"
_PERCENT_BRACES: Final = re.compile("%7([bBdD])")


def _case_sensitive(original: Any) -> Any:
    import re

    return re.compile(original.pattern, original.flags & ~re.IGNORECASE)


def _literal_scan_only(original: Callable[[str], bool]) -> Callable[[str], bool]:
    from reference_impl._scan import MARKER_RE

    def has_marker(raw: str) -> bool:
        return "{{" in raw and MARKER_RE.search(raw) is not None

    return has_marker


def _keys_pass_through(original: type) -> type:
    class NoKeys(original):  # type: ignore[misc]
        def strings(self) -> Iterator[tuple[bool, int, int, str]]:
            for item in super().strings():
                if not item[0]:
                    yield item

    return NoKeys


def _surplus_braces_swallowed(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """Each reference also takes the surplus opening braces before it, as ``\\{+`` would."""
    from reference_impl._grammar import Occurrence

    @functools.wraps(original)
    def scan(text: str) -> Any:
        found, bad = original(text)
        widened = []
        for occurrence in found:
            start = occurrence.start
            while start > 0 and text[start - 1] == "{":
                start -= 1
            widened.append(Occurrence(occurrence.reference, start, occurrence.end))
        return widened, bad

    return scan


def _short_last_group(original: Any) -> Any:
    """The id pattern lets the last group have 11 hexadecimal digits as well as 12."""
    return re.compile(original.pattern.replace("{12}", "{11,12}"), original.flags)


def _id_case_kept(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """A reference keeps its id as the agent spelled it instead of lower-casing it."""
    from reference_impl._types import Reference

    @functools.wraps(original)
    def judge(body: str) -> Any:
        judged = original(body)
        if isinstance(judged, Reference):
            return Reference(body.partition(".")[0], judged.field)
        return judged

    return judge


def _field_case_folded(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """Field names are matched without regard to case, so ``.PASSWORD`` is accepted."""
    from reference_impl._grammar import REASON_BAD_FIELD
    from reference_impl._types import Field, Reference

    @functools.wraps(original)
    def judge(body: str) -> Any:
        judged = original(body)
        if judged != REASON_BAD_FIELD:
            return judged
        id_part, _dot, field_part = body.partition(".")
        try:
            return Reference(id_part.lower(), Field(field_part.lower()))
        except ValueError:
            return judged

    return judge


def _skipping(*reasons: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """The string scan steps over a malformed candidate with one of ``reasons`` and goes on."""

    def transform(original: Callable[[str], Any]) -> Callable[[str], Any]:
        from reference_impl._grammar import Malformed, Occurrence

        @functools.wraps(original)
        def scan(text: str) -> Any:
            found, bad = original(text)
            found = list(found)
            while bad is not None and bad.reason in reasons:
                resume = bad.offset + bad.length
                more, later = original(text[resume:])
                found += [
                    Occurrence(item.reference, item.start + resume, item.end + resume)
                    for item in more
                ]
                bad = (
                    None
                    if later is None
                    else Malformed(later.offset + resume, later.length, later.reason)
                )
            return found, bad

        return scan

    return transform


def _rescan_after_cut(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """The scan runs again over the string with its candidates cut out, joining their sides."""
    from reference_impl._grammar import Malformed, Occurrence

    @functools.wraps(original)
    def scan(text: str) -> Any:
        found, bad = original(text)
        if bad is not None or not found:
            return found, bad
        kept: list[int] = []  # where each character left after the cuts stood
        cursor = 0
        for occurrence in found:
            kept.extend(range(cursor, occurrence.start))
            cursor = occurrence.end
        kept.extend(range(cursor, len(text)))
        rest = "".join(text[index] for index in kept)
        joined, later = original(rest)
        if later is not None:
            return found, Malformed(kept[later.offset], later.length, later.reason)
        extra = [
            Occurrence(item.reference, kept[item.start], kept[item.end - 1] + 1) for item in joined
        ]
        return sorted([*found, *extra], key=lambda item: item.start), None

    return scan


def _top_level_only(original: type) -> type:
    """Only strings at the top level of the arguments (and keys) are looked at."""

    class TopLevelOnly(original):  # type: ignore[misc]
        def strings(self) -> Iterator[tuple[bool, int, int, str]]:
            for item in super().strings():
                if item[0] or len(self.stack) <= 1:
                    yield item

    return TopLevelOnly


def _scalars_as_text(original: Callable[..., Any]) -> Callable[..., Any]:
    """Substitution walks every leaf as text and writes numbers, booleans and null back as
    strings."""
    from reference_impl._arguments import ToolArguments

    def text_of(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: text_of(value) for key, value in node.items()}
        if isinstance(node, list):
            return [text_of(item) for item in node]
        if isinstance(node, str):
            return node
        return json.dumps(node)

    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        tree = json.loads(arguments.raw)
        rewritten = text_of(tree)
        if rewritten == tree:
            return arguments
        return ToolArguments(json.dumps(rewritten))

    return substitute


def _non_objects_pass(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """Arguments that are not a JSON object are passed on as if they held no reference."""
    from reference_impl._grammar import ParsedArguments
    from reference_impl._types import Refusal

    @functools.wraps(original)
    def parse(raw: str) -> Any:
        outcome = original(raw)
        if isinstance(outcome, Refusal) and outcome.reason == "not-an-object":
            return ParsedArguments(raw, (), ())
        return outcome

    return parse


def _invalid_json_parsed(original: Callable[[str], bool]) -> Callable[[str], bool]:
    """Argument text that is not JSON goes to the parser even without a marker, which refuses
    it."""

    @functools.wraps(original)
    def has_marker(raw: str) -> bool:
        if original(raw):
            return True
        try:
            json.loads(raw)
        except ValueError:
            return True
        return False

    return has_marker


def _lone_surrogates_rejected(original: Callable[..., Any]) -> Callable[..., Any]:
    """A string that decodes to a lone surrogate is judged not JSON, as a UTF-8-strict parser
    would."""
    from reference_impl import _grammar

    @functools.wraps(original)
    def decode(raw: str, quote: int) -> tuple[str, int]:
        text, end = original(raw, quote)
        if _grammar._LONE_SURROGATE_RE.search(text) is not None:
            raise _grammar._JSONSyntaxError(quote)
        return text, end

    return decode


def _array_items_not_unescaped(original: Callable[..., Any]) -> Callable[..., Any]:
    """Strings that are array items are judged as written, their \\u escapes not decoded."""

    @functools.wraps(original)
    def strings(self: Any) -> Iterator[tuple[bool, int, int, str]]:
        for is_key, start, end, text in original(self):
            in_array = bool(self.stack) and not self.stack[-1].is_object
            if not is_key and in_array and "\\u" in self.raw[start:end]:
                text = self.raw[start + 1 : end - 1]
            yield is_key, start, end, text

    return strings


def _record_members_as_fields(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """Member names of a vault record (website, tags) are taken as the password field."""
    from reference_impl._grammar import REASON_BAD_FIELD
    from reference_impl._types import Field, Reference

    @functools.wraps(original)
    def judge(body: str) -> Any:
        judged = original(body)
        id_part, _dot, field_part = body.partition(".")
        if judged == REASON_BAD_FIELD and field_part in ("website", "tags"):
            return Reference(id_part.lower(), Field.PASSWORD)
        return judged

    return judge


def _escape_after_letter_missed(original: Callable[[str], bool]) -> Callable[[str], bool]:
    """An escaped marker right after a letter is taken as part of a word and missed."""
    from reference_impl import _scan

    @functools.wraps(original)
    def marker_in(raw: str) -> bool:
        if _scan._LITERAL_FIRST_RE.search(raw) is not None:
            return True
        return any(
            original(raw[match.start() :])
            for match in _scan._ESCAPED_FIRST_RE.finditer(raw)
            if match.start() == 0 or not raw[match.start() - 1].isalpha()
        )

    return marker_in


def _percent_decoded(text: str) -> str:
    return _PERCENT_BRACES.sub(lambda m: "{" if m.group(1) in "bB" else "}", text)


def _percent_marker_scan(original: Callable[[str], bool]) -> Callable[[str], bool]:
    """The pre-scan also finds markers whose braces are percent-encoded."""

    @functools.wraps(original)
    def has_marker(raw: str) -> bool:
        return original(raw) or original(_percent_decoded(raw))

    return has_marker


def _percent_decoding_strings(original: Callable[..., Any]) -> Callable[..., Any]:
    """Each decoded string also has its percent-encoded braces decoded."""

    @functools.wraps(original)
    def decode(raw: str, quote: int) -> tuple[str, int]:
        text, end = original(raw, quote)
        return _percent_decoded(text), end

    return decode


def _escape_after_backslash_missed(original: Callable[[str], bool]) -> Callable[[str], bool]:
    """An escaped marker right after any backslash is taken as escaped text and missed."""
    from reference_impl import _scan

    @functools.wraps(original)
    def marker_in(raw: str) -> bool:
        if _scan._LITERAL_FIRST_RE.search(raw) is not None:
            return True
        return any(
            match.start() == 0 or raw[match.start() - 1] != "\\"
            for match in _scan._ESCAPED_FIRST_RE.finditer(raw)
        )

    return marker_in


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "case-sensitive-prefix",
        "GRAM-001",
        "Only the lower-case {{secret: prefix is a marker.",
        (
            ("reference_impl._scan", "MARKER_RE", _case_sensitive),
            ("reference_impl._grammar", "MARKER_RE", _case_sensitive),
            ("reference_impl._grammar", "_CANDIDATE_RE", _case_sensitive),
            ("reference_impl._grammar", "_UNTERMINATED_RE", _case_sensitive),
            ("reference_impl._sanitize", "MARKER_RE", _case_sensitive),
            ("reference_impl._sanitize", "_CANDIDATE_RE", _case_sensitive),
        ),
    ),
    Mutant(
        "escaped-marker-passes",
        "GRAM-012",
        "The pre-scan looks for literal markers only, so \\u-escaped markers pass through.",
        ((_REG, "has_marker", _literal_scan_only),),
    ),
    Mutant(
        "keys-pass-through",
        "GRAM-014",
        "A marker in an object key is ignored instead of refusing the call.",
        (("reference_impl._grammar", "_Walker", _keys_pass_through),),
    ),
    Mutant(
        "surplus-braces-swallowed",
        "GRAM-002",
        "Extra opening braces before a candidate are taken into the reference, not left as text.",
        ((_GRAMMAR, "scan_string", _surplus_braces_swallowed),),
    ),
    Mutant(
        "uuid-last-group-eleven",
        "GRAM-003",
        "The id pattern accepts 8-4-4-4-11 hexadecimal digits as a UUID.",
        ((_GRAMMAR, "_UUID_RE", _short_last_group),),
    ),
    Mutant(
        "id-case-kept",
        "GRAM-004",
        "Reference ids are not lower-cased, so differently cased spellings are other references.",
        ((_GRAMMAR, "judge_body", _id_case_kept),),
    ),
    Mutant(
        "upper-case-fields",
        "GRAM-005",
        "Field names are matched in any letter case, so .PASSWORD or .Notes is accepted.",
        ((_GRAMMAR, "judge_body", _field_case_folded),),
    ),
    Mutant(
        "malformed-body-skipped",
        "GRAM-008",
        "A candidate with a bad id or field is left as plain text instead of refusing the call.",
        (
            (
                _GRAMMAR,
                "scan_string",
                _skipping(
                    "the id is not a secret id (expected a UUID)",
                    "unknown field (expected one of password, username, notes)",
                ),
            ),
        ),
    ),
    Mutant(
        "unterminated-marker-skipped",
        "GRAM-009",
        "A marker that does not begin a candidate is left as plain text instead of refusing.",
        ((_GRAMMAR, "scan_string", _skipping("the reference is not terminated with }}")),),
        via="driver",
    ),
    Mutant(
        "rescan-after-cut",
        "GRAM-010",
        "Candidates are cut out and the string scanned again, so the text around a cut joins "
        "into a new marker.",
        ((_GRAMMAR, "scan_string", _rescan_after_cut),),
    ),
    Mutant(
        "nested-strings-ignored",
        "GRAM-011",
        "Only top-level string values are searched, so nested references pass as plain text.",
        ((_GRAMMAR, "_Walker", _top_level_only),),
    ),
    Mutant(
        "scalars-scanned-as-text",
        "GRAM-013",
        "Substitution treats every leaf as text, so numbers, true, false and null become strings.",
        ((_REG, "substitute", _scalars_as_text),),
        via="driver",
    ),
    Mutant(
        "non-object-passes",
        "GRAM-016",
        "Marker-bearing arguments that are not a JSON object reach the tool unrefused.",
        ((_GRAMMAR, "parse_arguments", _non_objects_pass),),
        via="driver",
    ),
    Mutant(
        "invalid-json-refused",
        "GRAM-017",
        "Argument text that is not JSON is refused even when it carries no marker.",
        ((_REG, "has_marker", _invalid_json_parsed),),
    ),
    Mutant(
        "lone-surrogate-not-json",
        "GRAM-020",
        "A string with an escaped lone surrogate is judged not JSON and the call refused.",
        ((_GRAMMAR, "_decode", _lone_surrogates_rejected),),
    ),
    Mutant(
        "array-item-escapes-kept",
        "GRAM-012",
        "Strings that are array items are scanned as written, so a \\u-escaped marker in an "
        "array item is not seen.",
        ((_GRAMMAR, "_Walker.strings", _array_items_not_unescaped),),
    ),
    Mutant(
        "percent-encoded-marker",
        "GRAM-040",
        "Percent-encoded braces (%7B%7Bsecret:) are decoded and make a marker.",
        (
            (_REG, "has_marker", _percent_marker_scan),
            (_GRAMMAR, "_decode", _percent_decoding_strings),
        ),
    ),
    Mutant(
        "escape-after-backslash-missed",
        "GRAM-012",
        "The pre-scan misses an escaped marker after an escaped backslash, so the call passes "
        "with its reference unresolved.",
        (("reference_impl._scan", "_marker_in", _escape_after_backslash_missed),),
    ),
    Mutant(
        "record-members-as-fields",
        "GRAM-005",
        "A body naming a vault record's website or tags as its field is read as the password.",
        ((_GRAMMAR, "judge_body", _record_members_as_fields),),
    ),
    Mutant(
        "escape-after-letter-missed",
        "GRAM-012",
        "The pre-scan misses an escaped marker right after a letter, so the call passes with "
        "its reference unresolved.",
        (("reference_impl._scan", "_marker_in", _escape_after_letter_missed),),
    ),
)
