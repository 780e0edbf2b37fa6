"""The ``secref`` command: invoke through the governed path, list, and one-line usage errors."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reference_impl import read_ledger
from reference_impl.cli import main, printable
from tests.reference_impl.support import ID_A, ID_AI, ID_B, PASSWORD_A, USERNAME_A, leaks, ref


class FakeTerminal(io.StringIO):
    """Typed answers, from something that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class SilentTerminal(io.TextIOBase):
    """A terminal nobody types into: readline blocks until released."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def isatty(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        self.released.wait(10)
        return ""


VAULT = {
    "secrets": [
        {
            "id": ID_A,
            "website": "example.com",
            "username": USERNAME_A,
            "password": PASSWORD_A,
            "notes": "",
        },
        {"id": ID_B.upper(), "website": "tab\there", "username": "bob\nsmith", "password": "x"},
        {
            "id": ID_AI,
            "website": "ai.example",
            "password": "sk-0123456789",
            "tags": ["ai-provider"],
        },
    ]
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    vault = tmp_path / "vault.json"
    vault.write_text(json.dumps(VAULT), encoding="utf-8")
    policy = tmp_path / "policy.json"
    policy.write_text('{"secretBearingCalls": "ASK"}', encoding="utf-8")
    return {"vault": vault, "policy": policy, "dir": tmp_path}


def invoke_argv(files: dict[str, Path], tool: str, arguments: str, *extra: str) -> list[str]:
    return [
        "invoke",
        tool,
        "--vault",
        str(files["vault"]),
        "--policy",
        str(files["policy"]),
        "--args",
        arguments,
        *extra,
    ]


def run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    typed: str | io.TextIOBase | None = None,
) -> tuple[int, str, str]:
    stdin = FakeTerminal(typed) if isinstance(typed, str) else typed
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# --- list ----------------------------------------------------------------------------------------


@pytest.mark.req("OPS-001")
def test_list_prints_id_website_username(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One id<TAB>website<TAB>username line per secret, in file order, controls escaped."""
    code, out, err = run(monkeypatch, capsys, ["list", "--vault", str(files["vault"])])
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{ID_A}\texample.com\t{USERNAME_A}",
        f"{ID_B.upper()}\ttab\\there\tbob\\nsmith",
        f"{ID_AI}\tai.example\t",
    ]
    assert PASSWORD_A not in out


# --- invoke --------------------------------------------------------------------------------------


