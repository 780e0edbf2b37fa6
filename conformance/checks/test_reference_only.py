"""Checks of rules about the reference implementation's own files and commands (decisions R6.2,
R6.7; design "Operating it").

These requirements have scope ``reference-only``: they run only when the host under test
announces the ``reference`` capability, and they check the reference package's ledger file and
console commands directly, since the driver protocol has no window onto a host's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from conformance.canary import Kind, Mint
from conformance.host import SecretSpec
from conformance.outcomes import fail, not_applicable, require
from conformance.scenario import (
    RECORDER,
    REFERENCE_CAPABILITY,
    RecordingHost,
    args_json,
    config,
    ledger_records,
    make_secret,
    ref,
)
from conformance.via import via_mcp
from reference_impl import STEP_ORDER

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


def _damaged_line(damage: str) -> bytes:
    """One ledger line (with its newline) damaged as ``damage`` names; see ``_DAMAGE``."""
    whole = json.loads(_encode(_record(90, 10)))
    if damage == "torn":
        return b'{"id":"torn","timest\n'
    if damage == "torn-glued-to-record":
        # A writer that did not know the line before it was torn appended without a newline.
        return b'{"id":"torn","timest' + _encode(_record(91, 10))
    if damage == "torn-1-byte-glued-to-record":
        # The shortest torn prefix: a crash right after a record's first byte.
        return b"{" + _encode(_record(91, 10))
    if damage == "torn-glued-to-bad-record":
        # The same, glued to a line that is JSON but not a record: neither is kept.
        glued = json.loads(_encode(_record(91, 10)))
        glued["secretRefs"] = "abc"
        return b'{"id":"torn","timest' + (json.dumps(glued, separators=(",", ":")) + "\n").encode(
            "ascii"
        )
    if damage == "not-json":
        return b"not a record at all\n"
    if damage == "not-an-object":
        return b'["id", "timestamp"]\n'
    field, _, wrong = damage.partition("=")
    if wrong == "missing":
        del whole[field]
    else:
        whole[field] = json.loads(wrong)
    return (json.dumps(whole, separators=(",", ":")) + "\n").encode("ascii")


def _encode(record: LedgerRecord) -> bytes:
    from reference_impl import encode_record

    return encode_record(record)


#: Damaged lines the reader must pass over, each with how many whole records it still holds:
#: torn lines (LEDG-011), a torn prefix (of 20 bytes, or of one) glued to a whole record that must
#: be kept (or to a line that is not a record, which must not be), and lines
#: that are JSON but not a record, one wrong field at a time (LEDG-014).
_DAMAGE: dict[str, int] = {
    "torn": 0,
    "torn-glued-to-record": 1,
    "torn-1-byte-glued-to-record": 1,
    "torn-glued-to-bad-record": 0,
    "not-json": 0,
    "not-an-object": 0,
    'secretRefs="abc"': 0,
    "secretRefs=[1, 2]": 0,
    'secretRefs=["x", null]': 0,
    'durationMs="5"': 0,
    "durationMs=1.5": 0,
    'approvalDisposition="NOT_A_DISPOSITION"': 0,
    "toolName=missing": 0,
    "durationMs=missing": 0,
}


@pytest.mark.req("LEDG-011", "LEDG-014")
@pytest.mark.parametrize("at", ["first", "middle", "last"])
@pytest.mark.parametrize("damage", list(_DAMAGE))
def test_reader_passes_over_damage(
    host: RecordingHost, tmp_path: Path, damage: str, at: str
) -> None:
    """A damaged line anywhere in the ledger is skipped and reported under its own line number;
    every whole record around it is read, in order, and a whole record glued to a torn prefix
    is kept."""
    from reference_impl import read_ledger

    whole = [_encode(_record(number, 10)) for number in range(3)]
    index = {"first": 0, "middle": 1, "last": 3}[at]
    bad = _damaged_line(damage)
    if at == "last" and damage == "torn":
        bad = bad.rstrip(b"\n")  # a crash leaves the last line without its newline
    lines = [*whole[:index], bad, *whole[index:]]
    path = tmp_path / "mcp-calls.jsonl"
    path.write_bytes(b"".join(lines))
    contents = read_ledger(path)
    ids = [record.id for record in contents.records]
    kept = ["call-91"] if _DAMAGE[damage] else []
    want = [*(f"call-{n}" for n in range(index)), *kept, *(f"call-{n}" for n in range(index, 3))]
    require(ids == want, ("LEDG-011", "LEDG-014"), f"{damage} at {at}: records read as {ids}")
    require(
        len(contents.problems) == 1 and contents.problems[0].startswith(f"line {index + 1}:"),
        ("LEDG-011", "LEDG-014"),
        f"{damage} at {at} (line {index + 1}): {len(contents.problems)} problems reported, "
        f"first naming {contents.problems[0].split(':')[0] if contents.problems else 'none'}",
    )
    # The report says what the damage is: a torn line, or a line that is not a record.
    torn = damage.startswith("torn")
    require(
        ("torn" in contents.problems[0]) == torn,
        ("LEDG-011", "LEDG-014"),
        f"{damage} at {at} was reported as {'not torn' if torn else 'a torn line'}",
    )


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


class _Terminal(io.StringIO):
    """Input that says it is a terminal, holding what the operator types."""

    def isatty(self) -> bool:
        return True


def _secref(tmp_path: Path, how: str, *arguments: str, typed: str | None = None) -> _Done:
    """Run the reference ``secref`` command, with no terminal attached unless ``typed`` is
    given: then, in process only, a terminal on which the operator types ``typed``."""
    if importlib.util.find_spec("reference_impl.cli") is None:
        pytest.skip("the reference command line (reference_impl.cli) is not available")
    if how == "in-process":
        from reference_impl.cli import main

        stdout, stderr, stdin = io.StringIO(), io.StringIO(), sys.stdin
        sys.stdin = io.StringIO() if typed is None else _Terminal(typed)
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


@pytest.mark.req("OPS-002")
def test_cli_invoke_approved_runs_with_the_value(
    host: RecordingHost, mint: Mint, tmp_path: Path
) -> None:
    """An approved secref invoke runs the tool with the value in place of the reference: the
    sha256 demo tool, which reads its "text" member, prints the value's hash."""
    vault, secrets = _vault_file(tmp_path, mint)
    policy = tmp_path / "policy.json"
    policy.write_text("{}", encoding="utf-8")
    done = _secref(
        tmp_path,
        "in-process",
        "invoke",
        "sha256",
        "--args",
        json.dumps({"text": "{{secret:" + secrets[0].id + "}}"}),
        "--vault",
        str(vault),
        "--policy",
        str(policy),
        "--permission",
        "secret.read",
        typed="approve\n",
    )
    want = hashlib.sha256(secrets[0].password.encode("utf-8")).hexdigest()
    require(
        done.returncode == 0 and done.stdout.strip() == want,
        "OPS-002",
        f"an approved secref invoke of sha256 exited {done.returncode} without the value's hash",
    )


