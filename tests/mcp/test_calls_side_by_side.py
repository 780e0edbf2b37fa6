"""Two calls over one MCP session at once: each elicitation reaches its own call's operator.

The model check holds one call's prompt open while it makes others, and the MCP adapter sends
every call over one session. An elicitation once went to the operator of the first call in
flight, so a second call's prompt waited on the first call's held operator and ended in a
timeout the host never caused: a false failure of APPR-001 on a host that did right.
"""

from __future__ import annotations

import shlex
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

from conformance.canary import Mint
from conformance.host import Answer
from conformance.hosts.mcp import McpHost
from conformance.scenario import RECORDER, args_json, config, make_secret, ref

DRIVER: Final = f"{shlex.quote(sys.executable)} -m reference_impl.driver"


@pytest.mark.req("APPR-001")
def test_a_second_call_is_asked_while_the_first_is_held() -> None:
    """The held call's operator is asked once; the second call's own operator approves it."""
    host = McpHost(DRIVER)
    asked: list[str] = []
    release = threading.Event()

    def held(_request: Mapping[str, Any], _control: Any) -> Answer:
        asked.append("held")
        release.wait(60)
        return Answer.DENY

    def approving(_request: Mapping[str, Any], _control: Any) -> Answer:
        asked.append("second")
        return Answer.APPROVE

    try:
        secret = make_secret(Mint())
        host.reset(config([secret], tools=(RECORDER,)))
        args = args_json({"v": ref(secret.id)})
        pending = host.start(RECORDER.name, args, held)
        deadline = time.monotonic() + 30
        while not asked and time.monotonic() < deadline:
            time.sleep(0.01)
        assert asked == ["held"], "the first call was never asked"
        second = host.invoke(RECORDER.name, args, approving)
        assert second.disposition == "APPROVED_ONCE", second.disposition
        release.set()
        first = pending.result(60)
        assert first.disposition != "APPROVED_ONCE", first.disposition
        assert asked == ["held", "second"]
    finally:
        release.set()
        host.close()
