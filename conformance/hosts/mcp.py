"""The suite's host over the MCP wire: ``secref-conformance --host '<adapter>' --via mcp``.

This module owns reaching a host through MCP. The adapter is started as for the subprocess path
(driver protocol v1, which still configures, controls and observes the host) and asked for its
MCP endpoint (capability ``mcp``); every ``invoke`` then goes through one session of the
official MCP Python SDK client to that endpoint. When the host elicits, the check's operator
script answers (its answer mapped to an elicitation result); every message the server sends
during a call (the result or JSON-RPC error, progress and log notifications, elicitation
requests) is kept, in order, for the MCP checks. The session's raw streams are tapped
(:mod:`conformance.mcp_tap`): every JSON-RPC message, both directions, is searched whole by
the MCP sweep after each check, and what arrives after a check's sweep by the end-of-run
barrier (:meth:`McpHost.late_findings`, decisions R9.3, S1.9). The disposition comes from the
result's ``_meta`` key the adapter names, or a JSON-RPC error's ``data``, or else from the
ledger (decisions R9.8); when none names it, it is an
:class:`~conformance.outcomes.UnlearnedDisposition`, and what rests on it is unchecked. It must
never print a canary, and never answer an elicitation but as the check's operator would.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import pytest

from conformance.host import (
    Answer,
    CallResult,
    HostConfig,
    HostInfo,
    Observation,
    OperatorScript,
)
from conformance.hosts import HostSelectionError
from conformance.hosts._protocol import HostError, HostHungError
from conformance.hosts.subprocess import SubprocessHost
from conformance.late import LateReport
from conformance.mcp_sweep import SESSION_JUDGES, SessionLate, merge, sweep_session
from conformance.mcp_tap import SessionTap, TappedReceive, TappedSend
from conformance.outcomes import UnlearnedDisposition, start_call_thread

#: Seconds the session stays open after the last check, for what the server sends late (a log
#: notification after the last result) to arrive and be searched (decisions S1.9).
LATE_GRACE_S: Final = 1.0

#: The skip reason of a call whose argument text MCP cannot carry (decisions R9.2, S1).
NOT_CARRIED: Final = (
    "not applicable: over MCP, params.arguments is a JSON object of unique keys in valid "
    "Unicode, and this check's argument text is not one (decisions R9.2)"
)

#: Seconds a call over MCP may take beyond the host's approval and execution timeouts: the
#: HTTP round trips and one elicitation round trip, generously.
CALL_MARGIN_S: Final = 30.0

#: The errors the MCP SDK's client puts in place of a call's answer when the session itself may
#: be gone: (code, message, or ``None`` for any): the connection closed, or the server answered
#: HTTP 404 on an established session (it terminated the session, MCP Streamable HTTP). A host
#: may send the same itself, so the session is asked for a ping before it is taken as lost.
SESSION_LOST: Final = ((-32000, None), (-32600, "Session terminated"))

#: Seconds the ping that tells a lost session from a host's own error may take.
PING_S: Final = 10.0

#: What an elicited answer maps to in the reference host's form; other hosts' forms are read
#: by :func:`elicit_content`.
DECISION_WORDS: Final = {
    Answer.APPROVE: ("approve", "allow", "yes", "accept"),
    Answer.ALWAYS_ALLOW: ("always_allow", "always"),
    Answer.TRUST_PROVIDER: ("trust_provider", "provider"),
    Answer.TRUST_SESSION: ("trust_session", "session"),
}


#: The one prefix an MCP layer may put before a JSON-RPC error's message (decisions R9.5): an
#: error code (a JSON-RPC code is an integer), bare or after the layer's label, then a colon and
#: a space. The official TypeScript SDK's ``McpError`` writes ``MCP error -32600: ``. Any other
#: text before the refusal message is part of the message, and so is a second prefix.
ERROR_CODE_PREFIX: Final = re.compile(r"(?:(?:MCP error|JSON-RPC error|Error) )?-?[0-9]{1,10}: ")


#: The member of a JSON-RPC error's ``data`` object that names the call's disposition when the
#: adapter's ``dispositionMeta`` key is not there (decisions R9.8, docs/driver-protocol.md).
ERROR_DISPOSITION_MEMBER: Final = "disposition"


def error_message(message: str) -> str:
    """Return a JSON-RPC error's message as the agent reads the refusal in it (decisions R9.5).

    Args:
        message: The error's ``message`` as sent.

    Returns:
        ``message`` with one prefix of the shape :data:`ERROR_CODE_PREFIX` taken off its start,
        or ``message`` itself when it has none.
    """
    prefix = ERROR_CODE_PREFIX.match(message)
    return message[prefix.end() :] if prefix else message


def read_final(final: Mapping[str, Any], key: object) -> CallResult:
    """Return what the agent read from a call's last message, as the other paths report it.

    Args:
        final: The ``result`` or ``error`` payload the call ended with.
        key: The adapter's ``dispositionMeta`` key, or ``None``.

    Returns:
        The text (a refusal's first text item, or a JSON-RPC error's message without its
        accepted prefix; otherwise the text items joined by a newline), whether it is an error,
        and the disposition the message names: under ``key`` in a result's ``_meta``, or in a
        JSON-RPC error's ``data`` object under ``key`` or, without it,
        :data:`ERROR_DISPOSITION_MEMBER`. The disposition is empty when the message names none
        (then the ledger says it).
    """
    if "code" in final and "content" not in final:
        data = final.get("data")
        named: object = None
        if isinstance(data, Mapping):
            member = key if isinstance(key, str) and key in data else ERROR_DISPOSITION_MEMBER
            named = data.get(member)
        disposition = named if isinstance(named, str) else ""
        return CallResult(disposition, error_message(str(final.get("message", ""))), True)
    texts = [
        str(item.get("text", ""))
        for item in final.get("content", ())
        if isinstance(item, dict) and item.get("type") == "text"
    ]
    is_error = bool(final.get("isError", False))
    # A refusal's message is the first text item (decisions R9.5).
    text = texts[0] if is_error and texts else "\n".join(texts)
    meta = final.get("_meta")
    disposition = ""
    if isinstance(key, str) and isinstance(meta, dict) and key in meta:
        disposition = str(meta[key])
    return CallResult(disposition, text, is_error)


@dataclass(slots=True)
class McpCall:
    """What the agent sent and everything the server sent back for one call, in order.

    Attributes:
        tool: The tool named.
        arguments: ``params.arguments`` as sent.
        messages: ``(kind, payload)`` pairs: ``result``, ``error`` (a JSON-RPC error: code,
            message, data), ``progress`` (the notification's params), ``log`` (a
            ``notifications/message``'s params) and ``elicitation`` (the request's params).
    """

    tool: str
    arguments: Mapping[str, Any]
    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    meta: Mapping[str, Any] | None = None
    reply: Mapping[str, Any] | None = None
    #: Why the call got no answer in time (the suite gave up on it), or ``None``.
    hung: str | None = None


class _Unanswered:
    """Set when the call that elicited ends: an operator that never answers waits for it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        #: Whether an elicitation has been given to this call's operator.
        self.asked = False


