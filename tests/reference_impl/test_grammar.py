"""Step [2], the grammar: candidates, bodies, fields, keys, document order and non-objects."""

from __future__ import annotations

import json

import pytest

from reference_impl import (
    MALFORMED_PREFIX,
    NOT_OBJECT_MESSAGE,
    REASON_BAD_FIELD,
    REASON_BAD_ID,
    REASON_KEY,
    REASON_UNTERMINATED,
    Disposition,
    Field,
    ParsedArguments,
    Reference,
    Refusal,
    judge_body,
    parse_arguments,
    scan_string,
)
from tests.reference_impl.support import ID_A, ID_B, ref

UPPER_A = ID_A.upper()


def parsed(raw: str) -> ParsedArguments:
    outcome = parse_arguments(raw)
    assert isinstance(outcome, ParsedArguments), getattr(outcome, "message", "")
    return outcome


def refused(raw: str) -> Refusal:
    outcome = parse_arguments(raw)
    assert isinstance(outcome, Refusal)
    return outcome


def names(raw: str) -> list[str]:
    return [reference.name for reference in parsed(raw).references]


# --- R1.1 candidates -------------------------------------------------------------------------


@pytest.mark.req("GRAM-001")
@pytest.mark.parametrize("word", ["secret", "SECRET", "Secret", "sEcReT"])
def test_the_word_secret_matches_in_any_ascii_case(word: str) -> None:
    """The marker's word is matched case-insensitively."""
    raw = json.dumps({"a": "{{" + word + ":" + ID_A + "}}"})
    assert names(raw) == [f"{ID_A}.password"]


@pytest.mark.req("GRAM-001", "GRAM-005")
def test_field_names_are_lower_case_only() -> None:
    """Only the lower-case wire names are fields."""
    outcome = refused(json.dumps({"a": ref(ID_A, "PASSWORD")}))
    assert outcome.message.endswith(REASON_BAD_FIELD)


@pytest.mark.req("GRAM-002")
def test_candidates_are_taken_left_to_right_without_overlap() -> None:
    """Several candidates in one string are each found once, in order."""
    first, second, third = ref(ID_A), ref(ID_B, "username"), ref(ID_A, "notes")
    found, bad = scan_string(first + second + "x" + third)
    assert bad is None
    assert [(o.reference.name, o.start, o.end) for o in found] == [
        (f"{ID_A}.password", 0, len(first)),
        (f"{ID_B}.username", len(first), len(first + second)),
        (f"{ID_A}.notes", len(first + second) + 1, len(first + second + "x" + third)),
    ]


@pytest.mark.req("GRAM-002")
def test_extra_braces_around_a_candidate_stay_literal() -> None:
    """In {{{{secret:ID}}}} the inner candidate is the reference."""
    text = "{{" + ref(ID_A) + "}}"
    found, bad = scan_string(text)
    assert bad is None
    assert [(o.start, o.end) for o in found] == [(2, 2 + len(ref(ID_A)))]


# --- R1.2 bodies -------------------------------------------------------------------------------


@pytest.mark.req("GRAM-003", "GRAM-004", "GRAM-005")
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(ID_A, Reference(ID_A, Field.PASSWORD), id="no-field"),
        pytest.param(ID_A + ".password", Reference(ID_A, Field.PASSWORD), id="password"),
        pytest.param(ID_A + ".username", Reference(ID_A, Field.USERNAME), id="username"),
        pytest.param(ID_A + ".notes", Reference(ID_A, Field.NOTES), id="notes"),
        pytest.param(UPPER_A, Reference(ID_A, Field.PASSWORD), id="upper-case-id"),
        pytest.param(UPPER_A + ".notes", Reference(ID_A, Field.NOTES), id="upper-id-notes"),
    ],
)
def test_valid_bodies(body: str, expected: Reference) -> None:
    """A UUID in any case, optionally with a lower-case field, is a reference."""
    assert judge_body(body) == expected


@pytest.mark.req("GRAM-004")
def test_spellings_of_one_reference_are_one_reference() -> None:
    """No field and .password, and both cases of an id, are the same reference."""
    raw = json.dumps({"a": ref(ID_A), "b": ref(ID_A, "password"), "c": ref(UPPER_A)})
    assert names(raw) == [f"{ID_A}.password"]
    assert Reference(ID_A, Field.NOTES).name == f"{ID_A}.notes"


