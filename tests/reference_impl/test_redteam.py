"""The red-team findings against the reference host, each rerun as it was reported.

Every test here performs one attack exactly as found (decisions R1.9, R5.2, R6.7, R7.2, R7.3)
and pins the behaviour the ruling asks for instead; each would fail on the host the attack was
found on. Canaries are named by label in assertions, never printed.
"""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

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
    encode_record,
    load_policy,
    parse_policy,
    read_ledger,
)
from reference_impl.cli import main
from reference_impl.driver import Driver
from tests.reference_impl.support import ID_A, args, build, leaks, ref

#: The lone-surrogate canary of finding 1, as the vault file spells it (a JSON escape).
SURROGATE_CANARY_JSON = "SURRCANA\\ud800RYVALUE"
SURROGATE_CANARY = "SURRCANA\ud800RYVALUE"

#: The password of the plain vault, as JSON.
DEFAULT_PASSWORD_JSON = '"hunter2-canary-pw"'

#: The unknown-member canary of finding 8.
MEMBER_CANARY = "CANARYKEY-12345-0123456789abcdef-long"


class FakeTerminal(io.StringIO):
    """Typed answers, from something that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def write_vault(path: Path, password_json: str = DEFAULT_PASSWORD_JSON, extra: str = "") -> Path:
    path.write_text(
        '{"secrets": [{"id": "' + ID_A + '", "website": "example.com", "username": "u",'
        ' "password": ' + password_json + extra + "}]}",
        encoding="utf-8",
    )
    return path


def secref(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", FakeTerminal("approve\n"))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def invoke_argv(tmp_path: Path, *extra: str, vault: Path | None = None) -> list[str]:
    policy = tmp_path / "policy.json"
    if not policy.exists():
        policy.write_text("{}", encoding="utf-8")
    return [
        "invoke",
        "echo",
        "--vault",
        str(vault if vault is not None else write_vault(tmp_path / "vault.json")),
        "--policy",
        str(policy),
        "--user-admin",
        "--args",
        json.dumps({"h": ref(ID_A)}),
        *extra,
    ]


def record(number: int) -> LedgerRecord:
    return LedgerRecord(
        id=f"call-{number}",
        timestamp="2026-01-01T00:00:00+00:00",
        tool_name="echo",
        provider_id="demo",
        policy_applied="secret:ASK",
        approval_disposition=Disposition.APPROVED_ONCE,
        duration_ms=1,
        is_error=False,
        sanitized_args="{}",
        error_snippet=None,
    )


# --- finding 1: a value leaks through a lone surrogate (R5.2) -------------------------------------


@pytest.mark.req("SCRUB-018")
def test_lone_surrogate_value_never_reaches_echo_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`secref invoke echo` with a lone-surrogate vault value refuses it at resolution."""
    vault = write_vault(tmp_path / "vault.json", f'"{SURROGATE_CANARY_JSON}"')
    code, out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, vault=vault))
    for surface in (out, err):
        assert "SURRCANA" not in surface
        assert "RYVALUE" not in surface
    assert out == f"secret {ID_A} has no password\n"
    assert "SECRET_UNRESOLVED" in err
    assert code == 1


@pytest.mark.req("SCRUB-018")
def test_lone_surrogate_value_is_refused_by_the_registry() -> None:
    """Through the API too: the call is SECRET_UNRESOLVED and the tool never receives it."""
    from tests.reference_impl.support import record as vault_record

    h = build(records=[vault_record(ID_A, "example.com", "user", SURROGATE_CANARY)])
    outcome = h.invoke("recorder", args(h=ref(ID_A)))
    assert outcome.disposition is Disposition.SECRET_UNRESOLVED
    assert outcome.refusal is not None
    assert outcome.refusal.requirement == "MSG-008"
    assert h.recorder.raws == []
    assert len(h.records) == 1


# --- finding 2: a torn ledger line swallows the next record (R6.7) --------------------------------


@pytest.mark.req("LEDG-011", "LEDG-015")
def test_torn_ledger_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    """After a torn last line, 3 calls leave 3 readable records; the torn line is reported."""
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(encode_record(record(0)) + encode_record(record(1))[:25])
    h = build(ledger=JsonlLedger(path))
    for _ in range(3):
        assert h.invoke("recorder", args(a="x")).ledger_id is not None
    contents = read_ledger(path)
    assert len(contents.records) == 4
    assert [problem.split(":")[0] for problem in contents.problems] == ["line 2"]
    assert "torn" in contents.problems[0]


@pytest.mark.req("LEDG-011", "LEDG-015")
def test_record_glued_to_a_torn_line_is_still_read(tmp_path: Path) -> None:
    """A writer that appends onto a torn line it did not see costs only the torn bytes."""
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(encode_record(record(1))[:30] + encode_record(record(2)))
    contents = read_ledger(path)
    assert [r.id for r in contents.records] == ["call-2"]
    assert contents.problems == ("line 1: torn line of 30 bytes skipped",)


