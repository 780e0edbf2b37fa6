"""``secref serve --operator tty`` under a real pseudo-terminal.

The server is started with ``pty.fork()``, which makes the pty the child's controlling terminal,
so ``/dev/tty`` in the server is that pty. Standard input and output are pipes that carry the MCP
session (raw JSON-RPC lines, from a client that declares no elicitation), so the prompt can reach
the operator only through the terminal. The test reads the prompt from the pty's master side and
types the answer there. The canary value is random per run and never appears in an assertion
message.
"""

from __future__ import annotations

import json
import os
import pty
import secrets
import select
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

import mcp_types as types

SECRET_ID = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
REF = "{{secret:" + SECRET_ID + "}}"
REPO = Path(__file__).resolve().parents[2]

#: Seconds to wait for the server's answer or its prompt before the test fails.
WAIT_S = 30.0

#: What the terminal operator writes last in a prompt, before it reads the answer.
PROMPT_END = "Answer approve, deny, always, provider or session"


class Served:
    """A ``secref serve`` process: its MCP pipes and the master side of its terminal."""

    def __init__(self, pid: int, master: int, to_server: int, from_server: int) -> None:
        self.pid = pid
        self.master = master
        self.to_server = to_server
        self.from_server = from_server
        self.terminal = ""
        self._pending = b""
        self._next_id = 0

    def send(self, method: str, params: dict[str, Any], notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self._next_id += 1
            message["id"] = self._next_id
        os.write(self.to_server, (json.dumps(message) + "\n").encode())
        return self._next_id

    def reply(self, request_id: int) -> dict[str, Any]:
        """Return the response to ``request_id``, skipping notifications."""
        deadline = time.monotonic() + WAIT_S
        while True:
            line, _, rest = self._pending.partition(b"\n")
            if _:
                self._pending = rest
                message = json.loads(line)
                if message.get("id") == request_id:
                    return dict(message)
                continue
            remaining = deadline - time.monotonic()
            ready, _w, _x = select.select([self.from_server], [], [], max(0.0, remaining))
            if not ready:
                raise AssertionError(f"no response to request {request_id} in {WAIT_S:g} s")
            chunk = os.read(self.from_server, 65536)
            if not chunk:
                raise AssertionError("the server closed its output")
            self._pending += chunk

    def read_terminal_until(self, text: str) -> str:
        """Read the terminal until ``text`` appears; return everything read since the last call."""
        start = len(self.terminal)
        deadline = time.monotonic() + WAIT_S
        while text not in self.terminal[start:]:
            remaining = deadline - time.monotonic()
            ready, _w, _x = select.select([self.master], [], [], max(0.0, remaining))
            if not ready:
                raise AssertionError(f"the terminal did not show {text!r} in {WAIT_S:g} s")
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"the terminal closed before it showed {text!r}")
            self.terminal += chunk.decode("utf-8", "replace")
        return self.terminal[start:]

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())


def _files(tmp_path: Path) -> str:
    canary = "canary-" + secrets.token_hex(12)
    vault = {
        "secrets": [
            {"id": SECRET_ID, "website": "api.example.com", "username": "alice", "password": canary}
        ]
    }
    policy = {
        "secretReferencesEnabled": True,
        "secretBearingCalls": "ASK",
        "resultScrubbingEnabled": True,
        "defaultRule": "ASK",
    }
    (tmp_path / "vault.json").write_text(json.dumps(vault), encoding="utf-8")
    (tmp_path / "policy.json").write_text(json.dumps(policy), encoding="utf-8")
    return canary


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    canary = _files(tmp_path)
    argv = [
        sys.executable,
        "-m",
        "reference_impl",
        "serve",
        "--vault",
        str(tmp_path / "vault.json"),
        "--policy",
        str(tmp_path / "policy.json"),
        "--ledger",
        str(tmp_path / "ledger.jsonl"),
        "--operator",
        "tty",
    ]
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    pid, master = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal and its standard error
        try:
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            for fd in (in_r, in_w, out_r, out_w):
                os.close(fd)
            os.chdir(REPO)
            os.execv(sys.executable, argv)  # noqa: S606 - a fixed argv, no shell
        finally:
            os._exit(127)
    os.close(in_r)
    os.close(out_w)
    server = Served(pid, master, in_w, out_r)
    try:
        yield server, canary
    finally:
        os.close(in_w)  # the end of the session ends the server
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(out_r)
        os.close(master)


def _start(server: Served) -> None:
    request = server.send(
        "initialize",
        {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},  # no elicitation: the terminal is the only way to the operator
            "clientInfo": {"name": "pty-test", "version": "0"},
        },
    )
    started = server.reply(request)
    assert "result" in started, "the server did not accept the handshake"
    server.send("notifications/initialized", {}, notify=True)


def _call_and_answer(server: Served, answer: str) -> tuple[dict[str, Any], str]:
    request = server.send("tools/call", {"name": "sha256", "arguments": {"text": REF}})
    prompt = server.read_terminal_until(PROMPT_END)
    server.type(answer)
    return server.reply(request)["result"], prompt


@pytest.mark.req("MCP-013")
def test_the_prompt_appears_on_the_terminal_and_the_typed_answer_decides(
    served: tuple[Served, str], tmp_path: Path
) -> None:
    server, canary = served
    _start(server)

    approved, prompt = _call_and_answer(server, "approve")
    assert "secref: approval requested" in prompt
    assert "api.example.com (alice) - password" in prompt
    assert "tool:      sha256" in prompt
    assert approved.get("isError") is not True, "the approved call was refused"
    assert approved["_meta"]["io.secref/disposition"] == "APPROVED_ONCE"

    denied, _ = _call_and_answer(server, "deny")
    assert denied["isError"] is True
    assert denied["content"][0]["text"] == "The operator denied the call"
    assert denied["_meta"]["io.secref/disposition"] == "DENIED"

    assert canary not in server.terminal, "the terminal shows the canary"
    assert canary not in json.dumps([approved, denied]), "a result holds the canary"
    lines = (tmp_path / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [record["approvalDisposition"] for record in records] == ["APPROVED_ONCE", "DENIED"]
    # An operator answered both, so neither record says that nobody was asked.
    assert all("operatorAsked" not in record for record in records)
