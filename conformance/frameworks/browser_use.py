"""browser-use as a placeholder host: ``python -m conformance.frameworks.browser_use [--mcp]``.

This module owns the adapter for browser-use (pinned ``browser-use==0.13.14``). The model writes
``<secret>NAME</secret>``; ``Registry.execute_action`` replaces each one in an action's
parameters (``browser_use/tools/registry/service.py``, ``_replace_sensitive_data``), recursively
through dicts and lists, from the agent's ``sensitive_data``. The message manager masks the
state message the model reads (``MessageManager._set_message_with_type``, then
``_filter_sensitive_data``): each value is replaced with its placeholder
(``browser_use/utils.py``, ``redact_sensitive_string``).

Each call is run by a real ``Agent`` as its one initial action (``initial_actions``: an agent's
step 0, run by ``Agent.run`` through ``multi_act`` and ``Tools.act`` before the model is asked
anything), with ``sensitive_data``, ``save_conversation_path`` and a headless browser session
on Debian's chromium, kept for the adapter's life (browser-use's own tests keep one per
module). The model is scripted as browser-use's own tests script it (``create_mock_llm``,
``tests/ci/conftest.py``): it calls nothing, keeps the messages it is given and answers
``done``, so the agent stops after step 1 (``max_steps=1``); then ``Agent.save_history``
writes the history, one file per call. No model, no network, no account. Two paths:

- by default each standard handler is a browser-use action whose parameters take any member;
- ``--mcp``: the handlers are MCP tools of a local stdio server on the official ``mcp`` SDK
  (:mod:`conformance.frameworks.mcp_tools`), connected with browser-use's own ``MCPClient``
  and registered into the ``Tools`` with ``MCPClient.register_to_tools``
  (``browser_use/mcp/client.py``), the ``Tools`` the agent is given.
  ``_register_tool_as_action`` gives the action only the
  properties the tool's input schema declares (``extra='forbid'``; a tool with none is called
  with ``{}``), so the server declares, for each call, one required property per member of the
  call, of that member's JSON type, as a tool of that shape would; a server is started for
  each tool list and shape, and kept for the adapter's life, as an agent keeps its MCP client.

Surfaces: every message the model is given at step 1 (result and failure text: the state
message holds the initial action's result, and ``read_state`` an MCP tool's), the
``browser_use`` loggers (and ``mcp`` on the MCP path) at every level, standard error, and what
the agents persist (``observe.ledger``): each call's saved history, the conversation files of
``save_conversation_path``, the agent's file system and its own directory (screenshots), every
file in path order. Telemetry and
cloud sync are turned off (``ANONYMIZED_TELEMETRY=false``, ``BROWSER_USE_CLOUD_SYNC=false``),
so nothing leaves the machine.

``--mutant`` patches the message manager's ``redact_sensitive_string`` to return its text
unchanged: a broken masking step the checks must catch, on either path.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from conformance.frameworks.base import Framework, Outcome, Receipt, Tool, main
from conformance.frameworks.playwright_mcp import CHROMIUM, CHROMIUM_ARGS

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
    """browser-use's ``Agent``, its tools and its message manager, driven without a model."""

    name = "browser-use (MCP tools)" if MCP else "browser-use"
    spelling = "<secret>{name}</secret>"
    loggers = ("browser_use", "mcp") if MCP else ("browser_use",)
    capabilities = ("observe.log", "observe.receipts", "observe.ledger")

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._tools: Any = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._runs = 0

    def build(self) -> None:
        """Register each tool as a browser-use action (the MCP path: at its first call)."""
        self._scratch = tempfile.TemporaryDirectory(prefix="secref-browser-use-agent-")
        if MCP:
            return
        from browser_use.tools.service import Tools
        from pydantic import BaseModel, ConfigDict

        class Params(BaseModel):  # type: ignore[misc,unused-ignore]
            model_config = ConfigDict(extra="allow")

        tools = Tools(exclude_actions=[])
        for spec in self.tools.values():
            tools.registry.action(f"the {spec.handler} handler", param_model=Params)(
                _action(self, spec)
            )
        self._tools = tools

    def call(self, tool: str, arguments: Any) -> Outcome:
        """Run one call as an agent's initial action; return the state message the model reads."""
        from browser_use import Agent

        if not isinstance(arguments, dict):
            return Outcome("browser-use actions take an object of parameters", True, True)
        assert self._scratch is not None
        sensitive: dict[str, Any] = dict(self.secrets)
        served = _served(list(self.tools.values()), arguments) if MCP else None
        tools = served.tools if served is not None else self._tools
        root = Path(self._scratch.name)
        seen: list[list[Any]] = []
        try:
            agent = Agent(
                task="secref",
                llm=_scripted_model(seen),
                tools=tools,
                browser_session=_session(),
                sensitive_data=sensitive or None,
                initial_actions=[{tool: arguments}],
                save_conversation_path=str(root / "conversations"),
                file_system_path=str(root / "files"),
                use_vision=False,
                use_judge=False,
            )
        except ValueError as error:  # the action model refused the parameters
            return Outcome(f"browser-use refused the action ({type(error).__name__})", True, True)
        history = _LOOP.run_until_complete(agent.run(max_steps=1))
        # One file per agent, as each run of a script saves its own.
        self._runs += 1
        agent.save_history(root / f"history-{self._runs}.json")
        # The agent's own directory (its screenshots) is made in the system's temporary
        # directory: it is read with the rest, and goes with them.
        if Path(agent.agent_directory).exists():
            shutil.move(str(agent.agent_directory), root / f"agent-{self._runs}")
        if served is not None:
            self._collect(served.receipts)
        results = history.history[0].result if history.history else []
        failed = any(result.error is not None for result in results)
        return Outcome(_read(seen), failed)

    def persisted(self) -> bytes:
        """Return every file the agents of this configuration wrote, in path order."""
        if self._scratch is None:
            return b""
        files = sorted(p for p in Path(self._scratch.name).rglob("*") if p.is_file())
        return b"\n".join(p.read_bytes() for p in files)

    def _collect(self, receipts: Path) -> None:
        """Move the MCP server's receipts into :attr:`handlers`."""
        if not receipts.exists():
            return
        for line in receipts.read_text("utf-8").splitlines():
            wire = json.loads(line)
            self.handlers.receipts.append(Receipt(wire["tool"], wire["raw"], wire["view"]))
        receipts.unlink()


