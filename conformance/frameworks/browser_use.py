"""browser-use as a placeholder host: ``python -m conformance.frameworks.browser_use``.

This module owns the adapter for browser-use (pinned ``browser-use==0.13.14``). The model writes
``<secret>NAME</secret>``; ``Registry.execute_action`` replaces each one in an action's
parameters (``browser_use/tools/registry/service.py``, ``_replace_sensitive_data``), recursively
through dicts and lists, from the agent's ``sensitive_data``. What the model reads back is the
agent's history description (``MessageManager._update_agent_history_description``) after
``MessageManager._filter_sensitive_data``, which replaces each value with its placeholder
(``browser_use/utils.py``, ``redact_sensitive_string``). The adapter registers the standard
handlers as browser-use actions, runs each call through ``Tools.act`` with no browser session,
no model and no network, and renders the result through the message manager as an agent step
would (step 0, the path of an agent's initial actions, which renders the results without
a model's output). Its surfaces: that rendering (result and failure text), the
``browser_use`` loggers at every level, and standard error. browser-use persists its history
only from a running agent, which needs a model, so nothing persisted is announced.

``--mutant no-mask`` patches ``redact_sensitive_string`` to return its text unchanged: a broken
masking step the checks must catch.
"""

from __future__ import annotations

import asyncio
import sys
from importlib import metadata
from typing import Any

from conformance.frameworks.base import Framework, Outcome, Tool, main

#: The release this adapter was written against.
PINNED = "0.13.14"


class BrowserUse(Framework):
    """browser-use's action registry and message manager, driven without a model."""

    name = "browser-use"
    spelling = "<secret>{name}</secret>"
    loggers = ("browser_use",)

    def __init__(self) -> None:
        super().__init__()
        self.version = _version()
        self._tools: Any = None
        self._models: dict[str, Any] = {}

    def build(self) -> None:
        """Register each tool as a browser-use action whose parameters take any member."""
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
        from browser_use.agent.message_manager.service import MessageManager
        from browser_use.agent.views import AgentStepInfo
        from browser_use.filesystem.file_system import FileSystem
        from browser_use.llm.messages import SystemMessage, UserMessage

        if not isinstance(arguments, dict):
            return Outcome("browser-use actions take an object of parameters", True, True)
        action = self._model(**{tool: self._params(**arguments)})
        sensitive: dict[str, Any] = dict(self.secrets)
        result = asyncio.run(
            self._tools.act(
                action,
                browser_session=None,
                sensitive_data=sensitive or None,
                action_timeout=self.execution_timeout,
            )
        )
        import tempfile

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
            message = UserMessage(content=manager.agent_history_description)
            if manager.sensitive_data:
                message = manager._filter_sensitive_data(message)
        return Outcome(str(message.content), result.error is not None)


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
    if "--mutant" in sys.argv[1:]:
        _no_mask()
        BrowserUse.name = "browser-use (mutant: no-mask)"
    raise SystemExit(main(BrowserUse))
