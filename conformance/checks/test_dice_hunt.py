"""Checks of the characters and ids the rest of the suite draws at random, each one fixed here
(decisions R1.2, R2, R5.2).

A canary of the ``classes`` kind holds one character drawn from each of the canary's character
classes, in a shuffled order, and every other secret gets a fresh version 4 UUID. A host whose fault
lies in one character or one id digit is then seen only when the draw falls on it: a form b table
that escapes U+2028, as Go's and Gson's JSON writers do, or a no-break space, as a writer that
escapes every space but U+0020 does, is caught only when a ``classes`` canary draws that character;
and a grammar that accepts only RFC 9562 ids (a version digit 1 to 8, the variant bits ``10``) is
never caught, since every id a version 4 generator makes, and every fixed id the suite holds, is
one. Here one value holds every character of every class, and characters beside them that JSON and
URL encoders treat apart (C1 controls, format and space characters, the paragraph separator, an
astral characters above plane 1, where every drawn one lies) and text a writer may take for an
escape it made before (a backslash before ``u00e9``, a percent sign before two hex digits), which no
shuffle of a canary puts together, each form of it alone in a result; and the ids of a call hold
every hex digit in every place, the version and variant digits included, in lower and upper case,
known and unknown. Nothing here is drawn but the canaries' random cores. Details name forms, code
points and ids, never a value.
"""

from __future__ import annotations

from typing import Final

import pytest

from conformance.canary import CHARACTER_CLASSES, Mint
from conformance.host import SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    ECHO,
    RECORDER,
    RecordingHost,
    args_json,
    canary_holding,
    config,
    make_secret,
    new_id,
    placeholder,
    ref,
    require_every_form_scrubbed,
)

# --- every character a canary may draw ----------------------------------------------------------

#: Characters beside the canary's classes that JSON and URL encoders treat apart from their
#: neighbours: C1 controls and NEXT LINE, which some JSON writers escape; the soft hyphen, zero
#: width and bidirectional format characters, the word joiner and the byte-order mark; the
#: paragraph separator and the ideographic space; an ideograph in plane 2 and a format tag in
#: plane 14, above the plane 1 that every drawn astral character lies in.
NEIGHBOURS: Final = (
    "\u0080\u0085\u009f\u00ad\u200b\u200e\u202e\u2029\u2060\u3000\ufeff\U00020000\U000e0041"
)

#: Text a writer may take for an escape it made before and leave as it is: a backslash before
#: ``u`` and four hex digits, before each letter of a short escape, before a quote, a slash and
#: another backslash; a percent sign before two hex digits, and ``%u`` before four.
LOOKALIKES: Final = '\\u00e9\\u0041 \\n\\t\\r\\b\\f \\"\\/\\\\ %41%2B%25 %u00e9 '

#: Every character any ``classes`` canary may draw, class by class, then the neighbours and
#: the escape look-alikes, in one fixed order: nothing is left to a draw or to a shuffle.
EVERY_DRAWN: Final = "".join(CHARACTER_CLASSES.values()) + NEIGHBOURS + LOOKALIKES


@pytest.mark.req("SCRUB-003", "SCRUB-004", "SCRUB-005", "SCRUB-006", "SCRUB-009", "SCRUB-010")
def test_every_drawn_character_scrubbed_in_every_form(host: RecordingHost, mint: Mint) -> None:
    """A password holding every character a canary may draw, and notes holding them in the
    reverse order, are scrubbed in each of their forms, each alone in a result and all of them
    together."""
    password = canary_holding(mint, "every-drawn", EVERY_DRAWN)
    notes = canary_holding(mint, "every-drawn-notes", EVERY_DRAWN[::-1])
    secret = SecretSpec(new_id(), "drawn.example", "user-drawn", password, notes)
    require_every_form_scrubbed(host, secret, "holding every character a canary may draw")


# --- every hex digit in every place of an id ----------------------------------------------------

#: Where the dashes of an 8-4-4-4-12 id fall among its 32 hex digits.
_GROUPS: Final = (8, 4, 4, 4, 12)


def _spelled(digits: str) -> str:
    """Return 32 hex digits as an 8-4-4-4-12 id."""
    parts, start = [], 0
    for size in _GROUPS:
        parts.append(digits[start : start + size])
        start += size
    return "-".join(parts)


def _turning(step: int) -> tuple[str, ...]:
    """Return 16 ids, the n-th with digit (n + step * place) mod 16 at each of its 32 places:
    across them every place, the version digit (place 12) and the variant digit (place 16)
    included, holds every hex digit once."""
    return tuple(
        _spelled("".join("0123456789abcdef"[(n + step * place) % 16] for place in range(32)))
        for n in range(16)
    )


#: Known ids: every hex digit in every place, and the nil and the max UUID (RFC 9562, 5.9 and
#: 5.10), which are 8-4-4-4-12 ids like any other (decisions R1.2).
KNOWN_IDS: Final = (
    *_turning(1),
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
)

