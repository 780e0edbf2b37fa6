"""The canary leak detector: its form oracles, its canaries, and its sweep of every surface.

The detector is the suite's own model of leaking, so these tests pin it against hand-computed
forms and the scrub vectors, and show that a value planted in each form on each surface is
found and named by surface and form, never by its text.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import vectors
from conformance.canary import (
    CHARACTER_CLASSES,
    CallRecord,
    Detector,
    Guarded,
    Kind,
    Mint,
    Surface,
    hardening_forms,
    issued_canaries,
    json_escape,
    required_forms,
    url_form,
)
from conformance.host import LogRecord, Observation


def observation(**surfaces: object) -> Observation:
    """Return an observation with empty surfaces except those given."""
    fields: dict[str, object] = {
        "ledger_bytes": b"",
        "log_records": (),
        "approval_requests": (),
        "receipts": (),
        "vault_reads": (),
        "printed": "",
    }
    fields.update(surfaces)
    return Observation(**fields)  # type: ignore[arg-type]


@pytest.mark.req("SCRUB-004")
def test_json_escape_by_hand() -> None:
    """Form b escapes quote, backslash and controls, and keeps slash and non-ASCII."""
    assert json_escape('a"b\\c/d\n\t\x01é') == 'a\\"b\\\\c/d\\n\\t\\u0001é'


@pytest.mark.req("SCRUB-004", "SCRUB-005")
def test_lone_surrogate_forms_by_hand() -> None:
    """Form b writes a lone surrogate as a lower-case \\udxxx escape; form c encodes its WTF-8
    bytes."""
    assert json_escape("a\ud800b\udfff") == "a\\ud800b\\udfff"
    assert url_form("a\ud800 b") == "a%ED%A0%80+b"


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006")
def test_class_canaries_hold_one_character_of_every_class() -> None:
    """A CLASSES canary holds a character of each class, so its four forms all differ; SPECIAL
    holds a star, a tilde and a space."""
    mint = Mint()
    for _ in range(20):
        value = mint.canary(Kind.CLASSES).value
        for name, chars in CHARACTER_CLASSES.items():
            assert any(char in value for char in chars), name
        assert list(required_forms(value)) == ["a", "b", "c", "d"]
    special = mint.canary(Kind.SPECIAL).value
    assert {"*", "~", " "} <= set(special)
    assert list(required_forms(special)) == ["a", "b", "c", "d"]


@pytest.mark.req("SCRUB-005", "SCRUB-006")
def test_url_forms_by_hand() -> None:
    """Forms c and d encode UTF-8 bytes, keep the unreserved set, and differ only on spaces."""
    forms = required_forms("a b*-._~é+")
    assert forms["c"] == "a+b*-._%7E%C3%A9%2B"
    assert forms["d"] == "a%20b*-._%7E%C3%A9%2B"
    assert url_form("é", lower_hex=True) == "%c3%a9"


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006")
def test_forms_agree_with_scrub_vectors() -> None:
    """The suite's oracle computes exactly the forms every scrub vector lists."""
    for vector in vectors.load_scrub():
        mine = required_forms(vector.value)
        for name, form in vector.forms.items():
            assert form in mine.values(), f"{vector.id} form {name}"


@pytest.mark.req("SCRUB-003")
def test_forms_deduplicated() -> None:
    """A plain value has one form: the others coincide with it."""
    assert list(required_forms("abcdefgh12345")) == ["a"]


@pytest.mark.req("SCRUB-015")
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_base64_found_at_every_offset(offset: int) -> None:
    """The base64 hardening forms are found whatever bytes precede the value."""
    value = "Qx7pLm2vRt-canary-base64"
    stream = base64.b64encode(b"p" * offset + value.encode() + b"tail").decode()
    found = [name for name, form in hardening_forms(value).items() if form in stream]
    assert f"base64@{offset}" in found


@pytest.mark.req("SCRUB-015")
def test_hardening_forms_differ_from_required() -> None:
    """Hardening forms never repeat a required form."""
    value = 'k"ey/é with space%'
    assert not set(hardening_forms(value).values()) & set(required_forms(value).values())
    assert {"hex", "pct-lower", "json-u-escape", "json-slash", "double-pct"} <= set(
        hardening_forms(value)
    )


@pytest.mark.req("INV1")
def test_canaries_unique_and_unlike_placeholders() -> None:
    """Canaries are unique, long, never look like a marker or placeholder, and never print."""
    mint = Mint()
    made = [mint.canary(kind) for kind in Kind for _ in range(50)]
    values = [canary.value for canary in made]
    assert len(set(values)) == len(values)
    for canary in made:
        assert len(canary.value) >= 22
        assert not set("{}[]:") & set(canary.value)
        assert "secret" not in canary.value.lower()
        assert canary.value not in repr(canary)
        assert canary.value not in f"{canary}"
    assert set(made) <= set(issued_canaries())


Plant = Callable[[str], tuple[list[CallRecord], Observation]]

