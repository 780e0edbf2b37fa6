"""Checks that values of awkward shapes reach the handler exactly as the vault holds them.

This module owns the exactness of substitution (design step [10], decisions R4.1): a value is
put in place of its reference as it is, code point for code point, in one rewrite. It covers
values a host might be tempted to tidy (line breaks and spaces at either end, decomposed and
compatibility characters that Unicode normalisation would change, invisible and astral
characters), a value that holds another reference's spelling, which one rewrite delivers as
text and a host that replaced references one after another would resolve a second time, and
values of white space only, which are values and not empty fields. Each value but the blank
ones is a fresh canary with the awkward text around or inside it, so the sweep still guards it;
the handler's receipt says what it was handed, and an echo of it must come back scrubbed. It
prints labels, never a value.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Final

import pytest

from conformance.alphabets import AWKWARD_SHAPES as _SHAPES
from conformance.canary import Kind, Mint, required_forms
from conformance.host import SecretSpec
from conformance.outcomes import require
from conformance.scenario import (
    ECHO,
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    new_id,
    ref,
    require_record_says_how_it_ended,
)

#: The requirements an awkward value's delivery and scrubbing cite.
_DELIVERY: Final = "SUBST-005"
_SCRUB: Final = ("SCRUB-001", "SCRUB-003", "SCRUB-004")


def _awkward(mint: Mint, shape: str) -> str:
    """Return a fresh canary wrapped in the awkward text of ``shape``."""
    head, inner, tail = _SHAPES[shape]
    core = mint.canary(Kind.PLAIN, f"awkward-{shape}").value
    return head + core[:11] + inner + core[11:] + tail


def _received(host: RecordingHost) -> dict[str, object]:
    """Return the argument object of the one call the handler received."""
    receipts = host.observe().receipts
    require(len(receipts) == 1, _DELIVERY, f"the handler ran {len(receipts)} times, not once")
    raw = json.loads(receipts[0].raw)
    require(isinstance(raw, dict), _DELIVERY, "the handler received no argument object")
    return dict(raw)


@pytest.mark.req("SUBST-005", "SCRUB-001", "SCRUB-003", "SCRUB-004")
@pytest.mark.parametrize("shape", list(_SHAPES))
def test_awkward_value_delivered_exactly(host: RecordingHost, mint: Mint, shape: str) -> None:
    """A value of an awkward shape, as a password and as notes, alone and inside text, reaches
    the handler code point for code point, and an echo of it comes back scrubbed."""
    base = make_secret(mint)
    secret = dataclasses.replace(base, password=_awkward(mint, shape), notes=_awkward(mint, shape))
    host.reset(config([secret], tools=(RECORDER, ECHO)))
    members = {
        "p": ref(secret.id),
        "n": ref(secret.id, "notes"),
        "t": "<" + ref(secret.id) + "|" + ref(secret.id, "notes") + ">",
    }
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        not outcome.is_error,
        _DELIVERY,
        f"a call with a {shape} value ended {outcome.disposition}",
    )
    got = _received(host)
    expected = {
        "p": secret.password,
        "n": secret.notes,
        "t": "<" + secret.password + "|" + secret.notes + ">",
    }
    for key, want in expected.items():
        have = got.get(key)
        require(
            have == want,
            _DELIVERY,
            f"argument {key} with a {shape} value reached the handler changed "
            + (
                f"({len(have)} code points, not {len(want)})"
                if isinstance(have, str)
                else "(not a string)"
            ),
        )
    echoed = host.invoke(ECHO.name, args_json(members))
    for field_name in ("password", "notes"):
        value = str(getattr(secret, field_name))
        kept = sorted(name for name, form in required_forms(value).items() if form in echoed.text)
        require(
            not kept,
            _SCRUB,
            f"an echo of a {shape} {field_name} kept form(s) {', '.join(kept)} readable",
        )


def _holding(mint: Mint, inner: str) -> str:
    """Return a fresh canary with ``inner`` (another reference's spelling) in its middle."""
    core = mint.canary(Kind.PLAIN, "holds-a-reference").value
    return core[:11] + inner + core[11:]


#: How the value of the first secret spells a reference: to the second secret as written, to
#: it in upper case with its field, to the second's notes, and to the first secret itself.
_SPELLINGS: Final = ("other", "other-upper", "other-notes", "itself")


def _spelling(kind: str, first: SecretSpec, second: SecretSpec) -> str:
    if kind == "other":
        return ref(second.id)
    if kind == "other-upper":
        return ref(second.id.upper(), "password", prefix="SECRET")
    if kind == "other-notes":
        return ref(second.id, "notes")
    return ref(first.id)


@pytest.mark.req("SUBST-005")
@pytest.mark.parametrize("spelling", _SPELLINGS)
def test_value_holding_a_reference_delivered_as_text(
    host: RecordingHost, mint: Mint, spelling: str
) -> None:
    """A value that holds a reference's spelling is delivered as that text, in the same
    string as the reference it spells: substitution is one rewrite, never a second pass."""
    first = make_secret(mint, secret_id=None)
    second = make_secret(mint)
    first = dataclasses.replace(first, password=_holding(mint, _spelling(spelling, first, second)))
    host.reset(config([first, second], tools=(RECORDER,)))
    members = {
        "s": ref(first.id) + " " + ref(second.id) + " " + ref(second.id, "notes"),
        "r": ref(second.id) + " " + ref(first.id),
    }
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        not outcome.is_error,
        "SUBST-005",
        f"a call whose value holds a reference ({spelling}) ended {outcome.disposition}",
    )
    got = _received(host)
    expected = {
        "s": first.password + " " + second.password + " " + second.notes,
        "r": second.password + " " + first.password,
    }
    for key, want in expected.items():
        require(
            got.get(key) == want,
            "SUBST-005",
            f"argument {key}: a value holding a reference's spelling ({spelling}) was not "
            "delivered as written; the host rewrote the text it had put in",
        )


