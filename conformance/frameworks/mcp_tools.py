"""The suite's standard handlers as MCP tools: ``python -m conformance.frameworks.mcp_tools``.

This module owns the local stdio MCP server a framework adapter starts when the path under test
is the framework's MCP tools (decisions R11: "MCP tools included"). It is built on the official
``mcp`` SDK of the framework's own venv, with its low-level server, so that the arguments a tool
receives are the JSON object the framework sent, untouched by any schema. It serves the tools
of one ``configure`` (a JSON file named on the command line: ``[{"name", "handler",
"options"}]``), each with an open input schema unless its entry declares one of its own
(``"inputSchema"``: for a framework that passes a tool only the members its schema declares),
runs the standard handlers of :mod:`conformance.frameworks.base`, and appends each receipt as
one JSON line to the receipts file named on the command line, where the adapter reads it. A
handler that raises answers with an MCP error result whose text is the exception's, as an MCP
server does. The SDK changed the way a low-level server is declared between releases 1 and 2;
both are served. It never writes to standard output anything but MCP messages and never prints
a value.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any, Final

from conformance.frameworks.base import HandlerFailed, Handlers, Tool

#: Every tool takes any object: the receipt is what the framework sent.
OPEN_SCHEMA: Final = {"type": "object", "additionalProperties": True}


class Served:
    """The tools of one configuration and where their receipts go."""

    def __init__(
        self, tools: list[Tool], receipts: Path, schemas: dict[str, dict[str, Any]] | None = None
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.receipts = receipts
        self.handlers = Handlers()
        self.schemas = schemas or {}

    def schema(self, name: str) -> dict[str, Any]:
        """Return the input schema tool ``name`` declares: its own, or an open one."""
        return dict(self.schemas.get(name, OPEN_SCHEMA))

    def run(self, name: str, arguments: dict[str, Any] | None) -> tuple[str, bool]:
        """Run one call; return its text and whether it is an error result."""
        tool = self.tools.get(name)
        if tool is None:
            return f"no tool {name}", True
        try:
            text, failed = self.handlers.run(tool, arguments or {}), False
        except HandlerFailed as error:
            text, failed = str(error), True
        finally:
            receipt = self.handlers.receipts[-1].wire() if self.handlers.receipts else None
            if receipt is not None:
                with self.receipts.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(receipt, ensure_ascii=True) + "\n")
                self.handlers.receipts.clear()
        return text, failed


def _server(served: Served) -> Any:
    """Return a low-level SDK server for ``served``, in the installed SDK's own API."""
    from mcp.server.lowlevel.server import Server

    if "on_call_tool" in inspect.signature(Server.__init__).parameters:
        return _server_v2(served, Server)
    return _server_v1(served, Server)


def _server_v2(served: Served, server: Any) -> Any:
    import mcp_types as types

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    description=f"the {tool.handler} handler",
                    input_schema=served.schema(name),
                )
                for name, tool in served.tools.items()
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, failed = served.run(params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=failed
        )

    return server("secref-handlers", on_list_tools=list_tools, on_call_tool=call_tool)


def _server_v1(served: Served, server_class: Any) -> Any:
    # Release 1's types module: typed here as Any, the project's own SDK being release 2.
    types: Any = importlib.import_module("mcp.types")

    server = server_class("secref-handlers")

    @server.list_tools()  # type: ignore[misc,untyped-decorator,unused-ignore]
    async def list_tools() -> list[Any]:
        return [
            types.Tool(
                name=name,
                description=f"the {tool.handler} handler",
                inputSchema=served.schema(name),
            )
            for name, tool in served.tools.items()
        ]

    @server.call_tool(validate_input=False)  # type: ignore[misc,untyped-decorator,unused-ignore]
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        text, failed = served.run(name, arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], isError=failed
        )

    return server


def serve(config: Path, receipts: Path) -> None:
    """Serve the tools ``config`` lists over standard input and output until closed."""
    import anyio
    from mcp.server.stdio import stdio_server

    specs = json.loads(config.read_text(encoding="utf-8"))
    tools = [Tool(s["name"], s["handler"], dict(s.get("options") or {})) for s in specs]
    schemas = {s["name"]: dict(s["inputSchema"]) for s in specs if "inputSchema" in s}
    server = _server(Served(tools, receipts, schemas))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def command(config: Path, receipts: Path) -> list[str]:
    """Return the command that starts this server with the running interpreter."""
    return [sys.executable, "-m", "conformance.frameworks.mcp_tools", str(config), str(receipts)]


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]))