#: The reference host's bound on sanitizedArgs and the approval request's arguments, and the
#: most characters its note about a cut may take from it.
_KEPT_ARGS = 10_000
_NOTE_ROOM = 100


def _kept_arguments(host: RecordingHost, args: str) -> dict[str, str]:
    """Call the recorder with ``args`` and return what the host kept of them, by surface: the
    record's sanitizedArgs, and the approval request's arguments when a prompt was shown."""
    host.invoke(RECORDER.name, args)
    seen = host.observe()
    kept = {"sanitizedArgs": str(ledger_records(seen)[-1].get("sanitizedArgs", ""))}
    requests = seen.approval_requests
    if requests:
        kept["the approval request's arguments"] = str(requests[-1].get("arguments", ""))
    return kept


@pytest.mark.req("LEDG-022")
@pytest.mark.parametrize("length", [_KEPT_ARGS - 1, _KEPT_ARGS, _KEPT_ARGS + 1, 4 * _KEPT_ARGS])
def test_kept_arguments_are_bounded(host: RecordingHost, mint: Mint, length: int) -> None:
    """Arguments within 10,000 characters are kept whole in the ledger and the approval
    request; longer ones keep their head, within the bound, and end with their full length.

    Over MCP the host keeps the MCP layer's serialization of the arguments, not the agent's
    text (decisions R9.2): its length near the bound is unknown to the suite, so the lengths
    near it are not applicable there, and a long text is judged by its bound and note only.
    """
    over_mcp = via_mcp(host)
    if over_mcp and abs(length - _KEPT_ARGS) < _NOTE_ROOM:
        not_applicable(
            "over MCP the host keeps the MCP layer's serialization of the arguments, whose "
            "length near the 10,000-character bound the suite cannot know (decisions R9.2)"
        )
    secret = make_secret(mint)
    host.reset(config([secret]))
    reference = ref(secret.id)
    filler = "".join(chr(ord("a") + n % 26) for n in range(length))
    overhead = len(args_json({"x": reference, "y": ""}))
    args = args_json({"x": reference, "y": filler[: length - overhead]})
    assert len(args) == length
    for surface, text in _kept_arguments(host, args).items():
        if length <= _KEPT_ARGS:
            require(
                text == args,
                "LEDG-022",
                f"{surface}: arguments of {length} characters were not kept whole",
            )
            continue
        head = over_mcp or text.startswith(args[: _KEPT_ARGS - _NOTE_ROOM])
        noted = text.rstrip(". ]").endswith(
            " characters, cut" if over_mcp else f"{length} characters, cut"
        )
        require(
            len(text) <= _KEPT_ARGS and head and noted,
            "LEDG-022",
            f"{surface}: arguments of {length} characters were kept as {len(text)} characters, "
            "not cut to the bound with their head and full length",
        )