#: How to put a text on each surface.
PLANTERS: dict[str, Plant] = {
    "result": lambda text: (
        [CallRecord("echo", f"x {text} y", False, "APPROVED_ONCE")],
        observation(),
    ),
    "failure text": lambda text: (
        [CallRecord("t", f"failed: {text}", True, "APPROVED_ONCE")],
        observation(),
    ),
    "ledger": lambda text: (
        [],
        observation(
            ledger_bytes=(json.dumps({"sanitizedArgs": text}, ensure_ascii=False) + "\n").encode()
        ),
    ),
    "approval request": lambda text: ([], observation(approval_requests=({"arguments": text},))),
    "host log": lambda text: ([], observation(log_records=(LogRecord("DEBUG", text),))),
    "printed output": lambda text: ([], observation(printed=f"stderr {text}")),
}


@pytest.mark.req("INV1", "LOG-001", "APPR-005", "LEDG-004", "SCRUB-010")
@pytest.mark.parametrize("surface", list(PLANTERS))
@pytest.mark.parametrize("form", ["a", "b", "c", "d"])
def test_each_form_found_on_each_surface(surface: str, form: str) -> None:
    """A value planted in any required form on any surface is found and named."""
    value = Mint().canary(Kind.SPECIAL).value + " x"
    text = required_forms(value)[form]
    calls, seen = PLANTERS[surface](text)
    leaks = Detector([Guarded("c1.password", value)]).sweep(calls, seen).leaks
    assert leaks, f"form {form} on {surface} not found"
    assert any(leak.surface.value == surface and leak.form == form for leak in leaks)
    for leak in leaks:
        assert leak.surface.value == surface
        assert value not in leak.describe()
        assert text not in leak.describe()
        assert "c1.password" in leak.describe()


@pytest.mark.req("SCRUB-003", "SCRUB-006")
def test_result_leak_names_form_requirement() -> None:
    """A result leak in form d names SCRUB-006 besides INV1."""
    value = "Qx7pLm2v Rt canary"
    calls = [CallRecord("echo", required_forms(value)["d"], False, "APPROVED_ONCE")]
    (leak,) = Detector([Guarded("c1.password", value)]).sweep(calls, observation()).leaks
    assert leak.form == "d"
    assert leak.requirements == ("INV1", "SCRUB-006")


@pytest.mark.req("APPR-005")
def test_username_allowed_in_its_descriptor_only() -> None:
    """A username may appear in a descriptor, and nowhere else in the request."""
    name = "operator-canary-Qx7pLm"
    detector = Detector([Guarded("c1.username", name, is_username=True)])
    shown = observation(approval_requests=({"descriptors": [f"site ({name}) - username"]},))
    assert detector.sweep([], shown).leaks == []
    elsewhere = observation(approval_requests=({"arguments": name},))
    (leak,) = detector.sweep([], elsewhere).leaks
    assert leak.surface is Surface.REQUEST


@pytest.mark.req("SCRUB-012", "SCRUB-013", "SCRUB-014")
def test_scrubbing_off_allows_result_and_snippet_only() -> None:
    """Scrubbing off, the result and the error snippet may hold a value; the log may not."""
    value = "Qx7pLm2vRt-off-canary"
    detector = Detector([Guarded("c1.password", value)])
    line = json.dumps({"errorSnippet": value, "sanitizedArgs": "{}"}) + "\n"
    seen = observation(ledger_bytes=line.encode(), log_records=(LogRecord("INFO", value),))
    calls = [CallRecord("echo", value, False, "APPROVED_ONCE")]
    found = detector.sweep(calls, seen, scrubbing=False)
    assert [leak.surface for leak in found.leaks] == [Surface.LOG]
    assert "SCRUB-014" in found.leaks[0].requirements
    assert found.snippet_values == 1
    strict = detector.sweep(calls, seen, scrubbing=True)
    assert {leak.surface for leak in strict.leaks} == {Surface.RESULT, Surface.LEDGER, Surface.LOG}


@pytest.mark.req("SCRUB-015")
def test_hardening_forms_reported_not_failed() -> None:
    """A hardening form in a result is a hardening finding, never a leak."""
    value = "Qx7pLm2vRt-hard-canary"
    text = "\n".join(hardening_forms(value).values())
    found = Detector([Guarded("c1.password", value)]).sweep(
        [CallRecord("static", text, False, "APPROVED_ONCE")], observation()
    )
    assert found.leaks == []
    assert {finding.form for finding in found.hardening} >= {"hex", "base64@0"}


@pytest.mark.req("INV1")
def test_redact_removes_every_form() -> None:
    """Redaction replaces every required and hardening form with the label."""
    value = 'Qx7pLm2v "Rt"/é canary'
    detector = Detector([Guarded("c9.notes", value)])
    text = " | ".join([*required_forms(value).values(), *hardening_forms(value).values()])
    redacted = detector.redact(text)
    assert not detector.find(redacted)
    assert not detector.find_hardening(redacted)
    assert "<c9.notes>" in redacted


