"""Mutants of the reference host's MCP layer that the first R9 checks passed.

This module owns broken versions of ``reference_impl.mcp_server`` that an MCP server's author
could plausibly write: an elicitation answer read leniently (another case, a trailing space, a
decline that carries approving content, a cancel taken as no answer), an elicitation that names
only the websites or shows a head of the arguments, a reference-free call approved for a client
that cannot elicit, and a debug log notification of each result for a client that asked for
debug logging. Each is served behind the reference driver and checked over the MCP wire
(``via="mcp"``); ``conformance/checks/test_wire_hunt.py`` catches each. They break the host on
purpose; nothing here may print a value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, line_patch

_SERVER: Final = "reference_impl.mcp_server"

#: Characters of the arguments the cut elicitation shows: a dialog's "readable head".
_SHOWN_ARGUMENTS: Final = 500


def _cancel_is_no_answer(original: Callable[..., Any]) -> Callable[..., Any]:
    """Take a cancelled elicitation as no answer (TIMEOUT) instead of a deny."""
    from reference_impl._types import Answer

    def answer_of(result: Any) -> Any:
        if result.action == "cancel":
            return Answer.TIMEOUT
        return original(result)

    return answer_of


def _timeout_taken_at_once(original: dict[str, Any]) -> dict[str, Any]:
    """Let the harness take a ``timeout`` answer as given, at once, instead of waiting the
    prompt out: the MCP layer's TIMEOUT for a cancel then ends the call without a wait."""
    from reference_impl._types import Answer

    return {**original, Answer.TIMEOUT.value: Answer.TIMEOUT}


def _sites_only(original: Callable[..., str]) -> Callable[..., str]:
    """Name each secret's website once in the elicitation, without username or field."""

    def elicitation_message(request: Any) -> str:
        sites = tuple(dict.fromkeys(item.split(" (")[0] for item in request.descriptors))
        return original(dataclasses.replace(request, descriptors=sites))

    return elicitation_message


def _arguments_head(original: Callable[..., str]) -> Callable[..., str]:
    """Show only a head of the arguments in the elicitation."""

    def elicitation_message(request: Any) -> str:
        shown = request.arguments
        if len(shown) > _SHOWN_ARGUMENTS:
            shown = shown[:_SHOWN_ARGUMENTS] + f"... ({len(request.arguments)} characters)"
        return original(dataclasses.replace(request, arguments=shown))

    return elicitation_message


def _plain_calls_approved_unasked(original: Callable[..., Any]) -> Callable[..., Any]:
    """Approve a reference-free call that needs approval when nobody can be asked."""
    from reference_impl._operator import NoOperatorError
    from reference_impl._types import Answer

    def call(self: Any, tool: str, args: str, ask: Callable[..., Any]) -> Any:
        def asking(request: Any, timeout: float) -> Any:
            try:
                return ask(request, timeout)
            except NoOperatorError:
                if request.secret_refs:
                    raise
                return Answer.APPROVE

        return original(self, tool, args, asking)

    return call


def _debug_log_of_results(original: Callable[..., Any]) -> Callable[..., Any]:
    """Serve logging/setLevel, and at debug send each call's result text as a log line."""

    def build_server(backend: Any, approval: Any = None, name: str = "secref") -> Any:
        import mcp_types as types

        server = original(backend, approval, name)
        entry = server.get_request_handler("tools/call")
        level = {"now": "info"}

        async def set_level(ctx: Any, params: Any) -> Any:
            level["now"] = params.level
            return types.EmptyResult()

        async def call_tool(ctx: Any, params: Any) -> Any:
            result = await entry.handler(ctx, params)
            if level["now"] == "debug":
                texts = [item.text for item in result.content if item.type == "text"]
                line = f"{params.name} returned: " + "\n".join(texts)
                await ctx.session.send_notification(
                    types.LoggingMessageNotification(
                        params=types.LoggingMessageNotificationParams(
                            level="debug", data=line, logger="secref"
                        )
                    ),
                    related_request_id=ctx.request_id,
                )
            return result

        server.add_request_handler("tools/call", entry.params_type, call_tool)
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
        return server

    return build_server


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "wire-answer-case-folded",
        "MCP-008",
        "An elicitation answer is matched to the form's options after trimming and lower-casing "
        "it, so an option the form does not list approves.",
        (
            line_patch(
                _SERVER,
                "answer_of",
                "return ELICIT_ANSWERS.get(choice, Answer.DENY)",
                "return ELICIT_ANSWERS.get(choice.strip().lower(), Answer.DENY)",
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "wire-decline-content-approves",
        "MCP-008",
        "A declined elicitation that carries approving content is read by its content.",
        (
            line_patch(
                _SERVER,
                "answer_of",
                'if result.action != "accept" or result.content is None:',
                'if result.action == "cancel" or result.content is None:',
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "wire-cancel-as-timeout",
        "MCP-008",
        "A cancelled elicitation ends the call as TIMEOUT, not as the operator's deny.",
        (
            (_SERVER, "answer_of", _cancel_is_no_answer),
            ("reference_impl.harness", "ANSWERS", _timeout_taken_at_once),
        ),
        via="mcp",
    ),
    Mutant(
        "wire-elicitation-sites-only",
        "MCP-007",
        "The elicitation names each secret's website once, without username or field.",
        ((_SERVER, "elicitation_message", _sites_only),),
        via="mcp",
    ),
    Mutant(
        "wire-elicitation-arguments-head",
        "MCP-007",
        f"The elicitation shows only the first {_SHOWN_ARGUMENTS} characters of the arguments.",
        ((_SERVER, "elicitation_message", _arguments_head),),
        via="mcp",
    ),
    Mutant(
        "wire-plain-call-approved-unasked",
        "MCP-009",
        "A reference-free call that needs approval, from a client that cannot elicit, is "
        "approved without asking anyone.",
        ((_SERVER, "HarnessBackend.call", _plain_calls_approved_unasked),),
        via="mcp",
    ),
    Mutant(
        "wire-debug-log-holds-result",
        "MCP-004",
        "A client that asks for debug logging gets each call's result text as a log "
        "notification, values included when result scrubbing is off.",
        ((_SERVER, "build_server", _debug_log_of_results),),
        via="mcp",
    ),
)