#: Escapes other than ``\\uXXXX`` in text that is not JSON: the reference host decodes only
#: ``\\u`` escapes there (so that an escaped marker is seen and redacted) and keeps these as
#: the agent wrote them.
_KEPT_ESCAPES = '\\"q\\\\r\\ns\\/t\\x'


@pytest.mark.req("LEDG-022", "LEDG-004", "GRAM-016")
def test_refused_text_keeps_its_escapes(host: RecordingHost, mint: Mint) -> None:
    """Arguments that are not JSON and carry a reference are refused; the reference host keeps
    them whole in the record, every escape but ``\\uXXXX`` as written: a host that dropped or
    decoded them would record text the agent never sent."""
    if via_mcp(host):
        not_applicable("over MCP the arguments are always a JSON object (decisions R9.2)")
    secret = make_secret(mint)
    host.reset(config([secret]))
    raw = '{"x": "' + _KEPT_ESCAPES + " " + ref(secret.id) + '"'
    outcome = host.invoke(RECORDER.name, raw)
    require(
        outcome.disposition == "SECRET_UNRESOLVED",
        "GRAM-016",
        f"arguments that are not JSON and carry a reference ended {outcome.disposition}",
    )
    sanitized = str(ledger_records(host.observe())[-1].get("sanitizedArgs", ""))
    require(
        sanitized == raw,
        ("LEDG-022", "LEDG-004"),
        f"the record keeps {len(sanitized)} characters of a {len(raw)}-character text that is "
        "not JSON, not the text whole with its escapes as written",
    )


#: Escapes JSON allows inside a string, spelt as an agent may choose to: decoded and encoded
#: again they would read ``é``, ``/``, ``A`` and a tab written ``\t``.
_JSON_ESCAPES = "\\u00e9 \\/ \\u0041 \\t"


