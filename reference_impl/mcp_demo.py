"""A transcript of ``secref serve`` over MCP: ``python -m reference_impl.mcp_demo``.

This module owns one demonstration anyone can run: it writes a throw-away vault and policy,
starts ``secref serve`` over stdio, and drives it with the official MCP client. It lists the
tools, calls ``echo`` with a reference, answers the elicitation that asks for approval, and
prints what went over the wire: the call, the elicitation, the scrubbed result and the ledger
line. The vault holds a made-up demonstration key, and the transcript must never show it: the
demo checks that before it prints and fails rather than print a value.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Final, TextIO

#: The demonstration secret: a made-up key that exists only in the demo's temporary vault.
DEMO_ID: Final = "6f1d2c3e-4b5a-4c6d-8e7f-90a1b2c3d4e5"
DEMO_KEY: Final = "demo-key-not-real-7Hq2Lx9Pz4"

#: Seconds the whole demonstration may take.
DEMO_TIMEOUT_S: Final = 60.0


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


async def _transcript(directory: Path, lines: list[str]) -> None:
    import anyio
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    vault = {
        "secrets": [
            {"id": DEMO_ID, "website": "api.example.com", "username": "alice", "password": DEMO_KEY}
        ]
    }
    policy = {
        "secretReferencesEnabled": True,
        "secretBearingCalls": "ASK",
        "resultScrubbingEnabled": True,
        "defaultRule": "ASK",
    }
    (directory / "vault.json").write_text(json.dumps(vault), encoding="utf-8")
    (directory / "policy.json").write_text(json.dumps(policy), encoding="utf-8")
    ledger = directory / "ledger.jsonl"
    argv = [
        "-m",
        "reference_impl",
        "serve",
        "--vault",
        str(directory / "vault.json"),
        "--policy",
        str(directory / "policy.json"),
        "--ledger",
        str(ledger),
    ]
    lines.append("$ secref serve --vault vault.json --policy policy.json --ledger ledger.jsonl")

    async def elicit(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        lines.append("<- elicitation/create (the approval request)")
        lines.append(_dump(params.model_dump(by_alias=True, mode="json", exclude_none=True)))
        lines.append('-> the operator answers: accept {"decision": "approve"}')
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    params = StdioServerParameters(command=sys.executable, args=argv)
    with anyio.fail_after(DEMO_TIMEOUT_S):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            listing = await session.list_tools()
            lines.append("-> tools/list")
            lines.append("<- " + ", ".join(tool.name for tool in listing.tools))
            arguments = {"header": "Authorization: Bearer {{secret:" + DEMO_ID + "}}"}
            lines.append("-> tools/call echo")
            lines.append(_dump({"name": "echo", "arguments": arguments}))
            result = await session.call_tool("echo", arguments)
            lines.append("<- result (what the agent reads)")
            lines.append(_dump(result.model_dump(by_alias=True, mode="json", exclude_none=True)))
    lines.append("$ cat ledger.jsonl")
    lines.append(ledger.read_text(encoding="utf-8").rstrip("\n"))


def main(out: TextIO | None = None) -> int:
    """Run the demonstration and print its transcript.

    Args:
        out: Where the transcript goes; standard output by default.

    Returns:
        0 when the transcript was printed; 1 when it would have shown the demo key.
    """
    import anyio

    stream = out if out is not None else sys.stdout
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="secref-mcp-demo-") as name:
        anyio.run(_transcript, Path(name), lines)
    text = "\n".join(lines)
    if DEMO_KEY in text or json.dumps(DEMO_KEY)[1:-1] in text:
        stream.write("mcp_demo: the transcript would show the demo key; not printed\n")
        return 1
    stream.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
