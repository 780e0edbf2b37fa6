"""Checks of control characters in values and results, and of number and separator text in
arguments, that the fixed canaries and vectors never hold (decisions R1.5, R1.8, R5.2, R6.1).

A host writes form b of a value with an escape table of its own, reads argument text with a
tokenizer of its own and hands a result on through whatever its transport takes, and each can
be wrong for characters no ordinary value, call or result holds: a table whose ``\\u00xx``
range starts at U+0001 and leaves U+0000 as it is, or one that writes C's ``\\a`` and ``\\v``;
a number read as any run of digits, signs, points and exponent letters, so that ``1e`` or
``-`` passes; a string that a script's lexer ends at U+2028; a result that ends at its first
NUL, as a C string does. The canaries hold a control character drawn at random from a few,
never U+0000, and the vectors hold no malformed number and no line separator inside a valid
string. Here one value holds every control character, U+0000 to U+001F and U+007F, each of
its forms alone in a result; numbers that no JSON reader or extension accepts stand beside a
real, approved reference; valid strings hold the separators RFC 8259 lets stand raw; and a
result of every control character must arrive whole. Every character is fixed, never drawn.
Details name forms, code points, lengths and number texts, never a value.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer, HandlerKind, SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    answering,
    canary_holding,
    config,
    make_secret,
    new_id,
    ref,
    require_every_form_scrubbed,
    tool,
)

# --- every control character in a value -------------------------------------------------------

#: Every character form b escapes as ``\\u00xx`` or a short escape, and DEL, which it leaves.
CONTROLS: Final = "".join(chr(code) for code in range(0x20)) + "\x7f"


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006", "SCRUB-009", "SCRUB-010")
def test_every_control_character_scrubbed_in_every_form(host: RecordingHost, mint: Mint) -> None:
    """A password and a note that hold every control character, U+0000 included, are scrubbed
    in each of their forms, each alone in a result and all of them together."""
    password = canary_holding(mint, "controls", CONTROLS)
    notes = canary_holding(mint, "control-notes", CONTROLS)
    secret = SecretSpec(new_id(), "controls.example", "user-controls", password, notes)
    require_every_form_scrubbed(host, secret, "with every control character")


# --- numbers no JSON reader accepts -------------------------------------------------------------

#: Number texts invalid in RFC 8259 and in every extension R1.8 names or a JSON5 reader takes:
#: an exponent without digits, a sign alone, two signs, two points, a sign or a point inside.
BAD_NUMBERS: Final = ("1e", "1E+", "2e-", "-", "--1", "1.2.3", "1-2", "3e5.5", "1ee5", "0.5e")

#: Where a bad number stands: before the reference's member, and in an array after it.
_NUMBER_PLACES: Final = {
    "before": '{{"n":{N},"a":"{R}"}}',
    "array-after": '{{"a":"{R}","n":[0,{N},1]}}',
}


@pytest.mark.req("GRAM-020", "GRAM-016")
@pytest.mark.parametrize("place", list(_NUMBER_PLACES))
def test_malformed_number_beside_a_reference_refused(
    host: RecordingHost, mint: Mint, place: str
) -> None:
    """A number RFC 8259 does not read, such as ``1e`` or ``-``, makes the arguments invalid
    JSON: a real, approved reference beside it is refused as SECRET_UNRESOLVED and no tool
    runs."""
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    template = _NUMBER_PLACES[place]
    for number in BAD_NUMBERS:
        text = template.format(N=number, R=ref(secret.id))
        outcome = host.invoke(RECORDER.name, text, answering(Answer.APPROVE))
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            ("GRAM-020", "GRAM-016"),
            f"the number {number!r} ({place} the reference) in arguments carrying a reference "
            f"ended {outcome.disposition}, not SECRET_UNRESOLVED",
        )
    require(
        host.observe().receipts == (),
        ("GRAM-020", "GRAM-016"),
        f"arguments with a number RFC 8259 does not read ({place} the reference) reached a tool",
    )


# --- separators RFC 8259 lets stand raw in a string -------------------------------------------

#: Characters a string may hold unescaped (RFC 8259, section 7) that a script's lexer or a
#: line reader may take for the end of a line: LINE SEPARATOR, PARAGRAPH SEPARATOR, NEXT LINE.
RAW_SEPARATORS: Final = ("\u2028", "\u2029", "\u0085")

#: Where the separator stands: in a string of its own beside the reference, and in the
#: reference's own string.
_SEPARATOR_PLACES: Final = {
    "own-string": '{{"t":"a{S}b","a":"{R}"}}',
    "same-string": '{{"a":"x{S}{R}{S}y"}}',
}


@pytest.mark.req("GRAM-020", "GRAM-011")
@pytest.mark.parametrize("place", list(_SEPARATOR_PLACES))
def test_raw_separator_in_a_string_is_json(host: RecordingHost, mint: Mint, place: str) -> None:
    """A string holding a raw U+2028, U+2029 or U+0085 is valid JSON: the approved reference
    beside it, or in it, is resolved and the tool runs once per call."""
    secret = make_secret(mint)
    host.reset(config([secret], tools=(RECORDER,)))
    template = _SEPARATOR_PLACES[place]
    for separator in RAW_SEPARATORS:
        text = template.format(S=separator, R=ref(secret.id))
        outcome = host.invoke(RECORDER.name, text, answering(Answer.APPROVE))
        require(
            outcome.disposition == "APPROVED_ONCE" and not outcome.is_error,
            ("GRAM-020", "GRAM-011"),
            f"valid JSON with U+{ord(separator):04X} raw in a string ({place}) ended "
            f"{outcome.disposition}, not APPROVED_ONCE",
        )
    require(
        len(host.observe().receipts) == len(RAW_SEPARATORS),
        ("GRAM-020", "GRAM-011"),
        f"the tool ran {len(host.observe().receipts)} times for {len(RAW_SEPARATORS)} approved "
        f"calls with raw separators in a string ({place})",
    )


# --- results the tool returned exactly: control characters, empty, a byte-order mark ----------

#: A result text of every control character, each beside its code, then DEL and NULs again:
#: well within the cap.
CONTROL_RESULT_TEXT: Final = (
    "head "
    + " ".join(f"{chr(code)}-{code:02x}" for code in range(0x20))
    + " \x7f-7f \x00\x00 tail\x00"
)

#: The results that must reach the agent as the tool returned them: every control character,
#: nothing at all, and a text that opens with a byte-order mark, as a tool may write one.
WHOLE_RESULTS: Final = {
    "controls": CONTROL_RESULT_TEXT,
    "empty": "",
    "bom-led": "\ufeffhead, after a byte-order mark",
}


@pytest.mark.req("CAP-003")
@pytest.mark.parametrize("result", list(WHOLE_RESULTS))
@pytest.mark.parametrize("bearing", [False, True], ids=["plain", "secret"])
def test_unusual_result_arrives_whole(
    host: RecordingHost, mint: Mint, bearing: bool, result: str
) -> None:
    """A result within the cap that holds every control character, U+0000 included, that is
    empty, or that opens with a byte-order mark, reaches the agent exactly as the tool returned
    it, from a reference-free and a secret-bearing call alike: nothing ends it at a NUL, drops
    a control character or the mark, or puts words of the host's own in place of an empty
    result."""
    text = WHOLE_RESULTS[result]
    secret = make_secret(mint)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([secret], tools=(static,)))
    args = '{"a":"' + (ref(secret.id) if bearing else "plain") + '"}'
    outcome = host.invoke(static.name, args)
    require(
        not outcome.is_error,
        "CAP-003",
        f"the call returning the {result} result ended {outcome.disposition}",
    )
    require(
        outcome.text == text,
        "CAP-003",
        f"the {result} result of {len(text)} characters reached the agent as "
        f"{len(outcome.text)} characters, not as the tool returned it",
    )
