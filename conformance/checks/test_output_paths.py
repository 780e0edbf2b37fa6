"""Checks of every handler output through scrub and cap at large sizes and in awkward texts
(decisions R5.1 to R5.4, R6.1).

This module owns what the smaller checks never send through the result path: thousands of
occurrences of one form, a result that grows past the cap only once its values become
placeholders, values standing across every cut point a host might choose and across every
power-of-two block edge up to 1 MiB, non-ASCII and astral text at the cap's edge, line breaks and
trailing blanks the host must not tidy, each form of a non-ASCII value alone in an ASCII text,
a result shaped like JSON, values shorter than the floor in every field, and the error snippet's
own cut. A leak search finds whole forms only; these checks also look for any run of 8
characters of a value (the rulings' bound for a cut, R6.1) and compare texts with the suite's
own model. Every large text is built once per check in linear time. No message here holds a
value: they give forms by name, lengths and counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

import pytest

from conformance.canary import Kind, Mint, required_forms
from conformance.host import CallResult, HandlerKind, SecretSpec
from conformance.outcomes import fail, require, unchecked
from conformance.scenario import (
    THROWER,
    RecordingHost,
    args_json,
    config,
    first_difference,
    ledger_records,
    make_secret,
    new_id,
    placeholder,
    ref,
    tool,
)

#: The host's cap in characters, counting any note about the cut (decisions R6.1).
RESULT_CAP: Final = 150_000

#: The most characters a host's note about a cut may take from the kept text; the same room the
#: exact-result checks allow (the rulings count the note within the cap but give it no size).
NOTE_ROOM: Final = 1_000

#: The shortest run of a value's characters a cut may not leave readable (decisions R6.1).
PIECE: Final = 8

#: Occurrences of one form in one result: past any budget a host might set per form and text,
#: and more than the cap can hold once each is a placeholder, so the result is cut as well.
OCCURRENCES: Final = 5_000

#: Characters of a long value built from canaries: far longer than its placeholder, so a run of
#: such values shrinks when scrubbed, and not a divisor of any power of two.
LONG_VALUE: Final = 990

#: A character no canary holds (their alphabet is letters and digits), used as filler.
FILLER: Final = "."

#: Where the cut-point check sets its run of long values: around every place a host that keeps
#: the head up to the cap, less the note's room, can cut.
CUT_REGION: Final = (RESULT_CAP - 9_000, RESULT_CAP + 2_000)

#: Raw result sizes for the cut-point check: just over the cap, twice it, and past four and
#: eight times it, where a host might cut first to spare the scrubber megabytes.
RAW_SIZES: Final = (160_000, 320_000, 650_000, 1_300_000)

#: How far the value run is moved in the second call, so that wherever a cut falls, one of the
#: two runs has it at least 8 characters inside a value.
HALF_SHIFT: Final = LONG_VALUE // 2

#: Raw characters of the block-edge check: past 1 MiB, so that a value stands across every
#: power-of-two boundary from 4 KiB to 1 MiB (no power of two is a multiple of the value's length).
BLOCK_TEXT: Final = (1 << 20) + 64 * LONG_VALUE

#: Values shorter than the floor (decisions R5.1): 7 code points each.
SHORT_VALUES: Final = {"username": "bob-ops", "notes": "k3y-Q1x", "password": "pw-7chr"}


def long_value(mint: Mint) -> str:
    """Return a value of :data:`LONG_VALUE` characters made of fresh canaries, so no part of it
    repeats and it never overlaps itself."""
    parts: list[str] = []
    size = 0
    while size < LONG_VALUE:
        part = mint.canary(Kind.PLAIN, "long").value
        parts.append(part)
        size += len(part)
    return "".join(parts)[:LONG_VALUE]


def readable_piece(text: str, value: str) -> str | None:
    """Return the name of a required form of ``value`` that has a run of :data:`PIECE`
    characters in ``text``, or ``None``; linear in the text's length."""
    windows: dict[str, str] = {}
    for name, form in reversed(required_forms(value).items()):
        for start in range(len(form) - PIECE + 1):
            windows[form[start : start + PIECE]] = name
    get = windows.get
    for start in range(len(text) - PIECE + 1):
        found = get(text[start : start + PIECE])
        if found is not None:
            return found
    return None


