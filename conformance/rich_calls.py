"""One approved call of a ``rich`` tool over MCP, as the checks of what a server sends beyond the
surfaces a client shows make it (``test_members_hunt``, ``test_requests_hunt``).

This module owns that call: a secret of the kind asked for, a host configured with the tool and
the policy given, one call naming the secret's password and notes, approved. A host that fails
the call leaks nothing by failing (the session sweep has searched the failure), so the check is
skipped, saying why. It never prints a value.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.canary import Kind, Mint
from conformance.host import Answer, ToolSpec
from conformance.outcomes import require
from conformance.scenario import RecordingHost, answering, config, make_secret, ref
from conformance.via import final_message, mcp_call, mcp_host


def approved_rich_call(
    host: RecordingHost, mint: Mint, kind: Kind, tool: ToolSpec, policy: dict[str, Any]
) -> tuple[Any, dict[str, Any], frozenset[int]]:
    """Send one approved call of ``tool`` over MCP, naming a secret's password and notes.

    Returns:
        The MCP host, the call's final result, and the numbers of the session messages tapped
        before the call (so that a check can tell what arrived while it ran).
    """
    mcp = mcp_host(host)
    secret = make_secret(mint, kind=kind)
    host.reset(config([secret], tools=(tool,), policy=policy))
    before = frozenset(message.number for message in mcp.tap.pending().messages)
    call, _ = mcp.call(
        mcp_call(tool.name, {"a": ref(secret.id), "b": ref(secret.id, "notes")}),
        answering(Answer.APPROVE),
    )
    seen, payload = final_message(call)
    require(seen != "none", "MCP-003", f"the {tool.name} call got neither a result nor an error")
    if seen == "error" or payload.get("isError") is True:
        pytest.skip(f"the host failed the {tool.name} call: nothing else to search")
    return mcp, payload, before