@pytest.mark.req("LEDG-022", "LEDG-004")
def test_resolved_text_keeps_its_escapes(host: RecordingHost, mint: Mint) -> None:
    """JSON arguments whose one string holds a valid reference beside escapes the agent chose
    are kept as written, in the record and in the approval request: the reference host rewrites
    a string only to redact a malformed candidate in it, and this one holds none, so a host
    that decoded and encoded it again would record text the agent never sent."""
    if via_mcp(host):
        not_applicable(
            "over MCP the host keeps the MCP layer's serialization of the arguments, not the "
            "agent's text (decisions R9.2)"
        )
    secret = make_secret(mint)
    host.reset(config([secret]))
    raw = '{"x": "' + _JSON_ESCAPES + " " + ref(secret.id) + '"}'
    for surface, text in _kept_arguments(host, raw).items():
        require(
            text == raw,
            ("LEDG-022", "LEDG-004"),
            f"{surface}: {len(text)} characters kept of a {len(raw)}-character JSON text whose "
            "valid reference and escapes needed no redaction, not the text as written",
        )


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


# --- the reference host under faults and hostile input (decisions R5.2, R6.7, R7.2, R7.3) ------

#: How long a check waits for an open that must not block before calling it a hang.
_HANG_SECONDS = 10.0


@pytest.mark.req("LEDG-012")
def test_ledger_path_refused_unless_regular(host: RecordingHost, tmp_path: Path) -> None:
    """A symbolic link or a FIFO at the ledger path is refused at once; a 0644 file is tightened."""
    from reference_impl import JsonlLedger

    target = tmp_path / "target.jsonl"
    target.write_bytes(b"")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    said: dict[str, str] = {}
    try:
        JsonlLedger(link).open()
        followed = True
    except OSError as error:
        followed, said["symbolic link"] = False, str(error)
    require(not followed, "LEDG-012", "the ledger was opened through a symbolic link")

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    outcome: list[bool] = []

    def open_fifo() -> None:
        try:
            JsonlLedger(fifo).open()
            outcome.append(True)
        except OSError as error:
            said["FIFO"] = str(error)
            outcome.append(False)

    opener = threading.Thread(target=open_fifo, daemon=True)
    opener.start()
    opener.join(_HANG_SECONDS)
    if opener.is_alive():
        # Release the blocked open by becoming its reader, so no thread is left behind.
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        opener.join(_HANG_SECONDS)
    require(outcome == [False], "LEDG-012", "a FIFO at the ledger path was not refused at once")
    try:
        JsonlLedger(tmp_path).open()
    except OSError as error:
        said["directory"] = str(error)
    try:
        JsonlLedger(tmp_path / "missing" / "ledger.jsonl").open()
    except OSError as error:
        said["ENOENT"] = str(error)
    # A clear error says what is at the path, so the operator knows what to remove, and an
    # error with nothing odd at the path names the system's reason, not a kind of file.
    for kind in ("symbolic link", "FIFO", "directory", "ENOENT"):
        require(
            kind in said.get(kind, ""),
            "LEDG-012",
            f"refusing the ledger path ({kind}), the error did not say {kind}",
        )

    # Each wider mode, one bit for others or the group at a time too: a test of the mode that
    # holds for 0644 may not hold for 0601.
    for wider in (0o644, 0o601, 0o602, 0o604, 0o610, 0o620, 0o640):
        wide = tmp_path / f"wide-{wider:o}.jsonl"
        wide.write_bytes(b"")
        wide.chmod(wider)
        JsonlLedger(wide).append(_record(1, 10))
        mode = stat.S_IMODE(wide.stat().st_mode)
        require(
            mode == 0o600, "LEDG-012", f"an existing {wider:o} ledger was left at mode {mode:o}"
        )
    # Modes that give the owner neither read nor write: a process that may still open the file
    # for writing (root) must tighten it; any other gets a clear refusal, which R6.7 allows.
    for wider in (0o004, 0o044, 0o066):
        wide = tmp_path / f"ownerless-{wider:o}.jsonl"
        wide.write_bytes(b"")
        wide.chmod(wider)
        try:
            JsonlLedger(wide).append(_record(1, 10))
        except OSError as error:
            require(
                "cannot be opened" in str(error),
                "LEDG-012",
                f"an existing {wider:o} ledger was refused without a clear error",
            )
            continue
        mode = stat.S_IMODE(wide.stat().st_mode)
        require(
            mode == 0o600, "LEDG-012", f"an existing {wider:o} ledger was left at mode {mode:o}"
        )


