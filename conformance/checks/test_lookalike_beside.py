"""Checks of a non-ASCII look-alike marker beside a real reference (decisions R1.3).

This module owns the look-alike's treatment where a real reference sits in the same call, in
the same string or another. R1.3 lets a host read a marker spelled with a long s (U+017F) as a
marker or pass it as literal text; this module holds it to the one it picks for a spelling, for
every string of a call and for every call of the check: a host that only reads the look-alike as a
marker once a real marker is present (in its string or in the call) treats the same text two
ways, and delivers a value where the ruling's literal alternative would not, or leaves text
where its marker alternative would resolve. The choice is reported, never failed. It never
prints a value.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from conformance.canary import Mint
from conformance.host import Answer, SecretSpec
from conformance.outcomes import accept, fail, require
from conformance.scenario import (
    RECORDER,
    RecordingHost,
    answering,
    args_json,
    config,
    ledger_records,
    make_secret,
    name_of,
    ref,
    substitute_oracle,
)

#: The look-alike's prefix: ``secret`` spelled with a long s, U+017F, which case-folds to s.
LOOK_ALIKE_PREFIX: Final = "\u017fecret"

#: Where the look-alike goes in each call: alone; in a member of its own beside a real
#: reference; in one string with a real reference before it; and with one after it.
_PLACES: Final = ("alone", "own-member", "after-real", "before-real")


def _members(real: SecretSpec, other: SecretSpec, place: str) -> dict[str, Any]:
    look = ref(other.id, prefix=LOOK_ALIKE_PREFIX)
    if place == "alone":
        return {"y": look}
    if place == "own-member":
        return {"x": ref(real.id), "y": look}
    if place == "after-real":
        return {"x": ref(real.id) + " and " + look}
    return {"x": look + " and " + ref(real.id, "username")}


def _as_marker(node: Any) -> Any:
    """The tree with the look-alike spelled as a real marker: what the marker reading reads."""
    # Written out as it is, not as a \u escape, so the look-alike's letter can be replaced.
    return json.loads(json.dumps(node, ensure_ascii=False).replace(LOOK_ALIKE_PREFIX, "secret"))


@pytest.mark.req("GRAM-007")
def test_lookalike_beside_a_real_reference_is_read_one_way(host: RecordingHost, mint: Mint) -> None:
    """A look-alike marker is read the same way alone and beside a real reference, in its own
    string or in the real reference's: as a marker throughout, or as literal text throughout."""
    real, other = make_secret(mint), make_secret(mint)
    by_id = {s.id: s for s in (real, other)}
    chosen: dict[str, str] = {}
    for place in _PLACES:
        host.reset(config([real, other]))
        members = _members(real, other, place)
        outcome = host.invoke(RECORDER.name, args_json(members), answering(Answer.APPROVE))
        seen = host.observe()
        if outcome.is_error:
            # As a marker, a look-alike naming a secret the vault holds must resolve.
            fail("GRAM-007", f"a look-alike ({place}) ended the call {outcome.disposition}")
        records = ledger_records(seen)
        require(len(records) == 1 and len(seen.receipts) == 1, "GRAM-007", "the call ran oddly")
        refs = list(records[0].get("secretRefs") or ())
        choice = "marker" if name_of(other.id) in refs else "literal"
        chosen[place] = choice
        tree = _as_marker(members) if choice == "marker" else members
        expected = substitute_oracle(tree, by_id)
        try:
            received = json.loads(seen.receipts[0].raw)
        except ValueError:
            received = None
        require(
            received == expected,
            "GRAM-007",
            f"with a look-alike ({place}) read as {choice} by its secretRefs, the handler got "
            "other arguments: the look-alike is read two ways in one call",
        )
    if len(set(chosen.values())) > 1:
        fail(
            "GRAM-007",
            "a look-alike marker is read as "
            + ", ".join(f"{choice} ({place})" for place, choice in chosen.items())
            + ": one spelling, two readings",
        )
    accept("GRAM-007", next(iter(chosen.values())))
