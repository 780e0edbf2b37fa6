"""Checks that compare what the agent or the handler receives exactly, character for character,
against the suite's own model (decisions R5.3, R5.4, R6.1, R4.1).

Leak searches only ask whether a value survived; these checks ask whether anything else
changed. The scrubbed text of a result is compared with the suite's oracle (one leftmost-longest
pass), on texts where every scrubbing strategy the rulings accept gives the same answer; a value
passed over by an overlap and met again far later must still be scrubbed; a result within the
cap must arrive whole and one over it must keep its head; and the handler's per-key view must
equal the raw JSON for every member, whatever its type. No message here holds a value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

import pytest

from conformance.canary import Kind, Mint, required_forms
from conformance.host import HandlerKind, SecretSpec
from conformance.outcomes import fail, require, unchecked
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    args_json,
    config,
    make_secret,
    new_id,
    placeholder,
    receipts_for,
    ref,
    tool,
)

#: The host's cap in characters, counting any note about the cut (decisions R6.1).
RESULT_CAP = 150_000

#: The most characters a host's note about a cut may take from the kept text. The rulings count
#: the note within the cap but give it no size; a thousand characters is ample for a sentence
#: giving both lengths, and far short of "a few characters kept".
NOTE_ROOM = 1_000

#: Characters of filler between an overlap and the value's next occurrence: beyond the window
#: of 256 characters a search may look in first (the reference host's near window), so a host
#: that never looks past it is caught.
FAR_FILLER = 300

#: What stands between the forms in the oracle text: characters a scrubber might wrongly
#: escape, eat or add (a backslash, a percent sign, a plus, a quote, a letter, a line break,
#: non-ASCII), so that anything but an exact replacement shows.
_NEIGHBOURS = (" \\", "%", "q", "+", "\\\\", '"', "\n", "é", "[", "]")


def scrub_oracle(text: str, needles: Sequence[tuple[str, str]]) -> str:
    """Return ``text`` scrubbed in one pass, leftmost match first, longest at one start.

    The suite's own model of decisions R5.3; placeholders it writes are never looked at again.

    Args:
        text: The handler's result.
        needles: (form, placeholder) pairs.

    Returns:
        The text the agent should read.
    """
    pieces: list[str] = []
    at = 0
    while at < len(text):
        best: tuple[str, str] | None = None
        for form, replacement in needles:
            if text.startswith(form, at) and (best is None or len(form) > len(best[0])):
                best = (form, replacement)
        if best is None:
            pieces.append(text[at])
            at += 1
        else:
            pieces.append(best[1])
            at += len(best[0])
    return "".join(pieces)


def _needles(secrets: Sequence[SecretSpec]) -> list[tuple[str, str]]:
    return [
        (form, placeholder(secret.id))
        for secret in secrets
        for form in required_forms(secret.password).values()
    ]


#: How far apart the oracle text sets its forms: next to each other (one neighbour between),
#: and further apart than the longest form, so that a scrubber's pass over occurrences that
#: do not touch is compared too, not only its handling of dense text.
_SPACING = {"adjacent": 0, "spaced": 80}


@pytest.mark.req("SCRUB-020", "SCRUB-007")
@pytest.mark.parametrize("spacing", list(_SPACING))
def test_scrubbed_text_is_exact(host: RecordingHost, mint: Mint, spacing: str) -> None:
    """Each form becomes exactly its placeholder and every other character stays as it was,
    whether the forms stand together or apart."""
    secrets = [make_secret(mint, kind=kind) for kind in (Kind.SPECIAL, Kind.SPACED, Kind.UNICODE)]
    pieces = ["head"]
    count = 0
    for secret in secrets:
        for form in required_forms(secret.password).values():
            pieces.append(_NEIGHBOURS[count % len(_NEIGHBOURS)] + "." * _SPACING[spacing])
            pieces.append(form)
            count += 1
    pieces.append("tail")
    text = "".join(pieces)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config(secrets, tools=(static,)))
    args = args_json({f"v{i}": ref(secret.id) for i, secret in enumerate(secrets)})
    outcome = host.invoke(static.name, args)
    require(not outcome.is_error, "SCRUB-020", f"the call ended {outcome.disposition}")
    expected = scrub_oracle(text, _needles(secrets))
    if outcome.text != expected:
        first = next(
            (i for i, (a, b) in enumerate(zip(outcome.text, expected, strict=False)) if a != b),
            min(len(outcome.text), len(expected)),
        )
        fail(
            "SCRUB-020",
            f"the scrubbed result differs from the oracle from character {first} "
            f"({len(outcome.text)} characters, {len(expected)} expected)",
        )


@pytest.mark.req("SCRUB-020")
def test_longest_value_wins_at_one_start(host: RecordingHost, mint: Mint) -> None:
    """Where a value and a longer one that begins with it start together, the longer wins."""
    core = mint.canary(Kind.PLAIN, "prefix").value
    longer = core + mint.canary(Kind.PLAIN, "suffix").value[:10]
    short_secret = SecretSpec(new_id(), "short.example", "user-short-x", core)
    long_secret = SecretSpec(new_id(), "long.example", "user-long-xx", longer)
    text = f"<{longer}> and {core}. then {longer}"
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config([short_secret, long_secret], tools=(static,)))
    outcome = host.invoke(
        static.name, args_json({"s": ref(short_secret.id), "l": ref(long_secret.id)})
    )
    expected = scrub_oracle(text, _needles([short_secret, long_secret]))
    require(
        outcome.text == expected,
        "SCRUB-020",
        "where two values start together the longer one was not replaced whole",
    )


#: What comes before the outer value in the text: nothing (the text opens with it), the
#: occurrence of a third value right against it (a run of occurrences back to back), or plain
#: text. A scrubber may treat occurrences that do not overlap on a fast path and fall back only
#: once it meets an overlap, so where the first overlap comes matters.
_OUTER_AT: Final = ("text-start", "after-a-run", "after-text")

#: Where the inner value stands in the outer one: at its start, in its middle, at its end.
_INNER_AT: Final = ("head", "middle", "tail")


@pytest.mark.req("SCRUB-020")
@pytest.mark.parametrize("inner_at", _INNER_AT)
@pytest.mark.parametrize("outer_at", _OUTER_AT)
def test_value_inside_another_is_replaced_once(
    host: RecordingHost, mint: Mint, outer_at: str, inner_at: str
) -> None:
    """A value that occurs only inside another, the last occurrence of the text, is gone with
    it: the outer value's placeholder alone stands there, and the text after it is not
    repeated.

    Every strategy the rulings accept (one leftmost-longest pass, or forms replaced one after
    another, longest first) gives this text the same answer, so it is compared exactly.
    """
    p, q, r, c = (mint.canary(Kind.PLAIN, "piece").value[:10] for _ in range(4))
    inner = {"head": p, "middle": q, "tail": r}[inner_at]
    outer = SecretSpec(new_id(), "outer.example", "user-outer-x", p + q + r)
    within = SecretSpec(new_id(), "inner.example", "user-inner-x", inner)
    third = SecretSpec(new_id(), "third.example", "user-third-x", c)
    before = {"text-start": "", "after-a-run": c, "after-text": "~ "}[outer_at]
    # Nothing occurs after the outer value: a scrubber that falls back to a careful pass only
    # when it meets a later occurrence past an overlap never gets that chance here.
    text = f"{before}{p + q + r} and the rest."
    secrets = [outer, within, third]
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config(secrets, tools=(static,)))
    outcome = host.invoke(
        static.name,
        args_json({"o": ref(outer.id), "i": ref(within.id), "t": ref(third.id)}),
    )
    require(not outcome.is_error, "SCRUB-020", f"the call ended {outcome.disposition}")
    expected = scrub_oracle(text, _needles(secrets))
    require(
        outcome.text == expected,
        "SCRUB-020",
        f"a value inside another ({inner_at} of it, the outer value at {outer_at}) did not "
        f"leave the outer value's placeholder alone: {len(outcome.text)} characters, "
        f"{len(expected)} expected",
    )


#: Where, counted from the end of an overlap's replacement, the value it passed over (of
#: length L) occurs next: right after, within a few hundred characters, on both sides of the
#: 256-character window a search may look in first (ending inside it, straddling its end,
#: starting at and just past it), and far beyond. Each maps (L, the rest of the overlap z)
#: to the distance, never less than z, since the value can only start once z has passed.
_DISTANCES: dict[str, Callable[[int, int], int]] = {
    "right-after": lambda _length, z: z,
    "one-after": lambda _length, z: z + 1,
    "100": lambda _length, _z: 100,
    "ends-at-window": lambda length, _z: 256 - length,
    "straddles-by-1": lambda length, _z: 256 - length + 1,
    "straddles-half": lambda length, _z: 256 - length // 2,
    "straddles-all-but-1": lambda _length, _z: 255,
    "at-window": lambda _length, _z: 256,
    "past-window": lambda _length, _z: 257,
    "window-plus-length": lambda length, _z: 256 + length,
    "window-plus-length-1": lambda length, _z: 256 + length + 1,
    "300": lambda _length, _z: 300,
    "1000": lambda _length, _z: 1000,
}


#: The distances measured from the window's end, and how many characters come before the
#: overlap when they are tried again: the window ends at the replacement's end plus 256, so a
#: slip in the arithmetic of where a search resumes shows only at some alignments of that end.
_WINDOW_DISTANCES: Final = tuple(
    name for name in _DISTANCES if "window" in name or "straddles" in name
)
_ALIGNMENTS: Final = (1, 2, 3, 5, 7)


@pytest.mark.req("SCRUB-009")
@pytest.mark.parametrize("distance", list(_DISTANCES))
def test_overlap_then_repeat_far_away(host: RecordingHost, mint: Mint, distance: str) -> None:
    """After two values overlap, the one passed over is still scrubbed where it occurs next,
    however near or far, and again far later in the text."""
    _overlap_then_repeat(host, mint, distance, 0)


@pytest.mark.req("SCRUB-009")
@pytest.mark.parametrize("shift", _ALIGNMENTS)
@pytest.mark.parametrize("distance", _WINDOW_DISTANCES)
def test_overlap_then_repeat_at_other_alignments(
    host: RecordingHost, mint: Mint, distance: str, shift: int
) -> None:
    """The same, with a few characters before the overlap, so that the window's end falls at
    other offsets: the passed-over value is scrubbed wherever the window's end falls."""
    _overlap_then_repeat(host, mint, distance, shift)