#: The size a ledger file is grown to (sparsely) before the file-size limit is set there: far
#: beyond any other file the run writes, so only the ledger's appends fail.
_FULL_AT = 1 << 30


@pytest.mark.req("LEDG-013")
def test_failed_append_reported_and_stops_calls(host: RecordingHost, tmp_path: Path) -> None:
    """A full disk at the append: the call reports it, a WARNING says so, no later call runs."""
    import logging
    import resource
    import signal

    from reference_impl import Registry, Tool, ToolResult

    path = tmp_path / "ledger.jsonl"
    with path.open("wb") as handle:
        handle.truncate(_FULL_AT)
    runs: list[int] = []

    def handler(_arguments: object) -> ToolResult:
        runs.append(1)
        return ToolResult("ran")

    warnings: list[logging.LogRecord] = []
    logger = logging.Logger("reference-only-ledger-check", logging.DEBUG)

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno == logging.WARNING:
                warnings.append(record)

    logger.addHandler(_Keep())
    from reference_impl import JsonlLedger

    registry = Registry(ledger=JsonlLedger(path), logger=logger)
    registry.register(Tool("counted", "plugin.canary", handler))
    registry.rules.set_yolo(True)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (_FULL_AT, hard))
    try:
        first = registry.invoke("counted", "{}")
        second = registry.invoke("counted", "{}")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    require(
        first.ledger_error is not None and first.ledger_id is None,
        "LEDG-013",
        "a call whose record could not be written did not say so",
    )
    require(
        len(runs) == 1 and second.ledger_error is not None,
        "LEDG-013",
        f"after a failed append, a later call ran ({len(runs)} runs in all)",
    )
    require(bool(warnings), "LEDG-013", "the failed append was not logged at WARNING")


@pytest.mark.req("LEDG-014")
def test_deep_lines_never_raise(host: RecordingHost, tmp_path: Path) -> None:
    """A ledger line or a driver input line nested 10^5 deep is skipped, never raised on."""
    from reference_impl import encode_record, read_ledger
    from reference_impl.driver import Driver

    deep = b"[" * 100_000 + b"]" * 100_000
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(deep + b"\n" + encode_record(_record(1, 10)))
    try:
        contents = read_ledger(path)
        raised = ""
    except BaseException as error:  # the requirement is that nothing at all escapes
        contents, raised = None, type(error).__name__
    require(
        contents is not None and len(contents.records) == 1 and len(contents.problems) == 1,
        "LEDG-014",
        f"reading a ledger with a deeply nested line failed ({raised or 'records lost'})",
    )
    lines = deep + b'\n{"id":1,"method":"shutdown","params":{}}\n'
    out, err = io.BytesIO(), io.StringIO()
    try:
        Driver(stdin=io.BytesIO(lines), stdout=out, stderr=err).serve()
        raised = ""
    except BaseException as error:  # the requirement is that nothing at all escapes
        raised = type(error).__name__
    require(not raised, "LEDG-014", f"the driver raised {raised} on a deeply nested line")
    require(b'"id":1' in out.getvalue(), "LEDG-014", "the driver stopped serving")


#: What a crash may leave after a torn record: nothing, or zero bytes where the file system
#: had sized the file but not written its blocks.
_TORN_TAILS: Final = (b"", b"\0", b"\0" * 512)


