"""A host under test reached over driver protocol v1: an adapter the suite runs as a subprocess.

This module owns :class:`SubprocessHost`, the suite's view of an adapter as a
:class:`~conformance.host.HostUnderTest`: the handshake (the protocol version must be the
integer 1), configuring a fresh host per check, calls and their deadlines, playing the operator
when the host sends ``prompt``, the ``printed`` surface from standard error, every byte of which
is also spooled for the run's late-output barrier (:meth:`SubprocessHost.late_findings`,
decisions S1.9), and starting the adapter again after it failed. The work below it is split in
three: process supervision (:mod:`conformance.hosts._supervise`: own session and process group,
the whole tree killed), line framing (:mod:`conformance.hosts._framing`: bounded lines, reading
stops at the adapter's exit) and the protocol mapping (:mod:`conformance.hosts._connection`,
with the version, errors and schemas in :mod:`conformance.hosts._protocol`). A host that
crashes, hangs or writes garbage makes the running check end with a :class:`HostError` naming
the cause, and after :data:`MAX_CONSECUTIVE_FAILURES` such checks in a row it is abandoned:
every later check ends at once with a :class:`HostAbandonedError`, and it is never started
again. A version mismatch, a capability outside the protocol's published list, or an adapter
that cannot be started at all, is a :class:`HarnessError` for the whole run; an adapter that,
started again, describes another host ends the running check with a :class:`HostChangedError`,
is abandoned, and makes the run a harness error (decisions S1.8). It must never let a hang block
the run, never leave a process or a pipe behind, and never put a configured secret value into an
error message: text quoted from the host is redacted first.
"""

from __future__ import annotations

import json
import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from conformance.host import (
    Answer,
    CallResult,
    HostConfig,
    HostInfo,
    Observation,
    OperatorScript,
)
from conformance.hosts._connection import Connection, Waiter
from conformance.hosts._framing import DEFAULT_MAX_LINE, LineTooLongError
from conformance.hosts._protocol import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    LINE_EXCERPT_CHARS,
    MAX_CONSECUTIVE_FAILURES,
    MAX_CONSECUTIVE_HANGS,
    PRINTED_LIMIT_BYTES,
    PROTOCOL_VERSION,
    SHUTDOWN_GRACE_SECONDS,
    STDERR_TAIL_CHARS,
    SUITE,
    HarnessError,
    HostAbandonedError,
    HostChangedError,
    HostCrashedError,
    HostError,
    HostHungError,
    HostRefusedError,
    ProtocolSchemas,
    ProtocolViolationError,
    UnpublishedCapabilityError,
    is_protocol_version,
    published_capabilities,
    quote,
    split_command,
)
from conformance.hosts._spool import SPOOL_LIMIT_BYTES, Spool, search_spool
from conformance.hosts.wire import (
    WireControl,
    config_to_wire,
    info_from_wire,
    observation_from_wire,
    result_from_wire,
)

if TYPE_CHECKING:
    from conformance.canary import Canary
    from conformance.late import LateReport

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_MAX_LINE",
    "DEFAULT_START_TIMEOUT",
    "LINE_EXCERPT_CHARS",
    "MAX_CONSECUTIVE_FAILURES",
    "MAX_CONSECUTIVE_HANGS",
    "PRINTED_LIMIT_BYTES",
    "PROTOCOL_VERSION",
    "SHUTDOWN_GRACE_SECONDS",
    "STDERR_TAIL_CHARS",
    "HarnessError",
    "HostAbandonedError",
    "HostChangedError",
    "HostCrashedError",
    "HostError",
    "HostHungError",
    "HostRefusedError",
    "LineTooLongError",
    "ProtocolSchemas",
    "ProtocolViolationError",
    "SubprocessHost",
    "UnpublishedCapabilityError",
    "default_env",
    "main",
    "split_command",
]

#: Characters of one host text scanned for runs of the values told in earlier checks; a longer
#: text keeps its first and last halves of this (SubprocessHost._redact_told).
TOLD_SCAN_CHARS: Final = 64 * 1024

# --- the host under test ----------------------------------------------------------------------


def _control(host: SubprocessHost, connection: Connection) -> WireControl:
    """Return the operator's mid-prompt actions, sent as ``control`` requests."""
    return WireControl(
        lambda op, params: connection.request("control", {"op": op, **params}, host.call_timeout)
    )


