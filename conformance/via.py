"""Which path a check's calls take, and how argument text is compared on each (decisions R9.2).

This module owns one question the checks ask of a host: do calls reach it through MCP? Over
MCP the argument text is ``params.arguments``, which the MCP layer may re-serialize, so the
"byte for byte" rules are judged by value there. It must never weaken a comparison on any other
path, and it reads nothing but the host's announced capabilities.
"""

from __future__ import annotations

import json
from typing import Any, Final, Protocol

#: The pseudo-capability a host reached over MCP announces (conformance.hosts.mcp).
VIA_MCP: Final = "via.mcp"

#: The skip reason of a check that cannot arise off the MCP wire (decisions S1, R9).
NOT_VIA_MCP: Final = "not applicable: the run is not via MCP (--via mcp), so R9 cannot arise"


class _Announces(Protocol):
    def has(self, capability: str) -> bool: ...


def via_mcp(host: _Announces) -> bool:
    """Return whether ``host``'s calls go through the MCP wire."""
    return host.has(VIA_MCP)


def _value(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def same_arguments(host: _Announces, received: str, sent: str) -> bool:
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