@pytest.mark.req("LEDG-015")
def test_append_after_torn_line_starts_a_new_line(host: RecordingHost, tmp_path: Path) -> None:
    """A record appended after a torn last line is written on a line of its own, whatever the
    crash left: a record cut after any of its bytes (inside a character of several bytes too),
    or that cut followed by zero bytes. A host that looks for a torn line by some bytes only
    (a last byte above the newline's, say) glues the next record to the torn one, and both are
    lost to every reader."""
    from reference_impl import JsonlLedger, encode_record

    path = tmp_path / "ledger.jsonl"
    whole = encode_record(replace(_record(1, 10), sanitized_args="é€😀x" * 3))
    after = encode_record(_record(2, 10))
    cuts = [whole[:cut] for cut in range(1, len(whole))]
    for torn in [*cuts, *(whole[:20] + tail for tail in _TORN_TAILS[1:]), *_TORN_TAILS[1:]]:
        path.write_bytes(torn)
        ledger = JsonlLedger(path)
        try:
            ledger.append(_record(2, 10))
        finally:
            ledger.close()
        require(
            path.read_bytes() == torn + b"\n" + after,
            "LEDG-015",
            f"the record after a torn line of {len(torn)} bytes ending in byte "
            f"{torn[-1]:#04x} was not written on a line of its own",
        )


class _HostileTextError(Exception):
    """An exception whose text raises KeyboardInterrupt carrying a canary."""

    def __str__(self) -> str:
        raise KeyboardInterrupt(self.args[0])


@pytest.mark.req("LEDG-016")
def test_invoke_never_raises(host: RecordingHost, mint: Mint) -> None:
    """Hostile handler behaviours each end with a disposition and one record, never a raise."""
    from reference_impl import MemoryLedger, Registry, Tool, ToolResult

    canary = make_secret(mint).password

    def hostile(_arguments: object) -> str:
        raise _HostileTextError(canary)

    class _Unprintable:
        def __str__(self) -> str:
            raise SystemExit(canary)

    behaviours = {
        "hostile-exception-text": hostile,
        "result-none": lambda _arguments: ToolResult(None),  # type: ignore[arg-type]
        "result-bytes": lambda _arguments: ToolResult(canary.encode()),  # type: ignore[arg-type]
        "unprintable-object": lambda _arguments: _Unprintable(),
    }
    ledger = MemoryLedger()
    registry = Registry(ledger=ledger, execution_timeout=5.0)
    registry.rules.set_yolo(True)
    for name, handler in behaviours.items():
        # Handlers that break the handler type on purpose: that is the behaviour under check.
        registry.register(Tool(name, "plugin.canary", handler))  # type: ignore[arg-type]
    for name in behaviours:
        before = len(ledger.records)
        try:
            outcome = registry.invoke(name, "{}")
            raised = ""
        except BaseException as error:  # the requirement is that nothing at all escapes
            raised = type(error).__name__
        require(not raised, "LEDG-016", f"invoke raised {raised} for a handler ({name})")
        require(
            outcome.is_error and len(ledger.records) == before + 1,
            "LEDG-016",
            f"a hostile handler ({name}) did not end as one recorded failure",
        )


@pytest.mark.req("LEDG-016")
@pytest.mark.parametrize("step", STEP_ORDER)
def test_host_failure_at_any_step_is_recorded_once(
    host: RecordingHost, mint: Mint, step: str
) -> None:
    """The host itself failing once at any step of a secret-bearing call ends the call as a
    withheld failure with exactly one ledger record, and never raises or shows a value."""
    from reference_impl import (
        InMemoryVault,
        MemoryLedger,
        Registry,
        SecretRecord,
        SecretValue,
        Tool,
        User,
    )

    secret = make_secret(mint)
    heard: list[str] = []

    def tracer(name: str) -> None:
        heard.append(name)
        if name == step and heard.count(name) == 1:
            raise RuntimeError(f"the host failed at {name}: {secret.password}")

    record = SecretRecord(
        secret.id,
        secret.website,
        SecretValue(secret.username),
        SecretValue(secret.password),
        SecretValue(secret.notes),
    )
    ledger = MemoryLedger()
    registry = Registry(
        vault=InMemoryVault([record]),
        ledger=ledger,
        user=User(permissions=frozenset({"secret.read"})),
        tracer=tracer,
    )
    registry.register(Tool("echo", "plugin.canary", lambda arguments: arguments.raw))
    try:
        outcome = registry.invoke("echo", json.dumps({"x": "{{secret:" + secret.id + "}}"}))
        raised = ""
    except BaseException as error:  # the requirement is that nothing at all escapes
        raised = type(error).__name__
    require(not raised, "LEDG-016", f"invoke raised {raised} when the host failed at {step}")
    require(step in heard, "LEDG-016", f"the registry never reached the {step} step")
    require(
        outcome.is_error and secret.password not in outcome.text,
        "LEDG-016",
        f"a host failure at {step} did not end as a withheld failure",
    )
    require(
        len(ledger.records) == 1,
        "LEDG-016",
        f"a host failure at {step} left {len(ledger.records)} ledger records, not one",
    )