def _overlap_then_repeat(host: RecordingHost, mint: Mint, distance: str, shift: int) -> None:
    x, y, z = (mint.canary(Kind.PLAIN, "piece").value[:10] for _ in range(3))
    first = SecretSpec(new_id(), "first.example", "user-first-x", x + y)
    second = SecretSpec(new_id(), "second.example", "user-second-x", y + z)
    filler = "-" * FAR_FILLER
    # The overlap x+y+z is replaced from x (leftmost); y+z, passed over, starts next at
    # ``distance`` characters after the replacement's end (z itself comes first).
    gap = "-" * (max(_DISTANCES[distance](len(y + z), len(z)), len(z)) - len(z))
    text = "~" * shift + x + y + z + gap + y + z + filler + " then " + y + z + filler + x + y
    survivor = _overlapping_survivor(host, (first, second), text, filler)
    if survivor is not None:
        name, number = survivor
        fail(
            "SCRUB-009",
            f"form {name} of overlapping value {number + 1} survived {FAR_FILLER} characters "
            "after the overlap",
        )


def _overlapping_survivor(
    host: RecordingHost, secrets: tuple[SecretSpec, SecretSpec], text: str, tail: str
) -> tuple[str, int] | None:
    """Run a call that names both ``secrets`` and whose handler returns ``text``, where their
    values overlap; return the first form left readable, with its secret's index, or None.

    The text comes back unscrubbed only when ``tail`` is missing or no placeholder stands in
    it: a missing form then proves nothing, and SCRUB-009 is left unchecked.
    """
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config(list(secrets), tools=(static,)))
    names = {"a": ref(secrets[0].id), "b": ref(secrets[1].id)}
    outcome = host.invoke(static.name, args_json(names))
    require(not outcome.is_error, "SCRUB-009", f"the call ended {outcome.disposition}")
    if tail not in outcome.text or not any(
        placeholder(secret.id) in outcome.text for secret in secrets
    ):
        # Nothing came back scrubbed, so no surviving form would be evidence of anything.
        unchecked("SCRUB-009", "the handler's text did not come back with a placeholder")
        return None
    for number, secret in enumerate(secrets):
        for name, form in required_forms(secret.password).items():
            if form in outcome.text:
                return name, number
    return None


