"""Step [8], approval: the prompt, its timeout and the pending limit.

This module owns asking the operator about one call: at most a fixed number of prompts open at
once (one more is QUEUE_FULL), each for at most the approval timeout (decisions R3.5). It builds
nothing the operator sees; the registry hands it a finished request, which carries references
and descriptors, never a value.
"""

from __future__ import annotations

import threading

from reference_impl._operator import Operator
from reference_impl._types import Answer, ApprovalRequest


class ApprovalGate:
    """Counts open prompts and passes each request to the operator."""

    def __init__(self, operator: Operator, timeout: float, limit: int) -> None:
        self.operator = operator
        self.timeout = timeout
        self.limit = limit
        self._lock = threading.Lock()
        self._open = 0

    def ask(self, request: ApprovalRequest) -> Answer | None:
        """Prompt the operator.

        Args:
            request: What the operator is asked.

        Returns:
            The answer (``Answer.TIMEOUT`` when none came in time), or ``None`` when the pending
            limit was reached and no prompt was shown.
        """
        with self._lock:
            if self._open >= self.limit:
                return None
            self._open += 1
        try:
            return self.operator.ask(request, self.timeout)
        finally:
            with self._lock:
                self._open -= 1