@pytest.mark.req("MSG-009")
@pytest.mark.parametrize("error", ["RuntimeError", "KeyError", "MemoryError"])
def test_vault_port_bug_is_a_vault_failure(host: RecordingHost, mint: Mint, error: str) -> None:
    """A vault port that fails with something other than its own error is a vault failure:
    SECRET_UNRESOLVED with the ruling's message and the kind "unexpected error", never the
    error's own text, and never a host failure."""
    # MSG-009 holds for every host (checked through vault.failing); a port's own bug can only
    # be planted in the reference package, so this check runs on the reference host only.
    if not host.has(REFERENCE_CAPABILITY):
        pytest.skip("not applicable: this check plants a bug in the reference vault port")
    from reference_impl import MemoryLedger, Registry, Tool, User

    secret = make_secret(mint)
    kind = {"RuntimeError": RuntimeError, "KeyError": KeyError, "MemoryError": MemoryError}[error]

    class _BuggyVault:
        def read_page(self, _page: int, _size: int) -> list[object]:
            raise kind(secret.password)

    registry = Registry(
        vault=_BuggyVault(),  # type: ignore[arg-type]
        ledger=MemoryLedger(),
        user=User(permissions=frozenset({"secret.read"})),
    )
    registry.register(Tool("echo", "plugin.canary", lambda arguments: arguments.raw))
    outcome = registry.invoke("echo", json.dumps({"x": "{{secret:" + secret.id + "}}"}))
    require(
        outcome.disposition.value == "SECRET_UNRESOLVED"
        and outcome.text.startswith("the vault could not be read (")
        and secret.password not in outcome.text,
        "MSG-009",
        f"a vault port raising {error} ended {outcome.disposition.value}, not as a vault failure",
    )


@pytest.mark.req("POL-002", "VAULT-005")
def test_policy_unknown_member_refused_in_one_line(
    host: RecordingHost, mint: Mint, tmp_path: Path
) -> None:
    """A policy file with one unknown member, alone or beside a known one, fails closed, and
    the reason is one line that quotes the name when it is short and printable and never when
    it is long. One unknown member is the case to try: a loader that names the wrong entry of
    its list of unknown members breaks only when there is one."""
    from reference_impl import Rule, load_policy

    secret = make_secret(mint)
    long_name = secret.password + "-member-name-long"
    for name, quoted in ((long_name, False), ("secretBearingCall", True)):
        for extra in ({}, {"secretBearingCalls": "ASK"}):
            path = tmp_path / "policy.json"
            path.write_text(json.dumps({**extra, name: "DENY"}), encoding="utf-8")
            try:
                policy = load_policy(path)
            except Exception as error:  # a loader that raises did not fail closed
                fail(
                    "POL-002",
                    f"loading a policy with one unknown member raised {type(error).__name__}",
                )
            require(
                policy.fault is not None and policy.default_rule is Rule.DENY,
                "POL-002",
                "a policy file with one unknown member did not fail closed",
            )
            reason = policy.fault or ""
            require(
                "\n" not in reason and (name in reason) is quoted,
                "VAULT-005",
                "a long unknown member's name was quoted" if not quoted else "a short one was not",
            )


