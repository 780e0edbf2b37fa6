"""``logging/setLevel`` is bounded like every other request the suite's MCP client sends.

The model check and the named MCP-004 check ask the host for debug logging. A host that never
answers the request must end the run as hung within the driver's request timeout, never leave
the suite waiting; a host that refuses it with an MCP error leaves the session as it was.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

import anyio
import anyio.from_thread
from mcp.shared.exceptions import MCPError

from conformance.hosts._protocol import HostHungError
from conformance.hosts.mcp import McpHost


class _Driver:
    """The part of the subprocess driver the request reads: its timeout, and where a hung
    request is reported."""

    def __init__(self, timeout: float) -> None:
        self.call_timeout = timeout
        self.failed: list[BaseException] = []

    def fail(self, failure: BaseException) -> None:
        self.failed.append(failure)


class _Session:
    """A session whose host never answers, or answers with an MCP error."""

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.sent: list[Any] = []

    async def send_request(self, request: Any, _result: Any) -> None:
        self.sent.append(request)
        if self.refuse:
            raise MCPError(-32601, "Method not found")
        await anyio.sleep(3600)


def _host(session: _Session, timeout: float) -> tuple[McpHost, _Driver, Any]:
    host = McpHost.__new__(McpHost)
    driver = _Driver(timeout)
    portal_cm = anyio.from_thread.start_blocking_portal()
    host.driver = driver  # type: ignore[assignment]
    host._portal = portal_cm.__enter__()
    host._live_session = lambda: session  # type: ignore[method-assign]
    return host, driver, portal_cm


def test_a_host_that_never_answers_set_level_ends_as_hung_within_the_timeout() -> None:
    session = _Session(refuse=False)
    host, driver, portal_cm = _host(session, 0.5)
    started = time.monotonic()
    try:
        hung = re.escape("did not answer logging/setLevel within 0.5 s")
        with pytest.raises(HostHungError, match=hung):
            host.set_log_level("debug")
    finally:
        portal_cm.__exit__(None, None, None)
    assert time.monotonic() - started < 10.0
    assert [type(failure) for failure in driver.failed] == [HostHungError]
    assert session.sent[0].params.level == "debug"


def test_a_host_that_refuses_set_level_is_told_apart_and_not_failed() -> None:
    session = _Session(refuse=True)
    host, driver, portal_cm = _host(session, 5.0)
    try:
        assert host.set_log_level("debug") is False
    finally:
        portal_cm.__exit__(None, None, None)
    assert driver.failed == []
