"""The protocol mapping of driver protocol v1: one running adapter, as numbered requests.

This module owns one connection to an adapter: numbered requests in both directions over
newline-delimited JSON, their deadlines, the host's ``prompt`` requests handed to the operator,
and standard error: kept (bounded) as the ``printed`` surface, and every byte of it handed to
the run's :class:`~conformance.hosts._spool.Spool` for the late-output barrier (decisions S1.9).
A host that crashes, hangs, floods, writes garbage, or breaks the reader in any way ends the
running check with a :class:`~conformance.hosts._protocol.HostError` that names the cause, and
the whole process tree is killed. Processes belong to :mod:`conformance.hosts._supervise` and
bytes-to-lines to :mod:`conformance.hosts._framing`. It never waits without a timeout and never
quotes host text without redacting and quoting it (:func:`~conformance.hosts._protocol.quote`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from conformance.hosts._framing import (
    DEFAULT_MAX_LINE,
    MAX_JSON_DEPTH,
    READ_CHUNK,
    End,
    LineFramer,
    LineTooLongError,
    json_depth,
    pump,
    read_lines,
    write_all,
)
from conformance.hosts._protocol import (
    PRINTED_LIMIT_BYTES,
    SHUTDOWN_GRACE_SECONDS,
    STDERR_TAIL_CHARS,
    HostCrashedError,
    HostError,
    HostHungError,
    HostRefusedError,
    ProtocolSchemas,
    ProtocolViolationError,
    quote,
)
from conformance.hosts._spool import Spool
from conformance.hosts._supervise import Supervised

#: Seconds a write to the adapter's standard input may block (a host that stops reading fills
#: the pipe); the suite's messages are small, so this only ever ends a host that stopped.
WRITE_TIMEOUT_SECONDS: Final = 10.0

#: Prompts the suite answers at once, each on a thread of its own. A check opens at most a
#: pending limit's worth (4 by default, decisions R3.5; 257 in test_large_limits, one past the
#: integers CPython keeps one object for) plus one; the bound only stops a host that floods
#: prompts from costing the suite a thread each without end.
MAX_OPEN_PROMPTS: Final = 1024

#: Seconds the suite waits for a reader thread to finish once the tree is killed.
READER_JOIN_SECONDS: Final = 2.0

#: Seconds a crash report waits for the standard error reader to reach the end of what an
#: exited host wrote, so that its last words are quoted even on a busy machine; a child that
#: keeps the pipe open costs no more than this.
STDERR_SETTLE_SECONDS: Final = 1.0


class Waiter:
    """One request of the suite's, waiting for its response."""

    __slots__ = ("deadline", "done", "method", "paused", "response", "timeout")

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.done = threading.Event()
        self.response: Mapping[str, Any] | None = None
        self.paused = 0


PromptHandler = Callable[["Connection", Any, Mapping[str, Any]], None]


