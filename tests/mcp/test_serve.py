"""``secref serve`` driven by the official MCP SDK client, over stdio and Streamable HTTP.

Each test starts the real command as a subprocess, talks to it only through the SDK's
``ClientSession``, and judges what the agent reads and what the ledger file holds. The canary
value is random per run and never appears in an assertion message.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext, ElicitationFnT

SECRET_ID = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
REF = "{{secret:" + SECRET_ID + "}}"

#: Seconds any one test may take talking to the server before it is a failure.
TEST_TIMEOUT_S = 60.0

Elicit = ElicitationFnT


def _files(tmp_path: Path, policy: dict[str, Any] | None = None) -> dict[str, Any]:
    canary = "canary-" + secrets.token_hex(12)
    vault = {
        "secrets": [
            {"id": SECRET_ID, "website": "api.example.com", "username": "alice", "password": canary}
        ]
    }
    (tmp_path / "vault.json").write_text(json.dumps(vault), encoding="utf-8")
    rules = policy or {
        "secretReferencesEnabled": True,
        "secretBearingCalls": "ASK",
        "resultScrubbingEnabled": True,
        "defaultRule": "ASK",
    }
    (tmp_path / "policy.json").write_text(json.dumps(rules), encoding="utf-8")
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    return {"canary": canary, "sandbox": sandbox, "ledger": tmp_path / "ledger.jsonl"}


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "reference_impl",
        "serve",
        "--vault",
        str(tmp_path / "vault.json"),
        "--policy",
        str(tmp_path / "policy.json"),
        "--ledger",
        str(tmp_path / "ledger.jsonl"),
        "--sandbox",
        str(tmp_path / "sandbox"),
        *extra,
    ]


def _approve(
    choice: str = "approve", seen: list[types.ElicitRequestParams] | None = None
) -> Elicit:
    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if seen is not None:
            seen.append(params)
        return types.ElicitResult(action="accept", content={"decision": choice})

    return answer


def _run_stdio(
    tmp_path: Path,
    body: Callable[[ClientSession], Awaitable[None]],
    elicit: Elicit | None,
) -> None:
    params = StdioServerParameters(command=sys.executable, args=_argv(tmp_path))

    async def main() -> None:
        with anyio.fail_after(TEST_TIMEOUT_S):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write, elicitation_callback=elicit) as session,
            ):
                await session.initialize()
                await body(session)

    anyio.run(main)


def _texts(result: types.CallToolResult) -> str:
    return "\n".join(item.text for item in result.content if isinstance(item, types.TextContent))


@pytest.mark.req("MCP-007", "MCP-008")
def test_sdk_client_lists_calls_with_a_reference_and_reads_a_scrubbed_result(
    tmp_path: Path,
) -> None:
    files = _files(tmp_path)
    seen: list[types.ElicitRequestParams] = []
    results: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        listing = await session.list_tools()
        results["tools"] = sorted(tool.name for tool in listing.tools)
        results["echo"] = await session.call_tool("echo", {"header": "Bearer " + REF})

    _run_stdio(tmp_path, body, _approve(seen=seen))
    assert results["tools"] == ["echo", "sha256", "write_file"]
    echo: types.CallToolResult = results["echo"]
    assert not echo.is_error
    text = _texts(echo)
    assert "[secret:" + SECRET_ID + ".password]" in text
    assert files["canary"] not in text, "the echo result holds the canary"
    assert echo.meta is not None
    assert echo.meta["io.secref/disposition"] == "APPROVED_ONCE"
    # The elicitation carried the tool, the descriptor, the risk and the reference as written.
    assert len(seen) == 1
    asked = seen[0]
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert "echo" in asked.message
    assert "HIGH" in asked.message
    assert "api.example.com (alice) - password" in asked.message
    assert REF in asked.message
    assert files["canary"] not in asked.message + json.dumps(asked.requested_schema)
    # The ledger holds the reference and the disposition, never the value.
    ledger = files["ledger"].read_text(encoding="utf-8")
    assert files["canary"] not in ledger, "the ledger holds the canary"
    record = json.loads(ledger.splitlines()[-1])
    assert record["secretRefs"] == [SECRET_ID + ".password"]
    assert record["approvalDisposition"] == "APPROVED_ONCE"
    assert REF in record["sanitizedArgs"]


@pytest.mark.req("MCP-008")
@pytest.mark.parametrize(
    "reply",
    [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"decision": "maybe"}),
        types.ElicitResult(action="accept", content={"decision": "approve", "extra": "x"}),
        types.ElicitResult(action="accept", content={}),
    ],
    ids=["decline", "cancel", "unknown-choice", "extra-field", "empty"],
)
def test_anything_but_an_approving_accept_denies(tmp_path: Path, reply: types.ElicitResult) -> None:
    files = _files(tmp_path)
    results: list[types.CallToolResult] = []

    async def answer(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return reply

    async def body(session: ClientSession) -> None:
        results.append(await session.call_tool("sha256", {"text": REF}))

    _run_stdio(tmp_path, body, answer)
    assert results[0].is_error
    assert results[0].meta is not None
    assert results[0].meta["io.secref/disposition"] == "DENIED"
    assert files["canary"] not in files["ledger"].read_text(encoding="utf-8")


@pytest.mark.req("MCP-009")
def test_a_client_without_elicitation_is_refused_at_once_never_approved(tmp_path: Path) -> None:
    _files(tmp_path)
    results: list[types.CallToolResult] = []
    started = time.monotonic()

    async def body(session: ClientSession) -> None:
        results.append(await session.call_tool("sha256", {"text": REF}))
        results.append(await session.call_tool("sha256", {"text": "plain"}))

    _run_stdio(tmp_path, body, None)
    assert results[0].is_error
    assert results[0].meta is not None
    assert results[0].meta["io.secref/disposition"] == "DENIED"
    # The refusal says nobody was asked, not that an operator denied.
    assert _texts(results[0]).startswith("Denied without asking the operator")
    assert "declare elicitation" in _texts(results[0])
    # Refused at once: well inside the 45-second approval timeout.
    assert time.monotonic() - started < 30
    # sha256 is ASK by default, so even a reference-free call is not approved silently.
    assert results[1].is_error
    lines = (tmp_path / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [record["approvalDisposition"] for record in records] == ["DENIED", "DENIED"]
    assert [record.get("operatorAsked") for record in records] == [False, False]


@pytest.mark.req("MCP-013")
def test_write_file_writes_inside_the_sandbox_and_refuses_outside(tmp_path: Path) -> None:
    files = _files(tmp_path)
    results: list[types.CallToolResult] = []

    async def body(session: ClientSession) -> None:
        results.append(
            await session.call_tool("write_file", {"path": "keys/api.txt", "content": REF})
        )
        results.append(await session.call_tool("write_file", {"path": "../out", "content": "x"}))
        results.append(await session.call_tool("write_file", {"path": "/tmp/out", "content": "x"}))

    _run_stdio(tmp_path, body, _approve())
    written = files["sandbox"] / "keys" / "api.txt"
    assert not results[0].is_error
    assert written.read_text(encoding="utf-8") == files["canary"]
    assert files["canary"] not in _texts(results[0])
    assert results[1].is_error
    assert "outside the sandbox" in _texts(results[1])
    assert results[2].is_error
    assert "outside the sandbox" in _texts(results[2])
    assert not (tmp_path / "out").exists()


@pytest.mark.req("MCP-013")
def test_http_refuses_a_non_loopback_address(tmp_path: Path) -> None:
    _files(tmp_path)
    done = subprocess.run(
        [sys.executable, *_argv(tmp_path, "--http", "0.0.0.0:8123")],
        capture_output=True,
        text=True,
        timeout=TEST_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 2
    assert "loopback" in done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.req("MCP-013", "MCP-008")
def test_streamable_http_on_loopback_serves_the_same_tools(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    files = _files(tmp_path)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, *_argv(tmp_path, "--http", f"127.0.0.1:{port}")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    results: list[types.CallToolResult] = []
    try:

        async def main() -> None:
            with anyio.fail_after(TEST_TIMEOUT_S):
                while True:
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                            break
                    except OSError:
                        await anyio.sleep(0.1)
                url = f"http://127.0.0.1:{port}/mcp"
                async with (
                    streamable_http_client(url) as (read, write),
                    ClientSession(read, write, elicitation_callback=_approve()) as session,
                ):
                    await session.initialize()
                    results.append(await session.call_tool("echo", {"k": REF}))

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(10)
        assert server.stderr is not None
        server.stderr.close()
    assert not results[0].is_error
    assert "[secret:" + SECRET_ID + ".password]" in _texts(results[0])
    assert files["canary"] not in _texts(results[0])
