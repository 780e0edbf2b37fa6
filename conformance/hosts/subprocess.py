"""A host under test reached over driver protocol v1: an adapter the suite runs as a subprocess.

This module owns the suite's side of the protocol (docs/driver-protocol.md): starting the
adapter, the handshake, numbered requests in both directions over newline-delimited JSON,
playing the operator when the host sends ``prompt``, capturing standard error as the ``printed``
surface, and surviving a host that crashes, hangs or writes garbage. Such a host makes the
running check end with a :class:`HostError` that names the cause; the next ``reset`` starts the
adapter again. A version mismatch, or an adapter that cannot be started at all, is a
:class:`HarnessError` for the whole run. With ``validate=True`` every message in both directions
is checked against the protocol's JSON Schemas.

It must never let a hang block the run, never leave a process or a pipe behind, and never put a
configured secret value into an error message: text quoted from the host is redacted first.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from typing import IO, Any, Final

from conformance.host import (
    Answer,
    CallResult,
    HostConfig,
    HostInfo,
    Observation,
    OperatorScript,
)
from conformance.hosts import HostSelectionError
from conformance.hosts.wire import (
    WireControl,
    config_to_wire,
    info_from_wire,
    observation_from_wire,
    result_from_wire,
)

#: The protocol version the suite speaks.
PROTOCOL_VERSION: Final = 1

#: Characters of an offending line quoted in an error (the issue's figure).
LINE_EXCERPT_CHARS: Final = 200

#: Characters of the host's standard error quoted when it crashes.
STDERR_TAIL_CHARS: Final = 600

#: Bytes of standard error kept for the ``printed`` surface of one check; older text is dropped.
PRINTED_LIMIT_BYTES: Final = 8 * 1024 * 1024

#: Seconds the host has to exit after ``shutdown`` before it is killed.
SHUTDOWN_GRACE_SECONDS: Final = 5.0

#: Checks in a row that may end with the host hung before the host is abandoned for the run, so
#: a host that hangs on everything costs three timeouts, not one per check.
MAX_CONSECUTIVE_HANGS: Final = 3

#: Default seconds for the handshake and for each request (``--host-start-timeout``,
#: ``--host-timeout``).
DEFAULT_START_TIMEOUT: Final = 10.0
DEFAULT_CALL_TIMEOUT: Final = 30.0

_SUITE: Final = {"name": "secref-suite", "version": "0.1.0"}


class HarnessError(HostSelectionError):
    """The run cannot go on: the adapter cannot be started, or speaks another protocol version.

    The console script exits with status 2; nothing about conformance was learned.
    """


class HostError(Exception):
    """The host failed at the protocol level during a check, which ends as errored.

    Never a pass and never a conformance failure: the check learned nothing.
    """


class HostCrashedError(HostError):
    """The adapter exited, or closed its standard output, before it was asked to."""


class HostHungError(HostError):
    """The adapter did not answer a request within its timeout."""


class ProtocolViolationError(HostError):
    """A line that is not protocol, or (with validation) a message that fails its schema."""


class HostRefusedError(HostError):
    """The adapter answered a request with an error response.

    Attributes:
        code: The error code, e.g. ``unsupported``.
    """

    def __init__(self, method: str, code: str, message: str) -> None:
        super().__init__(f"the host refused {method}: {code}: {message}")
        self.code = code


def split_command(command: str | Sequence[str]) -> list[str]:
    """Return the adapter's command as an argument list, split as a POSIX shell would."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def _excerpt(text: str, limit: int = LINE_EXCERPT_CHARS) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[:limit] + "…"


# --- schemas ----------------------------------------------------------------------------------


