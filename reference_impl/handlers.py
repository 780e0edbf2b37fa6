"""The standard adversarial handlers of driver protocol v1, for the reference host.

This module owns the reference host's own implementation of the handlers a conformance check
binds to a tool: echo, sha256, thrower, timeout, overcap, static, recorder and rich (for the MCP
wire). Each records a receipt of what it was handed (the raw JSON text and the per-key view)
before it acts. They try their best to make the host leak; they must never log, and they print
nothing.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from reference_impl._arguments import ArgumentsUnavailableError, ToolArguments
from reference_impl._limits import RESULT_CAP_CHARS
from reference_impl._scrub import form_encode, json_escape
from reference_impl._types import ToolResult

HANDLER_KINDS: Final = (
    "echo",
    "sha256",
    "thrower",
    "timeout",
    "overcap",
    "static",
    "recorder",
    "rich",
)


def rich_result(
    values: list[str], pad: int = 0, members: bool = False, requests: bool = False
) -> ToolResult:
    """Return the ``rich`` handler's result: every form of every value on every MCP surface.

    Its text is every form, one a line; its ``rich`` tree, which the MCP layer sends, holds text
    items, an embedded text resource, a resource link (uri, name, title, description),
    strings and member names of ``structuredContent`` at depth, the result's ``_meta``, progress
    and log messages, and an embedded blob holding base64 of each value (for the hardening
    table, since base64 is outside the scrub contract). ``pad`` filler characters go with each
    text item, so that the items together can pass the cap (decisions R9.4). With ``members``
    the forms also go where the MCP schema puts no text a client shows (see
    :func:`further_members`); with ``requests`` into requests the server sends its client
    during the call (see :func:`further_requests`).
    """
    forms = [form for value in values for form in every_form(value)]
    joined = "\n".join(forms)
    filler = "x" * max(0, pad)
    first = values[0] if values else ""
    blob = base64.b64encode(first.encode("utf-8", "surrogatepass")).decode("ascii")
    quoted = urllib.parse.quote(first, safe="")
    envelope = {
        "content": [
            {"type": "text", "text": joined + filler},
            *({"type": "text", "text": filler + form} for form in forms),
            {
                "type": "resource",
                "resource": {"uri": "secref://rich/embedded", "text": joined},
            },
            {
                "type": "resource_link",
                "uri": "https://example.invalid/item?key=" + quoted,
                "name": "link " + first,
                "title": "title " + first,
                "description": joined,
            },
            {
                "type": "resource",
                "resource": {
                    "uri": "secref://rich/blob",
                    "mimeType": "application/octet-stream",
                    "blob": blob,
                },
            },
        ],
        "structuredContent": {
            "values": forms,
            "nested": {"deep": [{"value": first}], first: "as a member name"},
        },
        "_meta": {"io.secref/echo": first, "io.secref/forms": forms},
        "progress": forms,
        "log": forms,
    }
    if members:
        further_members(envelope, forms, first)
    if requests:
        further_requests(envelope, forms, first)
    return ToolResult(joined, rich=envelope)


#: The ``_meta`` key under which the ``rich`` handler's further members hold its forms.
FORMS_KEY: Final = "io.secref/forms"

#: A member the MCP schema does not define, which the ``rich`` handler adds to each item.
UNDEFINED_MEMBER: Final = "io.secref/undefined"


def further_members(envelope: dict[str, Any], forms: list[str], first: str) -> None:
    """Put the forms where the MCP schema holds no text a client shows (decisions R9.3, v1.2).

    Each content item gets a ``_meta`` holding every form, ``annotations`` whose
    ``lastModified`` is the first value, and a member the schema does not define; an embedded
    resource gets the first value in its ``uri`` (as form d), in its ``mimeType`` and in
    its own ``_meta``; a resource link gets it in its ``mimeType``. The envelope's
    ``notifications`` ask the MCP layer to send, during the call, a resource-updated
    notification whose ``uri`` holds form d of the value, a resource list-changed notification whose
    ``_meta`` holds every form, and a progress notification under a token the client never
    gave.
    """
    # Form d exactly: only URL-safe characters, and a form the contract requires scrubbed.
    quoted = every_form(first)[3]
    for item in envelope["content"]:
        item["_meta"] = {FORMS_KEY: forms}
        item["annotations"] = {"audience": ["assistant"], "priority": 1, "lastModified": first}
        item[UNDEFINED_MEMBER] = first
        resource = item.get("resource")
        if isinstance(resource, dict):
            resource["uri"] = f"{resource['uri']}?key={quoted}"
            resource["mimeType"] = f"{resource.get('mimeType', 'text/plain')}; name={first}"
            resource["_meta"] = {FORMS_KEY: forms}
        if item["type"] == "resource_link":
            item["mimeType"] = "text/plain; name=" + first
    envelope["notifications"] = [
        {
            "method": "notifications/resources/updated",
            "params": {"uri": "secref://rich/updated?key=" + quoted},
        },
        {"method": "notifications/resources/list_changed", "params": {"_meta": {FORMS_KEY: forms}}},
        {
            "method": "notifications/progress",
            "params": {"progressToken": "io.secref/unasked", "progress": 1, "message": first},
        },
    ]


#: The most tokens the ``rich`` handler's sampling request asks the client's model for.
SAMPLING_MAX_TOKENS: Final = 16


def further_requests(envelope: dict[str, Any], forms: list[str], first: str) -> None:
    """Ask the MCP layer to send its client requests holding the forms (decisions R9.3, v1.2).

    A tool may ask the agent's side for something during its call: to sample its model, to list
    its roots, or only to ping it. Each request reaches the client as every other message of the
    session does, so it carries no value. The envelope's ``requests`` hold a
    ``sampling/createMessage`` whose message text is every form, whose ``systemPrompt`` is the
    first value and whose ``metadata`` and ``_meta`` hold every form; a ``roots/list`` and a
    ``ping``, each with every form in its ``_meta``.
    """
    joined = "\n".join(forms)
    meta = {FORMS_KEY: forms}
    envelope["requests"] = [
        {
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": joined}}],
                "systemPrompt": first,
                "maxTokens": SAMPLING_MAX_TOKENS,
                "metadata": meta,
                "_meta": meta,
            },
        },
        {"method": "roots/list", "params": {"_meta": meta}},
        {"method": "ping", "params": {"_meta": meta}},
    ]


@dataclass(frozen=True, slots=True)
class Receipt:
    """What one handler was handed."""

    tool: str
    raw: str
    view: dict[str, Any] | None


class Receipts:
    """A thread-safe list of receipts, in call order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Receipt] = []

    def add(self, receipt: Receipt) -> None:
        """Keep one receipt."""
        with self._lock:
            self._items.append(receipt)

    def all(self) -> tuple[Receipt, ...]:
        """Return every receipt so far."""
        with self._lock:
            return tuple(self._items)

    def clear(self) -> None:
        """Forget every receipt."""
        with self._lock:
            self._items.clear()


