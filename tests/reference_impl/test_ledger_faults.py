"""Fault injection for the ledger: a full disk, an unwritable path, and writers killed mid-write.

These tests pin decisions R6.7 under real faults rather than stand-ins: the disk fills up
(``RLIMIT_FSIZE`` in a subprocess, so a write stops part-way as on a full disk), the path cannot
be written at all, and four writer processes append while another process kills them with
SIGKILL at random moments. Afterwards every line is a whole record or one torn line where a
writer was killed, no record is lost and no line is interleaved. The crash loop prints its
counts; ``SECREF_CRASH_KILLS`` raises its number of kills (200 by default, within 60 s).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path
from typing import Final

import pytest

from reference_impl import (
    Disposition,
    JsonlLedger,
    LedgerRecord,
    MemoryLedger,
    Registry,
    Tool,
    ToolArguments,
    ToolResult,
    read_ledger,
)
from reference_impl._ledger import RECORD_START
from reference_impl.cli import main

#: Kills the crash loop performs; the issue asks for at least 200.
CRASH_KILLS: Final = int(os.environ.get("SECREF_CRASH_KILLS", "200"))

#: Seconds the crash loop may run before it stops killing, so CI stays bounded.
CRASH_SECONDS: Final = float(os.environ.get("SECREF_CRASH_SECONDS", "60"))

#: Writer processes appending at once.
WRITERS: Final = 4

_ROOT = str(Path(__file__).resolve().parents[2])


def _run(script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=_ROOT,
    )


# --- a full disk ---------------------------------------------------------------------------------

_DISK_FULL = """
    import json, os, resource, signal, sys
    from reference_impl import JsonlLedger, Registry, Tool, ToolResult

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    path = sys.argv[1]
    runs = []

    def handler(arguments):
        runs.append(1)
        return ToolResult("ran")

    def host():
        registry = Registry(ledger=JsonlLedger(path))
        registry.register(Tool("t", "demo", handler))
        registry.rules.set_yolo(True)
        return registry

    def call(registry):
        outcome = registry.invoke("t", '{"a": "b"}')
        return {"disposition": outcome.disposition.value, "recorded": outcome.ledger_id is not None,
                "ledgerError": outcome.ledger_error, "runs": len(runs)}

    out = {}
    registry = host()
    out["before"] = call(registry)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    # Room for 40 more bytes: the next record is cut part-way, as a disk filling up cuts it.
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 40, hard))
    out["full"] = call(registry)
    out["after"] = call(registry)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    # Space is freed and the host restarts: the next record starts on a line of its own.
    out["restarted"] = call(host())
    print(json.dumps(out))
"""


@pytest.mark.req("LEDG-013", "LEDG-015", "LEDG-011")
def test_disk_full_tears_one_line_and_stops_calls(tmp_path: Path) -> None:
    """A full disk tears one record: the call says so, no later call runs, and after a restart
    with space the next record is whole, on its own line, and every earlier record is read."""
    path = tmp_path / "ledger.jsonl"
    done = _run(_DISK_FULL, str(path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["before"] == {
        "disposition": "ALLOWED",
        "recorded": True,
        "ledgerError": None,
        "runs": 1,
    }
    assert out["full"]["recorded"] is False
    assert "EFBIG" in out["full"]["ledgerError"]
    assert out["full"]["runs"] == 2  # it ran, then its record failed
    assert out["after"]["disposition"] == "POLICY_DENIED"
    assert out["after"]["runs"] == 2  # refused before running
    assert out["after"]["ledgerError"] is not None
    assert out["restarted"]["recorded"] is True
    contents = read_ledger(path)
    assert len(contents.records) == 2
    assert len(contents.problems) == 1
    assert "torn" in contents.problems[0]
    lines = path.read_bytes().split(b"\n")
    assert len(lines[1]) == 40  # the torn line, ended by the restarted host's newline
    assert lines[2].startswith(RECORD_START)


# --- an unwritable path ---------------------------------------------------------------------------


def _counting_registry(ledger: JsonlLedger) -> tuple[Registry, list[int]]:
    runs: list[int] = []

    def handler(_arguments: ToolArguments) -> ToolResult:
        runs.append(1)
        return ToolResult("ran")

    registry = Registry(ledger=ledger)
    registry.register(Tool("t", "demo", handler))
    registry.rules.set_yolo(True)
    return registry, runs


def _unwritable_paths(tmp_path: Path) -> list[Path]:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    paths = [blocker / "ledger.jsonl"]  # a path through a regular file: ENOTDIR
    if os.geteuid() != 0:  # root writes anywhere; only others can be kept out by a mode
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        paths.append(locked / "ledger.jsonl")
    return paths


@pytest.mark.req("LEDG-013")
def test_unwritable_path_refuses_every_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A ledger that cannot be created: no call runs, each says why, and secref exits 2."""
    for path in _unwritable_paths(tmp_path):
        registry, runs = _counting_registry(JsonlLedger(path))
        for _ in range(2):
            outcome = registry.invoke("t", "{}")
            assert outcome.disposition is Disposition.POLICY_DENIED
            assert outcome.ledger_error is not None
            assert "cannot be opened" in outcome.ledger_error
        assert runs == []
        policy = tmp_path / "policy.json"
        policy.write_text("{}", encoding="utf-8")
        vault = tmp_path / "vault.json"
        vault.write_text('{"secrets": []}', encoding="utf-8")
        monkeypatch.setattr(sys, "stdin", None)
        argv = ["invoke", "echo", "--args", "{}", "--vault", str(vault), "--policy", str(policy)]
        code = main([*argv, "--ledger", str(path)])
        out, err = capsys.readouterr()
        assert code == 2
        assert out == ""
        assert "--ledger" in err
        assert err.count("\n") == 1


