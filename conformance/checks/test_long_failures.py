"""Checks of failure and timeout texts longer than the cap, through scrub and cap (decisions R5.4,
R6.1).

A result and a failure text take the same two last steps: scrubbing, then the cap. The older
checks send only results past the cap; a host that caps its results but passes a handler's
failure text whole, or scrubs a failure text only in its head, was never made to show it. Here
the ``thrower`` handler fails with a message of more than 150,000 characters, with a value
before the filler, at the cut and past it; and the ``timeout`` handler outlives the execution
timeout on arguments longer than the cap, which a host may quote in its timeout text. Nothing
here prints a value.
"""

from __future__ import annotations

import json

import pytest

from conformance.canary import Kind, Mint, required_forms
from conformance.host import HandlerKind
from conformance.outcomes import fail, require
from conformance.scenario import (
    THROWER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    placeholder,
    receipts_for,
    ref,
    tool,
    value_of,
)

#: The result cap (decisions R6.1) and the room a host's note about a cut may take.
RESULT_CAP = 150_000
CAP_NOTE_ROOM = 1_000

#: Filler lengths: the last value lands just under the reference host's cut (``at-the-cut``:
#: the failure text's head, the first value's placeholder and the note about the cut take about
#: 150 characters) or far past it (``past-the-cut``).
_FILLERS = {"at-the-cut": RESULT_CAP - 170, "past-the-cut": RESULT_CAP + 5_000}

#: The execution timeout the timeout case configures, and how long its handler sleeps.
_EXECUTION_TIMEOUT_S = 0.3
_HANDLER_SLEEP_S = 3.0


#: The members of the long failure's arguments, named so that their written order is also their
#: order by name: a host that hands its handler the members sorted (key order is a SHOULD,
#: decisions R4.1) puts the values where the written order does.
_HEAD, _FILLER, _TAIL = "a-head", "b-filler", "c-tail"


def _head_first(host: RecordingHost) -> bool:
    """Whether the handler was handed the head member first, as the arguments were written; a
    host whose receipts cannot be read is taken to keep the order."""
    if not host.has("observe.receipts"):
        return True
    receipts = receipts_for(host.observe(), THROWER.name)
    try:
        handed = json.loads(receipts[-1].raw) if receipts else {_HEAD: None}
    except ValueError:
        return True
    return isinstance(handed, dict) and next(iter(handed), None) == _HEAD


def _readable(form: str, text: str) -> bool:
    """Whether 8 or more characters of ``form`` stand together in ``text``."""
    return any(form[start : start + 8] in text for start in range(len(form) - 7))


@pytest.mark.req("CAP-001", "SCRUB-010", "SCRUB-011", "CAP-002")
@pytest.mark.parametrize("kind", [Kind.PLAIN, Kind.SPECIAL], ids=["plain", "special"])
@pytest.mark.parametrize("where", list(_FILLERS))
def test_failure_text_longer_than_the_cap(
    host: RecordingHost, mint: Mint, where: str, kind: Kind
) -> None:
    """A handler's failure text of more than 150,000 characters is scrubbed, then cut to the
    cap: no value before the filler, at the cut or past it is readable, nor in the snippet."""
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    args = args_json(
        {_HEAD: ref(secret.id), _FILLER: "z" * _FILLERS[where], _TAIL: ref(secret.id, "notes")}
    )
    outcome = host.invoke(THROWER.name, args)
    text = outcome.text
    require(outcome.is_error, "SCRUB-010", f"a handler that raised ended {outcome.disposition}")
    require(
        len(text) <= RESULT_CAP,
        "CAP-001",
        f"the failure text is {len(text)} characters, over the cap",
    )
    require(
        len(text) >= RESULT_CAP - CAP_NOTE_ROOM,
        "CAP-001",
        f"the failure text was cut to {len(text)} characters, far under the cap",
    )
    if _head_first(host):
        # A host that handed the members in another order put another value at the head.
        require(
            placeholder(secret.id) in text[:1_000],
            "SCRUB-010",
            "the value at the head of a long failure text is not its placeholder",
        )
    snippet = ""
    records = ledger_records(host.observe()) if host.has("observe.ledger") else []
    if records:
        snippet = str(records[-1].get("errorSnippet") or "")
    for field_name in ("password", "notes"):
        for name, form in required_forms(value_of(secret, field_name)).items():
            if form in text:
                fail("SCRUB-010", f"form {name} of the {field_name} is in the long failure text")
            if _readable(form, text[-2_000:]):
                fail(
                    ("CAP-002", "SCRUB-011"),
                    f"the cut left 8 or more characters of form {name} of the {field_name}",
                )
            if form in snippet:
                fail("SCRUB-010", f"form {name} of the {field_name} is in the snippet")


@pytest.mark.req("CAP-001", "SCRUB-010")
def test_timeout_text_of_arguments_longer_than_the_cap(host: RecordingHost, mint: Mint) -> None:
    """A call whose arguments are longer than the cap times out: the host's timeout text, which
    may quote them, is within the cap and holds no form of a value."""
    secret = make_secret(mint, kind=Kind.SPECIAL)
    slow = tool("slow", HandlerKind.TIMEOUT, seconds=_HANDLER_SLEEP_S)
    host.reset(config([secret], tools=(slow,), execution_timeout_s=_EXECUTION_TIMEOUT_S))
    args = args_json(
        {"p": ref(secret.id), "filler": "z" * (RESULT_CAP + 5_000), "n": ref(secret.id, "notes")}
    )
    outcome = host.invoke(slow.name, args)
    require(
        outcome.is_error,
        "SCRUB-010",
        f"a handler that outlived the execution timeout ended {outcome.disposition}, not failed",
    )
    require(
        len(outcome.text) <= RESULT_CAP,
        "CAP-001",
        f"the timeout text is {len(outcome.text)} characters, over the cap",
    )
    for field_name in ("password", "notes"):
        for name, form in required_forms(value_of(secret, field_name)).items():
            if form in outcome.text:
                fail("SCRUB-010", f"form {name} of the {field_name} is in the timeout text")
