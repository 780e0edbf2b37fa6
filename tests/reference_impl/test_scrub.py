"""Step [12], the scrubber: four forms, the 8-code-point floor, one leftmost-longest pass."""

from __future__ import annotations

import pytest

from reference_impl import (
    Field,
    Reference,
    Scrubber,
    SecretValue,
    form_encode,
    forms,
    json_escape,
    placeholder,
)
from tests.reference_impl.support import ID_A, ID_B

REF_A = Reference(ID_A, Field.PASSWORD)
REF_B = Reference(ID_B, Field.NOTES)


def scrubber(*pairs: tuple[Reference, str]) -> Scrubber:
    return Scrubber((reference, SecretValue(value)) for reference, value in pairs)


@pytest.mark.req("SCRUB-004")
@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        pytest.param('a"b\\c', 'a\\"b\\\\c', id="quote-backslash"),
        pytest.param("\b\f\n\r\t", "\\b\\f\\n\\r\\t", id="short-escapes"),
        pytest.param("\x00\x01\x1f", "\\u0000\\u0001\\u001f", id="other-controls-lower-hex"),
        pytest.param("/\u00e9\u4e2d\U0001f600\x7f", "/\u00e9\u4e2d\U0001f600\x7f", id="kept"),
    ],
)
def test_form_b_is_the_json_string_escape(value: str, escaped: str) -> None:
    """Form b escapes exactly what R5.2b lists, and nothing else."""
    assert json_escape(value) == escaped


@pytest.mark.req("SCRUB-005")
@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        pytest.param("AZaz09.-*_", "AZaz09.-*_", id="kept"),
        pytest.param("a b", "a+b", id="space-plus"),
        pytest.param("~!'()+&=/", "%7E%21%27%28%29%2B%26%3D%2F", id="reserved-upper-hex"),
        pytest.param("\u00e9\u4e2d", "%C3%A9%E4%B8%AD", id="utf8-bytes"),
        pytest.param("\U0001f600", "%F0%9F%98%80", id="astral"),
    ],
)
def test_form_c_is_url_form_encoding(value: str, encoded: str) -> None:
    """Form c encodes the UTF-8 bytes with + for space and upper-case %HH."""
    assert form_encode(value) == encoded


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006")
def test_forms_are_a_to_d_without_repeats() -> None:
    """The four forms come in order, each only when it differs from the earlier ones."""
    assert forms('pa ss"w\u00e9rd') == (
        'pa ss"w\u00e9rd',
        'pa ss\\"w\u00e9rd',
        "pa+ss%22w%C3%A9rd",
        "pa%20ss%22w%C3%A9rd",
    )
    assert forms("plainvalue123") == ("plainvalue123",)
    assert forms("two words") == ("two words", "two+words", "two%20words")


@pytest.mark.req("SCRUB-001")
def test_values_under_eight_code_points_have_no_forms() -> None:
    """The floor is 8 code points: 7 is never scrubbed, 8 is."""
    assert forms("1234567") == ()
    assert forms("12345678") == ("12345678",)
    text = "1234567 and 1234567"
    assert scrubber((REF_A, "1234567")).scrub(text) == text


@pytest.mark.req("SCRUB-002")
def test_the_floor_counts_code_points_not_utf16_units() -> None:
    """Four astral characters are 8 UTF-16 units but 4 code points: this host keeps them."""
    value = "\U0001f600\U0001f601\U0001f602\U0001f603"
    assert len(value.encode("utf-16-le")) // 2 == 8
    assert forms(value) == ()


@pytest.mark.req("SCRUB-007", "SCRUB-010")
def test_every_form_is_replaced_by_the_placeholder() -> None:
    """Each occurrence of each form becomes [secret:<id>.<field>]."""
    value = 'my "secret" value'
    text = " | ".join(forms(value))
    out = scrubber((REF_A, value)).scrub(text)
    tag = f"[secret:{ID_A}.password]"
    assert placeholder(REF_A) == tag
    assert out == " | ".join([tag] * 4)


@pytest.mark.req("SCRUB-008")
def test_shared_value_is_named_by_first_reference() -> None:
    """When two references share a value, the first in order of use names it."""
    out = scrubber((REF_B, "shared-value-1"), (REF_A, "shared-value-1")).scrub("shared-value-1")
    assert out == placeholder(REF_B)


@pytest.mark.req("SCRUB-009")
def test_leftmost_match_wins_then_longest() -> None:
    """Matches are taken leftmost first, and the longest at one position."""
    shorter, longer = "abcdefgh", "abcdefghij"
    s = scrubber((REF_A, shorter), (REF_B, longer))
    assert s.scrub("xx abcdefghij abcdefgh") == (f"xx {placeholder(REF_B)} {placeholder(REF_A)}")


@pytest.mark.req("SCRUB-009")
def test_overlapping_values_leave_the_right_fragment() -> None:
    """After the leftmost match, an overlapping later match is not taken."""
    s = scrubber((REF_A, "abcdefgh12"), (REF_B, "gh12345678"))
    assert s.scrub("abcdefgh12345678 gh12345678") == (
        f"{placeholder(REF_A)}345678 {placeholder(REF_B)}"
    )


@pytest.mark.req("SCRUB-009")
def test_placeholders_are_never_rescanned() -> None:
    """One pass: a value found inside a placeholder just written is left alone."""
    inside = "secret:" + ID_A[:8]
    s = scrubber((REF_A, "first-long-value"), (REF_B, inside))
    out = s.scrub("first-long-value")
    assert out == placeholder(REF_A)


@pytest.mark.req("SCRUB-009")
def test_adjacent_and_repeated_occurrences() -> None:
    """Back-to-back occurrences are each replaced, with nothing left between them."""
    value = "repeat-me"
    out = scrubber((REF_A, value)).scrub(value * 3 + "!" + value)
    tag = placeholder(REF_A)
    assert out == tag * 3 + "!" + tag


@pytest.mark.req("SCRUB-001")
def test_a_scrubber_without_values_changes_nothing() -> None:
    """No resolved value (or only short ones) means no work."""
    assert not scrubber()
    assert not scrubber((REF_A, "short"))
    assert scrubber((REF_A, "long enough"))


@pytest.mark.req("SCRUB-003")
def test_lone_surrogates_have_forms() -> None:
    """A value holding a lone surrogate still has every form, none raising."""
    value = "abc\ud800defgh ij"
    found = forms(value)
    assert found[0] == value
    assert "%ED%A0%80" in found[2]
    assert scrubber((REF_A, value)).scrub("<" + value + ">") == "<" + placeholder(REF_A) + ">"


@pytest.mark.req("SCRUB-015")
def test_transformed_values_are_beyond_the_scrubber() -> None:
    """Base64, hex, lower-case %hh, \\u escapes and double encoding pass: the design's boundary,
    which the conformance report lists as hardening, never as failure."""
    import base64
    from urllib.parse import quote

    value = "p\u00e4ss w\u00f6rd/1"
    transformed = {
        "base64": base64.b64encode(value.encode()).decode(),
        "hex": value.encode().hex(),
        "lower-hex": form_encode(value).lower(),
        "u-escape": json_escape(value).replace("\u00e4", "\\u00e4"),
        "double": quote(quote(value)),
    }
    s = scrubber((REF_A, value))
    kept = {name for name, text in transformed.items() if s.scrub(text) == text}
    assert kept == set(transformed)
    assert s.scrub(value) == placeholder(REF_A)
