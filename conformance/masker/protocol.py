"""The suite's side of the masker protocol: the maskers a check can drive, and how it reaches them.

This module owns the :class:`Masker` interface the checks use (mask a text, run a child under a
wrapper, feed a stream in pieces, restart), the adapter client that speaks the protocol of
docs/masker-protocol.md over newline-delimited JSON to a subprocess, and the in-process maskers
the harness's own tests use (the reference scrubber and the broken maskers of
:mod:`conformance.masker.mutants`). A path a masker did not announce raises
:class:`NotAnnounced`, which the checks turn into "unchecked", never a pass.

It must never let an adapter hang the run (every wait has a timeout), never keep more of an
adapter's output than its bounds, never leave a process it started behind, and never put a
secret value in an error message: adapter text is quoted only after :func:`inert` has cleaned it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any, Final

import jsonschema

from conformance.canary import required_forms

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

#: A window of this many characters of a value may not appear in any report (decisions S1.5).
CANARY_RUN: Final = 8


class NotAnnounced(Exception):  # noqa: N818 - a condition the checks test for, not a failure
    """The masker did not announce the capability a check needs."""


class MaskerError(Exception):
    """The masker failed one request: it crashed, hung, refused, or wrote something unreadable."""


class MaskerStartError(MaskerError):
    """The adapter could not be started or spoke another protocol: the run cannot go on."""


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
    # Control characters would act on a terminal; they are shown as escapes instead.
    return "".join(
        f"\\x{ord(char):02x}" if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 else char
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

    Args:
        command: The adapter's command line.
        start_timeout: Seconds the adapter has to say hello.
        call_timeout: Seconds the adapter has to answer one request.

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
        self._told: dict[str, Secret] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue(MAX_QUEUED_LINES)
        self._stderr: collections.deque[str] = collections.deque(maxlen=64)
        self._next_id = 0
        try:
            self._info = self._start()
        except MaskerStartError:
            self._workdir.cleanup()
            raise

    @property
    def info(self) -> MaskerInfo:
        """The masker's handshake."""
        return self._info

    def _start(self) -> MaskerInfo:
        try:
            process = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            raise MaskerStartError(f"cannot start the adapter: {error.strerror}") from None
        self._process = process
        self._lines = queue.Queue(MAX_QUEUED_LINES)
        assert process.stdout is not None
        assert process.stderr is not None
        threading.Thread(target=self._read_stdout, args=(process.stdout,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(process.stderr,), daemon=True).start()
        try:
            hello = self._receive(self._start_timeout, "hello")
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

    def _read_stdout(self, stream: IO[bytes]) -> None:
        lines = self._lines
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                lines.put(None)
                return
            lines.put(line)
            if len(line) > MAX_LINE_BYTES:
                lines.put(None)
                return

    def _read_stderr(self, stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), 4096):
            self._stderr.append(chunk.decode("utf-8", "replace"))

    def _stderr_tail(self) -> str:
        tail = "".join(self._stderr)[-STDERR_TAIL_CHARS:]
        return inert(tail.strip().splitlines()[-1] if tail.strip() else "", self._told.values())

    def _receive(self, timeout: float, what: str) -> Any:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            raise MaskerError(f"the adapter sent no {what} within {timeout:g} s") from None
        if line is None:
            self._kill()
            tail = self._stderr_tail()
            raise MaskerError(
                f"the adapter ended before its {what}" + (f"; it said: {tail}" if tail else "")
            )
        if len(line) > MAX_LINE_BYTES:
            self._kill()
            raise MaskerError(f"the adapter's {what} is longer than {MAX_LINE_BYTES} bytes")
        try:
            return json.loads(line)
        except ValueError:
            self._kill()
            excerpt = inert(line.decode("utf-8", "replace"), self._told.values())
            raise MaskerError(f"the adapter's {what} is not JSON: {excerpt!r}") from None

    def _request(self, op: str, secrets: Sequence[Secret], **params: Any) -> str:
        if op not in self._info.capabilities:
            raise NotAnnounced(op)
        if self._process is None or self._process.poll() is not None:
            self._info = self._start()
        for secret in secrets:
            self._told[secret.name] = secret
        self._next_id += 1
        message = {
            "id": self._next_id,
            "op": op,
            "secrets": [{"name": item.name, "value": item.value} for item in secrets],
            **params,
        }
        process = self._process
        assert process is not None
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
            process.stdin.flush()
        except OSError:
            self._kill()
            raise MaskerError(f"the adapter stopped reading; {self._stderr_tail()}") from None
        answer = self._receive(self._call_timeout, "answer")
        problems = self._schemas.errors("response", answer)
        if problems:
            self._kill()
            raise MaskerError(f"the adapter's answer is not valid: {inert(problems[0], secrets)}")
        if answer["id"] != self._next_id:
            self._kill()
            raise MaskerError("the adapter answered another request")
        if "error" in answer:
            raise MaskerError(f"the masker refused: {inert(answer['error'], secrets)}")
        output: str = answer["output"]
        return output

    def mask_text(self, secrets: Sequence[Secret], text: str) -> str:
        """Send ``text`` to the masker whole (see :meth:`Masker.mask_text`)."""
        return self._request(TEXT, secrets, text=text)

    def run(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Have the wrapper run a child that writes ``pieces`` (see :meth:`Masker.run`)."""
        if COMMAND not in self._info.capabilities:
            raise NotAnnounced(COMMAND)
        argv = child_command(pieces, self._workdir.path)
        try:
            return self._request(COMMAND, secrets, argv=argv)
        finally:
            Path(argv[-1]).unlink(missing_ok=True)

    def mask_pieces(self, secrets: Sequence[Secret], pieces: Sequence[str]) -> str:
        """Feed ``pieces`` to a stream masker one by one (see :meth:`Masker.mask_pieces`)."""
        return self._request(STREAM_PIECES, secrets, pieces=list(pieces))

    def restart(self) -> None:
        """Stop the adapter and start it again."""
        self._shutdown()
        self._info = self._start()

    def _kill(self) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(SHUTDOWN_GRACE_SECONDS)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._process = None

    def _shutdown(self) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(SHUTDOWN_GRACE_SECONDS)
        # The whole group goes, so a wrapper's children never outlive the run.
        self._kill()

    def close(self) -> None:
        """Stop the adapter, its children, and remove the plan files."""
        self._shutdown()
        self._workdir.cleanup()