def session_lost(code: int, message: str) -> bool:
    """Whether an error in place of a call's answer says the session itself is gone
    (:data:`SESSION_LOST`), not that the host refused or failed the call."""
    return any(code == lost and text in (None, message) for lost, text in SESSION_LOST)


def parse_arguments(args: str) -> dict[str, Any] | None:
    """Return ``args`` as a JSON object MCP can carry, or ``None`` when it cannot.

    MCP's ``params.arguments`` is an object; duplicate keys would be merged and a lone
    surrogate cannot be encoded, so such texts are not carried (decisions R9.2).
    """

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate key")
        return dict(pairs)

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(args, object_pairs_hook=unique, parse_constant=no_constant)
        # allow_nan=False also refuses a number too large for a double (1E400 reads as inf).
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def form_choices(spec: Mapping[str, Any]) -> list[tuple[object, tuple[str, ...]]] | None:
    """Return the options of a single-choice string property, each with the words that name it,
    or ``None`` when ``spec`` offers no choice: an ``enum``'s values (with their legacy
    ``enumNames``), or the ``const`` and ``title`` of each item of a titled ``oneOf`` or
    ``anyOf``, the two single-select forms the MCP elicitation schema allows."""
    if spec.get("type") != "string":
        return None
    options = spec.get("enum")
    if isinstance(options, list):
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(options) else []
        return [
            (option, tuple(str(word) for word in (option, *titles[index : index + 1])))
            for index, option in enumerate(options)
            if isinstance(option, str)
        ]
    for key in ("oneOf", "anyOf"):
        items = spec.get(key)
        if isinstance(items, list):
            return [
                (item["const"], tuple(str(item.get(word, "")) for word in ("const", "title")))
                for item in items
                if isinstance(item, dict) and isinstance(item.get("const"), str)
            ]
    return None