class ProtocolSchemas:
    """The JSON Schemas of every message, for ``--validate-protocol``."""

    def __init__(self) -> None:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource

        folder = resources.files("conformance").joinpath("schemas", "protocol")
        documents: dict[str, Any] = {}
        for entry in folder.iterdir():
            if entry.name.endswith(".schema.json"):
                documents[entry.name] = json.loads(entry.read_text(encoding="utf-8"))
        registry: Registry[Any] = Registry().with_resources(
            (document["$id"], Resource.from_contents(document)) for document in documents.values()
        )
        self._validators = {
            name.removesuffix(".schema.json"): Draft202012Validator(document, registry=registry)
            for name, document in documents.items()
        }

    def names(self) -> frozenset[str]:
        """Return the schema names, e.g. ``invoke.request``."""
        return frozenset(self._validators)

    def check(self, name: str, message: Mapping[str, Any], sender: str) -> None:
        """Check ``message`` against the schema ``name``.

        Args:
            name: The schema, e.g. ``prompt.request`` or ``error.response``.
            message: The decoded message.
            sender: ``"host"`` or ``"suite"``, for the error text.

        Raises:
            ProtocolViolationError: The message does not match. The text names the schema, the path
                and the failing keyword, never the instance's content.
        """
        error = next(iter(self._validators[name].iter_errors(message)), None)
        if error is None:
            return
        pointer = "/" + "/".join(str(part) for part in error.absolute_path)
        rule = "/".join(str(part) for part in error.absolute_schema_path)
        raise ProtocolViolationError(
            f"the {sender} sent a message that does not match {name}.schema.json: "
            f"at {pointer} it fails {error.validator!r} ({rule})"
        )


# --- one running adapter ----------------------------------------------------------------------


class _Waiter:
    """One request of the suite's, waiting for its response."""

    __slots__ = ("deadline", "done", "method", "paused", "response", "timeout")

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.done = threading.Event()
        self.response: Mapping[str, Any] | None = None
        self.paused = 0


PromptHandler = Callable[["_Connection", Any, Mapping[str, Any]], None]


class _Connection:
    """One adapter process: its pipes, its reader threads and the requests in flight."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        on_prompt: PromptHandler,
        schemas: ProtocolSchemas | None,
        redact: Callable[[str], str],
        env: Mapping[str, str] | None,
        cwd: str | None,
    ) -> None:
        self._on_prompt = on_prompt
        self._schemas = schemas
        self._redact = redact
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, _Waiter] = {}
        self._stderr = bytearray()
        self._stderr_mark = 0
        self.failure: HostError | None = None
        self._closing = False
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._readers = [
            threading.Thread(
                target=self._read_stdout,
                args=(self.process.stdout,),
                name="secref-host-stdout",
                daemon=True,
            ),
            threading.Thread(
                target=self._read_stderr,
                args=(self.process.stderr,),
                name="secref-host-stderr",
                daemon=True,
            ),
        ]
        for reader in self._readers:
            reader.start()

    # --- failing -----------------------------------------------------------------------------

    def fail(self, error: HostError) -> None:
        """Record the first failure, wake every waiter and stop the process."""
        with self._lock:
            if self.failure is None and not self._closing:
                self.failure = error
            waiters = list(self._waiting.values())
        for waiter in waiters:
            waiter.done.set()
        self._kill()

    def _kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _crashed(self) -> HostCrashedError:
        status = self.process.poll()
        if status is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = self.process.wait(1.0)
        what = "closed its standard output" if status is None else f"exited with status {status}"
        tail = self._redact(self._stderr_text(0)[-STDERR_TAIL_CHARS:]).strip()
        suffix = f"; its standard error ends: {tail}" if tail else "; it wrote nothing on stderr"
        return HostCrashedError(f"the host {what}{suffix}")

    # --- reading -----------------------------------------------------------------------------

    def _read_stderr(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            with self._lock:
                self._stderr.extend(chunk)
                excess = len(self._stderr) - self._stderr_mark - PRINTED_LIMIT_BYTES
                if excess > 0:
                    del self._stderr[: self._stderr_mark + excess]
                    self._stderr_mark = 0

    def _read_stdout(self, stream: IO[bytes]) -> None:
        for line in stream:
            if self.failure is not None:
                break
            self._take(line)
        if self.failure is None and not self._closing:
            self.fail(self._crashed())

    def _garbage(self, text: str, why: str = "") -> None:
        self.fail(
            ProtocolViolationError(
                f"the host wrote a line that is not protocol{why}: {_excerpt(self._redact(text))!r}"
            )
        )

    def _take(self, line: bytes) -> None:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self._garbage(line.decode("utf-8", "replace"), " (not UTF-8)")
            return
        if not text.strip():
            self._garbage(text, " (an empty line)")
            return
        try:
            message = json.loads(text)
        except ValueError:
            self._garbage(text)
            return
        if not isinstance(message, dict) or "id" not in message:
            self._garbage(text)
            return
        if self._schemas is not None:
            try:
                self._schemas.check("message", message, "host")
            except ProtocolViolationError as error:
                self.fail(error)
                return
        if "method" in message:
            if message.get("method") != "prompt":
                self._reply_error(message["id"], "unknown-method", "the suite serves prompt only")
                return
            if self._schemas is not None:
                try:
                    self._schemas.check("prompt.request", message, "host")
                except ProtocolViolationError as error:
                    self.fail(error)
                    return
            params = message.get("params")
            if not isinstance(params, dict) or not isinstance(params.get("request"), dict):
                self._reply_error(message["id"], "bad-request", "a prompt needs params.request")
                return
            threading.Thread(
                target=self._on_prompt,
                args=(self, message["id"], params),
                name="secref-operator",
                daemon=True,
            ).start()
            return
        if "result" not in message and "error" not in message:
            self._garbage(text, " (neither a request nor a response)")
            return
        request_id = message["id"]
        with self._lock:
            waiter = (
                self._waiting.pop(request_id, None)
                if isinstance(request_id, int) and not isinstance(request_id, bool)
                else None
            )
        if waiter is None:
            self._garbage(text, " (it answers no open request)")
            return
        if self._schemas is not None:
            name = f"{waiter.method}.response" if "result" in message else "error.response"
            try:
                self._schemas.check(name, message, "host")
            except ProtocolViolationError as error:
                self.fail(error)
                waiter.done.set()
                return
        waiter.response = message
        waiter.done.set()

    # --- writing -----------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any], schema: str | None = None) -> None:
        """Write one message as one line.

        Raises:
            HostError: The host has failed, or its standard input is closed.
            ProtocolViolationError: With validation on, the suite's own message fails ``schema``.
        """
        self._raise_failure()
        if self._schemas is not None and schema is not None:
            self._schemas.check(schema, message, "suite")
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        stdin = self.process.stdin
        assert stdin is not None
        try:
            with self._write_lock:
                stdin.write(line.encode("ascii"))
                stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.fail(self._crashed())
            self._raise_failure()

    def _reply_error(self, request_id: Any, code: str, message: str) -> None:
        with contextlib.suppress(HostError):
            self.send(
                {"id": request_id, "error": {"code": code, "message": message}}, "error.response"
            )

    def answer_prompt(self, prompt_id: Any, answer: str) -> None:
        """Send the operator's answer to one prompt; a failed host is left to its waiters."""
        with contextlib.suppress(HostError):
            self.send({"id": prompt_id, "result": {"answer": answer}}, "prompt.response")

    # --- requests ----------------------------------------------------------------------------

    def begin(
        self,
        method: str,
        params: Mapping[str, Any],
        timeout: float,
        before_send: Callable[[int], None] | None = None,
    ) -> tuple[int, _Waiter]:
        """Send one request without waiting for it; return its id and waiter.

        Args:
            method: The request's method.
            params: Its params.
            timeout: Seconds the host has to answer.
            before_send: Called with the request's id before it is written.
        """
        self._raise_failure()
        with self._lock:
            request_id = next(self._ids)
            waiter = _Waiter(method, timeout)
            self._waiting[request_id] = waiter
        if before_send is not None:
            before_send(request_id)
        self.send({"id": request_id, "method": method, "params": dict(params)}, f"{method}.request")
        return request_id, waiter

    def finish(self, waiter: _Waiter, limit: float | None = None) -> Mapping[str, Any]:
        """Wait for ``waiter``'s response and return its result.

        Args:
            waiter: From :meth:`begin`.
            limit: Seconds the caller will wait before it gives up with ``TimeoutError`` (the
                host is not blamed); ``None`` waits for the host's own deadline.

        Raises:
            HostHungError: The host's deadline passed; the process is killed.
            HostRefusedError: The host answered with an error.
            HostError: The host failed otherwise.
            TimeoutError: ``limit`` passed first.
        """
        give_up = None if limit is None else time.monotonic() + limit
        while not waiter.done.wait(0.05):
            if self.failure is not None:
                break
            now = time.monotonic()
            if waiter.paused == 0 and now >= waiter.deadline:
                self.fail(
                    HostHungError(
                        f"the host did not answer {waiter.method} within {waiter.timeout:g} s"
                    )
                )
                break
            if give_up is not None and now >= give_up:
                raise TimeoutError(f"the call did not finish within {limit:g} s")
        response = waiter.response
        if response is None:
            self._raise_failure()
            raise HostCrashedError("the host stopped before it answered")
        if "error" in response:
            error = response["error"]
            code = str(error.get("code", "?")) if isinstance(error, dict) else "?"
            detail = str(error.get("message", "")) if isinstance(error, dict) else ""
            raise HostRefusedError(waiter.method, code, _excerpt(self._redact(detail)))
        result = response.get("result")
        if not isinstance(result, dict):
            self.fail(ProtocolViolationError(f"the host's {waiter.method} result is not an object"))
            self._raise_failure()
        assert isinstance(result, dict)
        return result

    def request(self, method: str, params: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        """Send one request and wait for its result."""
        _, waiter = self.begin(method, params, timeout)
        return self.finish(waiter)

    def extend(self, invoke_id: Any, seconds: float) -> None:
        """Give the invoke ``invoke_id`` ``seconds`` more before it counts as hung."""
        with self._lock:
            waiter = self._waiting.get(invoke_id) if isinstance(invoke_id, int) else None
            if waiter is not None:
                waiter.deadline += seconds

    @contextlib.contextmanager
    def paused(self, invoke_id: Any) -> Iterator[None]:
        """Stop the clock of the invoke ``invoke_id`` while the suite answers its prompt."""
        with self._lock:
            waiter = self._waiting.get(invoke_id) if isinstance(invoke_id, int) else None
        if waiter is None:
            yield
            return
        started = time.monotonic()
        waiter.paused += 1
        try:
            yield
        finally:
            waiter.deadline += time.monotonic() - started
            waiter.paused -= 1

    # --- standard error ----------------------------------------------------------------------

    def _stderr_text(self, start: int) -> str:
        with self._lock:
            data = bytes(self._stderr[start:])
        return data.decode("utf-8", "replace")

    def mark_printed(self) -> None:
        """Start the ``printed`` surface afresh."""
        with self._lock:
            self._stderr_mark = len(self._stderr)

    def printed(self) -> str:
        """Return what the host wrote on standard error since :meth:`mark_printed`."""
        with self._lock:
            data = bytes(self._stderr[self._stderr_mark :])
        return data.decode("utf-8", "replace")

    # --- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Ask the host to shut down, then make sure it is gone and every pipe is closed."""
        if self.failure is None and self.process.poll() is None:
            with contextlib.suppress(HostError, TimeoutError):
                _, waiter = self.begin("shutdown", {}, SHUTDOWN_GRACE_SECONDS)
                self._closing = True
                self.finish(waiter)
        self._closing = True
        stdin = self.process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
        try:
            self.process.wait(SHUTDOWN_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(SHUTDOWN_GRACE_SECONDS)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()


# --- the host under test ----------------------------------------------------------------------


def _control(host: SubprocessHost, connection: _Connection) -> WireControl:
    """Return the operator's mid-prompt actions, sent as ``control`` requests."""
    return WireControl(
        lambda op, params: connection.request("control", {"op": op, **params}, host.call_timeout)
    )


class _Pending:
    """A call started without waiting for it."""

    def __init__(self, host: SubprocessHost, connection: _Connection, waiter: _Waiter) -> None:
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
        self._config = HostConfig()
        self._operators: dict[int, OperatorScript | None] = {}
        self._operators_lock = threading.Lock()
        self._hangs = 0
        self.restarts = 0
        self._connection: _Connection | None = None
        try:
            self._connection, self._info = self._connect()
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
        return text

    def _connect(self) -> tuple[_Connection, HostInfo]:
        try:
            connection = _Connection(
                self.argv,
                on_prompt=self._prompt,
                schemas=self._schemas,
                redact=self._redact,
                env=self._env,
                cwd=self._cwd,
            )
        except OSError as error:
            raise HarnessError(
                f"the host command {shlex.join(self.argv)!r} could not be run: "
                f"{error.strerror or type(error).__name__}"
            ) from error
        start: dict[str, Any] = {"protocol": PROTOCOL_VERSION, "suite": dict(_SUITE)}
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
        if version != PROTOCOL_VERSION:
            connection.close()
            raise HarnessError(
                f"the host speaks driver protocol {version!r}; the suite speaks {PROTOCOL_VERSION}"
            )
        host = result.get("host")
        if not isinstance(host, dict):
            connection.close()
            raise ProtocolViolationError("the host's start result has no host description")
        try:
            info = info_from_wire(host)
        except (KeyError, TypeError) as error:
            connection.close()
            raise ProtocolViolationError(
                f"the host's description lacks {error.args[0] if error.args else 'a member'}"
            ) from error
        endpoint = result.get("mcp")
        self.mcp_endpoint = endpoint if isinstance(endpoint, dict) else None
        return connection, info

    def _live(self) -> _Connection:
        """Return the running connection, or raise the failure the check met."""
        if self._connection is None:
            raise HostError("the host is closed")
        self._connection._raise_failure()
        return self._connection

    def _restart(self) -> _Connection:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self.restarts += 1
        connection, info = self._connect()
        if info.name != self._info.name:
            connection.close()
            raise HarnessError("the host announced another name after a restart")
        self._connection = connection
        return connection

    # --- playing the operator ----------------------------------------------------------------

    def _prompt(self, connection: _Connection, prompt_id: Any, params: Mapping[str, Any]) -> None:
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

    # --- HostUnderTest -----------------------------------------------------------------------

    def info(self) -> HostInfo:
        """Return the host's description from its handshake."""
        return self._info

    def reset(self, config: HostConfig) -> None:
        """Configure a fresh host; start the adapter again first if it failed.

        Raises:
            HostError: The host failed to restart or to configure.
        """
        if self._hangs >= MAX_CONSECUTIVE_HANGS:
            raise HostHungError(
                f"the host was abandoned for this run after {self._hangs} checks in a row "
                "found it hung"
            )
        self._config = config
        connection = self._connection
        if connection is None or connection.failure is not None:
            connection = self._restart()
        connection.mark_printed()
        with self._operators_lock:
            self._operators.clear()
        self._call(connection, "configure", config_to_wire(config), self.call_timeout)

    def _call(
        self, connection: _Connection, method: str, params: Mapping[str, Any], timeout: float
    ) -> Mapping[str, Any]:
        try:
            result = connection.request(method, params, timeout)
        except HostHungError:
            self._hangs += 1
            raise
        if method != "configure":
            self._hangs = 0
        return result

    def _invoke_timeout(self) -> float:
        # The approval timeout is added only when a prompt is left unanswered (see _prompt).
        return self.call_timeout + self._config.execution_timeout_s

    def _begin(
        self, tool: str, args: str, operator: OperatorScript | None
    ) -> tuple[_Connection, _Waiter]:
        connection = self._live()

        def register(request_id: int) -> None:
            # Before the request is written: its prompt can come back at once.
            with self._operators_lock:
                self._operators[request_id] = operator

        _, waiter = connection.begin(
            "invoke", {"tool": tool, "args": args}, self._invoke_timeout(), register
        )
        return connection, waiter

    def _settle(self, connection: _Connection, waiter: _Waiter, limit: float | None) -> CallResult:
        try:
            result = connection.finish(waiter, limit)
        except HostHungError:
            self._hangs += 1
            raise
        self._hangs = 0
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
        return result_from_wire(result)

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
        return observation_from_wire(data, connection.printed())

    def close(self) -> None:
        """Shut the adapter down and release its process and pipes."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> SubprocessHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_env() -> dict[str, str]:
    """Return the suite's environment for an adapter, with Python's output unbuffered."""
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


# --- measuring an adapter -----------------------------------------------------------------------


def _round_trips(host: Any, calls: int) -> dict[str, float]:
    """Return the median milliseconds per request of ``host`` over five rounds of ``calls``."""
    import statistics

    from conformance.host import HandlerKind, ToolSpec

    config = HostConfig(
        tools=(
            ToolSpec("free", "plugin.bench", HandlerKind.RECORDER),
            ToolSpec("asked", "plugin.bench", HandlerKind.RECORDER),
        ),
        policy={"tools": {"free": "ALLOW"}},
    )

    def approve(_request: Mapping[str, Any], _control: Any) -> Answer:
        return Answer.APPROVE

    def warm() -> None:
        for _ in range(10):
            host.invoke("free", '{"a":"b"}')

    def median(step: Callable[[], object], count: int, warm_up: bool = True) -> float:
        samples = []
        for _ in range(5):
            host.reset(config)
            if warm_up:
                warm()
            started = time.perf_counter()
            for _ in range(count):
                step()
            samples.append((time.perf_counter() - started) / count * 1e3)
        return statistics.median(samples)

    return {
        "invoke": median(lambda: host.invoke("free", '{"a":"b"}'), calls),
        "invoke+prompt": median(lambda: host.invoke("asked", '{"a":"b"}', approve), calls),
        "observe": median(host.observe, calls),
        "configure": median(lambda: host.reset(config), max(1, calls // 2), warm_up=False),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.hosts.subprocess``: measure an adapter's per-request round trip.

    Prints the median milliseconds per ``invoke`` (without and with a prompt), ``observe`` and
    ``configure``, for the in-process reference host and for the adapter command given (the
    reference driver by default), so an adapter's cost can be read against the reference.

    Returns:
        The exit status.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m conformance.hosts.subprocess",
        description="Measure the per-request round trip of a driver-protocol adapter.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        default=f"{shlex.quote(sys.executable)} -m reference_impl.driver",
        help="the adapter's command line (default: the reference driver)",
    )
    parser.add_argument("--calls", type=int, default=200, help="requests per round")
    parser.add_argument("--validate", action="store_true", help="validate every message too")
    options = parser.parse_args(argv)
    from conformance.hosts.inprocess import InProcessHost

    builds: list[tuple[str, Callable[[], Any]]] = [
        ("in-process reference", InProcessHost),
        (
            "subprocess" + (", validated" if options.validate else ""),
            lambda: SubprocessHost(options.command, validate=options.validate),
        ),
    ]
    for label, build in builds:
        host = build()
        try:
            rows = _round_trips(host, options.calls)
        finally:
            host.close()
        print(f"{label:30} " + "  ".join(f"{key} {value:.2f} ms" for key, value in rows.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