@pytest.mark.req("GRAM-003", "GRAM-008")
@pytest.mark.parametrize(
    "body",
    [
        pytest.param("not-a-uuid", id="words"),
        pytest.param(ID_A[:-1], id="short-last-group"),
        pytest.param(ID_A + "0", id="long-last-group"),
        pytest.param(ID_A.replace("-", ""), id="no-dashes"),
        pytest.param("g" + ID_A[1:], id="non-hex"),
        pytest.param(" " + ID_A, id="leading-space"),
        pytest.param("", id="empty"),
        pytest.param("\uff16" + ID_A[1:], id="fullwidth-digit"),
    ],
)
def test_bad_ids(body: str) -> None:
    """Anything but 8-4-4-4-12 hexadecimal digits is a bad id."""
    assert judge_body(body) == REASON_BAD_ID


@pytest.mark.req("GRAM-006")
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("not-a-uuid.totp", REASON_BAD_ID, id="bad-id-and-field"),
        pytest.param(ID_A + ":password", REASON_BAD_ID, id="colon-separator"),
        pytest.param(".password", REASON_BAD_ID, id="no-id"),
        pytest.param(ID_A + ".password.x", REASON_BAD_FIELD, id="two-dots"),
        pytest.param(ID_A + ".", REASON_BAD_FIELD, id="empty-field"),
        pytest.param(ID_A + "..password", REASON_BAD_FIELD, id="double-dot"),
        pytest.param(ID_A + ".totp", REASON_BAD_FIELD, id="totp"),
        pytest.param(ID_A + ".Password", REASON_BAD_FIELD, id="capitalised-field"),
    ],
)
def test_body_splits_at_first_dot_and_judges_id_first(body: str, reason: str) -> None:
    """The id is judged before the field (decisions R1.2)."""
    assert judge_body(body) == reason


# --- R1.3 non-ASCII look-alikes ------------------------------------------------------------------


@pytest.mark.req("GRAM-007")
@pytest.mark.parametrize(
    "word",
    [
        pytest.param("\u017fecret", id="long-s"),
        pytest.param("s\u0435cret", id="cyrillic-e"),
        pytest.param("secre\u1e6d", id="t-dot-below"),
    ],
)
def test_non_ascii_look_alikes_are_literal_text(word: str) -> None:
    """This host passes a look-alike marker through as literal text (R1.3, choice "literal")."""
    text = "{{" + word + ":" + ID_A + "}}"
    assert scan_string(text) == ([], None)
    assert parsed(json.dumps({"a": text})).references == ()


# --- R1.4 malformed and unterminated ---------------------------------------------------------


@pytest.mark.req("GRAM-009", "MSG-001")
@pytest.mark.parametrize(
    ("text", "length"),
    [
        pytest.param("{{secret:" + ID_A, 9 + 36, id="no-closing-braces"),
        pytest.param("{{secret:" + ID_A + "}", 9 + 37, id="one-closing-brace"),
        pytest.param("{{secret:{" + ID_A + "}}}", 9, id="brace-in-body"),
        pytest.param("{{secret:", 9, id="bare-marker"),
        pytest.param("{{secret:" + ID_A + "} }", 9 + 37, id="split-closing-braces"),
    ],
)
def test_unterminated_markers_refuse(text: str, length: int) -> None:
    """A marker that does not begin a candidate refuses the call, located and reasoned."""
    outcome = refused(json.dumps({"a": "xy" + text}))
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED
    assert outcome.message == (
        f"{MALFORMED_PREFIX} at /a offset 2 length {length}: {REASON_UNTERMINATED}"
    )


@pytest.mark.req("GRAM-008", "MSG-001", "MSG-013")
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("hunter2-canary", REASON_BAD_ID, id="bad-id"),
        pytest.param(ID_A + ".totp", REASON_BAD_FIELD, id="bad-field"),
    ],
)
def test_malformed_candidate_refuses_whole_call(body: str, reason: str) -> None:
    """One malformed candidate refuses the call even beside valid references."""
    candidate = "{{secret:" + body + "}}"
    raw = json.dumps({"ok": ref(ID_B), "bad": ["x", "pre " + candidate]})
    outcome = refused(raw)
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED
    assert outcome.message == (
        f"{MALFORMED_PREFIX} at /bad/1 offset 4 length {len(candidate)}: {reason}"
    )


@pytest.mark.req("GRAM-010")
def test_taking_a_candidate_out_creates_no_marker() -> None:
    """{{{{secret:ID}}secret:x holds one reference and nothing malformed."""
    found, bad = scan_string("{{" + ref(ID_A) + "secret:x")
    assert bad is None
    assert [o.reference.name for o in found] == [f"{ID_A}.password"]