def _ran(outcome: CallResult, requirement: str) -> None:
    require(
        not outcome.is_error and outcome.disposition.startswith(("ALLOWED", "APPROVED")),
        requirement,
        f"the call ended {outcome.disposition}, not with its handler's result",
    )


def _capped_head(outcome: CallResult, expected: str, what: str) -> None:
    """The result is within the cap and keeps the scrubbed text's head (CAP-001, CAP-003)."""
    require(
        len(outcome.text) <= RESULT_CAP,
        "CAP-001",
        f"{what}: {len(expected)} characters once scrubbed reached the agent as "
        f"{len(outcome.text)}",
    )
    keep = RESULT_CAP - NOTE_ROOM
    if not outcome.text.startswith(expected[:keep]):
        fail(
            "CAP-003",
            f"{what}: the result differs from the scrubbed text's head from character "
            f"{first_difference(outcome.text, expected[:keep])}",
        )


# --- many occurrences, growth past the cap ----------------------------------------------------


@pytest.mark.req("SCRUB-009", "CAP-001", "CAP-003")
@pytest.mark.parametrize("form_name", ["a", "b", "c", "d"])
def test_thousands_of_one_form_all_scrubbed(
    host: RecordingHost, mint: Mint, form_name: str
) -> None:
    """Five thousand occurrences of one form in one result are each replaced: none survives
    in the head the cap keeps, and that head is the scrubbed text's."""
    secret = make_secret(mint, kind=Kind.CLASSES)
    form = required_forms(secret.password)[form_name]
    text = (form + "\n") * OCCURRENCES
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
    _ran(outcome, "SCRUB-009")
    survived = outcome.text.count(form)
    require(
        survived == 0,
        "SCRUB-009",
        f"{survived} of {OCCURRENCES} occurrences of form {form_name} survived scrubbing",
    )
    _capped_head(outcome, text.replace(form, placeholder(secret.id)), "5,000 occurrences")


@pytest.mark.req("CAP-001", "CAP-003")
@pytest.mark.parametrize("where", ["dense", "at-the-end"])
def test_result_grown_past_cap_is_cut(host: RecordingHost, mint: Mint, where: str) -> None:
    """A result of exactly 150,000 characters that passes the cap only once its values are
    placeholders is cut like any other: the cap measures what the agent would read."""
    secret = make_secret(mint)
    value = secret.password
    count = 3_000 if where == "dense" else 10
    values = (value + "\n") * count
    filler = FILLER * (RESULT_CAP - len(values))
    text = values + filler if where == "dense" else filler + values
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
    _ran(outcome, "CAP-001")
    _capped_head(outcome, text.replace(value, placeholder(secret.id)), f"values {where}")


# --- where a cut falls --------------------------------------------------------------------------


def _around_cut(value: str, size: int, shift: int) -> str:
    """Return ``size`` characters: filler, a run of ``value`` over :data:`CUT_REGION` moved by
    ``shift``, then filler."""
    start, end = CUT_REGION
    count = (end - start) // len(value) + 1
    head = FILLER * (start + shift)
    run = value * count
    return head + run + FILLER * max(0, size - len(head) - len(run))


@pytest.mark.req("CAP-002", "CAP-003")
@pytest.mark.parametrize("size", RAW_SIZES)
def test_no_piece_left_at_any_cut_point(host: RecordingHost, mint: Mint, size: int) -> None:
    """Whatever the result's raw size and wherever near the cap the host cuts, the cut leaves
    no 8 characters of a value standing across it: the text is scrubbed before it is cut."""
    value = long_value(mint)
    secret = SecretSpec(new_id(), "long.example", "user-long-cut", mint.canary().value, value)
    tools = tuple(
        tool(f"static{shift}", HandlerKind.STATIC, text=_around_cut(value, size, shift))
        for shift in (0, HALF_SHIFT)
    )
    host.reset(config([secret], tools=tools))
    for static in tools:
        outcome = host.invoke(static.name, args_json({"n": ref(secret.id, "notes")}))
        _ran(outcome, "CAP-002")
        require(
            len(outcome.text) <= RESULT_CAP,
            "CAP-001",
            f"a result of {size} characters reached the agent as {len(outcome.text)}",
        )
        form = readable_piece(outcome.text, value)
        require(
            form is None,
            "CAP-002",
            f"a result of {size} characters, cut, left {PIECE} or more characters of form "
            f"{form} readable",
        )


