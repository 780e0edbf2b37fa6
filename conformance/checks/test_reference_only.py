"""Checks of rules about the reference implementation's own files and commands (decisions R6.2,
R6.7; design "Operating it").

These requirements have scope ``reference-only``: they run only when the host under test
announces the ``reference`` capability, and they check the reference package's ledger file and
console commands directly, since the driver protocol has no window onto a host's files.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conformance.canary import Kind, Mint
from conformance.host import SecretSpec
from conformance.outcomes import require
from conformance.scenario import REFERENCE_CAPABILITY, RecordingHost, make_secret

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
    # LEDG-003 holds for every host (checked through ledgerSeed in test_ledger_seed); this check
    # reads the reference package's own decoder, so it runs on the reference host only.
    if not host.has(REFERENCE_CAPABILITY):
        pytest.skip("not applicable: this check reads the reference implementation's decoder")
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


#: Runs ``secref`` as its console script does.
_RUN_SECREF = "import sys; from reference_impl.cli import main; sys.exit(main(sys.argv[1:]))"

#: The two ways a check runs ``secref``: as its console script does, in a process of its own,
#: and through ``reference_impl.cli.main`` in this process, so that the command is checked
#: against the reference package as this run has it.
_HOW = ("console", "in-process")


@dataclass(frozen=True, slots=True)
class _Done:
    """What one run of ``secref`` ended with."""

    returncode: int
    stdout: str
    stderr: str


def _secref(tmp_path: Path, how: str, *arguments: str) -> _Done:
    """Run the reference ``secref`` command with no terminal attached."""
    if importlib.util.find_spec("reference_impl.cli") is None:
        pytest.skip("the reference command line (reference_impl.cli) is not available")
    if how == "in-process":
        from reference_impl.cli import main

        stdout, stderr, stdin = io.StringIO(), io.StringIO(), sys.stdin
        sys.stdin = io.StringIO()
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(list(arguments))
        finally:
            sys.stdin = stdin
        return _Done(code, stdout.getvalue(), stderr.getvalue())
    done = subprocess.run(
        [sys.executable, "-c", _RUN_SECREF, *arguments],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    return _Done(done.returncode, done.stdout, done.stderr)


def _vault_file(tmp_path: Path, mint: Mint) -> tuple[Path, list[SecretSpec]]:
    secrets = [make_secret(mint), make_secret(mint, kind=Kind.SPACED)]
    path = tmp_path / "vault.json"
    entries = [
        {
            "id": s.id,
            "website": s.website,
            "username": s.username,
            "password": s.password,
            "notes": s.notes,
        }
        for s in secrets
    ]
    path.write_text(json.dumps({"secrets": entries}), encoding="utf-8")
    return path, secrets


@pytest.mark.req("OPS-001")
def test_list_prints_id_website_username(host: RecordingHost, mint: Mint, tmp_path: Path) -> None:
    """Listing secrets prints one id<TAB>website<TAB>username line per secret, in order."""
    vault, secrets = _vault_file(tmp_path, mint)
    expected = [f"{s.id}\t{s.website}\t{s.username}" for s in secrets]
    for how in _HOW:
        done = _secref(tmp_path, how, "list", "--vault", str(vault))
        require(done.returncode == 0, "OPS-001", f"secref list ({how}) exited {done.returncode}")
        require(
            done.stdout.splitlines() == expected,
            "OPS-001",
            f"secref list ({how}) does not print one id<TAB>website<TAB>username line per secret",
        )
        for secret in secrets:
            require(secret.password not in done.stdout, "OPS-001", "secref list printed a password")


@pytest.mark.req("OPS-002")
def test_cli_invoke_takes_the_governed_path(
    host: RecordingHost, mint: Mint, tmp_path: Path
) -> None:
    """secref invoke prompts the operator, even under a tool ALLOW, and records the call."""
    vault, secrets = _vault_file(tmp_path, mint)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"tools": {"echo": "ALLOW"}}), encoding="utf-8")
    args = json.dumps({"v": "{{secret:" + secrets[0].id + "}}"})
    for how in _HOW:
        ledger = tmp_path / f"ledger-{how}.jsonl"
        done = _secref(
            tmp_path,
            how,
            "invoke",
            "echo",
            "--args",
            args,
            "--vault",
            str(vault),
            "--policy",
            str(policy),
            "--ledger",
            str(ledger),
            "--permission",
            "secret.read",
        )
        require(
            "approval requested" in done.stderr,
            "OPS-002",
            f"secref invoke ({how}) ran a secret-bearing call without prompting the operator",
        )
        records = [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines()]
        require(
            len(records) == 1 and records[0]["secretRefs"] == [f"{secrets[0].id}.password"],
            "OPS-002",
            f"secref invoke ({how}) did not record the call with its reference in the ledger",
        )
        for secret in secrets:
            for text in (done.stdout, done.stderr, ledger.read_text(encoding="utf-8")):
                require(secret.password not in text, "OPS-002", "secref invoke printed a value")


@pytest.mark.req("SCRUB-016")
def test_single_pass_leftmost_longest(host: RecordingHost) -> None:
    """The reference scrubber takes the leftmost, then longest, match and never rescans."""
    from reference_impl import Field, Reference, Scrubber, SecretValue

    short = Reference("00000000-0000-4000-8000-000000000001", Field.PASSWORD)
    long_ = Reference("00000000-0000-4000-8000-000000000002", Field.PASSWORD)
    inner = Reference("00000000-0000-4000-8000-000000000003", Field.NOTES)
    word = Reference("00000000-0000-4000-8000-000000000004", Field.USERNAME)
    scrubber = Scrubber(
        [
            (short, SecretValue("Qx7pLm2vRt")),
            (long_, SecretValue("Qx7pLm2vRtZZ")),
            # A value that occurs inside the first placeholder's text.
            (inner, SecretValue(short.id)),
            # A value shorter than the others that occurs only inside placeholders.
            (word, SecretValue("password")),
        ]
    )
    text = "a Qx7pLm2vRtZZ b Qx7pLm2vRt c"
    expected = f"a [secret:{long_.name}] b [secret:{short.name}] c"
    require(
        scrubber.scrub(text) == expected,
        "SCRUB-016",
        "the scrubber did not take the leftmost longest match once, without rescanning",
    )