@pytest.mark.req("GRAM-010")
def test_a_candidate_split_by_a_reference_is_not_joined() -> None:
    """Text on both sides of a reference never combines into a new marker."""
    found, bad = scan_string("{" + ref(ID_A) + "{secret:" + ID_B + "}}")
    assert bad is None
    assert [o.reference.id for o in found] == [ID_A]


# --- R1.5 where references live ------------------------------------------------------------------


@pytest.mark.req("GRAM-011")
def test_references_are_found_at_any_depth() -> None:
    """Nested objects and arrays are walked, and the sites come in document order."""
    raw = json.dumps({"a": {"b": [1, {"c": [ref(ID_B)]}]}, "d": ["x", ref(ID_A, "notes")]})
    outcome = parsed(raw)
    assert [r.name for r in outcome.references] == [f"{ID_B}.password", f"{ID_A}.notes"]
    assert [site.text for site in outcome.sites] == [ref(ID_B), ref(ID_A, "notes")]


@pytest.mark.req("GRAM-012")
@pytest.mark.parametrize(
    "escaped",
    [
        pytest.param("\\u007b\\u007bsecret:", id="braces"),
        pytest.param("{{\\u0053ECRET:", id="letter"),
        pytest.param("\\u007B\\u007B\\u0073\\u0065\\u0063\\u0072\\u0065\\u0074\\u003a", id="all"),
    ],
)
def test_u_escaped_markers_are_markers(escaped: str) -> None:
    """A marker written with \\u escapes is found after unescaping."""
    raw = '{"a": "' + escaped + ID_A + '}}"}'
    assert names(raw) == [f"{ID_A}.password"]
    bad = '{"a": "' + escaped + 'nope}}"}'
    assert refused(bad).message.endswith(REASON_BAD_ID)


@pytest.mark.req("GRAM-012")
def test_an_escaped_backslash_does_not_make_an_escape() -> None:
    """\\\\u007b is a backslash and text, not a brace."""
    raw = '{"a": "\\\\u007b\\\\u007bsecret:nope}}"}'
    assert parsed(raw).references == ()


@pytest.mark.req("GRAM-013", "SUBST-002")
def test_numbers_booleans_and_null_never_carry_a_reference() -> None:
    """Only strings are sites; scalars keep their written text."""
    raw = '{"n": 1.50, "e": -2E+3, "t": true, "f": false, "z": null, "s": "' + ref(ID_A) + '"}'
    outcome = parsed(raw)
    assert len(outcome.sites) == 1
    assert raw[outcome.sites[0].start : outcome.sites[0].end] == '"' + ref(ID_A) + '"'


# --- R1.6 keys ---------------------------------------------------------------------------------


@pytest.mark.req("GRAM-014", "MSG-002", "MSG-014")
@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        pytest.param('{"{{secret:' + ID_A + '}}": 1}', "", id="top-level"),
        pytest.param('{"a": {"x{{SECRET:nope": 1}}', "/a", id="nested-unterminated"),
        pytest.param('{"a": [0, {"\\u007b\\u007bsecret:k}}": 1}]}', "/a/1", id="escaped"),
        pytest.param('{"a/b": {"~{{Secret:k}}": 1}}', "/a~1b", id="escaped-pointer"),
    ],
)
def test_a_marker_in_a_key_refuses(raw: str, pointer: str) -> None:
    """A key marker refuses, and the pointer names the object holding the key."""
    outcome = refused(raw)
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED
    assert outcome.message.startswith(f"{MALFORMED_PREFIX} at {pointer} offset ")
    assert outcome.message.endswith(REASON_KEY)
    assert "secret:" not in outcome.message.lower()


@pytest.mark.req("GRAM-014")
def test_valid_reference_in_a_key_still_refuses() -> None:
    """Keys are never substituted, even when the key is a valid reference."""
    outcome = refused(json.dumps({ref(ID_A): ref(ID_B)}))
    assert outcome.message.endswith(REASON_KEY)


# --- R1.7 document order -----------------------------------------------------------------------