@pytest.mark.req("SCRUB-020", "SCRUB-003")
def test_values_across_every_block_edge(host: RecordingHost, mint: Mint) -> None:
    """A result of over a megabyte made of one long value end to end, so that a value stands
    across every power-of-two boundary from 4 KiB to 1 MiB, comes back as exactly one
    placeholder per value: no block of the text is scrubbed apart from its neighbours."""
    value = long_value(mint)
    secret = SecretSpec(new_id(), "blocks.example", "user-blocks", mint.canary().value, value)
    count = BLOCK_TEXT // len(value) + 1
    static = tool("static", HandlerKind.STATIC, text=value * count)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"n": ref(secret.id, "notes")}))
    _ran(outcome, "SCRUB-020")
    form = readable_piece(outcome.text, value)
    require(
        form is None,
        "SCRUB-003",
        f"{PIECE} or more characters of form {form} of a value stayed readable in a result of "
        f"{count} values",
    )
    expected = placeholder(secret.id, "notes") * count
    require(
        outcome.text == expected,
        "SCRUB-020",
        f"{count} values end to end came back as {len(outcome.text)} characters, not "
        f"{len(expected)}; they differ from character "
        f"{first_difference(outcome.text, expected)}",
    )


# --- the cap's unit, and the cap with scrubbing off ---------------------------------------------


def _cycled(alphabet: str, length: int) -> str:
    return (alphabet * (length // len(alphabet) + 1))[:length]


#: Texts within the cap however a host counts characters, in code points or in UTF-16 units: a
#: BMP text of exactly 150,000 code points (two or three UTF-8 bytes each), and a text whose
#: astral characters bring it to exactly 150,000 UTF-16 units.
_WIDE_TEXTS: Final = {
    "bmp": lambda: _cycled("é€жΩñß中\u2028", RESULT_CAP),
    "astral": lambda: _cycled("\U0001f511é\U0001f600жΩ\U00010348ñ", 105_000),
}


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.req("CAP-003")
@pytest.mark.parametrize("shape", list(_WIDE_TEXTS))
def test_non_ascii_result_within_cap_arrives_whole(host: RecordingHost, shape: str) -> None:
    """A non-ASCII result within 150,000 characters, counted as code points and as UTF-16
    units alike, reaches the agent whole: the cap never counts encoded bytes."""
    text = _WIDE_TEXTS[shape]()
    assert len(text) <= RESULT_CAP
    assert _utf16_units(text) <= RESULT_CAP
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config((), tools=(static,)))
    outcome = host.invoke(static.name, "{}")
    require(
        outcome.text == text,
        "CAP-003",
        f"a {shape} result of {len(text)} code points ({_utf16_units(text)} UTF-16 units, "
        f"{len(text.encode('utf-8'))} UTF-8 bytes) reached the agent as {len(outcome.text)} "
        "code points",
    )


@pytest.mark.req("CAP-001", "CAP-003")
@pytest.mark.parametrize("secret_bearing", [False, True], ids=["plain", "secret"])
def test_cap_holds_with_scrubbing_off(
    host: RecordingHost, mint: Mint, secret_bearing: bool
) -> None:
    """With resultScrubbingEnabled false the cap still holds: the switch turns scrubbing off,
    never the cap."""
    secret = make_secret(mint)
    text = _cycled("0123456789abcdef\n", RESULT_CAP + 20_000)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,), policy={"resultScrubbingEnabled": False}))
    args = args_json({"v": ref(secret.id)}) if secret_bearing else "{}"
    outcome = host.invoke(static.name, args)
    _ran(outcome, "CAP-001")
    _capped_head(outcome, text, "with scrubbing off")


# --- awkward texts ------------------------------------------------------------------------------