def elicit_content(schema: Mapping[str, Any], answer: Answer) -> dict[str, Any] | None:
    """Return the form content that says ``answer``, or ``None`` to decline.

    The form's first single-choice string property (an ``enum``, or a titled ``oneOf`` or
    ``anyOf``) takes the option whose value or title names the answer (``approve``,
    ``always_allow``...); a first boolean property takes ``true`` for any approving answer.
    Deny, and an answer the form cannot say, decline.
    """
    words = DECISION_WORDS.get(answer)
    if words is None:
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    for name, spec in properties.items():
        if not isinstance(spec, dict):
            continue
        options = form_choices(spec)
        if options is not None:
            for word in words:
                for value, labels in options:
                    if any(label.lower() == word for label in labels):
                        return {name: value}
            return None
        if spec.get("type") == "boolean":
            return {name: True}
    return None


#: The model the suite's client names in its answer to a sampling request.
SAMPLING_MODEL: Final = "secref-suite"

#: The text of that answer: the suite's client samples no model.
SAMPLING_TEXT: Final = "the conformance suite's client samples no model"


async def _sample(context: Any, params: Any) -> Any:
    """Answer a server's ``sampling/createMessage`` with a fixed text of the suite's own.

    The client declares sampling and roots so that a host may send those requests; the
    session sweep searches them as every other message (decisions R9.3, v1.2).
    """
    import mcp_types as types

    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=SAMPLING_TEXT),
        model=SAMPLING_MODEL,
    )


async def _roots(context: Any) -> Any:
    """Answer a server's ``roots/list``: the suite's client offers no roots."""
    import mcp_types as types

    return types.ListRootsResult(roots=[])