# --- the crash loop -------------------------------------------------------------------------------


def _write_forever(path: Path, name: str) -> None:
    """Append records named ``<name>-0``, ``<name>-1``, ... until killed."""
    ledger = JsonlLedger(path)
    chooser = random.Random(name)
    sequence = 0
    while True:
        # Mostly small records; now and then one big enough that a kill can land mid-write.
        size = 262_144 if chooser.random() < 0.005 else chooser.randrange(50, 2_000)
        ledger.append(
            LedgerRecord(
                id=f"{name}-{sequence}",
                timestamp="2026-01-01T00:00:00+00:00",
                tool_name="writer",
                provider_id="crash-loop",
                policy_applied="default:ALLOW",
                approval_disposition=Disposition.ALLOWED,
                duration_ms=size,
                is_error=False,
                sanitized_args="x" * size,
                error_snippet=None,
            )
        )
        sequence += 1


class _Writers:
    """Four writer processes, each restarted under a new name after it is killed.

    Writers are forked, not started as new interpreters, so that a restart costs a millisecond
    and a kill lands while the writer appends rather than while it imports.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = 0
        self.killed: set[str] = set()
        self.processes: dict[str, int] = {}
        for _ in range(WRITERS):
            self.start()

    def start(self) -> None:
        name = f"w{self.started}"
        self.started += 1
        pid = os.fork()
        if pid == 0:  # the writer: it never returns into the test run
            try:
                _write_forever(self.path, name)
            finally:
                os._exit(1)
        self.processes[name] = pid

    def kill(self, name: str) -> None:
        pid = self.processes.pop(name)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        self.killed.add(name)

    def kill_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)


def _check_lines(data: bytes, killed: set[str]) -> dict[str, int]:
    """Return the crash loop's counts, asserting that every line is whole or torn at a kill."""
    lines = data.split(b"\n")
    last = lines.pop()
    sequences: dict[str, list[int]] = defaultdict(list)
    torn: dict[str, list[int]] = defaultdict(list)
    cut_short = 0
    for line in [*lines, last] if last else lines:
        if RECORD_START not in line:
            # Cut inside the record start itself: a big record's write stops where a page of
            # the file ends once the kill lands, and a record may begin a few bytes before one.
            # Its writer is a killed one, which the line cannot name (counted with those below).
            assert line, "a line holds no record start"
            assert RECORD_START.startswith(line), "a line holds no record start"
            cut_short += 1
            continue
        # No line holds the start of two records: nothing is glued or interleaved.
        assert line.count(RECORD_START) == 1, "a line holds the start of two records"
        try:
            decoded = json.loads(line)
        except ValueError:
            decoded = None
        if decoded is not None:
            name, _, sequence = decoded["id"].rpartition("-")
            assert decoded["sanitizedArgs"] == "x" * decoded["durationMs"], "a record is mixed"
            sequences[name].append(int(sequence))
            continue
        # A torn line is the start of one record, cut short where its writer was killed.
        ident_bytes, quote, _ = line[len(RECORD_START) :].partition(b'"')
        ident = ident_bytes.decode("ascii")
        if not quote:
            # Cut inside its own id (a kill that landed a few bytes into the record): its writer
            # is a killed one whose ids begin so, but which one the line cannot say.
            assert any(
                f"{name}-".startswith(ident) or ident.startswith(f"{name}-") for name in killed
            ), "a line is torn although its writer was never killed"
            cut_short += 1
            continue
        name, _, sequence = ident.rpartition("-")
        assert name in killed, "a line is torn although its writer was never killed"
        torn[name].append(int(sequence) if sequence.isdigit() else -1)
    lost = 0
    for numbers in sequences.values():
        # Each writer's records are 0, 1, 2, ... with no gap: a gap is a lost record.
        lost += (max(numbers) + 1) - len(set(numbers))
        assert len(numbers) == len(set(numbers)), "a record appears twice"
    for name, numbers in torn.items():
        assert len(numbers) == 1, "a writer left more than one torn line"
        whole = sequences.get(name, [])
        assert numbers[0] in (-1, len(whole)), "a torn line is not its writer's last record"
    # Each line cut inside its id or its record start is the last of a killed writer that left
    # no other torn line.
    assert cut_short <= len(killed - set(torn)), "more torn lines than killed writers"
    records = sum(len(numbers) for numbers in sequences.values())
    torn_lines = sum(len(numbers) for numbers in torn.values()) + cut_short
    return {
        "calls": records + torn_lines,
        "records read": records,
        "torn lines": torn_lines,
        "records lost": lost,
    }


