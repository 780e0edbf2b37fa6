"""Step [14], the ledger: JSON Lines, secretRefs, file mode, torn lines and old records."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from conformance.scenario import LEDGER_FIELDS
from reference_impl import (
    Disposition,
    JsonlLedger,
    LedgerRecord,
    decode_record,
    encode_record,
    read_ledger,
)
from tests.reference_impl.support import ID_A, ID_B, args, build, ref

#: The record's fields, as the conformance suite states them from the rulings (R6.2).
FIELDS = set(LEDGER_FIELDS)


def sample(index: int = 0, refs: tuple[str, ...] = ()) -> LedgerRecord:
    return LedgerRecord(
        id=f"rec-{index}",
        timestamp="2026-01-01T00:00:00+00:00",
        tool_name="echo",
        provider_id="demo",
        policy_applied="secret:ASK",
        approval_disposition=Disposition.APPROVED_ONCE,
        duration_ms=3,
        is_error=False,
        sanitized_args='{"a": "\u00e9"}',
        error_snippet=None,
        secret_refs=refs,
    )


@pytest.mark.req("LEDG-001")
def test_a_record_is_one_ascii_json_line_with_every_field() -> None:
    """encode_record writes one compact ASCII line with the fields of R6.2; it reads back."""
    line = encode_record(sample(refs=(f"{ID_A}.password",)))
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    line.decode("ascii")
    data = json.loads(line)
    assert set(data) == FIELDS
    assert data["secretRefs"] == [f"{ID_A}.password"]
    assert decode_record(data) == sample(refs=(f"{ID_A}.password",))


@pytest.mark.req("LEDG-009")
def test_the_file_is_created_owner_only(tmp_path: Path) -> None:
    """A new ledger file is created with mode 0600."""
    path = tmp_path / "mcp-calls.jsonl"
    old_umask = os.umask(0)
    try:
        JsonlLedger(path).append(sample())
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.req("LEDG-009", "LEDG-005")
def test_the_registry_writes_the_file_owner_only(tmp_path: Path) -> None:
    """Through the registry too, the file holds one line per call and is 0600."""
    path = tmp_path / "ledger.jsonl"
    h = build(ledger=JsonlLedger(path))
    h.invoke("recorder", args(a="x"))
    h.invoke("recorder", args(a="{{secret:bad}}"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    contents = read_ledger(path)
    assert contents.problems == ()
    assert [r.approval_disposition for r in contents.records] == [
        Disposition.APPROVED_ONCE,
        Disposition.SECRET_UNRESOLVED,
    ]


@pytest.mark.req("LEDG-011")
def test_a_torn_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    """A partial last line is skipped, reported with its size, and never fatal."""
    path = tmp_path / "ledger.jsonl"
    whole = encode_record(sample(0)) + encode_record(sample(1))
    torn = encode_record(sample(2))[:40]
    path.write_bytes(whole + torn)
    contents = read_ledger(path)
    assert [r.id for r in contents.records] == ["rec-0", "rec-1"]
    assert contents.problems == ("line 3: torn last line of 40 bytes skipped",)


@pytest.mark.req("LEDG-011")
def test_a_bad_line_in_the_middle_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    """A line that is not a record is reported by number and type, never by content."""
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(
        encode_record(sample(0))
        + b'{"id": "hunter2-canary"}\n'
        + b"[1]\n"
        + b"\xff\xfe\n"
        + encode_record(sample(4))
    )
    contents = read_ledger(path)
    assert [r.id for r in contents.records] == ["rec-0", "rec-4"]
    assert [p.split(":")[0] for p in contents.problems] == ["line 2", "line 3", "line 4"]
    assert not any("hunter2" in problem for problem in contents.problems)


@pytest.mark.req("LEDG-011")
def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    """No file, no records, no problems."""
    contents = read_ledger(tmp_path / "absent.jsonl")
    assert (contents.records, contents.problems) == ((), ())


@pytest.mark.req("LEDG-003")
@pytest.mark.parametrize("refs", ["absent", None, []], ids=["absent", "null", "empty"])
def test_old_records_without_secret_refs_read_as_empty(refs: object) -> None:
    """A record written before the field existed decodes with no references."""
    data = json.loads(encode_record(sample()))
    if refs == "absent":
        del data["secretRefs"]
    else:
        data["secretRefs"] = refs
    assert decode_record(data).secret_refs == ()


@pytest.mark.req("LEDG-003")
def test_old_records_read_from_a_file(tmp_path: Path) -> None:
    """Through read_ledger too: a line without secretRefs is a record with none."""
    data = json.loads(encode_record(sample()))
    del data["secretRefs"]
    path = tmp_path / "ledger.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="ascii")
    (only,) = read_ledger(path).records
    assert only.secret_refs == ()


@pytest.mark.req("LEDG-002", "LEDG-004")
def test_secret_refs_are_deduplicated_in_order_of_first_use() -> None:
    """Names without duplicates, first use first; sanitizedArgs keeps the references."""
    h = build()
    raw = args(
        x=ref(ID_B),
        y=[ref(ID_A.upper()), ref(ID_B, "password"), ref(ID_B, "username")],
        z=ref(ID_A) + ref(ID_B),
    )
    out = h.invoke("recorder", raw)
    expected = (f"{ID_B}.password", f"{ID_A}.password", f"{ID_B}.username")
    assert out.secret_refs == expected
    (record,) = h.records
    assert record.secret_refs == expected
    assert record.sanitized_args == raw


@pytest.mark.req("LEDG-010")
def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    """Eight threads appending long records leave only whole lines."""
    path = tmp_path / "ledger.jsonl"
    ledger = JsonlLedger(path)
    big = "x" * 70_000  # larger than a pipe buffer, so a torn write would show

    def write(thread: int) -> None:
        for index in range(25):
            ledger.append(
                LedgerRecord(
                    f"{thread}-{index}", "t", "echo", "demo", "none",
                    Disposition.ALLOWED, 0, False, big, None,
                )
            )  # fmt: skip

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = read_ledger(path)
    assert contents.problems == ()
    assert len(contents.records) == 200
    assert len({r.id for r in contents.records}) == 200


@pytest.mark.req("LEDG-009", "LEDG-010")
def test_the_file_is_opened_once_and_released_by_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records share one descriptor; close releases it, and a later record opens the file again."""
    path = tmp_path / "ledger.jsonl"
    ledger = JsonlLedger(path)
    opened: list[int] = []
    closed: list[int] = []
    real_open, real_close = os.open, os.close

    def counting_open(*args: object, **kwargs: object) -> int:
        descriptor = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(descriptor)
        return descriptor

    def counting_close(descriptor: int) -> None:
        closed.append(descriptor)
        real_close(descriptor)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "close", counting_close)
    old_umask = os.umask(0)
    try:
        for index in range(5):
            ledger.append(sample(index))
        assert len(opened) == 1
        ledger.close()
        ledger.close()  # closing twice is harmless
        assert closed == opened
        ledger.append(sample(5))
        ledger.close()
    finally:
        os.umask(old_umask)
    assert len(opened) == 2
    assert closed == opened
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    contents = read_ledger(path)
    assert contents.problems == ()
    assert [r.id for r in contents.records] == [f"rec-{index}" for index in range(6)]
