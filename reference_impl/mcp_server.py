"""The reference host as an MCP server, built on the official MCP Python SDK (decisions R9).

This module owns the MCP wire of the reference host: it lists the governed tools, turns each
``tools/call`` into one call of the governed path (the registry's ``invoke``, with the
re-serialized ``params.arguments`` as the argument text), asks the operator through
``elicitation/create`` when the client declared elicitation, and turns the scrubbed, capped
result into an MCP result. A handler's rich result (the ``rich`` handler's) has its content
items, ``structuredContent``, ``_meta`` and the progress, log and other notifications it asks
for sent as MCP surfaces, every string and member name of it scrubbed by the registry, and its
text items capped together; with result scrubbing off, only the result and its own progress go
out as the handler wrote them. A call that needs approval from a client that did not declare
elicitation, with no terminal to fall back on, is refused as denied without asking anyone, and
its ledger record says no operator was asked. It imports ``mcp``, so it is imported only when
the MCP wire is used; the host's core never imports it. It must never put a value in any message
it sends, never elicit from a client that did not declare elicitation, and never approve
silently.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from reference_impl._cap import cap
from reference_impl._execute import Tool
from reference_impl._limits import RESULT_CAP_CHARS
from reference_impl._operator import NoOperatorError
from reference_impl._registry import Registry
from reference_impl._types import Answer, ApprovalRequest, Risk
from reference_impl.harness import HarnessHost

#: The ``_meta`` key under which every result names the call's disposition (decisions R9.8).
DISPOSITION_META_KEY: Final = "io.secref/disposition"


#: The elicitation form's one field, and the answers it offers (decisions R3.3, R9.6).
DECISION_FIELD: Final = "decision"
ELICIT_ANSWERS: Final = {
    "approve": Answer.APPROVE,
    "deny": Answer.DENY,
    "always_allow": Answer.ALWAYS_ALLOW,
    "trust_provider": Answer.TRUST_PROVIDER,
    "trust_session": Answer.TRUST_SESSION,
}

#: What the log notification says in place of handler log lines when result scrubbing is off:
#: the MCP log is the host log on the wire and never carries a value (decisions R9.3, R6.6).
LOG_WITHHELD: Final = "handler log lines withheld: result scrubbing is off"

#: The least room left under the cap in which a text item is cut rather than dropped: more
#: than the cap's note ("[result cut to 150000 characters; it had N]") can take.
MIN_CUT_ROOM: Final = 80

#: The input schema every governed tool announces: any object, read as decisions R1 says.
OPEN_OBJECT_SCHEMA: Final = {"type": "object", "additionalProperties": True}

#: Plays the operator for one prompt: gets the request and the approval timeout, returns the answer.
AskFunction = Callable[[ApprovalRequest, float], Answer]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One governed call's end, as the MCP layer renders it.

    Attributes:
        disposition: The disposition's name.
        text: The scrubbed, capped result or refusal text.
        is_error: Whether it is a refusal or a failure.
        rich: The handler's further surfaces, scrubbed (see ``ToolResult.rich``), or ``None``.
    """

    disposition: str
    text: str
    is_error: bool
    rich: object = None


class Backend(Protocol):
    """The host behind the MCP wire: its tools, its governed call, and its settings."""

    def tools(self) -> Sequence[Tool]:
        """Return the governed tools to list."""
        ...

    def call(self, tool: str, args: str, ask: AskFunction) -> Outcome:
        """Run one governed call; ``ask`` plays the operator."""
        ...

    def scrubbing_enabled(self) -> bool:
        """Whether result scrubbing (decisions R5.5) is on."""
        ...


class ThreadOperator:
    """The registry's operator: hands each request to the calling thread's ask function.

    A call on a thread with no ask function is refused at once as one no operator was asked
    about: nothing approves silently.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def bind(self, ask: AskFunction | None) -> None:
        """Set (or clear, with ``None``) this thread's ask function."""
        self._local.ask = ask

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """Ask through this thread's ask function.

        Raises:
            NoOperatorError: This thread has no ask function.
        """
        ask: AskFunction | None = getattr(self._local, "ask", None)
        if ask is None:
            raise NoOperatorError("no ask function is bound to this call")
        return ask(request, timeout)


