"""Mutants of the reference host's MCP layer that leave a value where the MCP schema puts no text a
client shows (decisions R9.3, v1.2).

This module owns the broken hosts behind ``test_members_hunt``: a scrubber that leaves a
content item's or embedded resource's ``_meta`` as the handler wrote it (the result's own is
scrubbed), one that leaves ``annotations``, one that leaves an embedded resource's ``uri`` and
``mimeType``, one that leaves the notifications a handler asks for, one that scrubs exactly the
members R9.3 lists by name and nothing else, and an MCP layer that sends the handler's
notifications with result scrubbing off. The older MCP checks never put a value in those
members, and pass each. Each entry is a :class:`~conformance.selftest.base.Mutant`;
``tests/conformance/test_members_mutants.py`` shows the older checks pass it and the new ones
catch it. A mutant changes behaviour only and never prints a value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant
from conformance.selftest.catalog_mcp import kept_where, members_kept, scrub_except

_REGISTRY: Final = "reference_impl._registry"
_SERVER: Final = "reference_impl.mcp_server"

#: The members of a content item R9.3 lists by name; ``text`` of any item, the rest of a link.
_NAMED_LINK_MEMBERS: Final = ("uri", "name", "title", "description")

#: The members of a rich result R9.3 lists by name, scrubbed whole.
_NAMED_RESULT_MEMBERS: Final = ("structuredContent", "_meta", "progress", "log")


def _named_members_only(original: Callable[..., Any]) -> Callable[..., Any]:
    """Scrub exactly what R9.3 lists by name: each item's text, a link's four members, an
    embedded resource's text, and the result's structured content, ``_meta``, progress and
    log. Everything else stays as the handler wrote it."""

    def item_scrubbed(scrubber: Any, item: object) -> object:
        if not isinstance(item, dict):
            return item
        named = ("text", *(_NAMED_LINK_MEMBERS if item.get("type") == "resource_link" else ()))
        kept = {key: original(scrubber, item[key]) for key in named if key in item}
        resource = item.get("resource")
        if isinstance(resource, dict) and "text" in resource:
            kept["resource"] = {**resource, "text": original(scrubber, resource["text"])}
        return {**item, **kept}

    def scrub_tree(scrubber: Any, node: object) -> object:
        if not isinstance(node, dict):
            return original(scrubber, node)
        named = (key for key in _NAMED_RESULT_MEMBERS if key in node)
        scrubbed = {key: original(scrubber, node[key]) for key in named}
        if isinstance(node.get("content"), list):
            scrubbed["content"] = [item_scrubbed(scrubber, item) for item in node["content"]]
        return {**node, **scrubbed}

    return scrub_tree


def sent_despite_scrubbing_off(member: str) -> Callable[[Any], Any]:
    """Send what a handler asks for under ``member`` (``notifications``, ``requests``) even
    with result scrubbing off, as it wrote it."""

    def transform(original: Callable[..., Any]) -> Callable[..., Any]:
        def render(outcome: Any, scrubbing: bool) -> Any:
            from reference_impl import mcp_server

            rendered = original(outcome, scrubbing)
            if scrubbing or not isinstance(outcome.rich, dict) or outcome.is_error:
                return rendered
            asked = getattr(mcp_server, f"further_{member}")(outcome.rich.get(member, ()))
            return dataclasses.replace(rendered, **{member: asked})

        return render

    return transform


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "mcp-item-meta-unscrubbed",
        "MCP-003",
        "Every _meta below the result's own (of a content item, an embedded resource, a "
        "notification) reaches the agent as the handler wrote it.",
        (
            (
                _REGISTRY,
                "scrub_tree",
                kept_where(lambda _n, key, depth: key == "_meta" and depth > 0),
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-annotations-unscrubbed",
        "MCP-003",
        "A content item's annotations reach the agent as the handler wrote them.",
        ((_REGISTRY, "scrub_tree", scrub_except("annotations")),),
        via="mcp",
    ),
    Mutant(
        "mcp-resource-address-unscrubbed",
        "MCP-003",
        "An embedded resource's uri and mimeType are left as the handler wrote them.",
        (
            (
                _REGISTRY,
                "scrub_tree",
                members_kept(lambda node: "uri" in node and "text" in node, ("uri", "mimeType")),
            ),
        ),
        via="mcp",
    ),
    Mutant(
        "mcp-notifications-unscrubbed",
        "MCP-003",
        "The notifications a handler asks for during its call (resource updated, list changed, "
        "progress under another token) are sent unscrubbed.",
        ((_REGISTRY, "scrub_tree", scrub_except("notifications")),),
        via="mcp",
    ),
    Mutant(
        "mcp-named-members-only",
        "MCP-003",
        "Only the members R9.3 lists by name are scrubbed; annotations, _meta of items, a "
        "resource's address, undefined members and further notifications go out as written.",
        ((_REGISTRY, "scrub_tree", _named_members_only),),
        via="mcp",
    ),
    Mutant(
        "mcp-notifications-when-scrubbing-off",
        "MCP-003",
        "With result scrubbing off, the handler's further notifications go out as it wrote them.",
        ((_SERVER, "render", sent_despite_scrubbing_off("notifications")),),
        via="mcp",
    ),
)