#: Unknown ids: every hex digit in every place again, in another arrangement, in descending
#: order of their first digit, so that the order of first use is not the sorted one.
UNKNOWN_IDS: Final = tuple(reversed(_turning(-1)))


def _version_and_variant(secret_id: str) -> str:
    return f"{secret_id} (version digit {secret_id[14]}, variant digit {secret_id[19]})"


@pytest.mark.req("GRAM-003", "GRAM-004", "SCRUB-007")
@pytest.mark.parametrize("case", ["lower", "upper"])
def test_ids_with_every_digit_in_every_place_resolve(
    host: RecordingHost, mint: Mint, case: str
) -> None:
    """Ids holding every hex digit in every place, the nil and the max UUID among them, resolve
    whatever their version and variant digits, spelled in lower or upper case, and each echoed
    value comes back as the placeholder of its lower-case id."""
    secrets = [make_secret(mint, secret_id=secret_id) for secret_id in KNOWN_IDS]
    host.reset(config(secrets, tools=(ECHO,)))
    spell = str.upper if case == "upper" else str.lower
    members = {f"s{index:02d}": ref(spell(s.id)) for index, s in enumerate(secrets)}
    outcome = host.invoke(ECHO.name, args_json(members))
    require(
        not outcome.is_error,
        ("GRAM-003", "GRAM-004"),
        f"a call naming {len(secrets)} known ids of every version and variant digit, in {case} "
        f"case, ended {outcome.disposition}",
    )
    missing = [s.id for s in secrets if placeholder(s.id) not in outcome.text]
    require(
        not missing,
        ("GRAM-003", "GRAM-004", "SCRUB-007"),
        f"{len(missing)} of {len(secrets)} ids spelled in {case} case came back without the "
        f"placeholder of their lower-case id, the first {_version_and_variant(missing[0])}"
        if missing
        else "",
    )


@pytest.mark.req("GRAM-003", "MSG-007", "INV2")
def test_unknown_ids_with_every_digit_in_every_place_named(host: RecordingHost, mint: Mint) -> None:
    """Unknown ids holding every hex digit in every place, every other one in upper case, are
    unknown ids whatever their version and variant digits: the call is refused naming each,
    lower-cased, in order of first use, and no tool runs."""
    known = make_secret(mint)
    host.reset(config([known], tools=(RECORDER,)))
    members = {"known": ref(known.id)}
    for index, secret_id in enumerate(UNKNOWN_IDS):
        members[f"u{index:02d}"] = ref(secret_id.upper() if index % 2 else secret_id)
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        ("GRAM-003", "MSG-007"),
        f"a call with {len(UNKNOWN_IDS)} unknown ids of every version and variant digit ended "
        f"{outcome.disposition}, not SECRET_UNRESOLVED",
    )
    expected = "no secret with id " + ", ".join(UNKNOWN_IDS)
    require(
        outcome.text.startswith(expected),
        ("GRAM-003", "MSG-007"),
        f"the refusal of {len(UNKNOWN_IDS)} unknown ids of every version and variant digit does "
        f"not begin with all of them in order of first use "
        f"({sum(secret_id in outcome.text for secret_id in UNKNOWN_IDS)} of them appear in it)",
    )
    require(
        host.observe().receipts == (),
        "INV2",
        "a tool ran for a call naming unknown ids",
    )


def _one_digit_off(secret_id: str) -> tuple[str, ...]:
    """Return, for each of the 32 places of ``secret_id``, the id with that digit alone moved
    on by one."""
    digits = secret_id.replace("-", "")
    return tuple(
        _spelled(digits[:place] + f"{(int(digits[place], 16) + 1) % 16:x}" + digits[place + 1 :])
        for place in range(32)
    )


@pytest.mark.req("MSG-007", "GRAM-004", "INV2")
def test_ids_one_digit_off_a_known_id_are_unknown(host: RecordingHost, mint: Mint) -> None:
    """Ids that differ from a known id in one digit alone, in each of its 32 places, are unknown
    ids: the call naming them beside the known one is refused naming each, in order of first
    use, and no tool runs. Random ids never come this close to each other."""
    known = make_secret(mint, secret_id=KNOWN_IDS[5])
    host.reset(config([known], tools=(RECORDER,)))
    near = _one_digit_off(known.id)
    members = {"known": ref(known.id)}
    members.update({f"n{place:02d}": ref(secret_id) for place, secret_id in enumerate(near)})
    outcome = host.invoke(RECORDER.name, args_json(members))
    named = [place for place, secret_id in enumerate(near) if secret_id in outcome.text]
    require(
        outcome.disposition == "SECRET_UNRESOLVED"
        and outcome.text.startswith("no secret with id " + ", ".join(near)),
        ("MSG-007", "GRAM-004"),
        f"a call naming a known id and {len(near)} ids one digit off it ended "
        f"{outcome.disposition}, its text naming {len(named)} of them"
        + (
            f" (the first missing differs in place {min(set(range(32)) - set(named))})"
            if len(named) < len(near)
            else ""
        ),
    )
    require(
        host.observe().receipts == (),
        "INV2",
        "a tool ran for a call naming ids one digit off a known id",
    )
