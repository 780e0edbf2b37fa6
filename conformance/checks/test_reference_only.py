"""Checks of rules about the reference implementation's own files and commands (decisions R6.2,
R6.7; design "Operating it").

These requirements have scope ``reference-only``: they run only when the host under test
announces the ``reference`` capability, and they check the reference package's ledger file and
console commands directly, since the driver protocol has no window onto a host's files.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conformance.outcomes import require
from conformance.scenario import RecordingHost

if TYPE_CHECKING:
    from reference_impl import LedgerRecord


def _record(number: int, width: int = 2_000) -> LedgerRecord:
    from reference_impl import Disposition, LedgerRecord

    return LedgerRecord(
        id=f"call-{number}",
        timestamp="2026-01-01T00:00:00+00:00",
        tool_name="recorder",
        provider_id="plugin.canary",
        policy_applied="secret:ASK",
        approval_disposition=Disposition.APPROVED_ONCE,
        duration_ms=1,
        is_error=False,
        sanitized_args="x" * width,
        error_snippet=None,
        secret_refs=(f"00000000-0000-4000-8000-{number:012d}.password",),
    )


@pytest.mark.req("LEDG-003")
def test_record_without_secret_refs_reads_empty(host: RecordingHost) -> None:
    """A ledger record written before the feature, without secretRefs, reads as an empty list."""
    from reference_impl import decode_record, encode_record

    line = json.loads(encode_record(_record(1)))
    del line["secretRefs"]
    require(decode_record(line).secret_refs == (), "LEDG-003", "a record without secretRefs")


@pytest.mark.req("LEDG-009")
def test_ledger_file_owner_only(host: RecordingHost, tmp_path: Path) -> None:
    """The ledger file is created readable and writable by its owner only."""
    from reference_impl import JsonlLedger

    path = tmp_path / "mcp-calls.jsonl"
    previous = os.umask(0)
    try:
        JsonlLedger(path).append(_record(1))
    finally:
        os.umask(previous)
    mode = stat.S_IMODE(path.stat().st_mode)
    require(mode == 0o600, "LEDG-009", f"the ledger file was created with mode {mode:o}")


@pytest.mark.req("LEDG-010")
def test_concurrent_lines_never_interleave(host: RecordingHost, tmp_path: Path) -> None:
    """Records appended from many threads at once come back as whole lines."""
    from reference_impl import JsonlLedger, read_ledger

    ledger = JsonlLedger(tmp_path / "mcp-calls.jsonl")

    def write(base: int) -> None:
        for number in range(25):
            ledger.append(_record(base * 100 + number, 20_000))

    threads = [threading.Thread(target=write, args=(base,)) for base in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    contents = read_ledger(tmp_path / "mcp-calls.jsonl")
    require(
        len(contents.records) == 200 and not contents.problems,
        "LEDG-010",
        f"{len(contents.records)} whole records and {len(contents.problems)} problems",
    )


@pytest.mark.req("LEDG-011")
def test_torn_last_line_skipped(host: RecordingHost, tmp_path: Path) -> None:
    """A partial last line is skipped and reported, and the records before it are read."""
    from reference_impl import JsonlLedger, read_ledger

    path = tmp_path / "mcp-calls.jsonl"
    ledger = JsonlLedger(path)
    for number in range(3):
        ledger.append(_record(number, 10))
    with path.open("ab") as handle:
        handle.write(b'{"id": "torn", "timest')
    contents = read_ledger(path)
    require(len(contents.records) == 3, "LEDG-011", "the whole records were not all read")
    require(len(contents.problems) == 1, "LEDG-011", "the torn last line was not reported")


def _cli() -> object:
    if importlib.util.find_spec("reference_impl.cli") is None:
        pytest.skip("the reference command line (reference_impl.cli) is not available")
    return importlib.import_module("reference_impl.cli")


@pytest.mark.req("OPS-001")
def test_list_prints_id_website_username(
    host: RecordingHost, capsys: pytest.CaptureFixture[str]
) -> None:
    """Listing secrets prints one id<TAB>website<TAB>username line per secret."""
    cli = _cli()
    main = getattr(cli, "main", None)
    if main is None:
        pytest.skip("the reference command line has no main()")
    code = main(["list"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line]
    require(code in (0, None), "OPS-001", f"secref list exited {code}")
    require(
        all(len(line.split("\t")) == 3 for line in lines),
        "OPS-001",
        "secref list does not print id<TAB>website<TAB>username lines",
    )


@pytest.mark.req("OPS-002")
def test_cli_invoke_takes_the_governed_path(host: RecordingHost) -> None:
    """The CLI's invoke runs a call through the registry's governed path."""
    cli = _cli()
    for name in ("invoke", "run_invoke", "build_registry"):
        if hasattr(cli, name):
            break
    else:
        pytest.skip("the reference command line exposes no invoke entry point")
    from reference_impl import Registry

    source = Path(str(getattr(cli, "__file__", ""))).read_text(encoding="utf-8")
    require(
        "Registry" in source and ".invoke(" in source,
        "OPS-002",
        "the CLI's invoke does not go through Registry.invoke",
    )
    require(Registry.invoke is not None, "OPS-002", "the registry has no invoke")


@pytest.mark.req("SCRUB-016")
def test_single_pass_leftmost_longest(host: RecordingHost) -> None:
    """The reference scrubber takes the leftmost, then longest, match and never rescans."""
    from reference_impl import Field, Reference, Scrubber, SecretValue

    short = Reference("00000000-0000-4000-8000-000000000001", Field.PASSWORD)
    long_ = Reference("00000000-0000-4000-8000-000000000002", Field.PASSWORD)
    inner = Reference("00000000-0000-4000-8000-000000000003", Field.NOTES)
    scrubber = Scrubber(
        [
            (short, SecretValue("Qx7pLm2vRt")),
            (long_, SecretValue("Qx7pLm2vRtZZ")),
            # A value that occurs inside the first placeholder's text.
            (inner, SecretValue(short.id)),
        ]
    )
    text = "a Qx7pLm2vRtZZ b Qx7pLm2vRt c"
    expected = f"a [secret:{long_.name}] b [secret:{short.name}] c"
    require(
        scrubber.scrub(text) == expected,
        "SCRUB-016",
        "the scrubber did not take the leftmost longest match once, without rescanning",
    )
