"""Checks of a ledger the host did not start: records written before secret references existed,
and a ledger reopened after a restart (decisions R6.2).

The suite hands the host an existing ledger file (``ledgerSeed``) and reads it back two ways:
the file's bytes (``ledgerBase64``), which must keep the old records exactly and hold the new
ones after them, and the records as the host's own ledger reader decodes them (``ledgerRead``),
in which a record written without ``secretRefs`` must read as an empty list. A reopened ledger is
the same hand-over: the bytes one configuration left are the seed of the next. The seeded records
hold no value, and nothing here prints one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.canary import Mint
from conformance.outcomes import require
from conformance.scenario import (
    PROVIDER,
    RECORDER,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    name_of,
    ref,
)

#: The surfaces and the hand-over these checks need.
_NEEDS = ("ledger.seed", "observe.ledger", "observe.ledger-read")


def _old_record(number: int, refs: list[str] | None) -> dict[str, Any]:
    """Return a ledger record as an earlier run wrote it; ``refs=None`` predates the field."""
    record: dict[str, Any] = {
        "id": f"seeded-{number}",
        "timestamp": "2026-01-01T00:00:00+00:00",
        "toolName": RECORDER.name,
        "providerId": PROVIDER,
        "policyApplied": "default:ASK",
        "approvalDisposition": "APPROVED_ONCE",
        "durationMs": 3,
        "isError": False,
        "sanitizedArgs": '{"n":"' + str(number) + '"}',
        "errorSnippet": None,
    }
    if refs is not None:
        record["secretRefs"] = refs
    return record


def _lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(
        (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii") for record in records
    )


@pytest.mark.req("LEDG-003", "LEDG-020")
def test_records_without_secret_refs_read_empty(host: RecordingHost, mint: Mint) -> None:
    """Old records without secretRefs read back as empty lists, beside the host's own records."""
    host.need(*_NEEDS)
    secret = make_secret(mint)
    kept_ref = "00000000-0000-4000-8000-000000000001.password"
    old = [_old_record(1, None), _old_record(2, [kept_ref]), _old_record(3, None)]
    seed = _lines(old)
    host.reset(config([secret], ledger_seed=seed))
    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    seen = host.observe()
    require(
        seen.ledger_bytes.startswith(seed),
        "LEDG-020",
        "the host did not keep the existing ledger's bytes as they were",
    )
    read = list(seen.ledger_read or ())
    by_id = {str(record.get("id")): record for record in read}
    for record in old:
        require(
            record["id"] in by_id,
            ("LEDG-003", "LEDG-020") if "secretRefs" not in record else "LEDG-020",
            f"the host's reader lost the seeded record {record['id']}",
        )
        expected = record.get("secretRefs", [])
        require(
            by_id[record["id"]].get("secretRefs") == expected,
            "LEDG-003",
            f"the seeded record {record['id']} does not read back with secretRefs {expected}",
        )
    require(
        len(read) == len(old) + 1
        and read[-1].get("secretRefs") == [name_of(secret.id)]
        and [str(record.get("id")) for record in read[: len(old)]] == [r["id"] for r in old],
        "LEDG-020",
        "the host's reader does not give the old records, then the new one, in order",
    )


@pytest.mark.req("LEDG-020")
def test_reopened_ledger_appends_after_its_records(host: RecordingHost, mint: Mint) -> None:
    """Append, restart on the same file, append again: every record reads back, in order."""
    host.need(*_NEEDS)
    secret = make_secret(mint)
    host.reset(config([secret]))
    host.invoke(RECORDER.name, args_json({"x": ref(secret.id)}))
    first = host.observe()
    before = first.ledger_bytes
    first_ids = [str(record.get("id")) for record in ledger_records(first)]
    require(len(first_ids) == 1, "LEDG-020", "the first run did not write one record")
    host.reset(config([secret], ledger_seed=before))
    host.invoke(RECORDER.name, args_json({"y": ref(secret.id, "notes")}))
    host.invoke(RECORDER.name, args_json({"z": "plain"}))
    after = host.observe()
    require(
        after.ledger_bytes.startswith(before),
        "LEDG-020",
        "reopening the ledger changed the records it already held",
    )
    records = ledger_records(after)
    require(
        len(records) == 3 and not any("_undecodable" in record for record in records),
        "LEDG-020",
        f"after a reopen the file holds {len(records)} whole records, not 3",
    )
    read_ids = [str(record.get("id")) for record in after.ledger_read or ()]
    require(
        read_ids[:1] == first_ids
        and len(read_ids) == 3
        and read_ids == [str(r.get("id")) for r in records],
        "LEDG-020",
        "the host's reader does not give the first run's record, then the second run's",
    )
    refs = [record.get("secretRefs") for record in after.ledger_read or ()]
    require(
        refs == [[name_of(secret.id)], [name_of(secret.id, "notes")], []],
        "LEDG-020",
        "the reopened ledger's records read back with the wrong secretRefs",
    )