#: What the scripted model answers to every step: the task is done.
DONE: Final = json.dumps(
    {
        "evaluation_previous_goal": "secref",
        "memory": "secref",
        "next_goal": "secref",
        "action": [{"done": {"text": "secref", "success": True}}],
    }
)


def _scripted_model(seen: list[list[Any]]) -> Any:
    """Return a model that calls nothing, keeps the messages it is given and answers ``done``.

    It is written as browser-use's own tests write theirs (``create_mock_llm`` in
    ``tests/ci/conftest.py``): an ``AsyncMock`` of ``BaseChatModel`` whose ``ainvoke`` parses
    a fixed answer with the output format it is asked for.
    """
    from unittest.mock import AsyncMock

    from browser_use.llm import BaseChatModel
    from browser_use.llm.views import ChatInvokeCompletion

    llm = AsyncMock(spec=BaseChatModel)
    llm.model = llm.name = llm.model_name = "secref-scripted"
    llm.provider = "mock"
    llm._verified_api_keys = True

    async def ainvoke(messages: list[Any], output_format: Any = None, **_: Any) -> Any:
        seen.append(list(messages))
        if output_format is None:
            return ChatInvokeCompletion(completion=DONE, usage=None)
        return ChatInvokeCompletion(completion=output_format.model_validate_json(DONE), usage=None)

    llm.ainvoke.side_effect = ainvoke
    return llm


def _read(seen: list[list[Any]]) -> str:
    """Return the text of every message the model was given at its first step: what it reads."""
    texts: list[str] = []
    for message in seen[0] if seen else []:
        content = message.content
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [str(getattr(part, "text", "")) for part in content or ()]
    return "\n".join(texts)


_SESSION: Any = None


def _session() -> Any:
    """Return the adapter's one browser session, started at its first use and kept alive."""
    global _SESSION
    if _SESSION is None:
        from browser_use.browser import BrowserProfile, BrowserSession

        profile = BrowserProfile(
            headless=True,
            user_data_dir=None,
            keep_alive=True,
            enable_default_extensions=False,
            executable_path=CHROMIUM,
            chromium_sandbox=False,
            args=[arg for arg in CHROMIUM_ARGS if arg != "--no-sandbox"],
        )
        _SESSION = BrowserSession(browser_profile=profile)
        _LOOP.run_until_complete(_SESSION.start())
        # A session kept alive outlives the process unless it is killed: kill it at the end.
        atexit.register(_end_session)
    return _SESSION


def _end_session() -> None:
    """Kill the adapter's browser, which ``keep_alive`` would leave running."""
    if _SESSION is not None:
        with contextlib.suppress(Exception):
            _LOOP.run_until_complete(_SESSION.kill())


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
    os.environ["BROWSER_USE_CLOUD_SYNC"] = "false"
    os.environ["SKIP_LLM_API_KEY_VERIFICATION"] = "true"
    if "--mutant" in sys.argv[1:]:
        _no_mask()
        BrowserUse.name += " (mutant: no-mask)"
    raise SystemExit(main(BrowserUse))
