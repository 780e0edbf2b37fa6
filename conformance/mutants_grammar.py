"""Mutants that break the grammar, refusal-message and ordering requirements (decisions R1, R2).

Each entry is a :class:`conformance.mutant_base.Mutant`; :mod:`conformance.mutants` gathers
this catalog with the others. Each transform below takes the original attribute of a
``reference_impl`` module or class and returns its broken replacement. A mutant changes
behaviour only; none may print a value.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

from conformance.mutant_base import Mutant

_local = threading.local()

_GRAMMAR = "reference_impl._grammar"
_RESOLVE = "reference_impl._resolve"
_REG = "reference_impl._registry"


# --- R1 grammar -------------------------------------------------------------------------------


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


# --- R2 messages and ordering -----------------------------------------------------------------


def _prefix_for(*, keys: bool, prefix: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Malformed-reference refusals in keys (or, with ``keys`` false, in values) begin with
    ``prefix`` instead of the ruling's words."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._grammar import MALFORMED_PREFIX

        @functools.wraps(original)
        def refuse(path: Any, bad: Any, requirement: str) -> Any:
            refusal = original(path, bad, requirement)
            if (requirement == "GRAM-014") is keys:
                message = refusal.message.replace(MALFORMED_PREFIX, prefix, 1)
                refusal = dataclasses.replace(refusal, message=message)
            return refusal

        return refuse

    return transform


def _constant(value: Any) -> Callable[[Any], Any]:
    """The attribute becomes ``value``."""
    return lambda _original: value


def _prepass_disposition(reason: str, disposition: str) -> Callable[..., Any]:
    """A pre-pass refusal with ``reason`` ends with another disposition."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Disposition

        @functools.wraps(original)
        def prepass(self: Any, call: Any) -> Any:
            refusal = original(self, call)
            if refusal is not None and refusal.reason == reason:
                refusal = dataclasses.replace(refusal, disposition=Disposition[disposition])
            return refusal

        return prepass

    return transform


def _resolution_message(reason: str, rewrite: Callable[[str], str]) -> Callable[..., Any]:
    """A resolution refusal with ``reason`` gets its message rewritten."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        from reference_impl._types import Refusal

        @functools.wraps(original)
        def resolve(vault: Any, references: Any) -> Any:
            found = original(vault, references)
            if isinstance(found, Refusal) and found.reason == reason:
                found = dataclasses.replace(found, message=rewrite(found.message))
            return found

        return resolve

    return transform


def _semicolon_list(message: str) -> str:
    prefix = "no secret with id "
    return prefix + "; ".join(message[len(prefix) :].split(", "))


def _remember_vault_error(original: Callable[..., Any]) -> Callable[..., Any]:
    """The vault walk keeps the exception that stopped it."""

    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        _local.vault_error = None
        try:
            return original(vault, wanted)
        except Exception as error:
            _local.vault_error = error
            raise

    return walk


def _failure_echoed(original: Callable[[str], Any]) -> Callable[[str], Any]:
    """The vault-failure refusal quotes the exception itself rather than its kind."""

    @functools.wraps(original)
    def failure(kind: str) -> Any:
        error = getattr(_local, "vault_error", None)
        return original(repr(error) if error is not None else kind)

    return failure


def _remember_found(original: Callable[..., Any]) -> Callable[..., Any]:
    """The vault walk keeps the records it found."""

    @functools.wraps(original)
    def walk(vault: Any, wanted: set[str]) -> Any:
        found = original(vault, wanted)
        _local.found = found
        return found

    return walk


def _empty_field_deferred(original: Callable[..., Any]) -> Callable[..., Any]:
    """An empty field is not refused at resolution; its refusal waits for the prompt."""
    from reference_impl._types import Refusal

    @functools.wraps(original)
    def resolve(vault: Any, references: Any) -> Any:
        _local.deferred = None
        _local.found = {}
        outcome = original(vault, references)
        if not isinstance(outcome, Refusal) or outcome.reason != "empty-field":
            return outcome
        records = tuple(_local.found[reference.id] for reference in references)
        pairs = tuple(
            (reference, record.value(reference.field))
            for reference, record in zip(references, records, strict=True)
        )
        _local.deferred = outcome
        return pairs, records

    return resolve


def _refuse_after_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """A refusal left over from resolution is given once the operator has answered."""

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        answered = original(self, call, records)
        deferred = getattr(_local, "deferred", None)
        _local.deferred = None
        return deferred if deferred is not None else answered

    return approve


def _ledger_at_prompt(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger record is written as the prompt opens, before the tool has run."""
    from reference_impl._types import Disposition

    @functools.wraps(original)
    def approve(self: Any, call: Any, records: Any) -> Any:
        self._record(call, Disposition.APPROVED_ONCE, False, None)
        _local.recorded = call.id
        return original(self, call, records)

    return approve