@dataclass(frozen=True, slots=True)
class Approval:
    """How a server asks its operator when the client cannot elicit.

    Attributes:
        fallback: Asks another way (a terminal operator), or ``None`` to refuse at once as a
            call no operator could be asked about.
    """

    fallback: AskFunction | None = None


def elicitation_message(request: ApprovalRequest) -> str:
    """Return the elicitation message: descriptors, risk and the arguments as written.

    Args:
        request: The approval request; it carries references and descriptors, never a value.

    Returns:
        The text the client shows its user.
    """
    lines = [
        f"Approve a call of tool {request.tool_name} (provider {request.provider_id})?",
        f"Risk: {request.risk.name}",
    ]
    if request.descriptors:
        lines.extend(f"Secret: {descriptor}" for descriptor in request.descriptors)
    else:
        lines.append("Secrets: none")
    lines.append(f"Arguments: {request.arguments}")
    return "\n".join(lines)


def elicitation_schema(request: ApprovalRequest) -> dict[str, Any]:
    """Return the elicitation's ``requestedSchema``: one required choice among the answers."""
    return {
        "type": "object",
        "properties": {
            DECISION_FIELD: {
                "type": "string",
                "title": f"Decision on {request.tool_name} ({request.risk.name} risk)",
                "description": "approve runs this call once; any other choice but deny also "
                "runs it once, since a secret-bearing call is never approved for later calls",
                "enum": list(ELICIT_ANSWERS),
            }
        },
        "required": [DECISION_FIELD],
    }


def answer_of(result: types.ElicitResult) -> Answer:
    """Return the operator's answer in an elicitation result (decisions R9.6).

    Only an ``accept`` whose content holds exactly the decision field, with one of the offered
    answers, says anything but deny.
    """
    if result.action != "accept" or result.content is None:
        return Answer.DENY
    content = dict(result.content)
    if set(content) != {DECISION_FIELD}:
        return Answer.DENY
    choice = content[DECISION_FIELD]
    if not isinstance(choice, str):
        return Answer.DENY
    return ELICIT_ANSWERS.get(choice, Answer.DENY)


def arguments_text(arguments: Mapping[str, Any] | None) -> str:
    """Return ``params.arguments`` as the argument text the registry reads (decisions R9.2)."""
    return json.dumps(dict(arguments or {}), ensure_ascii=False)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


@dataclass(frozen=True, slots=True)
class Rendered:
    """A call's MCP result and the notifications to send before it."""

    result: dict[str, Any]
    progress: tuple[str, ...] = ()
    log: tuple[str, ...] = ()
    notifications: tuple[types.ServerNotification, ...] = ()
    requests: tuple[types.ServerRequest, ...] = ()


