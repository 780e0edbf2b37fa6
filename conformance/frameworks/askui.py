"""askui as a placeholder host: ``python -m conformance.frameworks.askui [--mcp] [--mutant]``.

This module owns the adapter for askui (pinned ``askui==0.48.0``). The model writes
``<|secret|>NAME<|secret|>``. ``ToolCollection`` (``askui/models/shared/tools.py``) calls
``SecretVault.substitute`` (``askui/models/shared/secrets.py``) on a copy of a tool call's input
before the tool runs, for its own tools (``_run_regular_tool``) and for MCP tools
(``_call_mcp_tool``); the substitution walks dicts, lists and tuples and leaves keys and unknown
names alone. It masks with ``SecretVault.redact``/``redact_content`` (the exact value replaced by
its placeholder) the tool's output, the MCP tool's output and the exception text it returns to
the model; a conversation redacts each message once more (``Conversation._add_message``,
``redact_message``) before the model, the reporter or the cache sees it.

Each call is one real ``Conversation`` (``askui/models/shared/conversation.py``), set up as
``AgentBase.act`` sets it up (the default ``Speakers``, the vault given to the conversation,
which gives it to the collection) and run by ``execute_conversation``, with a scripted model:
a ``VlmProvider`` (the interface askui documents for bringing one's own model) that asks for
the call's ``tool_use`` block once, then ends its turn, calls nothing and keeps what it is
given (askui's own tests run an agent with a ``Mock`` of its messages API the same way). The
conversation runs the block through ``ToolCollection.run``, redacts the results in
``_add_message``, reports each message to a ``SimpleHtmlReporter``, and asks the model again
with the results; no model, no network, no account. Two paths:

- by default each standard handler is an askui ``Tool`` of the collection (an open input
  schema, so ``coerce_tool_input`` leaves every member as sent);
- ``--mcp``: the handlers are MCP tools of a local stdio server on the official ``mcp`` SDK
  (:mod:`conformance.frameworks.mcp_tools`), reached through a ``fastmcp.Client``, the client
  askui's MCP support is written for.

Surfaces: the tool results the model is given in its second request (result and failure
text), the ``askui`` logger (and ``fastmcp``, ``mcp`` on the MCP path) at every level, standard
error, and what the conversation persists (``observe.ledger``): the HTML report its reporter
writes at ``generate``, one per call. The trajectory cache is written only when caching is
asked for (``CachingSettings.strategy``, off by default), and is not measured.

``--mutant`` patches ``SecretVault._redact_str`` to return its text unchanged: a broken masking
step the checks must catch.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.frameworks.base import Framework, Outcome, Receipt, Tool, main

#: The release this adapter was written against.
PINNED = "0.48.0"

#: The path under test, from the command line.
MCP = "--mcp" in sys.argv[1:]


class Askui(Framework):
    """askui's ``ToolCollection`` and ``SecretVault``, driven without a model."""

    name = "askui (MCP tools)" if MCP else "askui"
    spelling = "<|secret|>{name}<|secret|>"
    loggers = ("askui", "fastmcp", "mcp") if MCP else ("askui",)
    capabilities = ("observe.log", "observe.receipts", "observe.ledger")

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._collection: Any = None
        self._names: dict[str, str] = {}
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._receipts: Path | None = None
        self._reports: Path | None = None
        self._runs = 0

    def build(self) -> None:
        """Make a vault of :attr:`secrets` and a collection of the tools (or the MCP client)."""
        from askui.models.shared.secrets import Secret, SecretVault
        from askui.models.shared.tools import ToolCollection

        vault = SecretVault([Secret(name=k, value=v) for k, v in self.secrets.items()])
        self._scratch = tempfile.TemporaryDirectory(prefix="secref-askui-")
        self._reports = Path(self._scratch.name) / "reports"
        if MCP:
            from fastmcp import Client
            from fastmcp.client.transports import StdioTransport

            from conformance.frameworks.mcp_tools import command

            config = Path(self._scratch.name) / "tools.json"
            self._receipts = Path(self._scratch.name) / "receipts.jsonl"
            config.write_text(json.dumps([vars(t) for t in self.tools.values()]), "utf-8")
            argv = command(config, self._receipts)
            client = Client(StdioTransport(argv[0], argv[1:]), timeout=self.execution_timeout)
            self._collection = ToolCollection(mcp_client=client, secret_vault=vault)
            self._names = {name: name for name in self.tools}
            return
        tools = [_tool(self, spec) for spec in self.tools.values()]
        self._collection = ToolCollection(tools=tools, secret_vault=vault)
        self._names = {
            spec.name: tool.name for spec, tool in zip(self.tools.values(), tools, strict=True)
        }

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Run one ``tool_use`` block in a conversation; return what the model reads back."""
        from askui.models.shared.agent_message_param import MessageParam, ToolUseBlockParam
        from askui.models.shared.conversation import Conversation
        from askui.models.shared.settings import ActSettings
        from askui.reporting import SimpleHtmlReporter
        from askui.speaker.speaker import Speakers

        assert self._reports is not None
        block = ToolUseBlockParam(id="toolu_secref", name=self._names[tool], input=arguments)
        model = _scripted_model(block)
        self._runs += 1
        reporter = SimpleHtmlReporter(str(self._reports / str(self._runs)))
        conversation = Conversation(speakers=Speakers(), vlm_provider=model, reporter=reporter)
        # As ``AgentBase.act`` does: the vault substitutes in the tools and redacts the history.
        conversation.secret_vault = self._collection.secret_vault
        goal = MessageParam(role="user", content="secref")
        conversation.execute_conversation(
            messages=[goal], tools=self._collection, settings=ActSettings()
        )
        reporter.generate()
        self._collect()
        texts: list[str] = []
        failed = False
        for result in _results(model.seen):
            failed = failed or bool(getattr(result, "is_error", False))
            content = getattr(result, "content", "")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts += [str(getattr(item, "text", "")) for item in content]
        return Outcome("\n".join(texts), failed)

    def persisted(self) -> bytes:
        """Return every file the conversations' reporters wrote, in path order."""
        if self._reports is None or not self._reports.exists():
            return b""
        files = sorted(p for p in self._reports.rglob("*") if p.is_file())
        return b"\n".join(p.read_bytes() for p in files)

    def _collect(self) -> None:
        """Move the MCP server's receipts into :attr:`handlers`."""
        if self._receipts is None or not self._receipts.exists():
            return
        for line in self._receipts.read_text("utf-8").splitlines():
            wire = json.loads(line)
            self.handlers.receipts.append(Receipt(wire["tool"], wire["raw"], wire["view"]))
        self._receipts.unlink()


