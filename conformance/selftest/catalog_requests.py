"""Mutants of the reference host's MCP layer that let a value out in a request the server sends its
client during a call (decisions R9.3, v1.2).

This module owns the broken hosts behind ``test_requests_hunt``: a scrubber that leaves the
requests a tool asks for (sampling, roots, ping) as the tool wrote them, one that scrubs their
``_meta`` and ``metadata`` but not a sampling request's conversation, and an MCP layer that
sends them with result scrubbing off, unscrubbed. No older check drove a host to send a request
to its client, and every older check passes each. Each entry is a
:class:`~conformance.selftest.base.Mutant`; ``tests/conformance/test_requests_mutants.py`` shows
the older checks pass it and the new ones catch it. A mutant changes behaviour only and never
prints a value.
"""

from __future__ import annotations

from typing import Final

from conformance.selftest.base import Mutant
from conformance.selftest.catalog_mcp import kept_where, scrub_except
from conformance.selftest.catalog_members import sent_despite_scrubbing_off

_REGISTRY: Final = "reference_impl._registry"
_SERVER: Final = "reference_impl.mcp_server"

#: The members of a sampling request that hold its conversation.
_CONVERSATION: Final = ("messages", "systemPrompt")

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "mcp-client-requests-unscrubbed",
        "MCP-003",
        "The requests a tool asks its host to send the client during a call (sampling, roots, "
        "ping) go out as the tool wrote them.",
        ((_REGISTRY, "scrub_tree", scrub_except("requests")),),
        via="mcp",
    ),
    Mutant(
        "mcp-sampling-conversation-unscrubbed",
        "MCP-003",
        "A sampling request's messages and system prompt go out as the tool wrote them; its "
        "metadata and _meta are scrubbed.",
        ((_REGISTRY, "scrub_tree", kept_where(lambda _n, key, _d: key in _CONVERSATION)),),
        via="mcp",
    ),
    Mutant(
        "mcp-client-requests-when-scrubbing-off",
        "MCP-003",
        "With result scrubbing off, the requests a tool asks for go to the client as it wrote "
        "them.",
        ((_SERVER, "render", sent_despite_scrubbing_off("requests")),),
        via="mcp",
    ),
)
