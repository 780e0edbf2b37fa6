"""Step [11], execution: run a handler with a timeout and turn any failure into text.

This module owns calling the tool's handler on a worker thread, waiting at most the execution
timeout, and building failure text for an exception or a timeout. Workers are daemon threads
kept for reuse, so a handler that never returns cannot keep the host from exiting. Failure text
may quote the handler's own exception, which may hold a value: the registry scrubs it before
anything else sees it. This module must never log that text.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from reference_impl._arguments import ToolArguments
from reference_impl._types import Risk, ToolResult

Handler = Callable[[ToolArguments], "ToolResult | str"]


@dataclass(frozen=True, slots=True)
class Tool:
    """A governed tool.

    Attributes:
        name: The tool's name, as the agent calls it.
        provider_id: The plugin or provider that serves it.
        handler: Called with the arguments; returns a result or text, or raises.
        risk: The risk an approval request shows; secret-bearing calls raise it to HIGH.
        permission: The permission RBAC requires of a non-admin user, or ``None``.
    """

    name: str
    provider_id: str
    handler: Handler
    risk: Risk = Risk.MEDIUM
    permission: str | None = None


class _Job:
    """One handler call; ``done`` is held until the worker has set ``outcome``.

    A bare lock, released once by the worker, is the cheapest signal the standard library has:
    an ``Event`` builds a condition and a second lock for every wait.
    """

    __slots__ = ("arguments", "done", "handler", "outcome")

    def __init__(self, handler: Handler, arguments: ToolArguments) -> None:
        self.handler = handler
        self.arguments = arguments
        self.done = threading.Lock()
        self.done.acquire()
        self.outcome: ToolResult | BaseException | None = None


class Executor:
    """Runs handlers on reusable daemon threads, one job per idle thread."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job.outcome = _result_of(job.handler(job.arguments))
            except BaseException as error:  # a handler's failure is its result
                job.outcome = error
            finally:
                job.done.release()
            with self._lock:
                self._idle += 1

    def run(self, tool: Tool, arguments: ToolArguments, timeout: float) -> ToolResult:
        """Run ``tool``'s handler and return its result or failure text.

        Args:
            tool: The tool to run.
            arguments: What the handler receives.
            timeout: Seconds to wait for it.

        Returns:
            The handler's result; or, with ``is_error`` set, text saying it raised or timed out.
        """
        job = _Job(tool.handler, arguments)
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="tool-worker", daemon=True).start()
        self._jobs.put(job)
        # As Event.wait does: a timeout of zero or less only looks.
        finished = job.done.acquire(True, timeout) if timeout > 0 else job.done.acquire(False)
        if not finished:
            return ToolResult(f"Tool {tool.name} timed out after {timeout:g} s", is_error=True)
        outcome = job.outcome
        if isinstance(outcome, ToolResult):
            return outcome
        return ToolResult(f"Tool {tool.name} failed: {_describe(outcome)}", is_error=True)


#: The failure text of a handler that returned a result whose text is not a string, or whose
#: failure flag is not a boolean: the object itself is never formatted.
MALFORMED_RESULT: Final = "returned a result that is not text"


class _MalformedResultError(Exception):
    """A handler returned a :class:`ToolResult` that does not hold text and a boolean."""

    def __str__(self) -> str:
        return MALFORMED_RESULT


def _plain(text: str) -> str:
    """Return ``text`` as an exact ``str``: a subclass's own methods never run again."""
    # ``join`` copies the characters of a str subclass without calling any of its methods.
    return "".join((text,))


def _result_of(returned: object) -> ToolResult:
    """Turn what a handler returned into a result of exact types, on the worker's thread.

    Anything a handler's object does when it is read (a property that raises, a ``__str__``
    that raises or returns a subclass) happens here, where the worker catches it as the
    handler's failure; the caller's thread only ever sees a plain result or an exception.

    Raises:
        _MalformedResultError: A result whose text is not a string, or whose flag is not a bool.
    """
    if isinstance(returned, ToolResult):
        text, is_error = returned.text, returned.is_error
        if not isinstance(text, str) or not isinstance(is_error, bool):
            raise _MalformedResultError
        # The rich surfaces (docs/mcp.md) travel on; the registry scrubs them as a tree.
        return ToolResult(_plain(text), is_error is True, returned.rich)
    text = str(returned)
    return ToolResult(_plain(text))


def _describe(error: BaseException | None) -> str:
    """Return an exception's text, or its type's name when formatting it fails too.

    A handler's exception may be built to fail when formatted, even with a ``BaseException``
    such as ``KeyboardInterrupt`` that carries a value: nothing raised here may escape, since
    the caller is the registry, which never raises.
    """
    try:
        return _plain(str(error))
    except BaseException:  # a hostile __str__ may raise anything at all
        try:
            return _plain(type(error).__name__)
        except BaseException:  # a metaclass may make even the name hostile
            return "an exception that cannot be described"
