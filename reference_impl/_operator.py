"""The operator port: the human who answers approval requests.

This module owns how an approval request reaches an operator and how the answer comes back.
The scripted operator answers at once, for tests; the queue operator holds each request open
until another thread answers it or its timeout passes, which is how concurrent tests and the
driver protocol play the operator. An operator that has no way to reach a human (an MCP client
that cannot elicit, with no terminal to fall back on) raises :class:`NoOperatorError` instead of
answering, so the call is refused and its record says that nobody was asked. An operator must
never see a value: it is handed the request, which carries references and descriptors only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from reference_impl._types import Answer, ApprovalRequest


class NoOperatorError(Exception):
    """No operator can be asked about a call, so nobody was shown the request.

    The registry refuses the call as ``DENIED`` with a message that says so, and records that no
    operator was asked (decisions R9.6 allows a deny). The message is static text: it names the
    missing channel, never the request.
    """


class Operator(Protocol):
    """Answers approval requests."""

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """Show ``request`` and return the answer, or ``Answer.TIMEOUT`` after ``timeout`` s.

        Raises:
            NoOperatorError: No operator can be reached; nobody saw the request.
        """
        ...


class ScriptedOperator:
    """Answers every request at once, and keeps each request it was shown.

    Args:
        answer: A fixed answer, or a function of the request. The function may act on the host
            while the prompt is open (revoke a rule, drop a permission) before it answers.
    """

    def __init__(self, answer: Answer | Callable[[ApprovalRequest], Answer] = Answer.APPROVE):
        self._answer = answer
        self._lock = threading.Lock()
        self.requests: list[ApprovalRequest] = []

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """Record the request and answer it."""
        with self._lock:
            self.requests.append(request)
        if isinstance(self._answer, Answer):
            return self._answer
        return self._answer(request)


class _Slot:
    __slots__ = ("answer", "answered", "request")

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.answered = threading.Event()
        self.answer = Answer.TIMEOUT


class QueueOperator:
    """Holds each request open until :meth:`answer` is called or the timeout passes."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._open: dict[str, _Slot] = {}
        self.requests: list[ApprovalRequest] = []

    def ask(self, request: ApprovalRequest, timeout: float) -> Answer:
        """Open the request, wait for its answer, and close it."""
        slot = _Slot(request)
        with self._lock:
            self._open[request.id] = slot
            self.requests.append(request)
            self._lock.notify_all()
        slot.answered.wait(timeout)
        with self._lock:
            del self._open[request.id]
        return slot.answer

    def pending(self) -> list[ApprovalRequest]:
        """Return the requests open now, oldest first."""
        with self._lock:
            return [slot.request for slot in self._open.values()]

    def wait_for_request(self, timeout: float) -> ApprovalRequest | None:
        """Wait until a request is open and return the oldest, or ``None`` after ``timeout``."""
        with self._lock:
            if not self._lock.wait_for(lambda: bool(self._open), timeout):
                return None
            return next(iter(self._open.values())).request

    def answer(self, request_id: str, answer: Answer) -> bool:
        """Answer an open request; return whether it was still open."""
        with self._lock:
            slot = self._open.get(request_id)
            if slot is None or slot.answered.is_set():
                return False
            slot.answer = answer
            slot.answered.set()
            return True
