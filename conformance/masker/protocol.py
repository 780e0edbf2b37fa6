"""The suite's side of the masker protocol: the maskers a check can drive, and how it reaches them.

This module owns the :class:`Masker` interface the checks use (mask a text, run a child under a
wrapper, feed a stream in pieces, restart), the adapter client that speaks the protocol of
docs/masker-protocol.md over newline-delimited JSON to a subprocess, and the in-process maskers
the harness's own tests use (the reference scrubber and the broken maskers of
:mod:`conformance.masker.mutants`). A path a masker did not announce raises
:class:`NotAnnounced`, which the checks turn into "unchecked", never a pass.

An adapter runs under the host path's supervision and framing (:mod:`conformance.hosts._supervise`,
:mod:`conformance.hosts._framing`): its whole process tree is ended with it, every read and
every write has a deadline and every line a bound, and after three requests in a row that failed
to start it or to get an answer it is abandoned (decisions S1.10). It must never let an adapter
hang the run, never keep more of an adapter's output than its bounds, never leave a process it
started behind, and never put a secret value in an error message: adapter text is quoted only
after :func:`inert` has cleaned it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import jsonschema

from conformance.canary import required_forms
from conformance.hosts._framing import (
    POLL_SECONDS,
    LineFramer,
    LineTooLongError,
    pump,
    read_lines,
    write_all,
)
from conformance.hosts._protocol import (
    MAX_CONSECUTIVE_FAILURES as HOST_MAX_CONSECUTIVE_FAILURES,
)
from conformance.hosts._supervise import KILL_WAIT_SECONDS, Supervised

#: The protocol this suite speaks; an adapter's ``hello`` must name it.
PROTOCOL: Final = "secref-masker/1"

#: The capabilities an adapter may announce (docs/masker-protocol.md).
TEXT: Final = "text"
COMMAND: Final = "command"
STREAM_PIECES: Final = "stream-pieces"
CAPABILITIES: Final = (TEXT, COMMAND, STREAM_PIECES)

#: Bytes of one line from an adapter. The longest text a check sends is about 70,000 characters
#: (the long-line check); a masker may lengthen it with replacements, and 8 MiB leaves room for
#: that many times over while keeping a flooding adapter bounded.
MAX_LINE_BYTES: Final = 8 * 1024 * 1024

#: Lines from an adapter held unread. An adapter that floods lines then blocks on its own pipe,
#: so memory stays within this many times :data:`MAX_LINE_BYTES`.
MAX_QUEUED_LINES: Final = 4

#: Reads of an adapter's standard error kept (each at most 64 KiB, the framing's read size), so
#: an adapter that floods its standard error costs at most 4 MiB.
STDERR_READS_KEPT: Final = 64

#: Characters of an adapter's standard error kept, to explain a crash.
STDERR_TAIL_CHARS: Final = 2000

#: Characters of adapter text quoted in an error.
EXCERPT_CHARS: Final = 200

#: Seconds an adapter has to say hello: importing the Airflow task SDK alone took 7.5 s on the
#: 2-core machine this suite is developed on, and a loaded machine is slower still.
DEFAULT_START_TIMEOUT: Final = 60.0

#: Seconds an adapter has to answer one request; a wrapper starts a child for each.
DEFAULT_CALL_TIMEOUT: Final = 30.0

#: Seconds the child command pauses between two pieces: long enough for a wrapper to read the
#: first piece on its own on a loaded 2-core machine.
PIECE_PAUSE_SECONDS: Final = 0.3

#: Seconds an adapter has to exit after its input closes before its process group is killed.
SHUTDOWN_GRACE_SECONDS: Final = 3.0

#: Requests in a row that may fail to start the adapter or to get an answer (a crash, a hang, a
#: request it did not read, a line that is not an answer) before the masker is abandoned for the
#: run: the host path's bound (decisions S1.10, "after three consecutive failures to start or to
#: answer"), so a masker that fails on everything costs three timeouts, not one per probe.
MAX_CONSECUTIVE_FAILURES: Final = HOST_MAX_CONSECUTIVE_FAILURES

#: Seconds the suite waits for a reader thread once the adapter's tree is killed; the readers
#: stop at the adapter's exit after the framing's drain (half a second), so this is ample.
READER_JOIN_SECONDS: Final = 2.0

#: A window of this many characters of a value may not appear in any report (decisions S1.5).
CANARY_RUN: Final = 8


class NotAnnounced(Exception):  # noqa: N818 - a condition the checks test for, not a failure
    """The masker did not announce the capability a check needs."""


class MaskerError(Exception):
    """The masker failed one request: it crashed, hung, refused, or wrote something unreadable."""


class MaskerStartError(MaskerError):
    """The adapter could not be started or spoke another protocol: the run cannot go on."""


class MaskerAbandonedError(MaskerError):
    """The masker failed too many requests in a row and is not started again: a harness error."""


@dataclass(frozen=True, slots=True)
class Secret:
    """One secret a masker is told about.

    Attributes:
        name: A printable name, such as ``MASK_1``; a replacement may show it.
        value: The text. Never printed.
    """

    name: str
    value: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class MaskerInfo:
    """What a masker says about itself in its handshake.

    Attributes:
        name: The masker's name, such as ``ownlock``.
        version: Its exact version, such as ``0.3.2``.
        capabilities: The paths it can be driven through.
        shape: How the tool itself is used: ``library``, ``filter`` or ``wrapper``.
    """

    name: str
    version: str
    capabilities: frozenset[str]
    shape: str


def inert(text: str, secrets: Iterable[Secret]) -> str:
    """Return adapter text fit to quote: no form of a value and no 8-character run of one.

    Args:
        text: Text that came from an adapter.
        secrets: Every value the run handed out.

    Returns:
        At most :data:`EXCERPT_CHARS` characters, each value's forms replaced by its name, any
        character inside a run shared with a value replaced by ``?``, and control characters
        written as ``\\xNN``.
    """
    for secret in secrets:
        for form in sorted(required_forms(secret.value).values(), key=len, reverse=True):
            text = text.replace(form, f"<{secret.name}>")
    text = text[: EXCERPT_CHARS * 4]
    hidden = [False] * len(text)
    for secret in secrets:
        runs = {
            secret.value[start : start + CANARY_RUN]
            for start in range(len(secret.value) - CANARY_RUN + 1)
        }
        for start in range(len(text) - CANARY_RUN + 1):
            if text[start : start + CANARY_RUN] in runs:
                hidden[start : start + CANARY_RUN] = [True] * CANARY_RUN
    cleaned = "".join("?" if hide else char for char, hide in zip(text, hidden, strict=True))
    # Control characters would act on a terminal, and a lone surrogate cannot be written to
    # one or to a UTF-8 file; they are shown as escapes instead.
    return "".join(
        f"\\x{ord(char):02x}"
        if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
        else f"\\u{ord(char):04x}"
        if 0xD800 <= ord(char) < 0xE000
        else char
        for char in cleaned[:EXCERPT_CHARS]
    )


def child_command(pieces: Sequence[str], directory: Path) -> list[str]:
    """Return the argument list of a child that writes ``pieces``, writing its plan file.

    Args:
        pieces: The texts to write, each in its own write.
        directory: A private directory for the plan file (mode 0600).

    Returns:
        The child's argument list: this interpreter, the child script, the plan's path.
    """
    from conformance.masker import child

    fd, name = tempfile.mkstemp(prefix="plan-", suffix=".json", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"pieces": list(pieces), "pause": PIECE_PAUSE_SECONDS}, handle)
    return [sys.executable, str(Path(child.__file__).resolve()), name]


class Masker:
    """A masker the checks drive. Subclasses implement the paths they can reach."""

    @property
    def info(self) -> MaskerInfo:
        """The masker's handshake."""
        raise NotImplementedError

    def mask_text(self, secrets: Sequence[Secret], text: str) -> str:
        """Return what the model sees when the masker is given ``text`` whole.

        Raises:
            NotAnnounced: The masker has no ``text`` path.
            MaskerError: The masker failed the request.
        """
        raise NotAnnounced(TEXT)

    def run(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Return what the model sees when a wrapped child writes ``pieces``.

        Raises:
            NotAnnounced: The masker has no ``command`` path.
            MaskerError: The masker failed the request.
        """
        raise NotAnnounced(COMMAND)

    def mask_pieces(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Return what the model sees when ``pieces`` reach a stream masker one by one.

        Raises:
            NotAnnounced: The masker has no ``stream-pieces`` path.
            MaskerError: The masker failed the request.
        """
        raise NotAnnounced(STREAM_PIECES)

    @property
    def abandoned(self) -> str | None:
        """Why the masker was abandoned for the run, or ``None``: in-process maskers never are."""
        return None

    def restart(self) -> None:
        """Start the masker afresh, so that nothing kept from earlier requests survives."""

    def close(self) -> None:
        """Stop the masker and everything it started."""


class _Workdir:
    """A private directory for child plan files, removed with its contents."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="secref-masker-")
        self.path = Path(self._tmp.name)
        self.path.chmod(0o700)

    def cleanup(self) -> None:
        self._tmp.cleanup()


#: A masking function of the in-process maskers: the secrets and a text, the masked text.
MaskFunction = Callable[[Sequence[Secret], str], str]


class InProcessMasker(Masker):
    """A masker that is a Python function, reached without an adapter.

    The ``command`` path runs the child and masks its whole output once it has ended, as a
    buffering wrapper does; ``chunked`` instead masks each read as it arrives, as a naive
    streaming wrapper does.

    Args:
        name: The masker's name.
        version: Its version.
        function: The masking function.
        capabilities: The paths to announce.
        chunked: Mask each read of the child's output on its own.
    """

    def __init__(
        self,
        name: str,
        version: str,
        function: MaskFunction,
        capabilities: Iterable[str] = (TEXT, COMMAND),
        *,
        chunked: bool = False,
    ) -> None:
        self._info = MaskerInfo(name, version, frozenset(capabilities), "library")
        self._function = function
        self._chunked = chunked
        self._workdir = _Workdir()

    @property
    def info(self) -> MaskerInfo:
        """The masker's handshake."""
        return self._info

    def mask_text(self, secrets: Sequence[Secret], text: str) -> str:
        """Mask ``text`` whole (see :meth:`Masker.mask_text`)."""
        if TEXT not in self._info.capabilities:
            raise NotAnnounced(TEXT)
        return self._function(secrets, text)

    def run(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Run the child and mask what it writes (see :meth:`Masker.run`)."""
        if COMMAND not in self._info.capabilities:
            raise NotAnnounced(COMMAND)
        argv = child_command(pieces, self._workdir.path)
        try:
            with subprocess.Popen(argv, stdout=subprocess.PIPE) as process:
                assert process.stdout is not None
                reads: list[bytes] = []
                while chunk := os.read(process.stdout.fileno(), 65536):
                    reads.append(chunk)
                process.wait(DEFAULT_CALL_TIMEOUT)
        finally:
            # The plan holds the text, values included: it lives only as long as its child.
            Path(argv[-1]).unlink(missing_ok=True)
        if self._chunked:
            return "".join(self._function(secrets, chunk.decode("utf-8")) for chunk in reads)
        return self._function(secrets, b"".join(reads).decode("utf-8"))

    def mask_pieces(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Mask pieces as a stream (see :meth:`Masker.mask_pieces`)."""
        if STREAM_PIECES not in self._info.capabilities:
            raise NotAnnounced(STREAM_PIECES)
        if self._chunked:
            return "".join(self._function(secrets, piece) for piece in pieces)
        return self._function(secrets, "".join(pieces))

    def close(self) -> None:
        """Remove the plan files."""
        self._workdir.cleanup()


def _schema(name: str) -> dict[str, Any]:
    text = (
        resources.files("conformance")
        .joinpath("schemas", "masker", f"{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    document: dict[str, Any] = json.loads(text)
    return document


class MessageSchemas:
    """The protocol's JSON Schemas, loaded once: ``hello``, ``request`` and ``response``."""

    def __init__(self) -> None:
        self._validators = {
            name: jsonschema.Draft202012Validator(_schema(name))
            for name in ("hello", "request", "response")
        }

    def errors(self, name: str, message: Any) -> list[str]:
        """Return what is wrong with ``message`` as a ``name`` message, empty when valid.

        Args:
            name: ``hello``, ``request`` or ``response``.
            message: A decoded message.

        Returns:
            The validation errors' paths and messages, value-free only if the message is.
        """
        return [
            f"{'/'.join(str(part) for part in error.absolute_path) or '/'}: {error.message}"
            for error in self._validators[name].iter_errors(message)
        ]


def split_command(command: str | Sequence[str]) -> list[str]:
    """Return an adapter command as an argument list (a string is split as a shell would)."""
    return shlex.split(command) if isinstance(command, str) else list(command)


class SubprocessMasker(Masker):
    """A masker reached through an adapter subprocess (docs/masker-protocol.md).

    The adapter runs under the host path's supervision
    (:class:`~conformance.hosts._supervise.Supervised`): a session of its own, a marker in its
    environment, and the suite as child subreaper, so ending it ends every process it started,
    one that called ``setsid`` included. Its output is read by the host path's bounded framing
    (:mod:`conformance.hosts._framing`), which stops at the adapter's exit even when a
    descendant still holds the pipe, and every request is written without blocking, within the
    request's deadline. After :data:`MAX_CONSECUTIVE_FAILURES` requests in a row that failed to
    start the adapter or to get an answer, the masker is abandoned: every later request raises
    :class:`MaskerAbandonedError` at once, naming the cause.

    Args:
        command: The adapter's command line.
        start_timeout: Seconds the adapter has to say hello.
        call_timeout: Seconds one request has, from its first byte written to its answer read.

    Raises:
        MaskerStartError: The adapter could not be started, or its hello was not valid.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self._argv = split_command(command)
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._schemas = MessageSchemas()
        self._workdir = _Workdir()
        #: Every secret told to the adapter, by name and value: a name may come back with
        #: another value (MASK_KEY does), and the earlier one must still be cleaned.
        self._told: dict[tuple[str, str], Secret] = {}
        self._adapter: _Adapter | None = None
        self._next_id = 0
        self._failures = 0
        self._abandoned: str | None = None
        try:
            self._info = self._start()
        except MaskerStartError:
            self._workdir.cleanup()
            raise

    @property
    def info(self) -> MaskerInfo:
        """The masker's handshake."""
        return self._info

    @property
    def abandoned(self) -> str | None:
        """Why the masker was abandoned for the run, or ``None`` while it is not."""
        return self._abandoned

    def _start(self) -> MaskerInfo:
        try:
            adapter = _Adapter(self._argv)
        except OSError as error:
            raise MaskerStartError(
                f"cannot start the adapter: {error.strerror or type(error).__name__}"
            ) from None
        self._adapter = adapter
        try:
            hello = self._receive(time.monotonic() + self._start_timeout, "hello")
        except MaskerError as error:
            self._kill()
            raise MaskerStartError(str(error)) from None
        problems = self._schemas.errors("hello", hello)
        if problems:
            self._kill()
            raise MaskerStartError(f"the adapter's hello is not valid: {problems[0]}")
        if hello["protocol"] != PROTOCOL:
            self._kill()
            raise MaskerStartError(f"the adapter speaks another protocol, not {PROTOCOL}")
        return MaskerInfo(
            hello["masker"]["name"],
            hello["masker"]["version"],
            frozenset(hello["capabilities"]),
            hello["masker"].get("shape", "library"),
        )

    def _stderr_tail(self) -> str:
        adapter = self._adapter
        tail = adapter.stderr_tail() if adapter is not None else ""
        return inert(tail.strip().splitlines()[-1] if tail.strip() else "", self._told.values())

    def _receive(self, deadline: float, what: str) -> Any:
        adapter = self._adapter
        assert adapter is not None
        timeout = self._start_timeout if what == "hello" else self._call_timeout
        try:
            line = adapter.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            self._kill()
            raise MaskerError(f"the adapter sent no {what} within {timeout:g} s") from None
        if line is None:
            tail = self._stderr_tail()
            self._kill()
            raise MaskerError(
                f"the adapter ended before its {what}" + (f"; it said: {tail}" if tail else "")
            )
        if line is _TOO_LONG:
            self._kill()
            raise MaskerError(f"the adapter's {what} is longer than {MAX_LINE_BYTES} bytes")
        try:
            return json.loads(line)
        except (ValueError, RecursionError):
            self._kill()
            excerpt = inert(line.decode("utf-8", "replace"), self._told.values())
            raise MaskerError(f"the adapter's {what} is not JSON: {excerpt!r}") from None

    def _request(self, op: str, secrets: Sequence[Secret], **params: Any) -> str:
        if op not in self._info.capabilities:
            raise NotAnnounced(op)
        if self._abandoned is not None:
            raise MaskerAbandonedError(self._abandoned)
        try:
            answer = self._exchange(op, secrets, params)
        except MaskerError as error:
            self._count_failure(error)
            raise
        # An answer, a refusal included, is what the protocol asks: the count starts again.
        self._failures = 0
        if "error" in answer:
            # Cleaned of every value told so far: a refusal may quote an earlier request's.
            refusal = inert(answer["error"], self._told.values())
            raise MaskerError(f"the masker refused: {refusal}")
        output: str = answer["output"]
        return output

    def _count_failure(self, error: MaskerError) -> None:
        """Count one failure to start or to answer; abandon the masker at the bound.

        Raises:
            MaskerAbandonedError: This failure reached :data:`MAX_CONSECUTIVE_FAILURES`.
        """
        self._failures += 1
        if self._failures < MAX_CONSECUTIVE_FAILURES:
            return
        self._kill()
        self._abandoned = (
            f"the masker was abandoned after {self._failures} requests in a row that failed "
            f"to start it or to get an answer; the last: {error}"
        )
        raise MaskerAbandonedError(self._abandoned) from None

    def _exchange(
        self, op: str, secrets: Sequence[Secret], params: dict[str, Any]
    ) -> dict[str, Any]:
        """Write one request and read its answer, both within one call timeout."""
        if self._adapter is None or self._adapter.supervised.exited():
            self._kill()
            self._info = self._start()
        for secret in secrets:
            self._told[secret.name, secret.value] = secret
        self._next_id += 1
        message = {
            "id": self._next_id,
            "op": op,
            "secrets": [{"name": item.name, "value": item.value} for item in secrets],
            **params,
        }
        adapter = self._adapter
        assert adapter is not None
        deadline = time.monotonic() + self._call_timeout
        data = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            written = write_all(adapter.stdin_fd, data, self._call_timeout)
        except OSError:
            tail = self._stderr_tail()
            self._kill()
            raise MaskerError(
                "the adapter closed its standard input" + (f"; it said: {tail}" if tail else "")
            ) from None
        if not written:
            self._kill()
            raise MaskerError(
                f"the adapter did not read its request within {self._call_timeout:g} s "
                "(it stopped reading its standard input)"
            )
        answer = self._receive(deadline, "answer")
        problems = self._schemas.errors("response", answer)
        if problems:
            self._kill()
            shown = inert(problems[0], self._told.values())
            raise MaskerError(f"the adapter's answer is not valid: {shown}")
        if answer["id"] != self._next_id:
            self._kill()
            raise MaskerError("the adapter answered another request")
        result: dict[str, Any] = answer
        return result

    def mask_text(self, secrets: Sequence[Secret], text: str) -> str:
        """Send ``text`` to the masker whole (see :meth:`Masker.mask_text`)."""
        return self._request(TEXT, secrets, text=text)

    def run(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Have the wrapper run a child that writes ``pieces`` (see :meth:`Masker.run`)."""
        if COMMAND not in self._info.capabilities:
            raise NotAnnounced(COMMAND)
        if self._abandoned is not None:
            raise MaskerAbandonedError(self._abandoned)
        argv = child_command(pieces, self._workdir.path)
        try:
            return self._request(COMMAND, secrets, argv=argv)
        finally:
            Path(argv[-1]).unlink(missing_ok=True)

    def mask_pieces(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Feed ``pieces`` to a stream masker one by one (see :meth:`Masker.mask_pieces`)."""
        return self._request(STREAM_PIECES, secrets, pieces=list(pieces))

    def restart(self) -> None:
        """Stop the adapter and start it again.

        Raises:
            MaskerAbandonedError: The masker was abandoned, or this start made it so.
            MaskerStartError: The adapter could not be started again.
        """
        if self._abandoned is not None:
            raise MaskerAbandonedError(self._abandoned)
        self._shutdown()
        try:
            self._info = self._start()
        except MaskerStartError as error:
            self._count_failure(error)
            raise

    def _kill(self) -> None:
        adapter, self._adapter = self._adapter, None
        if adapter is not None:
            adapter.end()

    def _shutdown(self) -> None:
        adapter = self._adapter
        if adapter is None:
            return
        adapter.close_stdin()
        adapter.supervised.wait(SHUTDOWN_GRACE_SECONDS)
        # The whole tree goes, so a wrapper's children never outlive the run.
        self._kill()

    def close(self) -> None:
        """Stop the adapter, its children, and remove the plan files."""
        self._shutdown()
        self._workdir.cleanup()


#: What the stdout reader queues for a line over :data:`MAX_LINE_BYTES`.
_TOO_LONG: Final = b"\0too long"


class _Adapter:
    """One start of an adapter: its supervised process tree, its pipes and reader threads.

    Args:
        argv: The adapter's command.

    Raises:
        OSError: The command cannot be started.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        self.supervised = Supervised(argv, None, None)
        process = self.supervised.process
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.stdin_fd = process.stdin.fileno()
        # Writes never block: write_all waits for room within the request's deadline.
        os.set_blocking(self.stdin_fd, False)
        self.lines: queue.Queue[bytes | None] = queue.Queue(MAX_QUEUED_LINES)
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_READS_KEPT)
        self._stopped = threading.Event()
        self._readers = [
            threading.Thread(
                target=self._read_stdout,
                args=(process.stdout.fileno(),),
                name="secref-masker-stdout",
                daemon=True,
            ),
            threading.Thread(
                target=self._read_stderr,
                args=(process.stderr.fileno(),),
                name="secref-masker-stderr",
                daemon=True,
            ),
        ]
        for reader in self._readers:
            reader.start()

    def _put(self, item: bytes | None) -> None:
        """Queue ``item``, waiting for room only while the suite still reads."""
        while not self._stopped.is_set():
            try:
                self.lines.put(item, timeout=POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _read_stdout(self, fd: int) -> None:
        try:
            read_lines(
                fd,
                LineFramer(MAX_LINE_BYTES),
                self._put,
                exited=self.supervised.exited,
                stopped=self._stopped.is_set,
            )
        except LineTooLongError:
            self._put(_TOO_LONG)
            return
        except (OSError, ValueError):
            pass  # the pipe was closed under the reader: the adapter has ended
        self._put(None)

    def _read_stderr(self, fd: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            pump(
                fd,
                lambda chunk: self._stderr.append(chunk.decode("utf-8", "replace")),
                exited=self.supervised.exited,
                stopped=self._stopped.is_set,
            )

    def stderr_tail(self) -> str:
        """Return the last :data:`STDERR_TAIL_CHARS` characters the adapter wrote on stderr."""
        return "".join(self._stderr)[-STDERR_TAIL_CHARS:]

    def close_stdin(self) -> None:
        """Close the adapter's standard input, its cue to exit."""
        stdin = self.supervised.process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def end(self) -> None:
        """Kill the adapter's whole tree, stop the readers and close every pipe (bounded)."""
        self._stopped.set()
        self.supervised.kill_tree()
        # The adapter itself was sent SIGKILL: collect its status, so no zombie is left.
        self.supervised.wait(KILL_WAIT_SECONDS)
        for reader in self._readers:
            reader.join(READER_JOIN_SECONDS)
        process = self.supervised.process
        self.close_stdin()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
