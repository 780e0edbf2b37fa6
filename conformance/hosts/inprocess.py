"""The default host under test: the reference host, in this process.

This module owns adapting :class:`reference_impl.harness.HarnessHost` to
:class:`conformance.host.HostUnderTest`. It speaks the same JSON-ready shapes as the subprocess
driver (through :mod:`conformance.hosts.wire`), so a check sees no difference between the two
paths but speed. A mutant host is this adapter with a broken registry factory.

In process, the host's process is the suite's: a host record written to any logger but the
registry's own (a module's logger, the root logger) would reach no surface the suite searches,
where behind the driver it reaches standard error. So the adapter also keeps every record that
reaches the root logger while a configuration is live, the suite's own loggers excepted, and
reports it in the host log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from conformance.host import (
    Answer,
    CallResult,
    HostConfig,
    HostInfo,
    Observation,
    OperatorScript,
)
from conformance.hosts.wire import (
    WireControl,
    config_to_wire,
    info_from_wire,
    observation_from_wire,
    result_from_wire,
)
from conformance.outcomes import start_call_thread
from reference_impl._registry import Registry
from reference_impl.harness import HarnessHost, RecordCapture, RegistryFactory


class _Pending:
    """A call running on its own thread."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._result: CallResult | None = None
        self._error: BaseException | None = None

    def _finish(self, result: CallResult | None, error: BaseException | None) -> None:
        self._result, self._error = result, error
        self._done.set()

    def result(self, timeout: float) -> CallResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"the call did not finish within {timeout:g} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


#: The loggers whose records are the suite's own, never the host's.
_SUITE_LOGGERS = ("conformance",)


class _ProcessLog(RecordCapture):
    """Keeps every record that reaches the root logger as the harness keeps the registry's own;
    the suite's own records are left out."""

    def emit(self, record: logging.LogRecord) -> None:
        name = record.name
        if not any(name == own or name.startswith(own + ".") for own in _SUITE_LOGGERS):
            super().emit(record)


class InProcessHost:
    """The reference host in this process.

    Args:
        registry_factory: Builds the registry; a mutant passes a broken one.
    """

    def __init__(self, registry_factory: RegistryFactory = Registry) -> None:
        self._harness = HarnessHost(registry_factory)
        self._control = WireControl(self._harness.control)
        self._process_log = _ProcessLog()
        logging.getLogger().addHandler(self._process_log)

    def info(self) -> HostInfo:
        """Return the reference host's description."""
        return info_from_wire(self._harness.info())

    def reset(self, config: HostConfig) -> None:
        """Configure a fresh reference registry."""
        self._process_log.clear()
        self._harness.configure(config_to_wire(config))

    def _callback(self, operator: OperatorScript | None) -> Any:
        if operator is None:
            return None

        def on_prompt(request: dict[str, Any]) -> str:
            answer: Answer = operator(request, self._control)
            return answer.value

        return on_prompt

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        """Run one call and wait for it."""
        return result_from_wire(self._harness.invoke(tool, args, self._callback(operator)))

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> _Pending:
        """Start one call on its own thread."""
        pending = _Pending()
        callback = self._callback(operator)

        def run() -> None:
            try:
                data: Mapping[str, Any] = self._harness.invoke(tool, args, callback)
                pending._finish(result_from_wire(data), None)
            except BaseException as error:  # handed to the waiting check
                pending._finish(None, error)

        start_call_thread(run, "secref-call")
        return pending

    def observe(self) -> Observation:
        """Return every surface; the host log holds the process's other records too."""
        data = dict(self._harness.observe())
        data["log"] = [*data.get("log", ()), *self._process_log.take()]
        return observation_from_wire(data)

    def control(self) -> WireControl:
        """Return the operator's control surface outside any prompt."""
        return self._control

    def close(self) -> None:
        """Release the harness and stop keeping the process's records."""
        logging.getLogger().removeHandler(self._process_log)
        self._harness.close()
