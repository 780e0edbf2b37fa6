"""Checks of calls with many references and results with many occurrences (decisions R2, R4.3,
R5.3, R6.1, R6.2).

A host may keep a call's references, or a value's occurrences, in something with room for a
few: a fixed array, a loop that stops early, a check of the ends of a list only. These checks
run well past any plausible internal limit, at 3, 16, 64 and 256 references per call and 16, 64
and 256 occurrences of a value per result, and place the case that tells a broken host from a
sound one deliberately, never by chance: the one unknown reference of a call stands first, in
the middle and last, and every reference of a call names a different field or secret. Nothing
here prints a value; details name positions and counts only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

import pytest

from conformance.canary import Kind, Mint, hardening_forms, required_forms
from conformance.host import SecretSpec
from conformance.outcomes import fail, require
from conformance.scenario import (
    ECHO,
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    name_of,
    new_id,
    placeholder,
    receipts_for,
    ref,
    substitute_oracle,
    value_of,
)

#: References per call: one past the pairs the older checks use, then far past any small array.
REFERENCE_COUNTS = (3, 16, 64, 256)

#: Occurrences of one value in one result.
OCCURRENCE_COUNTS = (16, 64, 256)

#: Where the one unknown reference stands among the others.
POSITIONS = ("first", "middle", "last")

#: The fields a secret has; each reference of a call names a different (secret, field) pair.
_FIELDS = ("password", "username", "notes")

#: The result cap (decisions R6.1) and the room a host's note about a cut may take.
RESULT_CAP = 150_000
CAP_NOTE_ROOM = 1_000


def _spellings(text: str, forms: Iterable[str]) -> int:
    """Return how many occurrences of ``forms`` one leftmost-longest pass finds in ``text``."""
    ordered = sorted(set(forms), key=len, reverse=True)
    return len(re.findall("|".join(map(re.escape, ordered)), text)) if ordered else 0


def _raw_spellings(host: RecordingHost, value: str) -> tuple[int, int] | None:
    """Return how often the echo handler's raw text spelled ``value`` in a form the host must
    scrub, and in one it may scrub (forms beyond the design too), or ``None`` when the host
    shows no receipts.

    The raw text is the host's own writing of the substituted arguments: a writer that escapes
    non-ASCII characters (``\\u00e9``) spells a value in a form beyond the design (decisions
    R4.1, R5.6), which the host need not scrub, so the echo's first line may bring fewer
    placeholders than the value's occurrences.
    """
    if not host.has("observe.receipts"):
        return None
    receipts = receipts_for(host.observe(), ECHO.name)
    if not receipts:
        return None
    raw = str(receipts[-1].raw)
    required = required_forms(value).values()
    return _spellings(raw, required), _spellings(raw, (*required, *hardening_forms(value).values()))


def _references(mint: Mint, count: int) -> tuple[list[SecretSpec], list[tuple[str, str]]]:
    """Return secrets and ``count`` distinct (id, field) references to them, three per secret."""
    secrets = [make_secret(mint) for _ in range(-(-count // len(_FIELDS)))]
    pairs = [(secret.id, field_name) for secret in secrets for field_name in _FIELDS]
    return secrets, pairs[:count]


def _members(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """One argument member per reference, in order, so that each stands at a known position."""
    return {f"r{index:03d}": ref(sid, field_name) for index, (sid, field_name) in enumerate(pairs)}


def _position(position: str, count: int) -> int:
    return {"first": 0, "middle": count // 2, "last": count - 1}[position]


@pytest.mark.req("INV2", "SUBST-004", "MSG-007")
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("count", REFERENCE_COUNTS, ids=[f"refs-{n}" for n in REFERENCE_COUNTS])
def test_one_unknown_reference_among_many(
    host: RecordingHost, mint: Mint, count: int, position: str
) -> None:
    """One unknown reference, first, in the middle or last among ``count``: nothing runs, no
    value is put anywhere, and the refusal names that id and no other."""
    secrets, pairs = _references(mint, count - 1)
    unknown = new_id()
    pairs.insert(_position(position, count), (unknown, "password"))
    host.reset(config(secrets))
    outcome = host.invoke(RECORDER.name, args_json(_members(pairs)))
    seen = host.observe()
    where = f"the unknown reference {position} of {count}"
    require(
        seen.receipts == (),
        ("INV2", "SUBST-004"),
        f"the handler ran with {where}",
    )
    require(outcome.is_error, ("INV2", "SUBST-004"), f"a call with {where} did not fail")
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "MSG-007",
        f"a call with {where} ended {outcome.disposition}, not SECRET_UNRESOLVED",
    )
    require(
        outcome.text.startswith(f"no secret with id {unknown}")
        and not outcome.text.startswith(f"no secret with id {unknown}, "),
        "MSG-007",
        f"the refusal of a call with {where} does not name that id alone",
    )
    require(
        not any(secret.id in outcome.text for secret in secrets),
        "MSG-007",
        f"the refusal of a call with {where} names a known id as missing",
    )
    for secret in secrets:
        for field_name in _FIELDS:
            if value_of(secret, field_name) in outcome.text:
                fail(("INV2", "SUBST-004"), f"a known value reached the refusal of {where}")


@pytest.mark.req("SUBST-005", "LEDG-002", "APPR-002")
@pytest.mark.parametrize(
    "count", REFERENCE_COUNTS[1:], ids=[f"refs-{n}" for n in REFERENCE_COUNTS[1:]]
)
def test_every_reference_of_many_delivered(host: RecordingHost, mint: Mint, count: int) -> None:
    """``count`` distinct references in one call: each is replaced by its own value, the ledger
    names each once in order, and the prompt carries one descriptor for each."""
    secrets, pairs = _references(mint, count)
    host.reset(config(secrets))
    args = args_json(_members(pairs))
    outcome = host.invoke(RECORDER.name, args)
    require(
        not outcome.is_error,
        "SUBST-005",
        f"a call of {count} references ended {outcome.disposition}",
    )
    seen = host.observe()
    require(
        len(seen.receipts) == 1, "SUBST-005", f"the handler did not run once for {count} references"
    )
    delivered = json.loads(seen.receipts[0].raw)
    expected = substitute_oracle(json.loads(args), {secret.id: secret for secret in secrets})
    wrong = [key for key in expected if delivered.get(key) != expected[key]]
    require(
        not wrong,
        "SUBST-005",
        f"{len(wrong)} of {count} references were not replaced by their own value "
        f"(the first at member {wrong[0] if wrong else '-'})",
    )
    names = [name_of(sid, field_name) for sid, field_name in pairs]
    if seen.judges("observe.ledger", "LEDG-002"):
        records = ledger_records(seen)
        require(
            bool(records) and list(records[-1].get("secretRefs") or []) == names,
            "LEDG-002",
            f"the ledger's secretRefs do not name each of {count} references once, in order",
        )
    if seen.judges("observe.requests", "APPR-002"):
        requests = seen.approval_requests
        descriptors = list(requests[-1].get("descriptors") or []) if requests else []
        require(
            len(descriptors) == count,
            "APPR-002",
            f"the prompt of a call of {count} references carries {len(descriptors)} descriptors",
        )


@pytest.mark.req("SCRUB-010", "SCRUB-007", "SCRUB-009")
@pytest.mark.parametrize("kind", [Kind.PLAIN, Kind.SPECIAL], ids=["plain", "special"])
@pytest.mark.parametrize(
    "count", OCCURRENCE_COUNTS, ids=[f"occurrences-{n}" for n in OCCURRENCE_COUNTS]
)
def test_every_occurrence_scrubbed(host: RecordingHost, mint: Mint, count: int, kind: Kind) -> None:
    """A value standing ``count`` times in the arguments comes back five times as often (the raw
    text and forms a to d of each member): every occurrence becomes its placeholder."""
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret]))
    args = args_json({f"v{index:03d}": ref(secret.id) for index in range(count)})
    outcome = host.invoke(ECHO.name, args)
    require(not outcome.is_error, "SCRUB-010", f"the echo call ended {outcome.disposition}")
    forms = required_forms(value_of(secret, "password"))
    left = sorted(name for name, form in forms.items() if form in outcome.text)
    require(
        not left,
        ("SCRUB-010", "SCRUB-009"),
        f"with {count} occurrences, form(s) {', '.join(left)} of the value survived scrubbing",
    )
    found = outcome.text.count(placeholder(secret.id))
    # The four form lines of each member hold one occurrence each; the raw first line holds the
    # value as the host wrote it (decisions R4.1), counted from the handler's receipt.
    raw = _raw_spellings(host, value_of(secret, "password"))
    least, most = (4 * count + raw[0], 4 * count + raw[1]) if raw else (4 * count, 5 * count)
    require(
        least <= found <= most,
        "SCRUB-007",
        f"{least} to {most} occurrences should each be one placeholder; the result holds {found}",
    )


@pytest.mark.req("CAP-001", "CAP-002", "SCRUB-011", "SCRUB-009")
@pytest.mark.parametrize(
    "count", OCCURRENCE_COUNTS, ids=[f"occurrences-{n}" for n in OCCURRENCE_COUNTS]
)
def test_many_occurrences_across_the_cut(host: RecordingHost, mint: Mint, count: int) -> None:
    """``count`` occurrences placed on both sides of the cap's cut: the result is within the cap,
    nothing of the value before the cut survives, and the cut leaves no 8-character piece."""
    secret = make_secret(mint, kind=Kind.SPECIAL)
    # The echo's first line is the raw arguments: filler, then the occurrences, each of which
    # grows to a placeholder. Half of them fit before the cut, whatever the placeholder's size.
    filler = RESULT_CAP - count * len(placeholder(secret.id)) // 2 - 2_000
    members: dict[str, str] = {"filler": "z" * filler}
    members.update({f"v{index:03d}": ref(secret.id) for index in range(count)})
    host.reset(config([secret]))
    outcome = host.invoke(ECHO.name, args_json(members))
    text = outcome.text
    require(
        len(text) <= RESULT_CAP, "CAP-001", f"the result is {len(text)} characters, over the cap"
    )
    require(
        len(text) >= RESULT_CAP - CAP_NOTE_ROOM,
        "CAP-001",
        f"the result was cut to {len(text)} characters, far under the cap",
    )
    forms = required_forms(value_of(secret, "password"))
    left = sorted(name for name, form in forms.items() if form in text)
    require(
        not left,
        ("SCRUB-011", "SCRUB-009"),
        f"with {count} occurrences before the cut, form(s) {', '.join(left)} survived",
    )
    before = text.count(placeholder(secret.id))
    # The raw first line, where the cut falls, holds the value as the host's writer spelled it
    # (decisions R4.1). A writer that spelled it in a form beyond the design (a \\u escape of
    # a non-ASCII character, R5.6), as its receipt or such a form left in the result shows,
    # leaves it readable there by the rulings' leave, scrubbed or not: then neither the
    # placeholders before the cut nor the pieces beside it say anything of the cut.
    value = value_of(secret, "password")
    raw = _raw_spellings(host, value)
    beyond = (
        raw[1] > raw[0] if raw else any(form in text for form in hardening_forms(value).values())
    )
    if beyond:
        return
    require(
        before >= count // 4,
        "SCRUB-011",
        f"only {before} placeholders stand before the cut of a result of {count} occurrences",
    )
    tail = text[-2_000:]
    for name, form in forms.items():
        # Any readable piece of 8 or more characters holds one of exactly 8.
        if any(form[start : start + 8] in tail for start in range(len(form) - 7)):
            fail(("CAP-002", "SCRUB-011"), f"the cut left 8 or more characters of form {name}")
