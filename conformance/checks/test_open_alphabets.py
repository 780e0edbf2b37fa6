"""Checks that draw the names a host must refuse from a generator, not a list (decisions R1.2,
R1.4, R2).

The contract has exactly three fields. A host that accepts a fourth, however plausible its name,
delivers something the operator never saw described; so the field names here come from
:func:`conformance.alphabets.unknown_fields`, a seeded generator of credential-store words, small
edits of the real names and random words, and each one must refuse its call as malformed, alone
or beside a good reference, before any prompt and without running the tool. Nothing here prints
a value; a detail names the field.
"""

from __future__ import annotations

import pytest

from conformance.alphabets import unknown_fields
from conformance.canary import Mint
from conformance.outcomes import require
from conformance.scenario import RECORDER, RecordingHost, args_json, config, make_secret, ref

#: How many generated field names each run tries.
FIELD_COUNT = 64


@pytest.mark.req("GRAM-005", "GRAM-008", "MSG-001")
def test_generated_fields_are_refused(host: RecordingHost, mint: Mint) -> None:
    """Each generated field name that the contract does not have refuses its call as malformed:
    SECRET_UNRESOLVED, 'Malformed secret reference', no prompt, no tool. Every other call puts
    a good reference before it, so that both the only reference and one of two are tried."""
    secret = make_secret(mint)
    host.reset(config([secret]))
    for index, field_name in enumerate(unknown_fields(FIELD_COUNT)):
        members = {"x": ref(secret.id, field_name)}
        if index % 2:
            members = {"good": ref(secret.id, "username"), **members}
        outcome = host.invoke(RECORDER.name, args_json(members))
        require(
            outcome.disposition == "SECRET_UNRESOLVED",
            ("GRAM-005", "GRAM-008"),
            f"a reference to the field {field_name!r} ended {outcome.disposition}, not refused",
        )
        require(
            outcome.text.startswith("Malformed secret reference"),
            "MSG-001",
            f"the refusal of the field {field_name!r} is not 'Malformed secret reference'",
        )
    seen = host.observe()
    require(seen.receipts == (), "GRAM-008", "the tool ran for a reference to an unknown field")
    if seen.judges("observe.requests", "GRAM-008"):
        require(
            seen.approval_requests == (),
            "GRAM-008",
            "a call with an unknown field prompted the operator",
        )