@pytest.mark.req("OPS-002", "APPR-002", "APPR-004", "INV1-ECHO", "LEDG-009")
def test_invoke_prompts_and_runs_the_governed_path(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator sees tool, risk, descriptor and written arguments; the result is scrubbed;
    the ledger records the reference."""
    ledger = files["dir"] / "ledger.jsonl"
    arguments = json.dumps({"header": "Bearer " + ref(ID_A)})
    argv = invoke_argv(
        files, "echo", arguments, "--permission", "secret.read", "--ledger", str(ledger)
    )
    code, out, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 0
    assert out == json.dumps({"header": f"Bearer [secret:{ID_A}.password]"}) + "\n"
    assert "tool:      echo (provider demo)" in err
    assert "risk:      HIGH" in err
    assert f"secret:    example.com ({USERNAME_A}) - password" in err
    assert f"arguments: {arguments}" in err
    assert err.endswith("secref: APPROVED_ONCE\n")
    assert leaks(out + err.replace(USERNAME_A, "")) == []
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    (entry,) = read_ledger(ledger).records
    assert entry.secret_refs == (f"{ID_A}.password",)
    assert leaks(ledger.read_text(encoding="ascii")) == []


@pytest.mark.req("OPS-002", "APPR-010")
@pytest.mark.parametrize(
    "typed",
    [
        pytest.param("deny\n", id="deny"),
        pytest.param("\n", id="enter"),
        pytest.param("", id="end-of-input"),
        pytest.param("maybe\nno\n", id="unknown-then-no"),
    ],
)
def test_anything_but_approval_denies(
    typed: str,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Deny, Enter and end of input all deny; exit status 1."""
    argv = invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--permission", "secret.read")
    code, out, err = run(monkeypatch, capsys, argv, typed)
    assert code == 1
    assert out == "The operator denied the call\n"
    assert err.endswith("secref: DENIED\n")


@pytest.mark.req("OPS-002")
def test_an_unknown_answer_is_asked_again(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text that is no answer gets a hint, and the next line is read."""
    argv = invoke_argv(files, "sha256", json.dumps({"text": ref(ID_A)}), "--user-admin")
    code, out, err = run(monkeypatch, capsys, argv, "perhaps\nYES\n")
    assert code == 0
    assert "Please answer approve, deny, always, provider or session" in err
    assert out == hashlib.sha256(PASSWORD_A.encode()).hexdigest() + "\n"


@pytest.mark.req("OPS-002")
@pytest.mark.parametrize(
    "stdin",
    [pytest.param(io.StringIO("approve\n"), id="pipe"), pytest.param(None, id="no-stdin")],
)
def test_input_that_is_not_a_terminal_denies(
    stdin: io.StringIO | None,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A script cannot approve by piping an answer in: without a terminal, the call is denied."""
    argv = invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin")
    code, _, err = run(monkeypatch, capsys, argv, stdin)
    assert code == 1
    assert "no terminal to answer from" in err
    assert err.endswith("secref: DENIED\n")


@pytest.mark.req("APPR-008", "OPS-002")
def test_an_unanswered_prompt_times_out(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--approval-timeout bounds the wait; the call ends TIMEOUT."""
    terminal = SilentTerminal()
    argv = invoke_argv(
        files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin", "--approval-timeout", "0.1"
    )
    try:
        code, out, err = run(monkeypatch, capsys, argv, terminal)
    finally:
        terminal.released.set()
    assert code == 1
    assert out == "The approval request timed out\n"
    assert "times out in 0.1 s" in err
    assert err.endswith("secref: TIMEOUT\n")


@pytest.mark.req("APPR-006", "OPS-002")
@pytest.mark.parametrize("answer", ["always", "provider", "session"])
def test_a_broad_answer_runs_a_secret_call_once(
    answer: str,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A broad answer to a secret-bearing call is APPROVED_ONCE."""
    argv = invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin")
    code, _, err = run(monkeypatch, capsys, argv, answer + "\n")
    assert code == 0
    assert err.endswith("secref: APPROVED_ONCE\n")


@pytest.mark.req("MSG-004", "MSG-011", "OPS-002")
@pytest.mark.parametrize(
    ("arguments", "extra", "expected"),
    [
        pytest.param(
            {"a": ref(ID_A)},
            [],
            "Secret references require the secret.read permission",
            id="no-secret-read",
        ),
        pytest.param(
            {"a": ref(ID_AI)},
            ["--permission", "secret.read"],
            f"secret {ID_AI} is an AI provider key",
            id="ai-provider",
        ),
        pytest.param(
            {"a": "{{secret:hunter2}}"},
            ["--user-admin"],
            "Malformed secret reference at /a offset 0 length 18",
            id="malformed",
        ),
    ],
)
def test_refusals_are_printed_with_status_1(
    arguments: dict[str, str],
    extra: list[str],
    expected: str,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A refusal comes before any prompt; its message goes to stdout, status 1."""
    argv = invoke_argv(files, "echo", json.dumps(arguments), *extra)
    code, out, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 1
    assert out.startswith(expected)
    assert "approval requested" not in err


@pytest.mark.req("OPS-002", "SUBST-005")
def test_write_note_writes_the_value_owner_only(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The note holds the value; the result and the prompt do not; the file is 0600."""
    notes = files["dir"] / "notes"
    notes.mkdir()
    arguments = json.dumps({"name": "env", "content": "KEY=" + ref(ID_A) + "\n"})
    argv = invoke_argv(
        files,
        "write_note",
        arguments,
        "--permission",
        "secret.read",
        "--permission",
        "notes.write",
        "--notes-dir",
        str(notes),
    )
    code, out, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 0
    assert out == f"wrote {len(PASSWORD_A) + 5} characters to env\n"
    written = (notes / "env").read_text(encoding="utf-8") == "KEY=" + PASSWORD_A + "\n"
    assert written
    assert stat.S_IMODE((notes / "env").stat().st_mode) == 0o600
    assert "risk:      HIGH" in err
    assert leaks(out + err.replace(USERNAME_A, "")) == []


@pytest.mark.req("ORD-004", "OPS-002")
def test_write_note_needs_its_permission(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """RBAC withholds write_note from a user without notes.write, before any prompt."""
    argv = invoke_argv(files, "write_note", json.dumps({"name": "n", "content": "c"}))
    code, out, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 1
    assert out == "Tool write_note requires the notes.write permission\n"
    assert err == "secref: RBAC_DENIED\n"


@pytest.mark.req("OPS-002")
@pytest.mark.parametrize(
    ("arguments", "notes_dir", "expected"),
    [
        pytest.param({"name": "../x", "content": "c"}, True, "the note name must be", id="path"),
        pytest.param({"name": ".hidden", "content": "c"}, True, "the note name must be", id="dot"),
        pytest.param(
            {"name": "n"}, True, 'write_note needs a string argument "content"', id="no-content"
        ),
        pytest.param(
            {"name": "n", "content": "c"}, False, "write_note is not configured", id="no-dir"
        ),
    ],
)
def test_write_note_refuses_bad_input(
    arguments: dict[str, str],
    notes_dir: bool,
    expected: str,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Bad names, missing content and a missing directory are tool failures, status 1."""
    extra = ["--user-admin"] + (["--notes-dir", str(files["dir"])] if notes_dir else [])
    argv = invoke_argv(files, "write_note", json.dumps(arguments), *extra)
    code, out, _ = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 1
    assert out.startswith(expected)
    assert not (files["dir"].parent / "x").exists()


@pytest.mark.req("LOG-001", "OPS-002")
def test_verbose_prints_the_host_log_without_values(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-v shows the host log, debug included, with reference names and never a value."""
    argv = invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin", "-v")
    code, _, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 0
    assert "secref: DEBUG call " in err
    assert f"references ['{ID_A}.password']" in err
    assert leaks(err.replace(USERNAME_A, "")) == []


@pytest.mark.req("OPS-002")
def test_prompt_escapes_terminal_control_characters(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Agent text cannot send escape sequences to the operator's terminal."""
    files["vault"].write_text(
        json.dumps(
            {
                "secrets": [
                    {"id": ID_A, "website": "evil\x1b[2J", "username": "u", "password": "p" * 9}
                ]
            }
        )
    )
    argv = invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin")
    _, _, err = run(monkeypatch, capsys, argv, "deny\n")
    assert "\x1b" not in err
    assert "evil\\x1b[2J" in err
    assert printable("ok\u200b\x07") == "ok\\u200b\\x07"


# --- usage errors ----------------------------------------------------------------------------


def bad_vault(content: object) -> str:
    return json.dumps(content)


USAGE_CASES = [
    pytest.param([], None, "the following arguments are required", id="no-command"),
    pytest.param(["frobnicate"], None, "invalid choice", id="unknown-command"),
    pytest.param(
        ["invoke", "echo"], None, "the following arguments are required", id="missing-flags"
    ),
    pytest.param(
        ["list", "--vault", "X", "--bogus"], None, "unrecognized arguments", id="unknown-flag"
    ),
    pytest.param(
        "ARGS:{not json", None, "--args is not valid JSON (line 1 column 2", id="bad-json"
    ),
    pytest.param("ARGS:[1, 2]", None, "--args must be a JSON object", id="not-an-object"),
    pytest.param('ARGS:{"a": NaN}', None, "--args is not valid JSON", id="nan"),
    pytest.param(
        "TIMEOUT:-1", None, "--approval-timeout must be a positive", id="negative-timeout"
    ),
    pytest.param(
        "TIMEOUT:soon", None, "argument --approval-timeout: invalid float", id="bad-timeout"
    ),
    pytest.param("TOOL:rm", None, "unknown tool 'rm'", id="unknown-tool"),
    pytest.param("VAULT:", None, "does not exist", id="missing-vault"),
    pytest.param("VAULT:", "{", "is not valid JSON", id="vault-not-json"),
    pytest.param("VAULT:", "[]", 'must be an object with one member, "secrets"', id="vault-array"),
    pytest.param(
        "VAULT:",
        bad_vault({"secrets": [{"id": "x", "website": "w", "password": PASSWORD_A}]}),
        "secret 1: id is not a UUID",
        id="vault-bad-id",
    ),
    pytest.param(
        "VAULT:",
        bad_vault({"secrets": [{"id": ID_A, "website": "w", "password": 5}]}),
        "secret 1: password must be a string",
        id="vault-bad-password",
    ),
    pytest.param(
        "VAULT:",
        bad_vault({"secrets": [{"id": ID_A, "website": "w", "pasword": PASSWORD_A}]}),
        'secret 1 has the unknown member "pasword"',
        id="vault-unknown-field",
    ),
    pytest.param(
        "VAULT:",
        bad_vault(
            {"secrets": [{"id": ID_A, "website": "w"}, {"id": ID_A.upper(), "website": "v"}]}
        ),
        "secret 2: id is used twice",
        id="vault-duplicate-id",
    ),
    pytest.param(
        "VAULT:",
        bad_vault({"secrets": [{"id": ID_A, "website": "w", "tags": "ai-provider"}]}),
        "secret 1: tags must be a list of strings",
        id="vault-bad-tags",
    ),
    pytest.param("VAULT:", b"\xff\xfe", "is not UTF-8 (byte 1)", id="vault-not-utf8"),
    pytest.param("POLICY:", None, "does not exist", id="missing-policy"),
    pytest.param(
        "POLICY:",
        '{"secretBearingCalls": "ALLOW"}',
        "secretBearingCalls must be ASK or DENY",
        id="policy-allow",
    ),
    pytest.param(
        "POLICY:", '{"yolo": 1', "is invalid: the policy file is not valid JSON", id="policy-json"
    ),
    pytest.param("NOTES:", None, "--notes-dir", id="missing-notes-dir"),
    pytest.param("LEDGER:", None, "the directory of --ledger", id="missing-ledger-dir"),
]


@pytest.mark.req("OPS-002", "POL-002")
@pytest.mark.parametrize(("case", "content", "expected"), USAGE_CASES)
def test_usage_errors_are_one_line_and_status_2(
    case: list[str] | str,
    content: str | bytes | None,
    expected: str,
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Bad flags, files and JSON: exit 2 and one line on stderr, never a traceback or a value."""
    good = json.dumps({"a": ref(ID_A)})
    if isinstance(case, list):
        argv = case
    else:
        kind, _, rest = case.partition(":")
        target = files["dir"] / "target"
        if isinstance(content, bytes):
            target.write_bytes(content)
        elif content is not None:
            target.write_text(content, encoding="utf-8")
        argv = invoke_argv(files, "echo", good, "--user-admin")
        if kind == "ARGS":
            argv = invoke_argv(files, "echo", rest, "--user-admin")
        elif kind == "TIMEOUT":
            argv += ["--approval-timeout=" + rest]
        elif kind == "TOOL":
            argv = invoke_argv(files, rest, good, "--user-admin")
        elif kind == "VAULT":
            argv[argv.index("--vault") + 1] = str(target)
        elif kind == "POLICY":
            argv[argv.index("--policy") + 1] = str(target)
        elif kind == "NOTES":
            argv += ["--notes-dir", str(files["dir"] / "absent")]
        elif kind == "LEDGER":
            argv += ["--ledger", str(files["dir"] / "absent" / "ledger.jsonl")]
    code, out, err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("secref: error: ")
    assert expected in err
    assert "Traceback" not in err
    assert leaks(err) == []
    assert "approval requested" not in err


@pytest.mark.req("OPS-002")
def test_help_is_helpful(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--help exits 0 and explains the commands, the tools, the answers and exit status."""
    code, out, _ = run(monkeypatch, capsys, ["--help"])
    assert code == 0
    assert "invoke" in out
    assert "list" in out
    assert "{{secret:<uuid>}}" in out
    code, out, _ = run(monkeypatch, capsys, ["invoke", "--help"])
    assert code == 0
    for needle in (
        "--args JSON",
        "--vault FILE",
        "--policy FILE",
        "write_note",
        "Exit status",
        "secret.read",
    ):
        assert needle in out


# --- the module entry point, in a real process ---------------------------------------------------


@pytest.mark.req("OPS-001", "OPS-002")
def test_python_dash_m_smoke(files: dict[str, Path]) -> None:
    """python -m reference_impl lists, refuses a piped approval, and reports usage errors."""

    def secref(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reference_impl", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    listed = secref("list", "--vault", str(files["vault"]))
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[0] == f"{ID_A}\texample.com\t{USERNAME_A}"

    piped = secref(
        *invoke_argv(files, "echo", json.dumps({"a": ref(ID_A)}), "--user-admin"), stdin="approve\n"
    )
    assert piped.returncode == 1
    assert piped.stderr.endswith("secref: DENIED\n")

    files["policy"].write_text('{"defaultRule": "ALLOW"}')
    plain = secref(*invoke_argv(files, "sha256", json.dumps({"text": "abc"})))
    assert plain.returncode == 0
    assert plain.stdout == hashlib.sha256(b"abc").hexdigest() + "\n"
    assert plain.stderr == "secref: ALLOWED\n"

    broken = secref("invoke")
    assert broken.returncode == 2
    assert broken.stderr.count("\n") == 1
    assert "Traceback" not in broken.stderr


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.req("OPS-001", "OPS-002")
def test_the_readmes_example_files_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The vault and policy files the README's example names load and serve a call."""
    vault, policy = str(EXAMPLES / "vault.json"), str(EXAMPLES / "policy.json")
    code, out, _err = run(monkeypatch, capsys, ["list", "--vault", vault])
    assert code == 0
    assert out.splitlines()[0].split("\t") == [
        "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5",
        "api.example.com",
        "alice",
    ]
    argv = [
        "invoke",
        "echo",
        "--vault",
        vault,
        "--policy",
        policy,
        "--permission",
        "secret.read",
        "--args",
        '{"header": "Bearer {{secret:6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5}}"}',
    ]
    code, out, _err = run(monkeypatch, capsys, argv, "approve\n")
    assert code == 0
    assert "[secret:6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5.password]" in out
    assert "example-not-a-real-key" not in out