# The detector reads a text a window at a time when its forms outnumber the text's characters
# (conformance.canary.FormIndex): it must find exactly what testing every form finds.
_LETTERS = "ab%+/\\é\ud800"


@pytest.mark.req("INV1")
@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.text(alphabet=_LETTERS, min_size=1, max_size=12), min_size=1, max_size=40),
    text=st.text(alphabet=_LETTERS, max_size=60),
    pieces=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 60)), max_size=4),
)
def test_the_window_walk_finds_what_testing_every_form_finds(
    values: list[str], text: str, pieces: list[tuple[int, int]]
) -> None:
    """Many values (forms of fewer than eight characters among them), a short text with some of
    their forms put in at any place, overlapping or repeated: the detector's answers, required
    and hardening, are those of testing every form, in the same order."""
    guarded = [Guarded(f"v{number}", value) for number, value in enumerate(values)]
    detector = Detector(guarded)
    for number, at in pieces:
        forms = list(required_forms(values[number % len(values)]).values())
        form = forms[at % len(forms)]
        text = text[:at] + form + text[at:]
    expected = [
        (item, name)
        for item in guarded
        for name, form in required_forms(item.value).items()
        if form in text
    ]
    expected_hardening = [
        (item, name)
        for item in guarded
        for name, form in hardening_forms(item.value).items()
        if form in text
    ]
    assert detector.find(text) == expected
    assert detector.find_hardening(text) == expected_hardening


def test_the_window_walk_is_taken_for_a_short_text_among_many_forms() -> None:
    """The equality above is tested on the walk, not only on the plain search: 120 values of
    twelve characters give more forms than twice a short text's characters. A form of exactly
    the window's width that ends the text is found (the last window is read), a cut one is not,
    and a form met twice is answered once."""
    from conformance.canary import MIN_GUARDED_CODE_POINTS, WALK_RATIO, FormIndex

    values = [f"value-{number:06d}" for number in range(120)]
    last = "z" * MIN_GUARDED_CODE_POINTS
    flat = [(Guarded(v, v), "a", v) for v in (*values, last)]
    text = "x" + values[7] + values[3][:9] + values[7] + last
    assert len(text) * WALK_RATIO < len(flat)
    assert [item for item, _ in FormIndex(flat).find(text)] == [flat[7][0], flat[-1][0]]


def _json_escape_char_by_char(value: str) -> str:
    """Form b written out a character at a time, as the rulings word it (R5.2b)."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
    short["\t"] = "\\t"
    out = []
    for char in value:
        if char in short:
            out.append(short[char])
        elif ord(char) < 0x20 or 0xD800 <= ord(char) < 0xE000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _url_form_byte_by_byte(value: str, pattern: str) -> str:
    """Form c written out a byte at a time, as the rulings word it (R5.2c)."""
    safe = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-*_"
    out = []
    for byte in value.encode("utf-8", "surrogatepass"):
        out.append("+" if byte == 0x20 else chr(byte) if byte in safe else pattern.format(byte))
    return "".join(out)


@pytest.mark.req("SCRUB-004", "SCRUB-005", "SCRUB-006")
@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_the_forms_are_those_written_out_a_character_at_a_time(value: str) -> None:
    """Forms b and c (and c in lower-case hex), computed by table, are those of the rulings'
    words applied to each character and byte: every character below U+0020, the quote, the
    backslash, ``/``, DEL, lone surrogates, non-ASCII of two to four bytes."""
    assert json_escape(value) == _json_escape_char_by_char(value)
    assert url_form(value) == _url_form_byte_by_byte(value, "%{:02X}")
    assert url_form(value, lower_hex=True) == _url_form_byte_by_byte(value, "%{:02x}")


def test_every_character_below_u0100_and_every_surrogate_is_formed_as_written_out() -> None:
    """The same, for each character whose form the tables write, one at a time."""
    for code in (*range(0x100), 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0x10FFFF):
        char = chr(code)
        assert json_escape(char) == _json_escape_char_by_char(char), hex(code)
        assert url_form(char) == _url_form_byte_by_byte(char, "%{:02X}"), hex(code)


def test_a_canary_core_takes_only_bytes_that_keep_every_letter_equally_likely(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random bytes at or above the largest multiple of the alphabet's length are dropped (a
    draw with too few left is drawn again); each kept byte names the letter of its remainder."""
    from conformance import canary as module

    alphabet = module._CORE_ALPHABET
    bound = module._BYTE_BOUND
    assert bound % len(alphabet) == 0
    assert 256 - len(alphabet) < bound <= 256
    draws = iter(
        [
            bytes([bound] * 44),  # every byte dropped: drawn again
            bytes([255, len(alphabet) + 1, *range(2, 44)]),  # 255 dropped; the next is letter 1
        ]
    )
    monkeypatch.setattr(secrets, "token_bytes", lambda size: next(draws))
    assert module._core() == alphabet[1 : 1 + 22]
