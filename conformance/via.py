"""Which path a check's calls take, and how argument text is compared on each (decisions R9.2).

This module owns one question the checks ask: do calls reach the host through MCP? Over MCP the
argument text is ``params.arguments``, which the MCP layer may re-serialize, so the "byte for
byte" rules are judged by value there. The path under test (in process, driver, MCP) is the
suite's own choice, made from its options (``--host``, ``--via``) and known to it alone
(decisions S1.8): it is never read from what the host announces, and no capability a host can
announce changes it. It must never weaken a comparison on any other path.
"""

from __future__ import annotations

import json
from typing import Any, Final, Protocol

import pytest

#: The paths under test: the reference host or a mutant in this process, an adapter reached
#: through its driver-protocol ``invoke`` requests, or an adapter reached through MCP.
INPROCESS: Final = "inprocess"
DRIVER: Final = "driver"
MCP: Final = "mcp"
PATHS: Final = (INPROCESS, DRIVER, MCP)

#: The skip reason of a check that cannot arise off the MCP wire (decisions S1, R9).
NOT_VIA_MCP: Final = "not applicable: the run is not via MCP (--via mcp), so R9 cannot arise"


class _OnPath(Protocol):
    @property
    def path(self) -> str: ...


def via_mcp(host: _OnPath) -> bool:
    """Return whether ``host``'s calls go through the MCP wire, as the suite chose the path."""
    return host.path == MCP


def _value(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def same_arguments(host: _OnPath, received: str, sent: str) -> bool:
    """Return whether the handler received the agent's arguments unchanged.

    Byte for byte on every path; over MCP, equal as JSON values (decisions R9.2).

    Args:
        host: The host under test.
        received: The handler's raw argument text.
        sent: The argument text the agent wrote.
    """
    if received == sent:
        return True
    if not via_mcp(host):
        return False
    got_ok, got = _value(received)
    sent_ok, expected = _value(sent)
    return got_ok and sent_ok and got == expected


# --- the checks that run over MCP only ----------------------------------------------------------


def mcp_host(host: _OnPath) -> Any:
    """Return the MCP host behind a check's host, or skip the check as not applicable.

    The host module is imported only here: it needs the MCP SDK, an optional extra.
    """
    if not via_mcp(host):
        pytest.skip(NOT_VIA_MCP)
    from conformance.hosts.mcp import McpHost

    inner = getattr(host, "_inner", None)
    if not isinstance(inner, McpHost):
        pytest.skip(NOT_VIA_MCP)
    return inner


def mcp_call(tool_name: str, arguments: dict[str, Any], **changes: Any) -> Any:
    """Return one ``tools/call`` for :func:`mcp_host`'s host to send, with ``changes`` to its
    defaults (how the client answers an elicitation, and the like)."""
    from conformance.hosts.mcp import McpCall

    return McpCall(tool_name, arguments, **changes)


def elicitations(call: Any) -> list[dict[str, Any]]:
    """Return the elicitation requests the host sent during ``call``, in order."""
    return [payload for kind, payload in call.messages if kind == "elicitation"]


def final_message(call: Any) -> tuple[str, dict[str, Any]]:
    """Return how an MCP call ended: ``("result", result)``, ``("error", error)`` or
    ``("none", {})`` when the server sent neither."""
    for kind, payload in reversed(call.messages):
        if kind in ("result", "error"):
            return kind, payload
    return "none", {}