class McpHost:
    """A host reached through its adapter for set-up and observation, and through MCP for calls.

    Args:
        command: The adapter's command line.
        driver_options: Keyword arguments for :class:`SubprocessHost`.

    Raises:
        HostSelectionError: The MCP SDK is missing, or the adapter announces no MCP endpoint.
    """

    def __init__(self, command: str | Sequence[str], **driver_options: Any) -> None:
        try:
            import mcp  # noqa: F401
        except ImportError as error:
            raise HostSelectionError(
                "--via mcp needs the MCP SDK: pip install 'secref-suite[mcp]'"
            ) from error
        self.driver = SubprocessHost(command, want_mcp=True, **driver_options)
        endpoint = self.driver.mcp_endpoint
        if "mcp" not in self.driver.info().capabilities or endpoint is None:
            self.driver.close()
            raise HostSelectionError(
                "the adapter announces no MCP endpoint (capability mcp, docs/driver-protocol.md)"
            )
        self._config = HostConfig()
        self._lock = threading.Lock()
        self._calls: list[McpCall] = []
        self._in_flight: list[tuple[McpCall, OperatorScript | None, _Unanswered]] = []
        self._prompted = 0
        self.log_messages: list[dict[str, Any]] = []
        self.listings: list[dict[str, Any]] = []
        #: The MCP surfaces the sweeps since :meth:`take_searched` searched, the messages they
        #: read, and what they could not search (decisions S1.3).
        self._surfaces: dict[str, None] = {}
        self._swept = 0
        self._unsearched: dict[str, None] = {}
        #: Every JSON-RPC message of every session, both directions (conformance.mcp_tap).
        self.tap = SessionTap()
        #: What the session sent that no check's sweep judged (decisions S1.9).
        self._late = SessionLate()
        self._portal_cm: AbstractContextManager[Any] | None = None
        self._portal: Any = None
        self._session_cm: AbstractContextManager[Any] | None = None
        self._session: Any = None
        self._url = ""
        #: Why the open session ended during a call, until the call reports it.
        self._lost: str | None = None

    # --- the MCP session -----------------------------------------------------------------------

    @asynccontextmanager
    async def _open(self, url: str) -> AsyncIterator[Any]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(url) as (read, write):
            number = self.tap.new_session()
            async with ClientSession(
                TappedReceive(read, self.tap, number),
                TappedSend(write, self.tap, number),
                elicitation_callback=self._elicit,
                sampling_callback=_sample,
                list_roots_callback=_roots,
                message_handler=self._message,
            ) as session:
                await self._initialize(session)
                yield session

    async def _initialize(self, session: Any) -> None:
        """Make the MCP handshake, within the driver's request timeout (decisions S1.10)."""
        import anyio

        with anyio.fail_after(self.driver.call_timeout):
            await session.initialize()

    def _unreachable(self, error: BaseException) -> HostError:
        """Fail the running check: the endpoint the host announced gave no MCP session.

        The adapter is ended and counted as a host that failed to answer (decisions S1.10); the
        next check starts it again. Only the error's kind is named: its text may quote the host.
        """
        leaf: BaseException = error
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, TimeoutError):
            failure: HostError = HostHungError(
                f"the host's MCP endpoint did not answer initialize within "
                f"{self.driver.call_timeout:g} s"
            )
        else:
            failure = HostError(
                f"the host's MCP endpoint gave no usable session ({type(leaf).__name__}): "
                "the check learned nothing"
            )
        self.driver.fail(failure)
        return failure

    def _live_session(self) -> Any:
        endpoint = self.driver.mcp_endpoint or {}
        url = str(endpoint.get("url", ""))
        if self._session is not None and url == self._url:
            return self._session
        self._close_session()
        if self._portal is None:
            import anyio.from_thread

            self._portal_cm = anyio.from_thread.start_blocking_portal()
            self._portal = self._portal_cm.__enter__()
        session_cm = self._portal.wrap_async_context_manager(self._open(url))
        try:
            self._session = session_cm.__enter__()
        except Exception as error:  # whatever the endpoint did, the check learned nothing
            raise self._unreachable(error) from None
        self._session_cm = session_cm
        self._url = url
        return self._session

    def set_log_level(self, level: Literal["debug", "info"]) -> bool:
        """Send ``logging/setLevel`` with ``level`` on the live session; whether the host took it.

        The request goes through the session and portal like the client's other requests, so
        the tap records it like any message the client sends. A host that refuses it (an MCP
        error) leaves the session as it was; one that does not answer within the driver's
        request timeout fails the run as hung, like any request left unanswered.
        """
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        session = self._live_session()
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))

        async def send() -> None:
            import anyio

            try:
                with anyio.fail_after(self.driver.call_timeout):
                    await session.send_request(request, types.EmptyResult)
            except TimeoutError:
                failure = HostHungError(
                    f"the host did not answer logging/setLevel within "
                    f"{self.driver.call_timeout:g} s"
                )
                self.driver.fail(failure)
                raise failure from None

        try:
            self._portal.call(send)
        except MCPError:
            return False
        return True

    def _close_session(self) -> None:
        if self._session_cm is not None:
            # A broken session is being dropped anyway.
            with contextlib.suppress(Exception):
                self._session_cm.__exit__(None, None, None)
        self._session_cm = None
        self._session = None

    async def _message(self, message: Any) -> None:
        import mcp_types as types

        if isinstance(message, types.LoggingMessageNotification):
            payload = message.params.model_dump(by_alias=True, mode="json", exclude_none=True)
            with self._lock:
                self.log_messages.append(payload)
                for call, _operator, _ in self._in_flight:
                    call.messages.append(("log", payload))

    async def _elicit(self, context: Any, params: Any) -> Any:
        import anyio.to_thread
        import mcp_types as types

        payload = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        with self._lock:
            waiting = [item for item in self._in_flight if not item[2].asked]
            for call, _operator, _ in self._in_flight:
                call.messages.append(("elicitation", payload))
        if len(waiting) > 1:
            waiting = await anyio.to_thread.run_sync(self._asking, waiting)
        with self._lock:
            # Calls side by side share the session: the elicitation is the prompt of a call
            # whose operator has not been asked yet; when every call in flight has been asked
            # (a host asking one call twice), the oldest.
            flight = waiting[0] if waiting else next(iter(self._in_flight), None)
            if flight is not None:
                flight[2].asked = True
        if flight is None:
            return types.ElicitResult(action="decline")
        call, operator, unanswered = flight
        if call.reply is not None:
            return types.ElicitResult.model_validate(dict(call.reply))
        answer = await anyio.to_thread.run_sync(self._operator_answer, call.tool, operator)
        if answer is Answer.NONE:
            await anyio.to_thread.run_sync(self._wait_for_twins, call, unanswered)
            return types.ElicitResult(action="cancel")
        content = elicit_content(payload.get("requestedSchema", {}), answer)
        if content is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    def _wait_for_twins(self, call: McpCall, unanswered: _Unanswered) -> None:
        """Hold an unanswered elicitation until its call has ended, and every call in flight
        that sent the same tool and arguments too, each within the call limit.

        An elicitation names no call: among calls that sent the same tool and arguments it was
        given to the oldest not yet asked, which need not be the one the host asks about. A
        cancel sent when that call ended could reach a twin's prompt still open, and the host
        would end the twin DENIED (decisions R9.6), where no answer was the operator's script
        (a CI run met it when the twins' prompts opened a few milliseconds apart).
        """
        deadline = time.monotonic() + self._call_limit()
        with self._lock:
            twins = [
                twin
                for other, _operator, twin in self._in_flight
                if other.tool == call.tool and other.arguments == call.arguments
            ]
        for waited in (unanswered, *twins):
            waited.done.wait(max(0.0, deadline - time.monotonic()))

    def _asking(
        self, waiting: list[tuple[McpCall, OperatorScript | None, _Unanswered]]
    ) -> list[tuple[McpCall, OperatorScript | None, _Unanswered]]:
        """Narrow the calls not yet asked to those of the tool the newest approval request
        names, when the host shows its requests; oldest first, as they were."""
        if "observe.requests" not in self.driver.info().capabilities:
            return waiting
        requests = list(self.driver.observe().approval_requests)
        with self._lock:
            fresh = requests[self._prompted :]
        tool = fresh[-1].get("tool") if fresh else None
        named = [item for item in waiting if item[0].tool == tool]
        return named or waiting

    def _operator_answer(self, tool: str, operator: OperatorScript | None) -> Answer:
        if operator is None:
            return Answer.APPROVE
        requests = list(self.driver.observe().approval_requests)
        with self._lock:
            fresh = requests[self._prompted :]
            self._prompted = len(requests)
        request = next((item for item in reversed(fresh) if item.get("tool") == tool), None)
        if request is None:
            request = fresh[-1] if fresh else {"tool": tool}
        try:
            return operator(request, self.driver.control())
        except Exception:  # an operator that fails has not approved
            return Answer.DENY

    def _call_limit(self) -> float:
        config = self._config
        return config.approval_timeout_s + config.execution_timeout_s + CALL_MARGIN_S

    async def _call(self, call: McpCall, session: Any) -> None:
        from mcp.shared.exceptions import MCPError

        async def progress(value: float, total: float | None, message: str | None) -> None:
            payload: dict[str, Any] = {"progress": value}
            if total is not None:
                payload["total"] = total
            if message is not None:
                payload["message"] = message
            with self._lock:
                call.messages.append(("progress", payload))

        import anyio

        limit = self._call_limit()
        try:
            # The suite's own deadline, so that a call the host never answers is told apart
            # from a JSON-RPC error the host sent: the SDK's read timeout raises one as well.
            with anyio.fail_after(limit):
                result = await session.call_tool(
                    call.tool,
                    dict(call.arguments),
                    progress_callback=progress,
                    meta=dict(call.meta) if call.meta is not None else None,
                )
        except TimeoutError:
            call.hung = f"the host did not answer tools/call within {limit:g} s"
            return
        except MCPError as error:
            data = error.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            with self._lock:
                call.messages.append(("error", data))
            if session is self._session and session_lost(error.error.code, error.error.message):
                await self._ping(session, error.error.code)
            return
        payload = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        with self._lock:
            call.messages.append(("result", payload))

    async def _ping(self, session: Any, code: int) -> None:
        """Note the session as lost when it does not answer a ping either."""
        import anyio

        try:
            with anyio.fail_after(PING_S):
                await session.send_ping()
        except Exception:  # any failure of the ping: the session is gone
            self._lost = f"MCP error {code}, and no answer to a ping"

    # --- HostUnderTest -------------------------------------------------------------------------

    def info(self) -> HostInfo:
        """Return the adapter's description, as its handshake gave it.

        Nothing is added to it: the path under test is the suite's to know (conformance.via,
        decisions S1.8), never part of what the host says about itself.
        """
        return self.driver.info()

    def reset(self, config: HostConfig) -> None:
        """Configure through the driver, and forget the calls of the last configuration."""
        self.driver.reset(config)
        self._config = config
        window = self.tap.open_window()
        policy = config.policy or {}
        if policy.get("resultScrubbingEnabled", True) is False:
            self._late.may_hold[window] = frozenset(
                str(getattr(secret, name))
                for secret in config.secrets
                for name in ("password", "username", "notes")
            )
        with self._lock:
            self._calls.clear()
            self.log_messages.clear()
            self.listings.clear()
            self._prompted = len(self.driver.observe().approval_requests)

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        """Run one call through the MCP client and wait for it.

        Raises:
            pytest.skip.Exception: The argument text cannot travel in ``params.arguments``.
        """
        arguments = parse_arguments(args)
        if arguments is None:
            pytest.skip(NOT_CARRIED)
        call, ledger_before = self.call(McpCall(tool, arguments), operator)
        return self._result_of(call, ledger_before)

    def call(
        self, call: McpCall, operator: OperatorScript | None = None, *, elicit: bool = True
    ) -> tuple[McpCall, int]:
        """Send one prepared call (``_meta``, a fixed elicitation reply) and keep its messages.

        Args:
            call: The call; ``call.reply``, when set, answers any elicitation as it is.
            operator: Answers any elicitation when ``call.reply`` is not set.
            elicit: ``False`` sends the call from a fresh session that declares no elicitation.

        Returns:
            The call with its messages, and the ledger's line count before it (or -1).

        Raises:
            HostError: The session ended during the call (the connection closed, the server
                terminated it): the check ends errored, never failed, and the next call opens
                a new session, so no later check inherits the broken one. The endpoint gave
                no session, or (``HostHungError``) the host did not answer the call within the
                call limit: the adapter is started again for the next check.
        """
        session = self._live_session()
        ledger_before = self._ledger_count()
        unanswered = _Unanswered()
        with self._lock:
            self._calls.append(call)
            self._in_flight.append((call, operator, unanswered))
        try:
            if elicit:
                self._portal.call(self._call, call, session)
            else:
                try:
                    self._portal.call(self._call_without_elicitation, call)
                except HostError:
                    raise
                except Exception as error:  # the fresh session failed: nothing was learned
                    raise self._unreachable(error) from None
        finally:
            unanswered.done.set()
            with self._lock:
                self._in_flight = [item for item in self._in_flight if item[0] is not call]
        if call.hung is not None:
            # A hang, as on the driver path: never an answer to judge (decisions S1.10).
            # The session is closed while the adapter still serves it, then the adapter ended.
            self._close_session()
            failure = HostHungError(call.hung)
            self.driver.fail(failure)
            raise failure
        lost, self._lost = self._lost, None
        if lost is not None:
            self._close_session()
            raise HostError(
                f"the MCP session ended during the call ({lost}): the call learned nothing; "
                "the next call opens a new session"
            )
        return call, ledger_before

    async def _call_without_elicitation(self, call: McpCall) -> None:
        import mcp_types as types
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async def unsolicited(context: Any, params: Any) -> Any:
            # Reached only if the server elicits from a client that did not declare it.
            payload = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            with self._lock:
                call.messages.append(("elicitation", {**payload, "unsolicited": True}))
            return types.ElicitResult(action="decline")

        async with streamable_http_client(self._url) as (read, write):
            number = self.tap.new_session()
            async with ClientSession(
                TappedReceive(read, self.tap, number),
                TappedSend(write, self.tap, number),
                message_handler=self._message,
            ) as session:
                await self._initialize(session)
                # Set after the handshake: the capability is not declared, a request is seen.
                session._elicitation_callback = unsolicited
                await self._call(call, session)

    def result_of(self, call: McpCall, ledger_before: int) -> CallResult:
        """Return what the agent read from ``call``, as the other paths report it."""
        return self._result_of(call, ledger_before)

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> _McpPending:
        """Start one call on a thread of its own and return at once."""
        return _McpPending(self, tool, args, operator)

    def observe(self) -> Observation:
        """Return the adapter's observation."""
        return self.driver.observe()

    def control(self) -> Any:
        """Return the operator's control surface, through the driver."""
        return self.driver.control()

    def list_tools(self) -> dict[str, Any]:
        """Send ``tools/list`` and return (and keep) the result as sent."""
        session = self._live_session()

        async def listing() -> dict[str, Any]:
            import anyio

            try:
                with anyio.fail_after(self.driver.call_timeout):
                    result = await session.list_tools()
            except TimeoutError:
                failure = HostHungError(
                    f"the host did not answer tools/list within {self.driver.call_timeout:g} s"
                )
                self.driver.fail(failure)
                raise failure from None
            dumped: dict[str, Any] = result.model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            return dumped

        payload: dict[str, Any] = self._portal.call(listing)
        with self._lock:
            self.listings.append(payload)
        return payload

    def mcp_sweep(self, detector: Any, sweep: Any, scrubbing: bool) -> None:
        """Search every MCP message since the last sweep and add what it finds to ``sweep``;
        what it searched is kept for :meth:`take_searched`.

        Every string and member name of every message the check's window holds, both
        directions, is searched for the check's values (:func:`conformance.mcp_sweep.
        sweep_session`); the messages that came before the window opened, and the window's
        messages for the run's other canaries, are searched now and kept for the end-of-run
        barrier (decisions S1.9). A message not kept whole leaves the requirements the session
        judges unchecked (decisions S1.3).

        Args:
            detector: A :class:`conformance.canary.Detector` for the configuration's values.
            sweep: The check's :class:`conformance.canary.Sweep`, extended in place.
            scrubbing: Whether result scrubbing was on.

        Raises:
            RuntimeError: The suite's own client sent a value: a defect of the suite, never
                the host's failure.
        """
        from conformance.outcomes import unchecked

        drained = self.tap.drain()
        index = self._late.index
        index.learn(drained.messages)
        current = [message for message in drained.messages if message.window == drained.window]
        earlier = [message for message in drained.messages if message.window != drained.window]
        found = sweep_session(detector, current, index, scrubbing=scrubbing)
        merge(sweep, found)
        self._surfaces.update(dict.fromkeys(found.searched))
        self._swept += len(drained.messages)
        for note in drained.unsearched(current=True):
            unchecked(SESSION_JUDGES, note)
            self._unsearched[f"not searched: {note}"] = None
        self._late.search(earlier)
        self._late.search(current, exclude=frozenset(item.value for item in detector.guarded))
        self._late.unsearched(drained.unsearched(current=False))
        if found.client:
            shown = "; ".join(finding.describe() for finding in found.client[:3])
            raise RuntimeError(f"the suite's MCP client sent a value (a suite defect): {shown}")

    def take_searched(self) -> tuple[str, ...]:
        """Return the MCP surfaces the sweeps since the last call searched, how many messages
        they read and what they could not search, and start afresh: a check's configuration
        may be swept a step at a time (the model check) and is reported as one."""
        searched = (
            *self._surfaces,
            f"every MCP message, both directions ({self._swept})",
            *self._unsearched,
        )
        self._surfaces, self._swept, self._unsearched = {}, 0, {}
        return searched

    def late_findings(self, canaries: Sequence[Any]) -> LateReport:
        """Search what the session sent after each check's sweep for every form of
        ``canaries``, with what earlier sweeps set aside, and the driver's late output.

        Args:
            canaries: Every canary of the run (:func:`conformance.canary.issued_canaries`).

        Returns:
            The findings, the streams searched and those not searched whole (decisions S1.9).
        """
        # The session ends first, after the grace for late messages, so that the tap holds
        # everything the server sent and the driver then shuts down with no client attached.
        self._end_session()
        report = self._late.report(self.tap.drain(), canaries)
        driver_late = getattr(self.driver, "late_findings", None)
        if callable(driver_late):
            more = driver_late(canaries)
            if isinstance(more, LateReport):
                report.extend(more)
        return report

    def calls(self) -> tuple[McpCall, ...]:
        """Return every call since the last reset, with what the server sent for each."""
        with self._lock:
            return tuple(self._calls)

    def _end_session(self) -> None:
        """Close an open MCP session after :data:`LATE_GRACE_S` for late messages."""
        if self._session is not None:
            time.sleep(LATE_GRACE_S)
        self._close_session()

    def close(self) -> None:
        """Close the MCP session, after :data:`LATE_GRACE_S` for late messages, then the adapter."""
        self._end_session()
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = None
            self._portal = None
        self.driver.close()

    # --- reading a call back -------------------------------------------------------------------

    def _ledger_count(self) -> int:
        # Counted even when the adapter names a dispositionMeta key: a refusal sent as a
        # JSON-RPC error carries no ``_meta``, and its disposition is then read from the records
        # written since the call began (decisions R9.5, R9.8). A record of an earlier call of
        # the same tool is never read as this one's: a withheld call may leave none (R6.3).
        if "observe.ledger" not in self.driver.info().capabilities:
            return -1
        return len(self.driver.observe().ledger_bytes.splitlines())

    def _result_of(self, call: McpCall, ledger_before: int) -> CallResult:
        endpoint = self.driver.mcp_endpoint or {}
        final = next(
            (payload for kind, payload in reversed(call.messages) if kind in ("result", "error")),
            None,
        )
        if final is None:
            return CallResult("UNKNOWN", "", True)
        read = read_final(final, endpoint.get("dispositionMeta"))
        if read.disposition:
            return read
        return CallResult(self._ledger_disposition(ledger_before, call), read.text, read.is_error)

    def _ledger_disposition(self, before: int, call: McpCall) -> str:
        """Return the disposition the ledger records for ``call``, or an unlearned one.

        Only a record of the call's own tool counts, and one whose ``sanitizedArgs`` equal the
        arguments sent is preferred: a record written meanwhile for another call (a prompt
        answered while this call ran) must never be read as this call's (decisions R9.8).
        """
        lines = self.driver.observe().ledger_bytes.splitlines()
        same_tool: str | None = None
        for line in reversed(lines[max(before, 0) :]):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or "approvalDisposition" not in record:
                continue
            if record.get("toolName") != call.tool:
                continue
            if _same_arguments(record.get("sanitizedArgs"), call.arguments):
                return str(record["approvalDisposition"])
            if same_tool is None:
                same_tool = str(record["approvalDisposition"])
        if same_tool is not None:
            return same_tool
        # Nothing named it: what rests on it is unchecked, never failed (decisions S1.12).
        return UnlearnedDisposition()


def _same_arguments(recorded: object, sent: Mapping[str, Any]) -> bool:
    """Whether a ledger record's ``sanitizedArgs`` (text or a decoded value) equal ``sent``."""
    if isinstance(recorded, str):
        try:
            recorded = json.loads(recorded)
        except ValueError:
            return False
    return recorded == sent


class _McpPending:
    """A call over MCP running on its own thread."""

    def __init__(
        self, host: McpHost, tool: str, args: str, operator: OperatorScript | None
    ) -> None:
        self._outcome: CallResult | BaseException | None = None
        self._done = threading.Event()

        def run() -> None:
            try:
                self._outcome = host.invoke(tool, args, operator)
            except BaseException as error:  # handed to the waiting check
                self._outcome = error
            finally:
                self._done.set()

        start_call_thread(run, "mcp-call")

    def result(self, timeout: float) -> CallResult:
        """Wait for the call's result.

        Raises:
            TimeoutError: The call did not end within ``timeout`` seconds.
        """
        if not self._done.wait(timeout):
            raise TimeoutError("the call over MCP did not end in time")
        outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome
