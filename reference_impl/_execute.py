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
                returned = job.handler(job.arguments)
                job.outcome = (
                    returned if isinstance(returned, ToolResult) else ToolResult(str(returned))
                )
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


def _describe(error: BaseException | None) -> str:
    """Return an exception's text, or its type's name when formatting it fails too."""
    try:
        return str(error)
    except Exception:  # a handler's exception whose own __str__ raises must not escape
        return type(error).__name__
