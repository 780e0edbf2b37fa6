"""browser-use as a placeholder host: ``python -m conformance.frameworks.browser_use [--mcp]``.

This module owns the adapter for browser-use (pinned ``browser-use==0.13.14``). The model writes
``<secret>NAME</secret>``; ``Registry.execute_action`` replaces each one in an action's
parameters (``browser_use/tools/registry/service.py``, ``_replace_sensitive_data``), recursively
through dicts and lists, from the agent's ``sensitive_data``. What the model reads back is the
agent's history description (``MessageManager._update_agent_history_description``) after
``MessageManager._filter_sensitive_data``, which replaces each value with its placeholder
(``browser_use/utils.py``, ``redact_sensitive_string``). The adapter runs each call through
``Tools.act`` with no browser session, no model and no network, and renders the result through
the message manager as an agent step would (step 0, the path of an agent's initial actions,
which renders the results without a model's output). Two paths:

- by default each standard handler is a browser-use action whose parameters take any member;
- ``--mcp``: the handlers are MCP tools of a local stdio server on the official ``mcp`` SDK
  (:mod:`conformance.frameworks.mcp_tools`), connected with browser-use's own ``MCPClient``
  and registered into the ``Tools`` with ``MCPClient.register_to_tools``
  (``browser_use/mcp/client.py``); the action is validated by the registry's own
  ``create_action_model``. ``_register_tool_as_action`` gives the action only the
  properties the tool's input schema declares (``extra='forbid'``; a tool with none is called
  with ``{}``), so the server declares, for each call, one required property per member of the
  call, of that member's JSON type, as a tool of that shape would; a server is started for
  each tool list and shape, and kept for the adapter's life, as an agent keeps its MCP client.

Surfaces: that rendering (result and failure text), the ``browser_use`` loggers (and ``mcp``
on the MCP path) at every level, and standard error. browser-use persists its history only
from a running agent, which needs a model, so nothing persisted is announced. Its telemetry is
turned off (``ANONYMIZED_TELEMETRY=false``), so nothing leaves the machine.

``--mutant`` patches ``redact_sensitive_string`` to return its text unchanged: a broken masking
step the checks must catch, on either path.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.frameworks.base import Framework, Outcome, Receipt, Tool, main

#: The release this adapter was written against.
PINNED = "0.13.14"

#: The path under test, from the command line.
MCP = "--mcp" in sys.argv[1:]

#: The JSON type of each kind of member, as an input schema declares it.
JSON_TYPES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


class BrowserUse(Framework):
    """browser-use's action registry and message manager, driven without a model."""

    name = "browser-use (MCP tools)" if MCP else "browser-use"
    spelling = "<secret>{name}</secret>"
    loggers = ("browser_use", "mcp") if MCP else ("browser_use",)

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._tools: Any = None
        self._models: dict[str, Any] = {}

    def build(self) -> None:
        """Register each tool as a browser-use action (the MCP path: at its first call)."""
        if MCP:
            return
        from browser_use.tools.registry.views import ActionModel
        from browser_use.tools.service import Tools
        from pydantic import BaseModel, ConfigDict, create_model

        class Params(BaseModel):  # type: ignore[misc,unused-ignore]
            model_config = ConfigDict(extra="allow")

        tools = Tools(exclude_actions=[])
        for spec in self.tools.values():
            tools.registry.action(f"the {spec.handler} handler", param_model=Params)(
                _action(self, spec)
            )
        fields: dict[str, Any] = dict.fromkeys(self.tools, (Params | None, None))
        self._model = create_model("SecrefAction", __base__=ActionModel, **fields)
        self._params = Params
        self._tools = tools

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Run one action through ``Tools.act`` and render what the model reads."""
        if not isinstance(arguments, dict):
            return Outcome("browser-use actions take an object of parameters", True, True)
        sensitive: dict[str, Any] = dict(self.secrets)
        if MCP:
            served = _served(list(self.tools.values()), arguments)
            action = served.tools.registry.create_action_model().model_validate({tool: arguments})
            tools: Any = served.tools
        else:
            served = None
            action = self._model(**{tool: self._params(**arguments)})
            tools = self._tools
        result = _LOOP.run_until_complete(
            tools.act(
                action,
                browser_session=None,
                sensitive_data=sensitive or None,
                action_timeout=self.execution_timeout,
            )
        )
        if served is not None:
            self._collect(served.receipts)
        return Outcome(_render(result, sensitive), result.error is not None)

    def _collect(self, receipts: Path) -> None:
        """Move the MCP server's receipts into :attr:`handlers`."""
        if not receipts.exists():
            return
        for line in receipts.read_text("utf-8").splitlines():
            wire = json.loads(line)
            self.handlers.receipts.append(Receipt(wire["tool"], wire["raw"], wire["view"]))
        receipts.unlink()