def _record_once(original: Callable[..., Any]) -> Callable[..., Any]:
    """A call whose record was written early is not recorded again when it ends."""

    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if getattr(_local, "recorded", None) == call.id:
            _local.recorded = None
            return call.id
        return original(self, call, *args)

    return record


# --- encodings and positions (generated vectors) ----------------------------------------------


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


def _redaction_stops_at_first_brace(original: Callable[[str, int], int]) -> Callable[..., int]:
    """A malformed candidate's redaction ends at the first ``}``, balanced or not."""

    @functools.wraps(original)
    def redaction_end(text: str, body_start: int) -> int:
        close = text.find("}", body_start)
        if close < 0:
            return len(text)
        return close + 2 if text.startswith("}", close + 1) else close + 1

    return redaction_end


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


_PERCENT_BRACES: Final = re.compile("%7([bBdD])")


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
        "malformed-prefix-wrong",
        "MSG-001",
        "A malformed candidate's refusal begins 'Invalid secret reference'.",
        (
            (
                _GRAMMAR,
                "_refuse_malformed",
                _prefix_for(keys=False, prefix="Invalid secret reference"),
            ),
        ),
    ),
    Mutant(
        "key-prefix-wrong",
        "MSG-002",
        "A reference in a key is refused with a message beginning 'Misplaced secret reference'.",
        (
            (
                _GRAMMAR,
                "_refuse_malformed",
                _prefix_for(keys=True, prefix="Misplaced secret reference"),
            ),
        ),
    ),
    Mutant(
        "permission-message-wrong",
        "MSG-004",
        "A user without secret.read is refused with a message of the host's own wording.",
        ((_REG, "NO_PERMISSION_MESSAGE", _constant("You may not use secret references")),),
        via="driver",
    ),
    Mutant(
        "deny-as-forbidden",
        "MSG-005",
        "A tool or provider DENY of a secret-bearing call ends as SECRET_FORBIDDEN, not "
        "POLICY_DENIED.",
        ((_REG, "Registry._prepass", _prepass_disposition("policy-deny", "SECRET_FORBIDDEN")),),
        via="driver",
    ),
    Mutant(
        "bearing-deny-as-policy",
        "MSG-006",
        "secretBearingCalls DENY ends the call as POLICY_DENIED, not SECRET_FORBIDDEN.",
        ((_REG, "Registry._prepass", _prepass_disposition("bearing-denied", "POLICY_DENIED")),),
        via="driver",
    ),
    Mutant(
        "unknown-ids-semicolons",
        "MSG-007",
        "Unknown ids are listed joined by '; ' instead of ', '.",
        ((_REG, "resolve", _resolution_message("unknown-id", _semicolon_list)),),
        via="driver",
    ),
    Mutant(
        "empty-field-message",
        "MSG-008",
        "An empty field is refused as 'secret <id> has an empty <field>'.",
        (
            (
                _REG,
                "resolve",
                _resolution_message(
                    "empty-field", lambda message: message.replace(" has no ", " has an empty ", 1)
                ),
            ),
        ),
    ),
    Mutant(
        "vault-error-echoed",
        "MSG-009",
        "A vault failure's refusal quotes the exception itself instead of its kind.",
        (
            (_RESOLVE, "_walk", _remember_vault_error),
            (_RESOLVE, "_vault_failure", _failure_echoed),
        ),
        via="driver",
    ),
    Mutant(
        "no-vault-message",
        "MSG-010",
        "A host without a vault refuses with a message of its own wording.",
        ((_RESOLVE, "NO_VAULT_MESSAGE", _constant("This host has no secret vault")),),
    ),
    Mutant(
        "empty-field-after-prompt",
        "ORD-003",
        "An empty field is refused only after the operator has answered the prompt.",
        (
            (_RESOLVE, "_walk", _remember_found),
            (_REG, "resolve", _empty_field_deferred),
            (_REG, "Registry._approve", _refuse_after_prompt),
        ),
        via="driver",
    ),
    Mutant(
        "ledger-at-prompt",
        "ORD-005",
        "The ledger record is written as the prompt opens, before the tool runs.",
        (
            (_REG, "Registry._approve", _ledger_at_prompt),
            (_REG, "Registry._record", _record_once),
        ),
        via="driver",
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
        "redaction-stops-at-first-brace",
        "LEDG-007",
        "sanitizedArgs redacts a malformed candidate only up to its first }, so text after "
        "balanced inner braces stays visible.",
        (("reference_impl._sanitize", "_redaction_end", _redaction_stops_at_first_brace),),
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