def string_values(node: object) -> Iterator[str]:
    """Yield every string value of a parsed JSON tree, depth first, in document order."""
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def every_form(value: str) -> tuple[str, str, str, str]:
    """Return forms a to d of decisions R5.2 for ``value``, duplicates included."""
    form_c = form_encode(value)
    return value, json_escape(value), form_c, form_c.replace("+", "%20")


def _values(arguments: ToolArguments) -> list[str]:
    try:
        return list(string_values(arguments.view()))
    except ArgumentsUnavailableError:
        return []


def _member(arguments: ToolArguments, key: str) -> object:
    """Return one member through the accessors a plugin uses: ``string(key)``, else ``get``."""
    text = arguments.string(key)
    return text if text is not None else arguments.get(key)


def make_handler(
    kind: str,
    tool: str,
    receipts: Receipts,
    options: Mapping[str, Any] | None = None,
) -> Callable[[ToolArguments], ToolResult | str]:
    """Return the standard handler ``kind`` for ``tool``, recording into ``receipts``.

    Args:
        kind: One of :data:`HANDLER_KINDS`.
        tool: The tool's name, for receipts.
        receipts: Where each call's receipt goes.
        options: ``text`` and ``isError`` for static; ``forms`` for thrower; ``seconds`` for
            timeout; ``cut`` for overcap; ``pad``, ``members`` and ``requests`` for rich.

    Returns:
        The handler.

    Raises:
        ValueError: ``kind`` is not a standard handler.
    """
    if kind not in HANDLER_KINDS:
        raise ValueError(f"unknown handler kind {kind!r}")
    settings = dict(options or {})

    def handler(arguments: ToolArguments) -> ToolResult | str:
        try:
            view: dict[str, Any] | None = {key: _member(arguments, key) for key in arguments.view()}
        except ArgumentsUnavailableError:
            view = None
        receipts.add(Receipt(tool, arguments.raw, view))
        values = _values(arguments)
        if kind == "echo":
            lines = [arguments.raw]
            for value in values:
                lines.extend(every_form(value))
            return "\n".join(lines)
        if kind == "sha256":
            return "\n".join(
                hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
                for value in values
            )
        if kind == "thrower":
            if settings.get("forms") is True:
                # Every form of every value, as a handler that quotes its request's JSON or a
                # URL it built in its error would.
                raise RuntimeError(
                    "handler failed with "
                    + " ".join(form for value in values for form in every_form(value))
                )
            raise RuntimeError("handler failed with " + " ".join(values))
        if kind == "timeout":
            time.sleep(float(settings.get("seconds", 30.0)))
            return "\n".join(values)
        if kind == "overcap":
            cut = int(settings.get("cut", RESULT_CAP_CHARS))
            first = values[0] if values else ""
            head = "x" * max(0, cut - len(first) // 2)
            return head + first + "y" * 1_000
        if kind == "rich":
            return rich_result(
                values,
                int(settings.get("pad", 0)),
                members=settings.get("members") is True,
                requests=settings.get("requests") is True,
            )
        if kind == "static":
            if settings.get("isError") is True:
                # A failure the handler returns rather than raises, as MCP tools report one.
                return ToolResult(str(settings.get("text", "")), is_error=True)
            return str(settings.get("text", ""))
        return "ok"

    return handler