@pytest.mark.req("GRAM-015")
@pytest.mark.parametrize(
    ("raw", "pointer", "reason"),
    [
        pytest.param(
            '{"a": {"b": "{{secret:x}}"}, "c": "{{secret:' + ID_A + '.totp}}"}',
            "/a/b",
            REASON_BAD_ID,
            id="depth-first",
        ),
        pytest.param(
            '{"z": "{{secret:' + ID_A + '.totp}}", "a": "{{secret:x}}"}',
            "/z",
            REASON_BAD_FIELD,
            id="members-as-written",
        ),
        pytest.param(
            '{"a": ["ok", "{{secret:' + ID_A + '", "{{secret:x}}"]}',
            "/a/1",
            REASON_UNTERMINATED,
            id="items-in-order",
        ),
        pytest.param('{"{{secret:k}}": "{{secret:x}}"}', "", REASON_KEY, id="key-before-value"),
        pytest.param(
            '{"a": "{{secret:' + ID_A + '.totp}} {{secret:x}}"}',
            "/a",
            REASON_BAD_FIELD,
            id="position-in-string",
        ),
    ],
)
def test_first_problem_in_document_order_is_reported(raw: str, pointer: str, reason: str) -> None:
    """With several malformed candidates, the first in document order is reported."""
    outcome = refused(raw)
    assert outcome.message.startswith(f"{MALFORMED_PREFIX} at {pointer} offset")
    assert outcome.message.endswith(reason)


@pytest.mark.req("MSG-013")
def test_offsets_and_lengths_count_code_points() -> None:
    """An astral character before a candidate counts once, not as two UTF-16 units."""
    outcome = refused('{"a": "\\ud83d\\ude00\u00e9{{secret:nope}}"}')
    assert outcome.message == f"{MALFORMED_PREFIX} at /a offset 2 length 15: {REASON_BAD_ID}"


@pytest.mark.req("MSG-012")
@pytest.mark.parametrize(
    "candidate",
    [
        pytest.param("{{secret:hunter2-canary}}", id="bad-id"),
        pytest.param("{{secret:" + ID_A + ".hunter2canary}}", id="bad-field"),
        pytest.param("{{secret:hunter2-canary", id="unterminated"),
        pytest.param("{{secret:{{hunter2canary}}}}", id="nested-braces"),
    ],
)
def test_refusal_never_quotes_candidate_text(candidate: str) -> None:
    """The message has location and reason, never the candidate's text."""
    message = refused(json.dumps({"a": candidate})).message
    found = "hunter2" in message or (ID_A in message)
    assert not found


# --- R1.8 arguments that are not an object ------------------------------------------------------


@pytest.mark.req("GRAM-016", "GRAM-018")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('["' + ref(ID_A) + '"]', id="array"),
        pytest.param('"' + ref(ID_A) + '"', id="string"),
        pytest.param('{"a": "' + ref(ID_A) + '"', id="truncated-object"),
        pytest.param("use " + ref(ID_A), id="plain-text"),
        pytest.param("\\u007b\\u007bsecret:x", id="escaped-in-text"),
        pytest.param('["{{secret:x}}"]', id="array-with-malformed"),
        pytest.param('[{"{{secret:k}}": 1}]', id="array-with-key"),
        pytest.param('{"a": "{{secret:x}}", }', id="malformed-then-syntax-error"),
    ],
)
def test_marker_in_non_object_arguments_refuses(raw: str) -> None:
    """Non-object arguments with a marker are refused, whatever a candidate would say."""
    outcome = refused(raw)
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED
    assert outcome.message == NOT_OBJECT_MESSAGE


@pytest.mark.req("GRAM-019")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"n": NaN, "a": "' + ref(ID_A) + '"}', id="nan"),
        pytest.param('{"n": 01, "a": "' + ref(ID_A) + '"}', id="leading-zero"),
        pytest.param('{"a": "' + ref(ID_A) + '",}', id="trailing-comma"),
        pytest.param("{'a': '" + ref(ID_A) + "'}", id="single-quotes"),
        pytest.param('{"a": "' + ref(ID_A) + '"} // note', id="comment"),
        pytest.param('{"a": "\t' + ref(ID_A) + '"}', id="raw-control"),
        pytest.param('\ufeff{"a": "' + ref(ID_A) + '"}', id="byte-order-mark"),
    ],
)
def test_json_extensions_are_refused(raw: str) -> None:
    """This host reads RFC 8259 strictly: text valid only under an extension is refused."""
    assert refused(raw).message == NOT_OBJECT_MESSAGE


@pytest.mark.req("GRAM-019")
def test_duplicate_keys_are_resolved() -> None:
    """This host resolves objects with duplicate keys; every duplicate is a site."""
    outcome = parsed('{"a": "' + ref(ID_A) + '", "a": "' + ref(ID_B) + '"}')
    assert [r.id for r in outcome.references] == [ID_A, ID_B]
    assert len(outcome.sites) == 2


@pytest.mark.req("GRAM-017")
def test_flagged_text_without_a_marker_parses_to_no_reference() -> None:
    """A "maybe" from the scan that holds no marker in any string parses to nothing."""
    outcome = parsed('{"a": "\\\\u007b\\\\u007bsecret:"}')
    assert outcome.references == ()
    assert outcome.sites == ()