@pytest.mark.slow
@pytest.mark.req("LEDG-010", "LEDG-011", "LEDG-015")
def test_crash_loop_loses_no_record(tmp_path: Path) -> None:
    """Four writers appending while random SIGKILLs land: no record lost, none interleaved."""
    path = tmp_path / "ledger.jsonl"
    chooser = random.Random(20261201)
    writers = _Writers(path)
    deadline = time.monotonic() + CRASH_SECONDS
    kills = 0
    try:
        while kills < CRASH_KILLS and time.monotonic() < deadline:
            time.sleep(chooser.uniform(0.0005, 0.006))
            writers.kill(chooser.choice(sorted(writers.processes)))
            kills += 1
            writers.start()
    finally:
        writers.kill_all()
    counts = _check_lines(path.read_bytes(), writers.killed)
    contents = read_ledger(path)
    counts["kills"] = kills + WRITERS
    print("crash loop: " + ", ".join(f"{name} {value}" for name, value in counts.items()))
    assert kills >= min(CRASH_KILLS, 200), f"only {kills} kills in {CRASH_SECONDS:g} s"
    assert counts["records lost"] == 0
    assert len(contents.records) == counts["records read"]
    assert len(contents.problems) == counts["torn lines"]


@pytest.mark.req("LEDG-010")
@pytest.mark.parametrize("cut", [0, 1, 3])
def test_a_line_cut_inside_its_id_is_a_killed_writers_last(cut: int) -> None:
    """A kill that lands a few bytes into a record leaves a line whose id is cut: it counts as
    the torn last line of a killed writer, never as one of a writer that was not killed (a
    loaded CI run met one with nothing after the record's start)."""
    whole = RECORD_START + b'w0-0","sanitizedArgs":"xx","durationMs":2}'
    cut_line = RECORD_START + b"w12-0"[:cut]
    counts = _check_lines(whole + b"\n" + cut_line, {"w12"})
    assert counts["torn lines"] == 1
    with pytest.raises(AssertionError, match="more torn lines than killed writers"):
        _check_lines(whole + b"\n" + cut_line + b"\n" + cut_line, {"w12"})


@pytest.mark.req("LEDG-010")
@pytest.mark.parametrize("cut", range(1, len(RECORD_START)))
def test_a_line_cut_inside_its_record_start_is_a_killed_writers_last(cut: int) -> None:
    """A big record's write stops at the end of a page of the file when the kill lands, so a
    record begun a few bytes before one leaves only part of its start (a CI run met a line
    holding none of it): a killed writer's torn last line. Text that is no record's start, or
    two such lines for one killed writer, still fails."""
    whole = RECORD_START + b'w0-0","sanitizedArgs":"xx","durationMs":2}'
    cut_line = RECORD_START[:cut]
    counts = _check_lines(whole + b"\n" + cut_line, {"w12"})
    assert counts["torn lines"] == 1
    with pytest.raises(AssertionError, match="more torn lines than killed writers"):
        _check_lines(whole + b"\n" + cut_line + b"\n" + cut_line, {"w12"})
    with pytest.raises(AssertionError, match="a line holds no record start"):
        _check_lines(whole + b"\n" + b"x" * cut, {"w12"})


@pytest.mark.req("LEDG-013")
def test_memory_ledger_is_always_ready() -> None:
    """The in-memory ledger never refuses a call."""
    assert MemoryLedger().ready() is None
