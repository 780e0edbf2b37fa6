"""The canary sweep over the MCP wire: every surface decisions R9.3 lists, in every message.

This module owns walking what an MCP server sent during a check's calls (results, JSON-RPC
errors, progress and log notifications, elicitation requests and tool listings) and searching
each agent surface with :meth:`conformance.canary.Detector.find`. Binary content (an image's or
audio's ``data``, a resource's ``blob``) is base64, outside the contract: it is searched for the
hardening forms only. It reports which surfaces it searched. It must never print a value: a
finding names the value's label, the form, the message and the path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from conformance.canary import FORM_REQUIREMENTS, Detector, Finding, Surface, Sweep, strings

#: What a leak on each MCP surface violates (decisions R9.3, R9.6, R9.7; design invariant 1).
MCP_SURFACE_REQUIREMENTS: Final = {
    Surface.MCP_RESULT: ("INV1", "MCP-003"),
    Surface.MCP_ERROR: ("INV1", "MCP-003"),
    Surface.MCP_PROGRESS: ("INV1", "MCP-003"),
    Surface.MCP_LOG: ("INV1", "MCP-004"),
    Surface.MCP_ELICITATION: ("INV1", "MCP-007"),
    Surface.MCP_LISTING: ("INV1", "MCP-010"),
}

#: Surfaces whose text is what the agent reads as a result; a leak names the form's scrub rule.
_RESULT_SURFACES: Final = frozenset({Surface.MCP_RESULT, Surface.MCP_ERROR, Surface.MCP_PROGRESS})

#: The members of a resource link the agent reads (decisions R9.3).
LINK_MEMBERS: Final = ("uri", "name", "title", "description")

#: The members of an elicitation request that carry the approval request's descriptors, where
#: a username may stand (decisions R3.2, R9.6): its message and its requested schema, every
#: string and member name of the schema at any depth. Nowhere else in the request.
DESCRIPTOR_MEMBERS: Final = ("elicitation/message", "elicitation/requestedSchema")


def in_descriptors(path: str) -> bool:
    """Whether ``path`` (as :func:`conformance.canary.strings` names it, from ``elicitation``)
    lies in a member of :data:`DESCRIPTOR_MEMBERS`."""
    return any(path == member or path.startswith(member + "/") for member in DESCRIPTOR_MEMBERS)


@dataclass(slots=True)
class McpSweep:
    """What the MCP sweep found and where it looked.

    Attributes:
        leaks: Required forms on a surface that must hold none.
        hardening: Hardening forms seen (base64 in binary content included): reported only.
        searched: The surfaces searched, each once, in the order first met.
    """

    leaks: list[Finding] = field(default_factory=list)
    hardening: list[Finding] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)


def result_surfaces(result: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """Yield (path, text, binary) for every agent surface of a ``tools/call`` result.

    ``binary`` marks base64 content, searched for hardening forms only.
    """
    content = result.get("content", ())
    for index, item in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(item, Mapping):
            continue
        where = f"content/{index}"
        kind = item.get("type")
        if kind == "text":
            yield f"{where}/text", str(item.get("text", "")), False
        elif kind in ("image", "audio"):
            yield f"{where}/data", str(item.get("data", "")), True
        elif kind == "resource":
            resource = item.get("resource")
            if isinstance(resource, Mapping):
                if "text" in resource:
                    yield f"{where}/resource/text", str(resource["text"]), False
                if "blob" in resource:
                    yield f"{where}/resource/blob", str(resource["blob"]), True
        elif kind == "resource_link":
            for member in LINK_MEMBERS:
                if isinstance(item.get(member), str):
                    yield f"{where}/{member}", str(item[member]), False
    for member in ("structuredContent", "_meta"):
        if member in result:
            for path, text in strings(result[member], member):
                yield path, text, False


class _Walker:
    def __init__(self, detector: Detector, found: McpSweep) -> None:
        self.detector = detector
        self.found = found

    def search(
        self,
        surface: Surface,
        text: str,
        where: str,
        *,
        binary: bool = False,
        allow_usernames: bool = False,
        extra: tuple[str, ...] = (),
    ) -> None:
        if surface.value not in self.found.searched:
            self.found.searched.append(surface.value)
        if not binary:
            for item, form in self.detector.find(text):
                if allow_usernames and item.is_username:
                    continue
                requirements = (*MCP_SURFACE_REQUIREMENTS[surface], *extra)
                if surface in _RESULT_SURFACES:
                    requirements = (*requirements, FORM_REQUIREMENTS[form])
                self.found.leaks.append(
                    Finding(surface, form, item.label, where, tuple(dict.fromkeys(requirements)))
                )
        for item, form in self.detector.find_hardening(text):
            self.found.hardening.append(Finding(surface, form, item.label, where, ()))


def sweep_mcp(
    detector: Detector,
    calls: Sequence[Any],
    log_messages: Iterable[Mapping[str, Any]],
    listings: Iterable[Mapping[str, Any]],
    *,
    scrubbing: bool = True,
) -> McpSweep:
    """Search every MCP surface of every message for every guarded value.

    Args:
        detector: The values to look for.
        calls: :class:`conformance.hosts.mcp.McpCall` records: each call's messages in order.
        log_messages: Every ``notifications/message`` params received, during calls or not.
        listings: Every ``tools/list`` result received.
        scrubbing: Whether ``resultScrubbingEnabled`` was on. Off, a call's result, error and
            progress may hold a value (decisions R5.5, R9.3); log notifications, elicitation
            requests and listings still may not, and leaks there also violate SCRUB-014.

    Returns:
        The leaks, the hardening forms, and the surfaces searched.
    """
    found = McpSweep()
    walk = _Walker(detector, found)
    off = () if scrubbing else ("SCRUB-014",)
    for number, call in enumerate(calls, start=1):
        label = f"call {number} to {call.tool}"
        for index, (kind, payload) in enumerate(call.messages, start=1):
            where = f"{label}, message {index}"
            if kind == "result":
                for path, text, binary in result_surfaces(payload):
                    walk.search(
                        Surface.MCP_RESULT,
                        text,
                        f"{where} {path}",
                        binary=binary or not scrubbing,
                    )
            elif kind == "error":
                walk.search(
                    Surface.MCP_ERROR,
                    str(payload.get("message", "")),
                    f"{where} message",
                    binary=not scrubbing,
                )
                if "data" in payload:
                    for path, text in strings(payload["data"], "data"):
                        walk.search(
                            Surface.MCP_ERROR, text, f"{where} {path}", binary=not scrubbing
                        )
            elif kind == "progress":
                for path, text in strings(payload, "progress"):
                    walk.search(Surface.MCP_PROGRESS, text, f"{where} {path}", binary=not scrubbing)
            elif kind == "elicitation":
                for path, text in strings(payload, "elicitation"):
                    walk.search(
                        Surface.MCP_ELICITATION,
                        text,
                        f"{where} {path}",
                        allow_usernames=in_descriptors(path),
                        extra=off,
                    )
    for number, params in enumerate(log_messages, start=1):
        for path, text in strings(params, f"log notification {number}"):
            walk.search(Surface.MCP_LOG, text, path, extra=off)
    for number, listing in enumerate(listings, start=1):
        for path, text in strings(listing, f"tools/list {number}"):
            walk.search(Surface.MCP_LISTING, text, path, extra=off)
    return found


def merge(sweep: Sweep, found: McpSweep) -> None:
    """Add the MCP sweep's leaks and hardening forms to the check's sweep."""
    sweep.leaks.extend(found.leaks)
    sweep.hardening.extend(found.hardening)
