"""Checks that the requests an MCP server sends its client during a call hold no value
(decisions R9.3, v1.2).

A tool may ask the agent's side for something while it runs: to sample the agent's model
(``sampling/createMessage``), to list its roots (``roots/list``), or only to ping it. A host that
passes what its tool fetched into such a request hands the value to the agent as surely as a
result does. No older check drove a host to send one, so a host that scrubs results and
notifications and sends requests as its tools wrote them passed every check. Here the ``rich``
handler is bound with ``requests``: during the call it asks for a sampling request whose message
text is every form of the value, whose ``systemPrompt`` is the value and whose ``metadata`` and
``_meta`` hold every form, and for a ``roots/list`` and a ``ping`` with every form in their
``_meta``. The suite's client declares sampling and roots, and answers each with a fixed text of
its own. The session sweep searches every string and member name of every message after each
check; these checks make sure there is something there to search. They run only via MCP.
Nothing here prints a value.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from conformance.canary import Kind, Mint
from conformance.host import HandlerKind
from conformance.mcp_tap import FROM_SERVER
from conformance.rich_calls import approved_rich_call
from conformance.scenario import RecordingHost, tool

#: The ``rich`` handler asking its host to send requests (driver protocol, its ``requests``).
RICH_REQUESTS: Final = tool("rich-requests", HandlerKind.RICH, requests=True)

#: The requests a server may send its client that the ``rich`` handler asks for.
CLIENT_REQUESTS: Final = frozenset({"sampling/createMessage", "roots/list", "ping"})

#: Why a check has nothing to search: no request reached the suite's client.
NOTHING_ASKED: Final = (
    "no sampling, roots or ping request reached the client during the rich call: the host "
    "does not let its tools send them, or its rich handler does not ask for them (driver "
    "protocol, the rich handler's requests)"
)


def _requests_call(host: RecordingHost, mint: Mint, kind: Kind, policy: dict[str, Any]) -> int:
    """Send one approved call of the ``rich`` handler with requests, naming a secret's password
    and notes, and return how many requests to the client arrived while it ran."""
    mcp, _, before = approved_rich_call(host, mint, kind, RICH_REQUESTS, policy)
    return sum(
        1
        for message in mcp.tap.pending().messages
        if message.number not in before
        and message.direction == FROM_SERVER
        and message.value.get("method") in CLIENT_REQUESTS
    )


@pytest.mark.req("MCP-003", "INV1")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_requests_to_the_client_are_scrubbed(host: RecordingHost, mint: Mint, kind: Kind) -> None:
    """Every form in a sampling request's messages, system prompt, metadata and ``_meta``, and
    in a roots or ping request's ``_meta``, reaches the client scrubbed (the session sweep
    judges every message)."""
    if _requests_call(host, mint, kind, {}) == 0:
        pytest.skip(NOTHING_ASKED)


@pytest.mark.req("MCP-003", "SCRUB-014", "INV1")
def test_requests_hold_no_value_with_scrubbing_off(host: RecordingHost, mint: Mint) -> None:
    """With result scrubbing off the result may hold the value, and no request to the client
    may: the host scrubs them or does not send them (the session sweep judges every message).
    A first call with scrubbing on shows that the host sends such requests at all."""
    if _requests_call(host, mint, Kind.SPECIAL, {}) == 0:
        pytest.skip(NOTHING_ASKED)
    _requests_call(host, mint, Kind.SPECIAL, {"resultScrubbingEnabled": False})