def _scripted_model(block: Any) -> Any:
    """Return a model that calls nothing: it asks for ``block`` once, then ends its turn.

    askui documents ``VlmProvider`` as the interface for bringing one's own model, and its own
    tests run an agent with a ``Mock`` of its messages API answering a fixed message. This one
    keeps every request's messages (``seen``), as the model would read them.
    """
    from askui.model_providers.vlm_provider import VlmProvider
    from askui.models.shared.agent_message_param import MessageParam

    class Scripted(VlmProvider):  # type: ignore[misc,unused-ignore]
        def __init__(self) -> None:
            self.seen: list[list[Any]] = []
            self.asked = False

        @property
        def model_id(self) -> str:
            return "secref-scripted"

        def create_message(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            self.seen.append([message.model_copy(deep=True) for message in messages])
            if not self.asked:
                self.asked = True
                return MessageParam(role="assistant", content=[block], stop_reason="tool_use")
            return MessageParam(role="assistant", content="secref", stop_reason="end_turn")

    return Scripted()


def _results(seen: list[list[Any]]) -> list[Any]:
    """Return the tool results of the first request that holds them: what the model reads."""
    for messages in seen:
        for message in messages:
            content = message.content
            if message.role == "user" and not isinstance(content, str):
                results = [b for b in content if getattr(b, "type", "") == "tool_result"]
                if results:
                    return results
    return []


def _tool(framework: Askui, spec: Tool) -> Any:
    """Return an askui ``Tool`` that runs one standard handler."""
    from askui.models.shared.tools import Tool as AskuiTool

    class Handler(AskuiTool):  # type: ignore[misc,unused-ignore]
        def __call__(self, *args: Any, **kwargs: Any) -> str:
            return framework.handlers.run(spec, kwargs)

    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    return Handler(name=spec.name, description=f"the {spec.handler} handler", input_schema=schema)


def _version() -> str:
    try:
        return metadata.version("askui")
    except metadata.PackageNotFoundError:
        return "not installed"


def _no_redact() -> None:
    """The mutant: the vault's masking step returns its text unchanged."""
    from askui.models.shared.secrets import SecretVault

    SecretVault._redact_str = lambda self, text: text  # type: ignore[method-assign,unused-ignore]


if __name__ == "__main__":
    if "--mutant" in sys.argv[1:]:
        _no_redact()
        Askui.name += " (mutant: no-redact)"
    raise SystemExit(main(Askui))