def _unusable_policy(case: str, path: Path) -> None:
    """Put at ``path`` a policy file the host cannot use, of the kind ``case`` names."""
    from reference_impl._limits import INPUT_FILE_MAX_BYTES

    if case == "directory":
        path.mkdir()
    elif case == "fifo":
        os.mkfifo(path)
    elif case == "oversize":
        with path.open("wb") as file:  # sparse: the size is read before any byte
            file.truncate(INPUT_FILE_MAX_BYTES + 1)
    else:  # not UTF-8: a Latin-1 byte inside an otherwise valid policy
        path.write_bytes(b'{"secretBearingCalls": "ASK", "tools": {"caf\xe9": "DENY"}}')


@pytest.mark.req("POL-002", "VAULT-005")
@pytest.mark.parametrize("case", ["directory", "fifo", "oversize", "not-utf8"])
def test_unusable_policy_file_fails_closed(host: RecordingHost, tmp_path: Path, case: str) -> None:
    """A policy path holding a directory, a FIFO, more than 16 MiB or bytes that are not UTF-8
    gives a policy that denies every tool, with a one-line reason; loading it neither raises
    nor hangs, so the host still starts and refuses."""
    from reference_impl import Rule, load_policy

    if case == "fifo" and not hasattr(os, "mkfifo"):
        not_applicable("this platform has no FIFOs")
    path = tmp_path / "policy.json"
    _unusable_policy(case, path)
    try:
        policy = load_policy(path)
    except Exception as error:  # a loader that raises did not fail closed
        fail("POL-002", f"loading a policy file that is {case} raised {type(error).__name__}")
    require(
        policy.fault is not None and policy.default_rule is Rule.DENY,
        "POL-002",
        f"a policy file that is {case} did not fail closed",
    )
    require("\n" not in (policy.fault or ""), "VAULT-005", "the reason is not one line")


@pytest.mark.req("POL-005")
def test_duplicate_policy_member_fails_closed(host: RecordingHost, tmp_path: Path) -> None:
    """A policy file writing secretBearingCalls DENY then ASK is invalid: every tool is DENY."""
    from reference_impl import Rule, load_policy

    path = tmp_path / "policy.json"
    path.write_text('{"secretBearingCalls":"DENY","secretBearingCalls":"ASK"}', encoding="utf-8")
    policy = load_policy(path)
    require(
        policy.fault is not None and policy.default_rule is Rule.DENY,
        "POL-005",
        "a policy member written twice did not make the file invalid",
    )


@pytest.mark.req("VAULT-005")
def test_vault_file_refused_unless_small_regular_file(
    host: RecordingHost, mint: Mint, tmp_path: Path
) -> None:
    """An oversized or non-regular vault is refused in one line; a long unknown name is unquoted."""
    from reference_impl.cli import UsageError, load_vault_file, parse_vault

    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)
    for path, kind in ((big, "over"), (tmp_path, "directory")):
        try:
            load_vault_file(str(path))
            message = ""
        except UsageError as error:
            message = str(error)
        require(
            str(path) in message and kind in message and "\n" not in message,
            "VAULT-005",
            f"a vault file that is {kind} was not refused in one line naming the file and why",
        )
    secret = make_secret(mint)
    for name, quoted in ((secret.password + "-member-name-long", False), ("pasword", True)):
        entry = {"id": secret.id, "website": "w", "password": "p", name: 1}
        try:
            parse_vault(json.dumps({"secrets": [entry]}))
            message = ""
        except UsageError as error:
            message = str(error)
        require(bool(message), "VAULT-005", "a vault with an unknown member was accepted")
        require(
            (name in message) is quoted,
            "VAULT-005",
            "an unknown member's name was quoted" if not quoted else "a short name was not quoted",
        )