class Connection:
    """One adapter process: its pipes, its reader threads and the requests in flight.

    Args:
        argv: The adapter's command.
        on_prompt: Called, on a thread of its own, for each ``prompt`` the host sends.
        schemas: Validate every message against these, or ``None``.
        redact: Replaces configured values in host text quoted in an error.
        env: The adapter's environment.
        cwd: Its working directory.
        max_line: The bound on one line of its standard output, in bytes.
        spool: Where every byte of its standard error is kept for the run, or ``None``.

    Raises:
        OSError: The adapter cannot be started.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        on_prompt: PromptHandler,
        schemas: ProtocolSchemas | None,
        redact: Callable[[str], str],
        env: Mapping[str, str] | None,
        cwd: str | None,
        max_line: int = DEFAULT_MAX_LINE,
        spool: Spool | None = None,
    ) -> None:
        self._on_prompt = on_prompt
        self._schemas = schemas
        self._redact = redact
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, Waiter] = {}
        self._stderr = bytearray()
        self._stderr_mark = 0
        #: Whether the bound cut what the host wrote since :meth:`mark_printed` (S1.9).
        self._printed_cut = False
        self._spool = spool
        self._segment = spool.segment() if spool is not None else 0
        self.failure: HostError | None = None
        self._closing = False
        self._framer = LineFramer(max_line)
        self._open_prompts = 0
        self.left_alive = 0
        self.supervised = Supervised(argv, env, cwd)
        self.process = self.supervised.process
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        assert self.process.stdin is not None
        os.set_blocking(self.process.stdin.fileno(), False)
        self._readers = [
            threading.Thread(
                target=self._guarded,
                args=(self._read_stdout, self.process.stdout.fileno()),
                name="secref-host-stdout",
                daemon=True,
            ),
            threading.Thread(
                target=self._guarded,
                args=(self._read_stderr, self.process.stderr.fileno()),
                name="secref-host-stderr",
                daemon=True,
            ),
        ]
        # The standard error reader starts first: a host that exits at once ends the standard
        # output reader in _crashed, which waits for the standard error reader's last lines and
        # could otherwise find it not yet started (a race a loaded machine lost).
        for reader in reversed(self._readers):
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
        self.left_alive = self.supervised.kill_tree()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _crashed(self) -> HostCrashedError:
        status = self.supervised.returncode()
        if status is None:
            status = self.supervised.wait(1.0)
        what = "closed its standard output" if status is None else f"exited with status {status}"
        if status is not None:
            # The host has exited: what it wrote last may still be in the pipe, unread.
            reader = self._readers[1]
            if reader is not threading.current_thread() and reader.ident is not None:
                reader.join(STDERR_SETTLE_SECONDS)
        tail = quote(
            self._redact(self._stderr_text(0)).strip()[-STDERR_TAIL_CHARS:], STDERR_TAIL_CHARS
        )
        suffix = f"; its standard error ends: {tail}" if tail else "; it wrote nothing on stderr"
        return HostCrashedError(f"the host {what}{suffix}")

    # --- reading -----------------------------------------------------------------------------

    def _guarded(self, read: Callable[[int], None], fd: int) -> None:
        """Run one reader; whatever it raises ends the running check with the cause named."""
        try:
            read(fd)
        except LineTooLongError as error:
            self.fail(ProtocolViolationError(str(error)))
        except BaseException as error:  # any failure of the reader is the host's doing
            self.fail(
                ProtocolViolationError(
                    f"the suite could not read the host's output: {type(error).__name__}"
                    + (f": {quote(self._redact(str(error)))}" if str(error) else "")
                )
            )

    def _operate(self, prompt_id: Any, params: Mapping[str, Any]) -> None:
        """Play the operator for one prompt, on its own thread, and count it closed after."""
        try:
            self._on_prompt(self, prompt_id, params)
        finally:
            with self._lock:
                self._open_prompts -= 1

    def _stopped(self) -> bool:
        return self.failure is not None

    def _read_stderr(self, fd: int) -> None:
        def keep(chunk: bytes) -> None:
            if self._spool is not None:
                self._spool.write(self._segment, chunk)
            with self._lock:
                self._stderr.extend(chunk)
                excess = len(self._stderr) - self._stderr_mark - PRINTED_LIMIT_BYTES
                if excess > 0:
                    del self._stderr[: self._stderr_mark + excess]
                    self._stderr_mark = 0
                    self._printed_cut = True

        # Standard error is read to its end even after the host failed: what it wrote on the
        # way down is late output the barrier must search (decisions S1.9). The tree is killed
        # on failure, so the pipe closes, and the adapter's exit bounds the drain.
        end = pump(fd, keep, exited=self.supervised.exited, stopped=lambda: False)
        if end is End.EXITED and self._spool is not None:
            ready = select.poll()
            ready.register(fd, select.POLLIN)
            rest = os.read(fd, READ_CHUNK) if ready.poll(0) else b""
            if rest:
                keep(rest)
                self._spool.unread(
                    "processes of the host still wrote on standard error when reading stopped"
                )

    def _read_stdout(self, fd: int) -> None:
        end = read_lines(
            fd, self._framer, self._take, exited=self.supervised.exited, stopped=self._stopped
        )
        if end is not End.STOPPED and self.failure is None and not self._closing:
            self.fail(self._crashed())

    def _garbage(self, text: str, why: str = "") -> None:
        self.fail(
            ProtocolViolationError(
                f"the host wrote a line that is not protocol{why}: {quote(self._redact(text))!r}"
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
        if json_depth(line) > MAX_JSON_DEPTH:
            self._garbage(text, f" (nested deeper than {MAX_JSON_DEPTH} levels)")
            return
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
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
            with self._lock:
                self._open_prompts += 1
                too_many = self._open_prompts > MAX_OPEN_PROMPTS
            if too_many:
                self.fail(
                    ProtocolViolationError(
                        f"the host opened more than {MAX_OPEN_PROMPTS} prompts at once"
                    )
                )
                return
            threading.Thread(
                target=self._operate,
                args=(message["id"], params),
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
                written = write_all(stdin.fileno(), line.encode("ascii"), WRITE_TIMEOUT_SECONDS)
        except (BrokenPipeError, ValueError, OSError):
            self.fail(self._crashed())
            self._raise_failure()
            return
        if not written:
            self.fail(
                HostHungError(f"the host did not read its input for {WRITE_TIMEOUT_SECONDS:g} s")
            )
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
    ) -> tuple[int, Waiter]:
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
            waiter = Waiter(method, timeout)
            self._waiting[request_id] = waiter
        if before_send is not None:
            before_send(request_id)
        self.send({"id": request_id, "method": method, "params": dict(params)}, f"{method}.request")
        return request_id, waiter

    def finish(self, waiter: Waiter, limit: float | None = None) -> Mapping[str, Any]:
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
            raise HostRefusedError(
                waiter.method, quote(self._redact(code)), quote(self._redact(detail))
            )
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
            self._printed_cut = False

    @property
    def printed_cut(self) -> bool:
        """Whether the bound on standard error kept dropped part of the ``printed`` surface
        since :meth:`mark_printed`: the surface was not searched whole (decisions S1.9)."""
        with self._lock:
            return self._printed_cut

    def printed(self) -> str:
        """Return what the host wrote on standard error since :meth:`mark_printed`."""
        with self._lock:
            data = bytes(self._stderr[self._stderr_mark :])
        return data.decode("utf-8", "replace")

    # --- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        """Ask the host to shut down, then end its whole process tree and close every pipe.

        Bounded: the shutdown request and the exit each get :data:`SHUTDOWN_GRACE_SECONDS`.
        """
        if self.failure is None and not self.supervised.exited():
            with contextlib.suppress(HostError, TimeoutError):
                _, waiter = self.begin("shutdown", {}, SHUTDOWN_GRACE_SECONDS)
                self._closing = True
                self.finish(waiter)
        self._closing = True
        stdin = self.process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
        self.supervised.wait(SHUTDOWN_GRACE_SECONDS)
        # The adapter has exited or is killed now; anything it started goes with it.
        self._kill()
        for reader in self._readers:
            reader.join(READER_JOIN_SECONDS)
        if self._spool is not None and self._readers[1].is_alive():
            self._spool.unread("the reader of standard error did not finish in time")
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
