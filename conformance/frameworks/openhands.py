"""The OpenHands SDK as a placeholder host: ``python -m conformance.frameworks.openhands``.

This module owns the adapter for the OpenHands SDK (pinned ``openhands-sdk==1.58.2``, which
needs Python 3.12). The model writes ``$NAME``, ``${NAME}`` or ``${NAME:-default}`` in an MCP
tool call's arguments. ``MCPToolExecutor.__call__`` (``openhands/sdk/mcp/tool.py``) expands
them with ``expand_variable_references`` (``openhands/sdk/skills/utils.py``) from the
conversation's ``SecretRegistry``, host environment variables excluded, then calls the MCP
server and masks the observation's text blocks with ``SecretRegistry.mask_secrets_in_output``
(``openhands/sdk/conversation/secret_registry.py``): each value resolved so far is replaced by
``<secret-hidden>``.

The adapter serves the standard handlers as MCP tools of a local stdio server on the official
``mcp`` SDK (:mod:`conformance.frameworks.mcp_tools`), connects to it with the SDK's own
``create_mcp_tools``, and calls each tool's ``MCPToolExecutor`` directly with an
``MCPToolAction`` holding the call's arguments and a real ``LocalConversation`` (an agent whose
LLM is never called, secrets given with ``update_secrets``, a persistence directory of its
own); no model, no network, no account. The adapter writes references as ``${NAME}``.

Surfaces: the observation as the model reads it (``to_llm_content``: result and failure text),
the ``openhands``, ``fastmcp`` and ``mcp`` loggers at every level, standard error, and what the
conversation persists (every file under its persistence directory, ``observe.ledger``).

This module imports the SDK only inside its methods, so it imports under the project's Python
for linting and type checking; it runs under Python 3.12.

``--mutant`` patches ``SecretRegistry.mask_secrets_in_output`` to return its text unchanged: a
broken masking step the checks must catch.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.frameworks.base import Framework, Outcome, Receipt, main

#: The release this adapter was written against.
PINNED = "1.58.2"


class OpenHands(Framework):
    """The SDK's ``MCPToolExecutor`` and ``SecretRegistry``, driven without a model."""

    name = "openhands-sdk (MCP tools)"
    spelling = "${{{name}}}"
    variants = ("${{{name}:-default}}", "${name}")
    loggers = ("openhands", "fastmcp", "mcp")
    capabilities = ("observe.log", "observe.receipts", "observe.ledger")

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._conversation: Any = None
        self._client: Any = None
        self._definitions: dict[str, Any] = {}

    def build(self) -> None:
        """Start the MCP server, connect the SDK's client and open a conversation."""
        from openhands.sdk import LLM, Agent, Conversation
        from openhands.sdk.mcp import MCPServer
        from openhands.sdk.mcp.utils import create_mcp_tools

        from conformance.frameworks.mcp_tools import command

        self._scratch = tempfile.TemporaryDirectory(prefix="secref-openhands-")
        root = Path(self._scratch.name)
        config = root / "tools.json"
        self._receipts = root / "receipts.jsonl"
        self._persisted = root / "persisted"
        config.write_text(json.dumps([vars(t) for t in self.tools.values()]), "utf-8")
        argv = command(config, self._receipts)
        server = MCPServer(command=argv[0], args=argv[1:])
        self._client = create_mcp_tools({"secref": server}, timeout=max(self.execution_timeout, 30))
        self._definitions = {d.name: d for d in self._client.tools}
        for definition in self._definitions.values():
            definition.executor.timeout = self.execution_timeout
        agent = Agent(llm=LLM(model="secref/never-called", api_key="unused"), tools=[])
        self._conversation = Conversation(
            agent=agent, workspace=str(root), persistence_dir=str(self._persisted), visualizer=None
        )
        if self.secrets:
            self._conversation.update_secrets(dict(self.secrets))

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Run one action through the tool's ``MCPToolExecutor``; return what the model reads."""
        from openhands.sdk.llm import TextContent
        from openhands.sdk.mcp.definition import MCPToolAction

        if not isinstance(arguments, dict):
            return Outcome("MCP tools take an object of arguments", True, True)
        definition = self._definitions[tool]
        observation = definition.executor(MCPToolAction(data=arguments), self._conversation)
        self._collect()
        text = "\n".join(
            block.text for block in observation.to_llm_content if isinstance(block, TextContent)
        )
        return Outcome(text, bool(observation.is_error))

    def persisted(self) -> bytes:
        """Return every file the conversation persisted, in path order."""
        if self._scratch is None or not self._persisted.exists():
            return b""
        files = sorted(p for p in self._persisted.rglob("*") if p.is_file())
        return b"\n".join(p.read_bytes() for p in files)

    def _collect(self) -> None:
        """Move the MCP server's receipts into :attr:`handlers`."""
        if not self._receipts.exists():
            return
        for line in self._receipts.read_text("utf-8").splitlines():
            wire = json.loads(line)
            self.handlers.receipts.append(Receipt(wire["tool"], wire["raw"], wire["view"]))
        self._receipts.unlink()

    def __del__(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):  # the server may be gone already
                self._client.sync_close()


def _version() -> str:
    try:
        return metadata.version("openhands-sdk")
    except metadata.PackageNotFoundError:
        return "not installed"


def _no_mask() -> None:
    """The mutant: the registry's masking step returns its text unchanged."""
    from openhands.sdk.conversation.secret_registry import SecretRegistry

    SecretRegistry.mask_secrets_in_output = lambda self, text: text  # type: ignore[method-assign,unused-ignore]


if __name__ == "__main__":
    if "--mutant" in sys.argv[1:]:
        _no_mask()
        OpenHands.name += " (mutant: no-mask)"
    raise SystemExit(main(OpenHands))
