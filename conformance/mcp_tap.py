"""The MCP session's raw streams, tapped: every JSON-RPC message, both directions, in order.

This module owns recording what passes between the suite's MCP client and the server
(decisions R9.3 v1.2, S1.3, S1.9). :class:`SessionTap` wraps the read and write streams the
SDK's transport yields; each :class:`~mcp.shared.message.SessionMessage` that passes is kept as
a JSON value, with its direction, its place in the session and the window (one configuration
of one check) it arrived in. What is kept is bounded: a message larger than
:data:`MAX_MESSAGE_CHARS`, one that would take the pending log past :data:`MAX_PENDING_MESSAGES`
or :data:`MAX_PENDING_CHARS`, and one the client could not read (the transport handed an error
instead of a message) is not kept; it is counted, with why, as a message not searched. The
sweep drains the log after each window, so the bounds hold per window, not per run. It never
prints what it records.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, Self

#: The most characters of one message's JSON text the tap keeps; a larger message is counted
#: as not searched.
MAX_MESSAGE_CHARS: Final = 8 * 1024 * 1024

#: The most messages kept between two drains (one window of one check, or late output).
MAX_PENDING_MESSAGES: Final = 20_000

#: The most characters of JSON text kept between two drains.
MAX_PENDING_CHARS: Final = 64 * 1024 * 1024

#: The direction of a message the server sent, and of one the suite's client sent.
FROM_SERVER: Final = "server"
FROM_CLIENT: Final = "client"


@dataclass(frozen=True, slots=True)
class Tapped:
    """One message kept whole.

    Attributes:
        number: Its place in the log, from 1, over both directions and every session.
        session: Which MCP session (from 1) it passed on: request ids are per session.
        direction: :data:`FROM_SERVER` or :data:`FROM_CLIENT`.
        window: The window it arrived in (:meth:`SessionTap.open_window`).
        value: The JSON-RPC message as a JSON value.
    """

    number: int
    session: int
    direction: str
    window: int
    value: dict[str, Any] = field(repr=False)


@dataclass(slots=True)
class Drained:
    """What one drain took from the tap.

    Attributes:
        messages: The messages kept whole since the last drain, in order.
        dropped: (window, why) -> how many messages of that window were not kept.
        window: The window open at the drain.
    """

    messages: list[Tapped] = field(default_factory=list)
    dropped: Counter[tuple[int, str]] = field(default_factory=Counter)
    window: int = 0

    def unsearched(self, *, current: bool | None = None) -> list[str]:
        """Return one printable note per reason a message was not kept.

        Args:
            current: ``True`` for the open window's messages only, ``False`` for the others'
                only, ``None`` for all.
        """
        notes = []
        for (window, why), count in sorted(self.dropped.items()):
            if current is None or (window == self.window) is current:
                notes.append(f"{count} MCP message(s) not searched: {why}")
        return notes


def dump(message: Any) -> dict[str, Any]:
    """Return an SDK JSON-RPC message (or a :class:`SessionMessage`) as a JSON value."""
    inner = getattr(message, "message", message)
    dumped: dict[str, Any] = inner.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


class SessionTap:
    """The log of one or more MCP sessions' messages, bounded, drained window by window."""

    def __init__(
        self,
        *,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        max_pending_messages: int = MAX_PENDING_MESSAGES,
        max_pending_chars: int = MAX_PENDING_CHARS,
    ) -> None:
        self._lock = threading.Lock()
        self._max_message = max_message_chars
        self._max_messages = max_pending_messages
        self._max_chars = max_pending_chars
        self._pending: list[Tapped] = []
        self._chars = 0
        self._dropped: Counter[tuple[int, str]] = Counter()
        self._number = 0
        self._window = 0
        self._session = 0

    @property
    def window(self) -> int:
        """The open window."""
        with self._lock:
            return self._window

    def open_window(self) -> int:
        """Start a new window (a new configuration of a check) and return it."""
        with self._lock:
            self._window += 1
            return self._window

    def new_session(self) -> int:
        """Return the number of a session about to be tapped."""
        with self._lock:
            self._session += 1
            return self._session

    def record(self, direction: str, item: Any, session: int = 0) -> None:
        """Keep one message that passed, or count it as not kept.

        Args:
            session: The session's number (:meth:`new_session`).
            direction: :data:`FROM_SERVER` or :data:`FROM_CLIENT`.
            item: A :class:`SessionMessage`, or the error the transport handed in its place.
        """
        value: dict[str, Any] | None = None
        why, size = "", 0
        if isinstance(item, BaseException):
            why = "the client could not read it (the transport reported an error)"
        else:
            try:
                value = dump(item)
                size = len(json.dumps(value, ensure_ascii=False))
            except Exception:  # a message the suite cannot serialize is not searched
                value, why = None, "it could not be read as JSON"
            else:
                if size > self._max_message:
                    value, why = None, f"larger than {self._max_message} characters"
        with self._lock:
            self._number += 1
            if value is not None and (
                len(self._pending) >= self._max_messages or self._chars + size > self._max_chars
            ):
                value = None
                why = (
                    f"past the session log's bound ({self._max_messages} messages or "
                    f"{self._max_chars} characters between two sweeps)"
                )
            if value is None:
                self._dropped[(self._window, why)] += 1
                return
            self._pending.append(Tapped(self._number, session, direction, self._window, value))
            self._chars += size

    def drain(self) -> Drained:
        """Take every message recorded since the last drain, and the count of those not kept."""
        with self._lock:
            drained = Drained(self._pending, self._dropped, self._window)
            self._pending, self._dropped, self._chars = [], Counter(), 0
            return drained

    def pending(self) -> Drained:
        """Return what :meth:`drain` would take, leaving it in place."""
        with self._lock:
            return Drained(list(self._pending), Counter(self._dropped), self._window)


class _TappedStream:
    """What both tapped streams share: the stream they wrap, and everything else handed on."""

    def __init__(self, inner: Any, tap: SessionTap, session: int) -> None:
        self._inner = inner
        self._tap = tap
        self._session = session

    def __getattr__(self, name: str) -> Any:
        # last_context and anything else the SDK reads off the transport's stream.
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


class TappedReceive(_TappedStream):
    """A read stream that records every item it hands on (:class:`SessionTap`)."""

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tap.record(FROM_SERVER, item, self._session)
        return item

    def __aiter__(self) -> TappedReceive:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._tap.record(FROM_SERVER, item, self._session)
        return item


class TappedSend(_TappedStream):
    """A write stream that records every message before sending it on (:class:`SessionTap`)."""

    async def send(self, item: Any, /) -> None:
        self._tap.record(FROM_CLIENT, item, self._session)
        await self._inner.send(item)