#: Values of white space only, by field: blanks, tabs and a line break. A field is empty only
#: when it holds nothing (decisions R2), so each is a value to deliver as it is. Each is under
#: 8 code points: a value that short is never scrubbed (decisions R5.1), and the sweep does not
#: guard it, so no surface is searched for text as common as a few blanks.
_BLANKS: Final = {"password": "  \t  ", "username": " ", "notes": "\t \r\n\t"}


@pytest.mark.req("SUBST-005", "LEDG-001", "LEDG-005", "LEDG-008")
def test_blank_values_delivered_exactly(host: RecordingHost) -> None:
    """A password, a username and notes of white space only are values, not empty fields: the
    call runs APPROVED_ONCE, recorded so, and each reaches the handler exactly, alone and
    inside text."""
    secret_id = new_id()
    secret = SecretSpec(
        secret_id,
        f"blank-{secret_id[:8]}.example",
        username=_BLANKS["username"],
        password=_BLANKS["password"],
        notes=_BLANKS["notes"],
    )
    host.reset(config([secret], tools=(RECORDER,)))
    members = {
        "p": ref(secret_id),
        "u": ref(secret_id, "username"),
        "n": ref(secret_id, "notes"),
        "t": "<"
        + ref(secret_id)
        + "|"
        + ref(secret_id, "username")
        + "|"
        + ref(secret_id, "notes")
        + ">",
    }
    outcome = host.invoke(RECORDER.name, args_json(members))
    require(
        outcome.disposition == "APPROVED_ONCE",
        _DELIVERY,
        f"a call naming a password, a username and notes of white space only ended "
        f"{outcome.disposition}, not APPROVED_ONCE: such a value is not an empty field",
    )
    got = _received(host)
    expected = {
        "p": secret.password,
        "u": secret.username,
        "n": secret.notes,
        "t": "<" + secret.password + "|" + secret.username + "|" + secret.notes + ">",
    }
    changed = sorted(key for key, want in expected.items() if got.get(key) != want)
    require(
        not changed,
        _DELIVERY,
        f"argument(s) {', '.join(changed)} holding values of white space only reached the "
        "handler changed",
    )
    seen = host.observe()
    if seen.judges("observe.ledger", ("LEDG-001", "LEDG-005", "LEDG-008")):
        records = ledger_records(seen)
        require(
            len(records) == 1,
            "LEDG-005",
            f"one call left {len(records)} ledger records, not one",
        )
        require_record_says_how_it_ended("blank-valued", records[0], outcome)