# --- finding 3: a call runs when its record cannot be written (R6.7) ------------------------------


@pytest.mark.req("LEDG-012", "LEDG-013")
@pytest.mark.parametrize("target", ["directory", "dev-full"])
def test_cli_refuses_an_unwritable_ledger_before_the_call(
    target: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--ledger` at a directory or /dev/full: exit non-zero before the tool runs."""
    ledger = tmp_path / "dir" if target == "directory" else Path("/dev/full")
    if target == "directory":
        ledger.mkdir()
    elif not ledger.exists():
        pytest.skip("no /dev/full on this system")
    code, out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, "--ledger", str(ledger)))
    assert code == 2
    assert out == ""
    assert "not a regular file" in err
    assert "approval requested" not in err


class FailingLedger:
    """A ledger whose file accepts nothing: every append fails as a full disk does."""

    def __init__(self, fail_after: int = 0) -> None:
        self.inner = MemoryLedger()
        self.fail_after = fail_after
        self.failure: str | None = None

    def ready(self) -> str | None:
        return self.failure

    def append(self, record: LedgerRecord) -> None:
        if len(self.inner.records) >= self.fail_after:
            self.failure = "the ledger could not be written (ENOSPC)"
            raise OSError(28, "No space left on device")
        self.inner.append(record)


@pytest.mark.req("LEDG-013")
def test_api_call_whose_record_fails_reports_it_and_later_calls_do_not_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API never returns APPROVED_ONCE with no trace: the outcome says the record was lost,
    a WARNING is logged without a value, and no later call runs."""
    ledger = FailingLedger()
    h = build(ledger=ledger)
    with caplog.at_level(logging.DEBUG, logger="reference_impl"):
        outcome = h.invoke("recorder", args(h=ref(ID_A)))
        assert outcome.disposition is Disposition.APPROVED_ONCE
        assert outcome.ledger_id is None
        assert outcome.ledger_error is not None
        assert "ENOSPC" in outcome.ledger_error
        assert len(h.recorder.raws) == 1
        later = h.invoke("recorder", args(h=ref(ID_A)))
    assert later.disposition is Disposition.POLICY_DENIED
    assert later.refusal is not None
    assert later.refusal.reason == "ledger-fault"
    assert later.ledger_error is not None
    assert len(h.recorder.raws) == 1  # the second call never ran
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert leaks("\n".join(r.getMessage() for r in caplog.records)) == []


@pytest.mark.req("LEDG-013")
def test_cli_exits_non_zero_when_the_append_fails(tmp_path: Path) -> None:
    """A full disk at the append (RLIMIT_FSIZE in a subprocess): the CLI exits 3, saying so."""
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_bytes(b"")
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "from reference_impl.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = invoke_argv(tmp_path, "--ledger", str(ledger))
    argv[argv.index("--args") + 1] = '{"a": "b"}'
    Path(tmp_path / "policy.json").write_text('{"defaultRule": "ALLOW"}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "the call was not recorded" in done.stderr
    assert "EFBIG" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.req("LEDG-013")
def test_driver_reports_an_unrecorded_call_as_an_error() -> None:
    """Behind the driver, a call whose record cannot be written is answered with an error that
    says so, never with a plain result."""
    out, err = io.BytesIO(), io.StringIO()
    driver = Driver(stdin=io.BytesIO(b""), stdout=out, stderr=err)
    harness = driver._harness
    try:
        harness.configure(
            {"tools": [{"name": "echo", "provider": "demo", "handler": "echo"}], "secrets": []}
        )
        harness.ledger_path.mkdir()  # the ledger path is now a directory
        driver._invoke(7, "echo", "{}", lambda _request: "approve")
    finally:
        harness.close()
    reply = json.loads(out.getvalue())
    assert reply["id"] == 7
    assert "result" not in reply
    assert reply["error"]["code"] == "internal"
    assert "ledger" in reply["error"]["message"]
    assert reply["error"]["data"]["disposition"] == "POLICY_DENIED"
    assert "a call was not recorded" in err.getvalue()


# --- finding 4: the ledger path (R6.7) -----------------------------------------------------------


@pytest.mark.req("LEDG-012")
@pytest.mark.parametrize("dangling", [False, True])
def test_ledger_symlink_is_never_followed(tmp_path: Path, dangling: bool) -> None:
    """A symbolic link at the ledger path is refused; its target is neither written nor made."""
    target = tmp_path / "target.jsonl"
    if not dangling:
        target.write_bytes(b"")
    link = tmp_path / "ledger.jsonl"
    link.symlink_to(target)
    ledger = JsonlLedger(link)
    with pytest.raises(OSError, match="symbolic link"):
        ledger.open()
    h = build(ledger=ledger)
    outcome = h.invoke("recorder", args(a="x"))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ledger-fault"
    assert h.recorder.raws == []
    assert target.exists() is not dangling
    if not dangling:
        assert target.read_bytes() == b""


@pytest.mark.req("LEDG-012")
def test_ledger_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO at the ledger path is refused at once, with or without a reader on it."""
    fifo = tmp_path / "ledger.jsonl"
    os.mkfifo(fifo)
    result: list[BaseException | None] = []

    def attempt() -> None:
        try:
            JsonlLedger(fifo).open()
        except OSError as error:
            result.append(error)
        else:
            result.append(None)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "opening a FIFO ledger hung"
    assert result
    assert result[0] is not None
    assert "FIFO" in str(result[0])
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(OSError, match="FIFO"):
            JsonlLedger(fifo).open()
    finally:
        os.close(reader)


@pytest.mark.req("LEDG-012")
def test_existing_world_readable_ledger_is_tightened(tmp_path: Path) -> None:
    """A ledger file that exists with mode 0644 is 0600 before the first record is written."""
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"")
    path.chmod(0o644)
    ledger = JsonlLedger(path)
    ledger.open()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ledger.append(record(1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --- finding 5: deep lines -----------------------------------------------------------------------


@pytest.mark.req("LEDG-014")
def test_deeply_nested_ledger_line_is_reported_not_raised(tmp_path: Path) -> None:
    """read_ledger on a line nested 10^5 deep reports it and reads the records around it."""
    path = tmp_path / "ledger.jsonl"
    deep = b"[" * 100_000 + b"]" * 100_000
    path.write_bytes(encode_record(record(1)) + deep + b"\n" + encode_record(record(2)))
    contents = read_ledger(path)
    assert [r.id for r in contents.records] == ["call-1", "call-2"]
    assert contents.problems == ("line 2: not a ledger record (ValueError)",)


@pytest.mark.req("LEDG-014")
def test_driver_survives_a_deeply_nested_input_line() -> None:
    """The driver notes a deep line, prints no traceback, and keeps serving."""
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    start = b'{"id":1,"method":"start","params":{"protocol":1}}\n'
    stop = b'{"id":2,"method":"shutdown","params":{}}\n'
    out, err = io.BytesIO(), io.StringIO()
    code = Driver(stdin=io.BytesIO(deep + start + stop), stdout=out, stderr=err).serve()
    assert code == 0
    assert "Traceback" not in err.getvalue()
    assert "not JSON" in err.getvalue()
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2]


# --- finding 6: Registry.invoke raises, with no record --------------------------------------------


class _HostileTextError(Exception):
    """An exception whose text is a KeyboardInterrupt carrying the value."""

    def __str__(self) -> str:
        raise KeyboardInterrupt(self.args[0])


def _registry_with(handler: object) -> tuple[Registry, MemoryLedger]:
    ledger = MemoryLedger()
    registry = Registry(ledger=ledger, execution_timeout=5.0)
    registry.register(Tool("t", "demo", handler))  # type: ignore[arg-type]
    return registry, ledger


@pytest.mark.req("LEDG-016")
def test_hostile_exception_str_does_not_escape_invoke() -> None:
    """A handler's exception whose __str__ raises KeyboardInterrupt(<value>) ends the call as a
    failure with one record; the value goes nowhere."""

    def handler(_arguments: ToolArguments) -> str:
        raise _HostileTextError("HOSTILE-CANARY-VALUE")

    registry, ledger = _registry_with(handler)
    outcome = registry.invoke("t", "{}")
    assert outcome.is_error
    assert outcome.text == "Tool t failed: _HostileTextError"
    assert len(ledger.records) == 1
    assert "HOSTILE-CANARY-VALUE" not in repr(ledger.records)


@pytest.mark.req("LEDG-016")
@pytest.mark.parametrize("text", [None, b"bytes-result", 42], ids=["none", "bytes", "int"])
def test_result_that_is_not_text_does_not_escape_invoke(text: object) -> None:
    """ToolResult(None) or ToolResult(b"...") is a failed call with one record, not a raise."""
    registry, ledger = _registry_with(lambda _arguments: ToolResult(text))  # type: ignore[arg-type]
    outcome = registry.invoke("t", "{}")
    assert outcome.is_error
    assert outcome.text == "Tool t failed: returned a result that is not text"
    assert len(ledger.records) == 1
    assert ledger.records[0].is_error


@pytest.mark.req("LEDG-016")
def test_failure_inside_the_host_is_an_outcome_not_a_raise() -> None:
    """A step of the host that fails (here the tracer, at scrub) ends the call with its result
    withheld and one record; invoke returns normally."""

    def tracer(step: str) -> None:
        if step == "scrub":
            raise RuntimeError("tracer broke")

    ledger = MemoryLedger()
    registry = Registry(ledger=ledger, tracer=tracer)
    registry.register(Tool("t", "demo", lambda _arguments: "result text"))
    registry.rules.set_yolo(True)
    outcome = registry.invoke("t", "{}")
    assert outcome.is_error
    assert outcome.text.startswith("The host failed while governing the call")
    assert outcome.disposition is Disposition.ALLOWED
    assert len(ledger.records) == 1
    assert outcome.ledger_id == ledger.records[0].id


@pytest.mark.req("LEDG-016")
def test_failure_after_the_record_keeps_its_id() -> None:
    """A host failure after the record was written (here the log, as the call ends) keeps that
    record's id and writes no second one."""
    ledger = MemoryLedger()
    registry = Registry(ledger=ledger)
    registry.register(Tool("t", "demo", lambda _arguments: "result text"))
    registry.rules.set_yolo(True)
    broken = logging.Logger("broken-info", logging.INFO)

    class _Raise(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "characters returned" in record.getMessage():
                raise RuntimeError("the log broke")

    broken.addHandler(_Raise())
    registry.log = broken
    outcome = registry.invoke("t", "{}")
    assert len(ledger.records) == 1
    assert outcome.is_error
    assert outcome.ledger_id == ledger.records[0].id


# --- finding 7: a policy member written twice (R7.2) ---------------------------------------------


@pytest.mark.req("POL-005")
def test_duplicate_policy_member_fails_closed(tmp_path: Path) -> None:
    """`secretBearingCalls` written DENY then ASK makes the file invalid: every tool is DENY."""
    text = '{"secretBearingCalls":"DENY","secretBearingCalls":"ASK"}'
    with pytest.raises(ValueError, match='"secretBearingCalls" is written twice'):
        parse_policy(text)
    path = tmp_path / "policy.json"
    path.write_text(text, encoding="utf-8")
    policy = load_policy(path)
    assert policy.fault is not None
    h = build(policy=policy)
    assert h.invoke("recorder", args(a="x")).disposition is Disposition.POLICY_DENIED
    assert h.invoke("recorder", args(a=ref(ID_A))).disposition is Disposition.POLICY_DENIED
    assert h.recorder.raws == []


@pytest.mark.req("POL-005")
def test_duplicate_nested_policy_member_fails_closed() -> None:
    """A tool rule written twice is as ambiguous as a top-level member."""
    with pytest.raises(ValueError, match="written twice"):
        parse_policy('{"tools": {"echo": "DENY", "echo": "ALLOW"}}')


# --- finding 8: files the host reads (R7.3) ------------------------------------------------------


@pytest.mark.req("VAULT-005")
def test_vault_dev_zero_is_refused_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--vault /dev/zero` ends at once with one line naming it a device."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    code, out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, vault=Path("/dev/zero")))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "vault file /dev/zero is a character device, not a regular file" in err


@pytest.mark.req("VAULT-005")
def test_vault_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO vault is refused at once (a subprocess, so a hang fails the test, not the run)."""
    fifo = tmp_path / "vault.json"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "reference_impl", *invoke_argv(tmp_path, vault=fifo)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "is a FIFO, not a regular file" in done.stderr


@pytest.mark.req("VAULT-005")
def test_oversized_vault_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vault file over 16 MiB is refused before anything is parsed."""
    vault = tmp_path / "vault.json"
    with vault.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)
    code, _out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, vault=vault))
    assert code == 2
    assert "is over 16777216 bytes" in err


@pytest.mark.req("VAULT-005")
@pytest.mark.parametrize(
    ("member", "shown"),
    [
        (MEMBER_CANARY, "has an unknown member"),
        ("pasword", 'has the unknown member "pasword"'),
        ("x\u00e9y", "has an unknown member"),
    ],
    ids=["long", "short", "not-ascii"],
)
def test_unknown_vault_member_name_is_bounded(
    member: str,
    shown: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An unknown member's name is quoted only when it is at most 32 printable ASCII characters."""
    vault = write_vault(tmp_path / "vault.json", extra=f", {json.dumps(member)}: 1")
    code, _out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, vault=vault))
    assert code == 2
    assert f"vault file {vault}: secret 1 {shown}" in err
    assert "CANARYKEY" not in err


@pytest.mark.req("VAULT-005")
def test_duplicate_vault_member_is_refused_without_either_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A secret that writes its password twice is refused, quoting neither value."""
    vault = write_vault(tmp_path / "vault.json", extra=', "password": "second-canary-pw"')
    code, _out, err = secref(monkeypatch, capsys, invoke_argv(tmp_path, vault=vault))
    assert code == 2
    assert '"password" is written twice' in err
    assert "canary-pw" not in err
