"""Checks that what an MCP server sends beyond the surfaces a client shows holds no value either
(decisions R9.3, v1.2).

The older MCP checks put a value's forms on the surfaces R9.3 lists by name: text items, an
embedded text resource's text, a resource link's members, ``structuredContent``, the result's
``_meta``, progress and log notifications. A host whose scrubber walks that list, and nothing
else, passed them. Here the ``rich`` handler is bound with ``members``: the forms go as well
into each content item's ``_meta``, its ``annotations`` and a member the MCP schema does not
define, into an embedded resource's ``uri``, ``mimeType`` and ``_meta``, into a resource link's
``mimeType``, and into notifications the handler asks its host to send during the call (a
resource update whose ``uri`` holds the value, a resource list change whose ``_meta`` holds
every form, and progress under a token the client never gave). The session sweep searches every
string and member name of every message after each check; these checks make sure there is
something there to search. They run only via MCP. Nothing here prints a value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import pytest

from conformance.canary import Kind, Mint
from conformance.host import HandlerKind
from conformance.rich_calls import approved_rich_call
from conformance.scenario import RecordingHost, tool

#: The ``rich`` handler with every further member filled (driver protocol, its ``members``).
RICH_MEMBERS: Final = tool("rich-members", HandlerKind.RICH, members=True)

#: The members of a content item, and of an embedded resource, that R9.3 does not list by name.
ITEM_MEMBERS: Final = ("_meta", "annotations")
RESOURCE_MEMBERS: Final = ("_meta", "mimeType")

#: Why a check has nothing to search: neither the host nor its handler sent a further member.
NOTHING_SENT: Final = (
    "no member beyond the surfaces decisions R9.3 names reached the agent: the host drops "
    "them, or its rich handler does not fill them (driver protocol, the rich handler's members)"
)


def unnamed_members(result: Mapping[str, Any]) -> Iterator[str]:
    """Yield the path of every member of a ``tools/call`` result beyond the named surfaces."""
    content = result.get("content", ())
    for index, item in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(item, Mapping):
            continue
        where = f"content/{index}"
        yield from (f"{where}/{member}" for member in ITEM_MEMBERS if member in item)
        if item.get("type") == "resource_link" and "mimeType" in item:
            yield f"{where}/mimeType"
        resource = item.get("resource")
        if isinstance(resource, Mapping):
            present = (member for member in RESOURCE_MEMBERS if member in resource)
            yield from (f"{where}/resource/{member}" for member in present)


def _rich_call(host: RecordingHost, mint: Mint, kind: Kind, policy: dict[str, Any]) -> None:
    """Send one approved call of the ``rich`` handler with further members; skip, saying why,
    when its result holds none of them."""
    _, payload, _ = approved_rich_call(host, mint, kind, RICH_MEMBERS, policy)
    if not any(True for _ in unnamed_members(payload)):
        pytest.skip(NOTHING_SENT)


@pytest.mark.req("MCP-003", "INV1")
@pytest.mark.parametrize("kind", list(Kind), ids=[kind.value for kind in Kind])
def test_members_beyond_the_named_surfaces_are_scrubbed(
    host: RecordingHost, mint: Mint, kind: Kind
) -> None:
    """Every form in an item's ``_meta`` and ``annotations``, a resource's ``uri`` and
    ``mimeType``, an undefined member and the notifications sent during the call reaches the
    agent scrubbed (the session sweep judges every message)."""
    _rich_call(host, mint, kind, {})


@pytest.mark.req("MCP-003", "SCRUB-014", "INV1")
def test_notifications_hold_no_value_with_scrubbing_off(host: RecordingHost, mint: Mint) -> None:
    """With result scrubbing off the result may hold the value, and nothing else the server
    sends may: no resource notification, no progress under a token the client never gave (the
    session sweep judges every message)."""
    _rich_call(host, mint, Kind.SPECIAL, {"resultScrubbingEnabled": False})