class _Pending:
    """A call started without waiting for it."""

    def __init__(self, host: SubprocessHost, connection: Connection, waiter: Waiter) -> None:
        self._host = host
        self._connection = connection
        self._waiter = waiter

    def result(self, timeout: float) -> CallResult:
        return self._host._settle(self._connection, self._waiter, timeout)


class SubprocessHost:
    """A host reached through its adapter, started as a subprocess.

    Args:
        command: The adapter's command line, as one string (split like a shell would) or a list.
        call_timeout: Seconds each request may take; an ``invoke`` also gets the configured
            approval and execution timeouts.
        start_timeout: Seconds the handshake may take.
        validate: Check every message in both directions against the protocol's schemas.
        env: The adapter's environment; the suite's own by default.
        cwd: The adapter's working directory; the suite's own by default.
        want_mcp: Ask the adapter for its MCP endpoint in the handshake (capability ``mcp``).
        max_line: Bytes one line of the adapter's output may hold (``--host-max-line``).
        spool_limit: Bytes of standard error kept for the late-output barrier over the run.

    Raises:
        HarnessError: The adapter cannot be started, or speaks another protocol version.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        validate: bool = False,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        want_mcp: bool = False,
        max_line: int = DEFAULT_MAX_LINE,
        spool_limit: int = SPOOL_LIMIT_BYTES,
    ) -> None:
        self.argv = split_command(command)
        self._want_mcp = want_mcp
        #: The MCP endpoint the adapter announced in its start result (capability ``mcp``).
        self.mcp_endpoint: Mapping[str, Any] | None = None
        if not self.argv:
            raise HarnessError("the host command is empty")
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self._schemas = ProtocolSchemas() if validate else None
        self._env = env
        self._cwd = cwd
        if max_line < 1:
            raise HarnessError("the host line limit must be at least one byte")
        self.max_line = max_line
        self._config = HostConfig()
        self._operators: dict[int, OperatorScript | None] = {}
        self._operators_lock = threading.Lock()
        #: Checks in a row that ended with the host failed, and the last one's cause.
        self._failed_checks = 0
        self._last_cause = ""
        #: Whether a check is running (a reset was made), and a failure it met that the
        #: connection does not hold (the adapter could not be started again).
        self._in_check = False
        self._check_failure: HostError | None = None
        #: Why the host was abandoned, once it is.
        self._abandoned: str | None = None
        self.restarts = 0
        #: Every byte of standard error of every start of the adapter, for the barrier.
        self._spool = Spool(spool_limit)
        #: Every value configured over the run, oldest first, and the windows of their forms
        #: indexed so far (built on the first redaction that needs them, then extended).
        self._told: list[tuple[str, str]] = []
        self._told_values: set[str] = set()
        self._told_runs: dict[str, str] = {}
        self._told_indexed = 0
        self._connection: Connection | None = None
        try:
            self._connection, self._info = self._connect()
        except UnpublishedCapabilityError as error:
            # The cause is the host's description, not its start: said as it is (S1.8).
            raise HarnessError(str(error)) from error
        except HostError as error:
            raise HarnessError(f"the host could not be started: {error}") from error

    # --- starting ----------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        """Replace every configured secret value in text quoted from the host."""
        values = sorted(
            {
                value
                for secret in self._config.secrets
                for value in (secret.password, secret.username, secret.notes)
                if len(value) >= 4
            },
            key=len,
            reverse=True,
        )
        for value in values:
            for form in {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)}:
                text = text.replace(form, "[value]")
        return self._redact_told(text)

    def _remember(self, config: HostConfig) -> None:
        """Keep the values of ``config`` among those any later quote of the host is cleaned of.

        An adapter may quote, in a later check, a value it was given in an earlier one (in an
        error, its last words on standard error, a new name at a restart), where that check's
        own redaction knows only its own values (decisions S1.5).
        """
        from conformance.canary import guarded_values

        for guarded in guarded_values(config.secrets):
            if guarded.value not in self._told_values:
                self._told_values.add(guarded.value)
                self._told.append((guarded.label, guarded.value))

    def _redact_told(self, text: str) -> str:
        """Replace every run of 8 characters of any form of any value told so far.

        Text longer than :data:`TOLD_SCAN_CHARS` keeps only its first and last halves of that
        bound, each cleaned, joined by ``…``: every quote of host text is cut far shorter (to
        its first 200 or last 600 characters), and scanning megabytes of it would cost seconds.
        """
        from conformance.canary import redact_runs, required_forms, window_index

        if not self._told:
            return text
        fresh = window_index(
            tuple(
                (label, form)
                for label, value in self._told[self._told_indexed :]
                for form in required_forms(value).values()
            )
        )
        for window, label in fresh.items():
            self._told_runs.setdefault(window, label)
        self._told_indexed = len(self._told)
        if len(text) > TOLD_SCAN_CHARS:
            half = TOLD_SCAN_CHARS // 2
            head = redact_runs(text[:half], self._told_runs)
            return f"{head}…{redact_runs(text[-half:], self._told_runs)}"
        return redact_runs(text, self._told_runs)

    def _connect(self) -> tuple[Connection, HostInfo]:
        try:
            connection = Connection(
                self.argv,
                on_prompt=self._prompt,
                schemas=self._schemas,
                redact=self._redact,
                env=self._env,
                cwd=self._cwd,
                max_line=self.max_line,
                spool=self._spool,
            )
        except OSError as error:
            raise HarnessError(
                f"the host command {shlex.join(self.argv)!r} could not be run: "
                f"{error.strerror or type(error).__name__}"
            ) from error
        start: dict[str, Any] = {"protocol": PROTOCOL_VERSION, "suite": dict(SUITE)}
        if self._want_mcp:
            start["mcp"] = True
        try:
            result = connection.request("start", start, self.start_timeout)
        except HostRefusedError as error:
            connection.close()
            if error.code == "unsupported-protocol":
                raise HarnessError(
                    f"the host does not speak driver protocol {PROTOCOL_VERSION}: {error}"
                ) from error
            raise
        except HostError:
            connection.close()
            raise
        version = result.get("protocol")
        if not is_protocol_version(version):
            connection.close()
            shown = quote(json.dumps(version)) if _is_json(version) else type(version).__name__
            raise HarnessError(
                f"the host speaks driver protocol {shown}; the suite speaks {PROTOCOL_VERSION}, "
                f"which the handshake must give as the integer {PROTOCOL_VERSION}"
            )
        host = result.get("host")
        if not isinstance(host, dict):
            connection.close()
            raise ProtocolViolationError("the host's start result has no host description")
        try:
            # Only the protocol's published names, never one of the suite's own (S1.8).
            published_capabilities(host.get("capabilities", []))
            info = info_from_wire(host)
        except UnpublishedCapabilityError:
            connection.close()
            raise
        except (KeyError, TypeError) as error:
            connection.close()
            raise ProtocolViolationError(
                f"the host's description lacks {error.args[0] if error.args else 'a member'}"
            ) from error
        endpoint = result.get("mcp")
        self.mcp_endpoint = endpoint if isinstance(endpoint, dict) else None
        return connection, info

    def _live(self) -> Connection:
        """Return the running connection, or raise the failure the check met."""
        self._raise_abandoned()
        if self._connection is None:
            raise HostError("the host is closed")
        self._connection._raise_failure()
        return self._connection

    def _restart(self) -> Connection:
        """Start the adapter again; it must describe the host its first handshake described.

        Raises:
            HostChangedError: It announced another name, version, language or capabilities
                (decisions S1.8); the host is abandoned for the run.
            HostError: It failed to start (the running check ends errored).
            HarnessError: It cannot be run, or speaks another protocol version.
        """
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self.restarts += 1
        try:
            connection, info = self._connect()
        except UnpublishedCapabilityError as error:
            raise self._changed(str(error)) from error
        differences = _differences(self._info, info)
        if differences:
            connection.close()
            raise self._changed("; ".join(differences))
        self._connection = connection
        return connection

    def _changed(self, cause: str) -> HostChangedError:
        """Abandon the host, which restarted as another, and return the error that says so."""
        self._abandoned = (
            f"the host restarted as another host ({self._redact_runs(cause)}): a harness "
            "error for the run, not a failure of the check (decisions S1.8)"
        )
        self.close()
        return HostChangedError(self._abandoned)

    # --- playing the operator ----------------------------------------------------------------

    def _prompt(self, connection: Connection, prompt_id: Any, params: Mapping[str, Any]) -> None:
        invoke_id = params.get("invoke")
        request = dict(params["request"])
        with self._operators_lock:
            known = isinstance(invoke_id, int) and invoke_id in self._operators
            operator = self._operators.get(invoke_id) if isinstance(invoke_id, int) else None
        if not known:
            connection.answer_prompt(prompt_id, Answer.NONE.value)
            return
        answer = Answer.APPROVE
        if operator is not None:
            with connection.paused(invoke_id):
                try:
                    answer = operator(request, _control(self, connection))
                except Exception:  # an operator that fails has not approved
                    answer = Answer.DENY
        if answer is Answer.NONE:
            # The host's own approval timeout must end the call: give it that long.
            connection.extend(invoke_id, self._config.approval_timeout_s)
        connection.answer_prompt(prompt_id, answer.value)

    @property
    def failure(self) -> HostError | None:
        """The protocol failure the running check met, if any; cleared by the next reset.

        A check that fails because of it (a prompt that never opened, say) is errored, not
        failed: the plugin asks this before it blames the host's conformance.
        """
        connection = self._connection
        return None if connection is None else connection.failure

    def fail(self, error: HostError) -> None:
        """End the running check with ``error``, a failure met outside the driver protocol.

        For a host reached another way too (its MCP endpoint): the adapter is ended, the check
        counts toward abandonment (decisions S1.10), and the next check starts it again.
        """
        connection = self._connection
        if connection is None:
            self._check_failure = error
        else:
            connection.fail(error)

    # --- HostUnderTest -----------------------------------------------------------------------

    def info(self) -> HostInfo:
        """Return the host's description from its handshake."""
        return self._info

    def reset(self, config: HostConfig) -> None:
        """Configure a fresh host; start the adapter again first if it failed.

        Raises:
            HostError: The host failed to restart or to configure.
            HostAbandonedError: The host failed :data:`MAX_CONSECUTIVE_FAILURES` checks in a
                row before this one; it is not started again.
        """
        self._tally()
        self._raise_abandoned()
        self._config = config
        self._remember(config)
        self._in_check = True
        connection = self._connection
        if connection is None or connection.failure is not None:
            try:
                connection = self._restart()
            except HostError as error:
                self._check_failure = error
                raise
            except HarnessError as error:
                # Mid-run, a host that cannot be started again fails the check, not the run.
                self._check_failure = HostCrashedError(
                    f"the host could not be started again: {error}"
                )
                raise self._check_failure from error
        connection.mark_printed()
        with self._operators_lock:
            self._operators.clear()
        self._call(connection, "configure", config_to_wire(config), self.call_timeout)

    def _tally(self) -> None:
        """Count the check that just ended: one more host failure in a row, or none.

        A check failed when the adapter could not be started again for it, or when its
        connection ended failed (a crash, a hang, garbage); a check the host answered ends the
        row. At :data:`MAX_CONSECUTIVE_FAILURES` the host is abandoned and its process ended.
        """
        if not self._in_check or self._abandoned is not None:
            return
        self._in_check = False
        connection = self._connection
        failure = self._check_failure or (None if connection is None else connection.failure)
        self._check_failure = None
        if failure is None:
            self._failed_checks = 0
            return
        self._failed_checks += 1
        self._last_cause = self._redact_runs(str(failure))
        if self._failed_checks >= MAX_CONSECUTIVE_FAILURES:
            self._abandoned = (
                f"the host was abandoned for this run after {self._failed_checks} checks in a "
                f"row failed to start it or to get an answer; the last: {self._last_cause}"
            )
            self.close()

    def _raise_abandoned(self) -> None:
        """Raise a fresh :class:`HostAbandonedError` once the host is abandoned.

        Fresh each time: one error raised again in every later check would carry every
        check's traceback, and reporting it would cost more with each check.
        """
        if self._abandoned is not None:
            raise HostAbandonedError(self._abandoned)

    def _redact_runs(self, text: str) -> str:
        """Remove from ``text`` every value of the current configuration, and runs of one.

        The cause of an abandonment is repeated in every later check's report, where that
        check's own redaction knows only its own values.
        """
        from conformance.canary import Detector, guarded_values

        detector = Detector(guarded_values(self._config.secrets))
        return self._redact_told(detector.redact(text) if detector else text)

    def _call(
        self, connection: Connection, method: str, params: Mapping[str, Any], timeout: float
    ) -> Mapping[str, Any]:
        return connection.request(method, params, timeout)

    def _invoke_timeout(self) -> float:
        # The approval timeout is added only when a prompt is left unanswered (see _prompt).
        return self.call_timeout + self._config.execution_timeout_s

    def _begin(
        self, tool: str, args: str, operator: OperatorScript | None
    ) -> tuple[Connection, Waiter]:
        connection = self._live()

        def register(request_id: int) -> None:
            # Before the request is written: its prompt can come back at once.
            with self._operators_lock:
                self._operators[request_id] = operator

        _, waiter = connection.begin(
            "invoke", {"tool": tool, "args": args}, self._invoke_timeout(), register
        )
        return connection, waiter

    def _settle(self, connection: Connection, waiter: Waiter, limit: float | None) -> CallResult:
        result = connection.finish(waiter, limit)
        shape = {"disposition": str, "text": str, "isError": bool}
        wrong = [key for key, kind in shape.items() if not isinstance(result.get(key), kind)]
        if wrong:
            # Even without schema validation, a result the suite would have to guess at is an
            # error, never a verdict.
            error = ProtocolViolationError(
                f"the host's invoke result has no valid {', '.join(wrong)}"
            )
            connection.fail(error)
            raise error
        try:
            return result_from_wire(result)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            failure = ProtocolViolationError(
                f"the host's invoke result is malformed ({type(error).__name__})"
            )
            connection.fail(failure)
            raise failure from error

    def invoke(self, tool: str, args: str, operator: OperatorScript | None = None) -> CallResult:
        """Run one call and wait for it."""
        connection, waiter = self._begin(tool, args, operator)
        return self._settle(connection, waiter, None)

    def start(self, tool: str, args: str, operator: OperatorScript | None = None) -> _Pending:
        """Start one call and return at once."""
        connection, waiter = self._begin(tool, args, operator)
        return _Pending(self, connection, waiter)

    def control(self) -> WireControl:
        """Return the operator's control surface outside any prompt."""
        connection = self._live()
        return _control(self, connection)

    def observe(self) -> Observation:
        """Return every surface, with the host's standard error as ``printed``."""
        connection = self._live()
        data = self._call(connection, "observe", {}, self.call_timeout)
        try:
            printed = connection.printed()
            # Asked after the text: a cut between the two is reported, never missed.
            whole = not connection.printed_cut
            return observation_from_wire(data, printed, whole)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as error:
            # binascii.Error is a ValueError; a page number of 1e999 (infinity) is an
            # OverflowError. A surface the suite cannot read is the host's protocol failure:
            # the check errors, it never fails on it.
            failure = ProtocolViolationError(
                f"the host's observe result is malformed ({type(error).__name__})"
            )
            connection.fail(failure)
            raise failure from error

    def cpu_seconds(self) -> float | None:
        """Return the processor seconds the adapter's tree has used so far, or ``None``.

        For timing a host's own work on a busy machine (the frameworks' bounded-work check):
        ``None`` where the operating system does not tell (no ``/proc``) or no adapter runs.
        """
        connection = self._connection
        return None if connection is None else connection.supervised.cpu_seconds()

    def close(self) -> None:
        """Shut the adapter down and release its process and pipes."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def late_findings(self, canaries: Sequence[Canary]) -> LateReport:
        """Search all the adapter wrote on standard error, over every start, for ``canaries``.

        The end-of-run barrier (decisions S1.9, :mod:`conformance.late`): the adapter is shut
        down first and its readers drained (bounded), so nothing it writes later is missed;
        then every required form of every canary is searched for in all that was kept, and
        the spool is released. Self-contained: a host that wraps this one (over MCP) calls it
        for the driver's standard error. A second call finds nothing more to search.

        Returns:
            Findings by label, form and adapter start; standard error as searched, or as not
            searched with why (beyond the spool's bound, a reader that did not finish).
        """
        self.close()
        self._spool.seal()
        try:
            return search_spool(self._spool, canaries)
        finally:
            self._spool.close()

    def __enter__(self) -> SubprocessHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _differences(first: HostInfo, again: HostInfo) -> list[str]:
    """Return how ``again``, a restart's description, differs from the first handshake's."""
    found = [
        f"its {label} was '{quote(before, LINE_EXCERPT_CHARS)}', "
        f"now '{quote(after, LINE_EXCERPT_CHARS)}'"
        for label, before, after in (
            ("name", first.name, again.name),
            ("version", first.version, again.version),
            ("language", first.language, again.language),
        )
        if before != after
    ]
    added = sorted(again.capabilities - first.capabilities)
    removed = sorted(first.capabilities - again.capabilities)
    if added:
        found.append("capabilities added: " + ", ".join(added))
    if removed:
        found.append("capabilities removed: " + ", ".join(removed))
    return found


def default_env() -> dict[str, str]:
    """Return the suite's environment for an adapter, with Python's output unbuffered."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _is_json(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# --- measuring an adapter -----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.hosts.subprocess``: measure an adapter's per-request round trip
    (:func:`conformance.hosts._measure.main`).

    Returns:
        The exit status.
    """
    from conformance.hosts._measure import main as measure

    return measure(argv)


if __name__ == "__main__":
    raise SystemExit(main())