#: Reference-free results whose every character must come back: line breaks of both
#: conventions, a lone carriage return, and blanks at the end.
_AWKWARD_PLAIN: Final = (
    "first line\r\nsecond line\r\n",
    "kept blanks at the end \t \n\n",
    "lone\rreturn and\x0bvertical tab\x0c\u2028 \u00a0",
    "\n\n  leading blanks too",
)


@pytest.mark.req("CAP-003")
def test_line_breaks_and_blanks_arrive_exact(host: RecordingHost) -> None:
    """A result within the cap reaches the agent exactly as the handler wrote it: no line
    break rewritten, no blank trimmed."""
    tools = tuple(
        tool(f"static{index}", HandlerKind.STATIC, text=text)
        for index, text in enumerate(_AWKWARD_PLAIN)
    )
    host.reset(config((), tools=tools))
    for index, (static, text) in enumerate(zip(tools, _AWKWARD_PLAIN, strict=True)):
        outcome = host.invoke(static.name, "{}")
        require(
            outcome.text == text,
            "CAP-003",
            f"awkward result {index} ({len(text)} characters) reached the agent as "
            f"{len(outcome.text)} characters, changed from character "
            f"{first_difference(outcome.text, text)}",
        )


def _scrubbed_exactly(
    outcome: CallResult, text: str, needles: Mapping[str, str], what: str
) -> None:
    """The result is ``text`` with each needle replaced, nothing else changed, no piece left."""
    expected = text
    for needle, replacement in needles.items():
        expected = expected.replace(needle, replacement)
    for needle in needles:
        name = readable_piece(outcome.text, needle)
        require(
            name is None,
            "SCRUB-003",
            f"{what}: {PIECE} or more characters of form {name} of a value stayed readable",
        )
    require(
        outcome.text == expected,
        "SCRUB-020",
        f"{what}: the result differs from the scrubbed text from character "
        f"{first_difference(outcome.text, expected)} ({len(outcome.text)} characters, "
        f"{len(expected)} expected)",
    )


@pytest.mark.req("SCRUB-003", "SCRUB-020")
def test_value_with_line_breaks_and_trailing_blanks(host: RecordingHost, mint: Mint) -> None:
    """A value holding CRLF line breaks and ending in blanks, standing at the end of the
    result, is replaced whole, and the text around it is kept as written."""
    value = mint.canary().value + "\r\n" + mint.canary().value + "\r\n \t\n"
    secret = SecretSpec(new_id(), "crlf.example", "user-crlf", mint.canary().value, value)
    text = "begin\r\n" + value + " middle \r\n" + value
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    outcome = host.invoke(static.name, args_json({"n": ref(secret.id, "notes")}))
    _ran(outcome, "SCRUB-020")
    _scrubbed_exactly(
        outcome, text, {value: placeholder(secret.id, "notes")}, "a value with line breaks"
    )


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006", "SCRUB-020")
def test_each_form_alone_in_a_text(host: RecordingHost, mint: Mint) -> None:
    """Each form of a value with non-ASCII, astral, space and control characters, alone in a
    result (forms c and d make an ASCII-only text), is scrubbed there."""
    secret = make_secret(mint, kind=Kind.CLASSES)
    forms = required_forms(secret.password)
    tools = {
        name: tool(f"static-{name}", HandlerKind.STATIC, text=f"ascii head {form} ascii tail")
        for name, form in forms.items()
    }
    host.reset(config([secret], tools=tuple(tools.values())))
    requirements = {"a": "SCRUB-003", "b": "SCRUB-004", "c": "SCRUB-005", "d": "SCRUB-006"}
    for name, static in tools.items():
        outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
        _ran(outcome, requirements[name])
        require(
            forms[name] not in outcome.text,
            requirements[name],
            f"form {name}, alone in a result, survived scrubbing",
        )
        expected = f"ascii head {placeholder(secret.id)} ascii tail"
        require(
            outcome.text == expected,
            "SCRUB-020",
            f"form {name}, alone in a result, did not become exactly its placeholder",
        )


