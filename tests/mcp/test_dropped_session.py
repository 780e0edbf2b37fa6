"""An MCP session the server ends during a call: that check errors, the next ones are served.

The host of :mod:`tests.mcp.dropping_wire` terminates the client's session at its first
``tools/call``. The call is the host's error (never a conformance failure: it learned nothing),
and the next call opens a new session, so no later check inherits the broken one.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Final

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

from conformance.host import HandlerKind, HostConfig, ToolSpec
from conformance.hosts._protocol import HostError
from conformance.hosts.mcp import McpHost, session_lost

DROPPING: Final = (
    f"{shlex.quote(sys.executable)} "
    f"{shlex.quote(str(Path(__file__).with_name('dropping_wire.py')))}"
)

CONFIG: Final = HostConfig(
    tools=(ToolSpec("free", "plugin.bench", HandlerKind.RECORDER),),
    policy={"tools": {"free": "ALLOW"}},
)


def test_a_session_the_server_ends_errors_one_check_and_the_next_is_served() -> None:
    host = McpHost(DROPPING)
    try:
        host.reset(CONFIG)
        with pytest.raises(HostError, match="MCP session ended"):
            host.invoke("free", '{"a":"b"}')
        for _ in range(2):
            host.reset(CONFIG)
            result = host.invoke("free", '{"a":"b"}')
            assert (result.disposition, result.is_error) == ("ALLOWED", False)
    finally:
        host.close()


def test_only_the_sdks_stand_ins_for_a_lost_session_are_candidates() -> None:
    assert session_lost(-32000, "Connection closed")
    assert session_lost(-32600, "Session terminated")
    # A host's own refusal with the same code but its own text is its answer.
    assert not session_lost(-32600, "denied by policy")
    assert not session_lost(-32603, "Session terminated")
