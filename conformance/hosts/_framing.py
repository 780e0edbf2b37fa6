"""Line framing for driver protocol v1: bounded newline-delimited reading from an adapter.

This module owns turning the bytes an adapter writes into lines, and deciding when reading
stops. Every buffer has a bound: a line, and the text buffered while no newline has come, may
hold at most ``max_line`` bytes (16 MiB unless ``--host-max-line`` says otherwise); going over
raises :class:`LineTooLongError`, which names the bound. Reading stops at the adapter's exit,
not at the pipe's close, so a descendant that inherited the pipe cannot hold the run, and every
wait here has a timeout. It also owns the cheap, non-recursive depth check that keeps a line of
deeply nested brackets away from the JSON decoder. It never decodes or interprets a line.
"""

from __future__ import annotations

import os
import re
import select
import time
from collections.abc import Callable
from enum import Enum
from itertools import accumulate
from typing import Final

#: Bytes a line may hold, newline excluded, unless ``--host-max-line`` says otherwise. The
#: largest protocol message is an ``observe`` result, whose ledger and request lists stay far
#: below this for any check of the suite; 16 MiB leaves room for a verbose host while keeping
#: a flooding one from growing the suite without bound.
DEFAULT_MAX_LINE: Final = 16 * 1024 * 1024

#: Bytes asked of the pipe per read.
READ_CHUNK: Final = 65536

#: Seconds each wait for output lasts before the reader looks at the adapter again.
POLL_SECONDS: Final = 0.05

#: Seconds the reader keeps draining output already written once the adapter has exited; a
#: descendant still writing into the inherited pipe cannot keep it longer.
DRAIN_SECONDS: Final = 0.5

#: Deepest nesting of arrays and objects a protocol line may hold. The protocol's deepest
#: message (an ``observe`` result) nests about six levels; CPython's JSON decoder recurses once
#: per level and fails near the interpreter's recursion limit (1000), so the bound stays well
#: below that.
MAX_JSON_DEPTH: Final = 64

_STRING: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET: Final = re.compile(rb"[^\[\]{}]++")
_STEP: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class LineTooLongError(Exception):
    """The adapter wrote more than ``max_line`` bytes without a newline."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the host wrote more than {limit} bytes without a newline "
            "(the line limit, --host-max-line)"
        )
        self.limit = limit


class End(Enum):
    """Why reading stopped."""

    CLOSED = "closed its standard output"
    EXITED = "exited"
    STOPPED = "stopped by the suite"


class LineFramer:
    """Splits a byte stream into lines of at most ``max_line`` bytes each.

    Args:
        max_line: The bound on a line, and on text buffered without a newline.
    """

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("the line limit must be at least one byte")
        self.max_line = max_line
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add ``chunk``; return the complete lines it finishes, newlines stripped.

        Raises:
            LineTooLongError: A line, or the text buffered without a newline, went over the
                bound. The framer is then unusable.
        """
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if len(self._buffer) + end - start > self.max_line:
                raise LineTooLongError(self.max_line)
            self._buffer += chunk[start:end]
            lines.append(bytes(self._buffer))
            self._buffer.clear()
            start = end + 1
        if len(self._buffer) + len(chunk) - start > self.max_line:
            raise LineTooLongError(self.max_line)
        self._buffer += chunk[start:]
        return lines

    def rest(self) -> bytes:
        """Return, and forget, the text buffered after the last newline."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest


def json_depth(line: bytes) -> int:
    """Return how deeply arrays and objects nest in ``line``, read as JSON, without recursion.

    Strings are skipped, so brackets inside them do not count. Text that is not JSON gets some
    number; the decoder rejects it afterwards.
    """
    if line.count(b"[") + line.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", line))
    return max(accumulate(_STEP[byte] for byte in brackets), default=0)


def pump(
    fd: int,
    on_chunk: Callable[[bytes], None],
    *,
    exited: Callable[[], bool],
    stopped: Callable[[], bool],
) -> End:
    """Pass what is written to ``fd`` to ``on_chunk`` until the adapter exits or closes it.

    Args:
        fd: The read end of one of the adapter's pipes.
        on_chunk: Called with each chunk read, at most :data:`READ_CHUNK` bytes.
        exited: Whether the adapter has exited; once it has, what is already in the pipe is
            drained for at most :data:`DRAIN_SECONDS` and reading stops, whoever else holds
            the pipe open.
        stopped: Whether the suite no longer wants what is read.

    Returns:
        Why reading stopped.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    drain_until: float | None = None
    while True:
        if stopped():
            return End.STOPPED
        if drain_until is None and exited():
            drain_until = time.monotonic() + DRAIN_SECONDS
        elif drain_until is not None and time.monotonic() >= drain_until:
            return End.EXITED
        ready = poller.poll(0 if drain_until is not None else int(POLL_SECONDS * 1000))
        if not ready:
            if drain_until is not None:
                return End.EXITED
            continue
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            return End.CLOSED
        on_chunk(chunk)


def read_lines(
    fd: int,
    framer: LineFramer,
    on_line: Callable[[bytes], None],
    *,
    exited: Callable[[], bool],
    stopped: Callable[[], bool],
) -> End:
    """Read lines from ``fd`` until the adapter exits, closes it, or the suite stops reading.

    Args:
        fd: The read end of the adapter's standard output.
        framer: Splits and bounds the lines.
        on_line: Called with each complete line, then with any unterminated rest at the end.
        exited: As for :func:`pump`.
        stopped: As for :func:`pump`; also checked between the lines of one chunk.

    Returns:
        Why reading stopped.

    Raises:
        LineTooLongError: A line went over the framer's bound.
    """

    def take(chunk: bytes) -> None:
        for line in framer.feed(chunk):
            if stopped():
                return
            on_line(line)

    end = pump(fd, take, exited=exited, stopped=stopped)
    rest = framer.rest()
    if rest and end is not End.STOPPED and not stopped():
        on_line(rest)
    return end


def write_all(fd: int, data: bytes, timeout: float) -> bool:
    """Write ``data`` to the non-blocking ``fd``, waiting at most ``timeout`` seconds in all.

    Returns:
        Whether everything was written; ``False`` when the reader stopped reading in time.

    Raises:
        OSError: The pipe is broken (``BrokenPipeError``) or otherwise unusable.
    """
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not poller.poll(int(left * 1000) + 1):
            continue
        try:
            sent = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[sent:]
    return True