def _render(result: Any, sensitive: dict[str, Any]) -> str:
    """Return what the model reads of ``result`` in the next state message, masked.

    ``_set_message_with_type`` masks the whole state message with ``_filter_sensitive_data``.
    """
    from browser_use.agent.message_manager.service import MessageManager
    from browser_use.agent.views import AgentStepInfo
    from browser_use.filesystem.file_system import FileSystem
    from browser_use.llm.messages import SystemMessage, UserMessage

    with tempfile.TemporaryDirectory() as scratch:
        manager = MessageManager(
            task="secref",
            system_message=SystemMessage(content="secref"),
            file_system=FileSystem(scratch),
            sensitive_data=sensitive or None,
        )
        manager._update_agent_history_description(
            None, [result], AgentStepInfo(step_number=0, max_steps=3)
        )
        # The two parts of the state message that carry results, as ``AgentMessagePrompt``
        # writes them: the history, and what an action gives to be read once (an MCP tool's).
        text = f"<agent_history>\n{manager.agent_history_description}\n</agent_history>\n"
        if manager.state.read_state_description:
            text += f"\n<read_state>\n{manager.state.read_state_description}\n</read_state>\n"
        message = UserMessage(content=text)
        if manager.sensitive_data:
            message = manager._filter_sensitive_data(message)
    return str(message.content)


#: The one event loop of the adapter: an MCP client's connection lives in it between calls.
_LOOP = asyncio.new_event_loop()


class _Served:
    """One local MCP server, connected by browser-use's ``MCPClient`` and registered."""

    def __init__(self, client: Any, tools: Any, receipts: Path) -> None:
        self.client = client
        self.tools = tools
        self.receipts = receipts


#: The servers started so far, by tool list and shape of call; and where their files go.
_SERVERS: dict[str, _Served] = {}
_SCRATCH = tempfile.TemporaryDirectory(prefix="secref-browser-use-")


def _schema(arguments: dict[str, Any]) -> dict[str, Any]:
    """Return an input schema declaring each member of ``arguments``, required, by JSON type."""
    properties = {
        key: {"type": JSON_TYPES.get(type(value), "string")} for key, value in arguments.items()
    }
    return {"type": "object", "properties": properties, "required": list(arguments)}


def _served(specs: list[Tool], arguments: dict[str, Any]) -> _Served:
    """Return the server for ``specs`` declaring the shape of ``arguments``, started once."""
    from browser_use.mcp.client import MCPClient
    from browser_use.tools.service import Tools

    from conformance.frameworks.mcp_tools import command

    schema = _schema(arguments)
    entries = [{**vars(spec), "inputSchema": schema} for spec in specs]
    key = json.dumps(entries, sort_keys=True)
    if key in _SERVERS:
        return _SERVERS[key]
    root = Path(_SCRATCH.name) / str(len(_SERVERS))
    root.mkdir()
    config = root / "tools.json"
    config.write_text(json.dumps(entries), "utf-8")
    argv = command(config, root / "receipts.jsonl")
    client = MCPClient(server_name="secref", command=argv[0], args=argv[1:])
    tools = Tools(exclude_actions=[])
    _LOOP.run_until_complete(client.register_to_tools(tools))
    _SERVERS[key] = _Served(client, tools, root / "receipts.jsonl")
    return _SERVERS[key]


def _action(framework: BrowserUse, spec: Tool) -> Any:
    """Return the browser-use action that runs one standard handler."""

    async def action(params: Any) -> str:
        return framework.handlers.run(spec, params.model_dump())

    action.__name__ = spec.name
    return action


def _version() -> str:
    try:
        return metadata.version("browser-use")
    except metadata.PackageNotFoundError:
        return "not installed"


def _no_mask() -> None:
    """The mutant: the masking step returns its text unchanged."""
    import browser_use.agent.message_manager.service as service

    service.redact_sensitive_string = lambda value, values: value


if __name__ == "__main__":
    # No telemetry: nothing leaves the machine (browser-use sends it unless told not to).
    os.environ["ANONYMIZED_TELEMETRY"] = "false"
    if "--mutant" in sys.argv[1:]:
        _no_mask()
        BrowserUse.name += " (mutant: no-mask)"
    raise SystemExit(main(BrowserUse))