def _json_texts(value: str) -> Sequence[str]:
    """JSON results holding ``value`` as a member name and as a string, written with spacing
    and number spellings a re-encoder would change."""
    return (
        '{"accounts" : {"'
        + value
        + '": {"ok": true, "n": 1.50}},\n  "list": ["'
        + value
        + '"], "e": 1E2}',
        '[1.50, "x", {"' + value + '" :null}]',
    )


@pytest.mark.req("SCRUB-003", "SCRUB-020")
def test_json_shaped_result_scrubbed_as_text(host: RecordingHost, mint: Mint) -> None:
    """A result that is JSON is scrubbed as the text it is: a value used as a member name is
    replaced too, and nothing of the JSON is re-encoded."""
    secret = make_secret(mint)
    texts = _json_texts(secret.password)
    tools = tuple(
        tool(f"json{index}", HandlerKind.STATIC, text=text) for index, text in enumerate(texts)
    )
    host.reset(config([secret], tools=tools))
    for index, (static, text) in enumerate(zip(tools, texts, strict=True)):
        assert json.loads(text) is not None
        outcome = host.invoke(static.name, args_json({"v": ref(secret.id)}))
        _ran(outcome, "SCRUB-003")
        _scrubbed_exactly(
            outcome,
            text,
            {secret.password: placeholder(secret.id)},
            f"JSON result {index}",
        )


@pytest.mark.req("SCRUB-001")
def test_short_values_of_every_field_left_alone(host: RecordingHost) -> None:
    """A value shorter than 8 code points is left alone in every field, a username and notes
    as much as a password: the floor applies to every value."""
    secret = SecretSpec(
        new_id(),
        "short.example",
        SHORT_VALUES["username"],
        SHORT_VALUES["password"],
        SHORT_VALUES["notes"],
    )
    text = " / ".join(f"{name} {value} and {value}s" for name, value in SHORT_VALUES.items())
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    for field_name in SHORT_VALUES:
        outcome = host.invoke(static.name, args_json({"v": ref(secret.id, field_name)}))
        _ran(outcome, "SCRUB-001")
        require(
            outcome.text == text,
            "SCRUB-001",
            f"a {field_name} of {len(SHORT_VALUES[field_name])} code points was scrubbed",
        )


# --- the error snippet's cut --------------------------------------------------------------------

#: References in the failing call: their values end to end cover the first 19,000 characters
#: of the failure text, past any error snippet a host keeps.
_SNIPPET_REFERENCES: Final = 20


@pytest.mark.req("CAP-002", "SCRUB-010")
@pytest.mark.parametrize("shift", [0, HALF_SHIFT])
def test_error_snippet_cut_leaves_no_piece(host: RecordingHost, mint: Mint, shift: int) -> None:
    """A failure text full of a long value is scrubbed before the ledger's error snippet is cut
    from it, so the cut leaves no 8 characters of the value readable, wherever it falls."""
    value = long_value(mint)
    secret = SecretSpec(new_id(), "snippet.example", "user-snippet", mint.canary().value, value)
    host.reset(config([secret], tools=(THROWER,)))
    members: dict[str, str] = {"pad": FILLER * shift}
    members.update(
        {f"r{index:02d}": ref(secret.id, "notes") for index in range(_SNIPPET_REFERENCES)}
    )
    outcome = host.invoke(THROWER.name, args_json(members))
    require(outcome.is_error, "SCRUB-010", f"the throwing call ended {outcome.disposition}")
    form = readable_piece(outcome.text, value)
    require(
        form is None,
        "SCRUB-010",
        f"the failure text left {PIECE} or more characters of form {form} readable",
    )
    seen = host.observe()
    if not seen.judges("observe.ledger", "CAP-002"):
        return
    snippets = [
        record["errorSnippet"]
        for record in ledger_records(seen)
        if isinstance(record.get("errorSnippet"), str)
    ]
    if not snippets:
        unchecked("CAP-002", "the ledger kept no error snippet of the failure")
        return
    for snippet in snippets:
        form = readable_piece(snippet, value)
        require(
            form is None,
            "CAP-002",
            f"the ledger's error snippet ({len(snippet)} characters) left {PIECE} or more "
            f"characters of form {form} readable at its cut",
        )