def cap_items(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cap the text items taken together, in order (decisions R9.4).

    The text item where the limit falls is cut as the registry cuts a text, its note included;
    later text items are dropped; other items are kept. The total stays within the cap.
    """
    texts = [len(str(item.get("text", ""))) for item in content if item.get("type") == "text"]
    if sum(texts) <= RESULT_CAP_CHARS:
        return content
    kept: list[dict[str, Any]] = []
    used = 0
    full = False
    for item in content:
        if item.get("type") != "text":
            kept.append(item)
            continue
        if full:
            continue
        text = str(item.get("text", ""))
        room = RESULT_CAP_CHARS - used
        if len(text) < room:
            kept.append(item)
            used += len(text)
            continue
        # cap() needs room for its note; with less room left, the item is dropped instead.
        if room >= MIN_CUT_ROOM:
            kept.append({**item, "text": cap(text, room)})
        full = True
    return kept


def render(outcome: Outcome, scrubbing: bool) -> Rendered:
    """Return the MCP result for a governed call.

    Args:
        outcome: The call's end: its text scrubbed (when scrubbing is on) and capped, and its
            rich surfaces scrubbed.
        scrubbing: Whether result scrubbing is on; handler log lines are sent only then.

    Returns:
        The result, with the progress and log messages a rich result asked for.
    """
    meta: dict[str, Any] = {DISPOSITION_META_KEY: outcome.disposition}
    plain = {"content": [_text(outcome.text)], "isError": outcome.is_error, "_meta": meta}
    rich = outcome.rich
    if outcome.is_error or not isinstance(rich, dict):
        return Rendered(plain)
    try:
        content = cap_items([dict(item) for item in rich.get("content", ())])
        types.CallToolResult.model_validate({"content": content})
    except Exception:  # a malformed rich result reaches the agent as its text alone
        return Rendered(plain)
    result: dict[str, Any] = {"content": content, "isError": False}
    if "structuredContent" in rich:
        result["structuredContent"] = rich["structuredContent"]
    extra = rich.get("_meta")
    if isinstance(extra, dict):
        meta = {**extra, **meta}
    result["_meta"] = meta
    progress = tuple(str(item) for item in rich.get("progress", ()))
    log: tuple[str, ...] = tuple(str(item) for item in rich.get("log", ()))
    if log and not scrubbing:
        log = (LOG_WITHHELD,)
    # Outside the result nothing may hold a value, scrubbing on or off (decisions R9.3, v1.2).
    notifications = further_notifications(rich.get("notifications", ())) if scrubbing else ()
    requests = further_requests(rich.get("requests", ())) if scrubbing else ()
    return Rendered(result, progress, log, notifications, requests)


#: The notifications a rich result may ask the MCP layer to send during its call.
NOTIFICATION_TYPES: Final[Mapping[str, Any]] = {
    "notifications/resources/updated": types.ResourceUpdatedNotification,
    "notifications/resources/list_changed": types.ResourceListChangedNotification,
    "notifications/progress": types.ProgressNotification,
}


def further_notifications(asked: object) -> tuple[types.ServerNotification, ...]:
    """Return the notifications a rich result asked for, of the kinds this layer sends.

    An entry of another kind, or one the SDK's schema refuses, is left out.
    """
    return tuple(_asked_for(asked, NOTIFICATION_TYPES))


def _asked_for(asked: object, kinds: Mapping[str, Any]) -> list[Any]:
    """Return each entry of ``asked`` (a list of JSON-RPC messages) validated as the type
    ``kinds`` gives its method; an entry of another method, or one the type refuses, is left
    out."""
    sent: list[Any] = []
    for entry in asked if isinstance(asked, list) else ():
        kind = kinds.get(entry.get("method", "")) if isinstance(entry, dict) else None
        if kind is None:
            continue
        try:
            sent.append(kind.model_validate(entry))
        except ValueError:
            continue
    return sent


@dataclass(frozen=True, slots=True)
class ClientRequest:
    """One kind of request a rich result may ask the MCP layer to send its client.

    Attributes:
        request: The SDK type of the request.
        answer: The SDK type of the answer it expects.
        needs: The client capability it needs declared (``None``: every client answers it).
    """

    request: Any
    answer: Any
    needs: str | None = None


#: The requests to its client a rich result may ask the MCP layer to send during its call.
CLIENT_REQUESTS: Final[Mapping[str, ClientRequest]] = {
    "sampling/createMessage": ClientRequest(
        types.CreateMessageRequest, types.CreateMessageResult, "sampling"
    ),
    "roots/list": ClientRequest(types.ListRootsRequest, types.ListRootsResult, "roots"),
    "ping": ClientRequest(types.PingRequest, types.EmptyResult),
}

#: Seconds the MCP layer waits for its client to answer one of those requests.
CLIENT_REQUEST_TIMEOUT_S: Final = 5.0


def further_requests(asked: object) -> tuple[types.ServerRequest, ...]:
    """Return the requests to the client a rich result asked for, of the kinds this layer sends.

    An entry of another kind, or one the SDK's schema refuses, is left out.
    """
    kinds = {method: kind.request for method, kind in CLIENT_REQUESTS.items()}
    return tuple(_asked_for(asked, kinds))


async def _ask_client(ctx: ServerRequestContext[Any], request: types.ServerRequest) -> None:
    """Send one request to a client that declared what it needs, within
    :data:`CLIENT_REQUEST_TIMEOUT_S`; its answer, or its error, is not used."""
    from mcp.shared.message import ServerMessageMetadata

    kind = CLIENT_REQUESTS[request.method]
    if kind.needs is not None and not _declared(ctx, kind.needs):
        return
    metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
    with anyio.move_on_after(CLIENT_REQUEST_TIMEOUT_S):
        try:
            await ctx.session.send_request(request, kind.answer, metadata=metadata)
        except Exception:  # a client that refuses or fails the request is no concern here
            return


def _declared(ctx: ServerRequestContext[Any], capability: str) -> bool:
    """Whether the client declared ``capability`` (``elicitation``, ``sampling``, ``roots``)."""
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and getattr(capabilities, capability, None) is not None


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    return _declared(ctx, "elicitation")


def build_server(
    backend: Backend, approval: Approval | None = None, name: str = "secref"
) -> Server:
    """Return an MCP server serving ``backend``'s governed tools.

    Args:
        backend: The host behind the wire.
        approval: How to ask when the client cannot elicit; by default such a call is refused
            at once, as one no operator was asked about.
        name: The server's name in the handshake.

    Returns:
        A low-level SDK server, ready for ``run`` (stdio) or ``streamable_http_app``.
    """
    settings = approval if approval is not None else Approval()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=f"Governed tool {tool.name} of provider {tool.provider_id} "
                    f"({tool.risk.name} risk). Arguments may hold secret references.",
                    input_schema=dict(OPEN_OBJECT_SCHEMA),
                )
                for tool in backend.tools()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        elicit = _can_elicit(ctx)
        request_id = ctx.request_id

        async def ask_async(request: ApprovalRequest, timeout: float) -> Answer:
            with anyio.move_on_after(timeout):
                try:
                    result = await ctx.session.elicit_form(
                        elicitation_message(request),
                        elicitation_schema(request),
                        related_request_id=request_id,
                    )
                except Exception:  # an error answer is no approval
                    return Answer.DENY
                return answer_of(result)
            return Answer.TIMEOUT

        def ask(request: ApprovalRequest, timeout: float) -> Answer:
            if elicit:
                return anyio.from_thread.run(ask_async, request, timeout)
            if settings.fallback is not None:
                return settings.fallback(request, timeout)
            # Refused at once, never elicited (decisions R9.6): the registry says why.
            raise NoOperatorError("the client did not declare elicitation")

        args = arguments_text(params.arguments)
        outcome = await anyio.to_thread.run_sync(backend.call, params.name, args, ask)
        rendered = render(outcome, backend.scrubbing_enabled())
        for step, message in enumerate(rendered.progress, start=1):
            await ctx.session.report_progress(step, len(rendered.progress), message)
        for line in rendered.log:
            await ctx.session.send_notification(
                types.LoggingMessageNotification(
                    params=types.LoggingMessageNotificationParams(
                        level="info", data=line, logger="secref"
                    )
                ),
                related_request_id=request_id,
            )
        for notification in rendered.notifications:
            await ctx.session.send_notification(notification, related_request_id=request_id)
        for client_request in rendered.requests:
            await _ask_client(ctx, client_request)
        return types.CallToolResult.model_validate(rendered.result)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio(server: Server) -> None:
    """Serve ``server`` over standard input and output until the client closes them."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


#: Seconds between looks at whether the HTTP server listens yet.
STARTUP_POLL_S: Final = 0.01

#: Hosts ``--http`` accepts: loopback only, since the server has no authentication.
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")


class NotLoopbackError(ValueError):
    """An address that is not a loopback address was given to serve HTTP on."""


def parse_loopback(address: str) -> tuple[str, int]:
    """Return ``(host, port)`` of ``HOST:PORT``, refusing anything but a loopback host.

    Raises:
        NotLoopbackError: The host is not loopback, or the port is not 0 to 65535.
    """
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or host not in LOOPBACK_HOSTS:
        raise NotLoopbackError(f"--http serves on a loopback address only, not {address!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise NotLoopbackError(f"--http needs HOST:PORT, not {address!r}") from None
    if not 0 <= port <= 65_535:
        raise NotLoopbackError(f"--http port {port} is out of range")
    return host, port


class HttpServer:
    """Serves an MCP server over Streamable HTTP on a loopback address, on its own thread.

    Args:
        server: The MCP server.
        host: A loopback host.
        port: The port; 0 picks a free one (see :attr:`url` once started).
    """

    def __init__(self, server: Server, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        if host not in LOOPBACK_HOSTS:
            raise NotLoopbackError(f"refusing to serve MCP on non-loopback host {host!r}")
        app = server.streamable_http_app(host=host)
        self._config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(self._config)
        self._thread = threading.Thread(target=self._server.run, name="mcp-http", daemon=True)
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"

    def start(self, timeout: float = 10.0) -> None:
        """Start serving and wait until the socket listens.

        Raises:
            RuntimeError: The server did not start within ``timeout`` seconds.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(STARTUP_POLL_S)
        for server in self._server.servers:
            for sock in server.sockets:
                self.port = int(sock.getsockname()[1])
                return

    def run_forever(self) -> None:
        """Serve in this thread until interrupted."""
        self._server.run()

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(5.0)


# --- the hosts behind the wire -------------------------------------------------------------------


class RegistryBackend:
    """A registry served over MCP; its operator must be ``operator``.

    Args:
        registry: The host's registry.
        operator: The registry's operator, which hands each prompt to the call's ask function.
    """

    def __init__(self, registry: Registry, operator: ThreadOperator) -> None:
        self.registry = registry
        self._operator = operator

    def tools(self) -> Sequence[Tool]:
        """Return the registry's tools."""
        return self.registry.tools()

    def call(self, tool: str, args: str, ask: AskFunction) -> Outcome:
        """Run one call with ``ask`` as this thread's operator."""
        self._operator.bind(ask)
        try:
            outcome = self.registry.invoke(tool, args)
        finally:
            self._operator.bind(None)
        return Outcome(outcome.disposition.value, outcome.text, outcome.is_error, outcome.rich)

    def scrubbing_enabled(self) -> bool:
        """Whether the policy has result scrubbing on."""
        return self.registry.policy.result_scrubbing_enabled


def request_from_dict(data: Mapping[str, Any]) -> ApprovalRequest:
    """Return an approval request from the driver protocol's JSON-ready shape."""
    stamp = [int(item) for item in data.get("stamp", (0, 0))]
    return ApprovalRequest(
        id=str(data["id"]),
        tool_name=str(data["tool"]),
        provider_id=str(data["provider"]),
        risk=Risk[str(data["risk"])],
        descriptors=tuple(str(item) for item in data.get("descriptors", ())),
        arguments=str(data["arguments"]),
        secret_refs=tuple(str(item) for item in data.get("secretRefs", ())),
        stamp=(stamp[0], stamp[1]) if len(stamp) == 2 else (0, 0),
    )


class HarnessBackend:
    """A harness host (the driver's) served over MCP: the same state as its driver session."""

    def __init__(self, harness: HarnessHost) -> None:
        self.harness = harness

    def tools(self) -> Sequence[Tool]:
        """Return the configured registry's tools, or none before ``configure``."""
        registry = self.harness.registry
        return registry.tools() if registry is not None else ()

    def call(self, tool: str, args: str, ask: AskFunction) -> Outcome:
        """Run one call through the harness, with ``ask`` playing the operator."""
        registry = self.harness.registry
        timeout = registry.gate.timeout if registry is not None else 0.0

        def on_prompt(data: dict[str, Any]) -> str:
            # TIMEOUT's wire name is no answer: the harness lets the prompt run out.
            return ask(request_from_dict(data), timeout).value

        try:
            result = self.harness.invoke(tool, args, on_prompt, with_rich=True)
        except RuntimeError:
            return Outcome("UNKNOWN_TOOL", "the host is not configured", True)
        return Outcome(
            str(result["disposition"]),
            str(result["text"]),
            bool(result["isError"]),
            result.get("rich"),
        )

    def scrubbing_enabled(self) -> bool:
        """Whether the configured policy has result scrubbing on."""
        registry = self.harness.registry
        return registry is None or registry.policy.result_scrubbing_enabled