#: Lengths of a value that overlaps itself: short of, at and past half the 256-character window
#: a search may look in first, at and around the window itself, and past twice its size. A
#: scrubber whose arithmetic for where a search resumes holds only for short forms (a form's
#: length masked, halved or taken from the wrong end) shows only once the form is long.
_SELF_OVERLAP_LENGTHS: Final = (129, 200, 255, 256, 257, 300, 400, 512)

#: Periods of that value, which are also the distance from one occurrence to the next: short,
#: so that the next occurrence straddles the window's end, and long, so that it starts late.
_SELF_OVERLAP_PERIODS: Final = (9, 64)


@pytest.mark.req("SCRUB-009")
@pytest.mark.parametrize("period", _SELF_OVERLAP_PERIODS)
@pytest.mark.parametrize("length", _SELF_OVERLAP_LENGTHS)
def test_long_value_overlapping_itself_is_scrubbed(
    host: RecordingHost, mint: Mint, length: int, period: int
) -> None:
    """A long value whose occurrences overlap each other, the first of them overlapped by a
    short value too, is left in no form: the occurrence the overlap passed over is found again
    wherever it ends, whatever the value's length."""
    # Pieces of canaries, never a whole one: what is left of the text between replacements is
    # shown to the agent, and a whole canary there would read as a leak.
    unit = ""
    while len(unit) < period:
        unit += mint.canary(Kind.PLAIN, "period").value[:10]
    unit = unit[:period]
    periodic = unit * (length // period + 2)
    value = periodic[:length]
    # The short value ends inside the long value's first occurrence, so the two overlap; the
    # long value occurs again ``period`` characters later, overlapping its first occurrence.
    long_secret = SecretSpec(new_id(), "long.example", "user-long-x", value)
    short_secret = SecretSpec(new_id(), "short.example", "user-short-x", "Z" + value[:7])
    tail = " then the rest"
    text = "Z" + periodic[: length + period] + tail
    survivor = _overlapping_survivor(host, (long_secret, short_secret), text, tail)
    if survivor is not None:
        name, number = survivor
        fail(
            "SCRUB-009",
            f"form {name} of the {('long', 'short')[number]} value ({length} characters, "
            f"overlapping itself every {period}) survived scrubbing",
        )


def _pattern(length: int) -> str:
    unit = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    return (unit * (length // len(unit) + 1))[:length]


@pytest.mark.req("CAP-003")
@pytest.mark.parametrize("length", [RESULT_CAP - 1, RESULT_CAP])
def test_result_within_cap_arrives_whole(host: RecordingHost, length: int) -> None:
    """A result of at most 150,000 characters is not cut at all."""
    text = _pattern(length)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config((), tools=(static,)))
    outcome = host.invoke(static.name, "{}")
    require(
        outcome.text == text,
        "CAP-003",
        f"a result of {length} characters reached the agent as {len(outcome.text)} characters",
    )


@pytest.mark.req("CAP-003", "CAP-001")
@pytest.mark.parametrize("length", [RESULT_CAP + 1, RESULT_CAP + 50_000])
def test_cut_keeps_the_head(host: RecordingHost, length: int) -> None:
    """A result over the cap keeps its head up to the cut, less at most the note's room."""
    text = _pattern(length)
    static = tool("static", HandlerKind.STATIC, text=text)
    host.reset(config((), tools=(static,)))
    outcome = host.invoke(static.name, "{}")
    require(
        len(outcome.text) <= RESULT_CAP,
        "CAP-001",
        f"a result of {length} characters reached the agent as {len(outcome.text)}",
    )
    require(
        outcome.text.startswith(text[: RESULT_CAP - NOTE_ROOM]),
        "CAP-003",
        f"the cut kept less than the first {RESULT_CAP - NOTE_ROOM} characters of the result",
    )


#: Members of every JSON type, escaped keys and strings included, for the view check.
_EVERY_TYPE: dict[str, Any] = {
    "text": "plain",
    "empty": "",
    "number": 1.5,
    "integer": -3,
    "true": True,
    "false": False,
    "null": None,
    "object": {"inner": "value", "n": 2},
    "array": [1, "two", None, {"k": "v"}],
    'quoted "key"': 'a "quoted" \\ value',
    "unicode": "é\U0001f511",
    "": "empty key",
}


@pytest.mark.req("SUBST-001", "INV6")
@pytest.mark.parametrize("with_reference", [True, False], ids=["secret", "plain"])
def test_view_equals_raw_for_every_member(
    host: RecordingHost, mint: Mint, with_reference: bool
) -> None:
    """The handler's per-key view equals the raw JSON for every member, whatever its type."""
    host.need("observe.receipts")
    secret = make_secret(mint, kind=Kind.SPECIAL)
    members = dict(_EVERY_TYPE)
    if with_reference:
        members["ref"] = ref(secret.id)
        members["nested"] = {"deep": [ref(secret.id, "notes")]}
    host.reset(config([secret], tools=(RECORDER,)))
    outcome = host.invoke(RECORDER.name, json.dumps(members))
    require(not outcome.is_error, "SUBST-001", f"the call ended {outcome.disposition}")
    receipts = receipts_for(host.observe(), RECORDER.name)
    require(len(receipts) == 1, "SUBST-001", "the handler was not called once")
    receipt = receipts[0]
    raw = json.loads(receipt.raw)
    view = receipt.view
    require(isinstance(view, dict), "SUBST-001", "the handler got no per-key view of an object")
    assert isinstance(view, dict)
    require(set(view) == set(raw), "SUBST-001", "the view's keys are not the raw JSON's keys")
    for key, value in raw.items():
        require(
            json.dumps(view.get(key), sort_keys=True) == json.dumps(value, sort_keys=True),
            ("SUBST-001", "INV6"),
            f"the view's member {key!r} differs from the raw JSON's",
        )
