"""Step [14], the operation ledger: one JSON line per call that reaches the pre-pass.

This module owns writing and reading ledger records (decisions R6.2, R6.7). The file is opened
once, without following a symbolic link and without blocking, and refused unless it is a regular
file; it is created readable by its owner only, and an existing file with wider permissions is
tightened to 0600. Each record is one ``write`` of one whole line under a lock, with
``O_APPEND``, so concurrent calls never interleave; a record that follows a torn line starts on a
new line. An append that fails marks the ledger failed, and a failed ledger refuses every later
call (the registry asks :meth:`JsonlLedger.ready` before a call runs). A reader skips and
reports what is not a record and never raises, however deep a line nests. Records are built by
the registry from the agent's own arguments: this module must never be handed a substituted
argument or an unscrubbed text, and its errors name the file and the kind of failure only.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from reference_impl._files import file_kind
from reference_impl._types import Disposition, LedgerRecord

#: Owner read and write only (decisions R6.7).
LEDGER_FILE_MODE = 0o600

#: Opens the ledger for appending: never through a symbolic link in the last component, and
#: without blocking, so that a FIFO there is refused rather than waited on (decisions R6.7).
#: Reading too, so that opening can look at the last byte for a torn line.
_OPEN_FLAGS: Final = (
    os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
)

#: How every record line starts: ``to_json_dict`` puts ``id`` first and ``encode_record`` writes
#: compact JSON, and inside a JSON string a quote is always escaped, so these bytes begin a
#: record and occur nowhere else in one. A reader finds a whole record glued to a torn line by
#: them.
RECORD_START: Final = b'{"id":"'


class LedgerError(OSError):
    """The ledger cannot be opened or written; the message names the file and the kind only."""

    def __str__(self) -> str:
        return str(self.strerror)


class Ledger(Protocol):
    """Receives one record per call."""

    def ready(self) -> str | None:
        """Return ``None`` when a record can be written now, or why not, in static words."""
        ...

    def append(self, record: LedgerRecord) -> None:
        """Persist ``record``.

        Raises:
            OSError: The record could not be written.
        """
        ...


class MemoryLedger:
    """Keeps records in a list, for tests that do not need the file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[LedgerRecord] = []

    def ready(self) -> str | None:
        """A list is always ready."""
        return None

    def append(self, record: LedgerRecord) -> None:
        """Keep ``record``."""
        with self._lock:
            self.records.append(record)


def encode_record(record: LedgerRecord) -> bytes:
    """Return one ledger line: compact JSON, ASCII only, ending in a newline."""
    return (json.dumps(record.to_json_dict(), separators=(",", ":")) + "\n").encode("ascii")


def errno_name(error: OSError) -> str:
    """Return an error's errno name (``ENOSPC``), never its message, which may name a path."""
    if error.errno is not None and error.errno in errno.errorcode:
        return errno.errorcode[error.errno]
    return type(error).__name__


class JsonlLedger:
    """Appends records to a JSON Lines file created with mode 0600.

    The file is opened by :meth:`open` (a host calls it at start-up, so that a bad path is
    refused before any call runs) or else at the first record, and kept open, so a record costs
    one ``write``. Opening refuses a symbolic link, a directory, a FIFO, a device or anything but
    a regular file, and tightens a file with wider permissions to 0600. When the file does not
    end with a newline (a crash or a full disk left a torn line), the next record starts with
    one, so the torn line costs only itself.

    An append that fails marks the ledger failed for good: :meth:`ready` says so from then on,
    and the registry runs no further call, because a call runs only when its record can be
    written. :meth:`close` releases the descriptor, and so does the ledger's collection; a record
    appended after :meth:`close` opens the file again. A file moved away while it is open keeps
    receiving records until then.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._descriptor: int | None = None
        self._release: Callable[[], object] | None = None
        self.failure: str | None = None

    def open(self) -> None:
        """Open the file now, checking it as the first record would.

        Raises:
            LedgerError: The path is a symbolic link, not a regular file, or cannot be opened.
        """
        with self._lock:
            self._open_locked()

    def ready(self) -> str | None:
        """Return ``None`` when the file is open and no append has failed, or why not."""
        with self._lock:
            if self.failure is not None:
                return self.failure
            try:
                self._open_locked()
            except OSError as error:
                return str(error)
            return None

    def _open_locked(self) -> int:
        descriptor = self._descriptor
        if descriptor is not None:
            return descriptor
        what = f"the ledger {self.path}"
        try:
            descriptor = os.open(self.path, _OPEN_FLAGS, LEDGER_FILE_MODE)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise LedgerError(
                    errno.ELOOP, f"{what} is a symbolic link, which is never followed"
                ) from None
            if error.errno == errno.EISDIR:
                raise LedgerError(
                    error.errno, f"{what} is a directory, not a regular file"
                ) from None
            if error.errno == errno.ENXIO:
                # O_NONBLOCK: a FIFO nobody reads refuses the open instead of waiting.
                raise LedgerError(error.errno, f"{what} is a FIFO, not a regular file") from None
            raise LedgerError(
                error.errno, f"{what} cannot be opened ({errno_name(error)})"
            ) from None
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise LedgerError(
                    errno.EINVAL, f"{what} is {file_kind(status.st_mode)}, not a regular file"
                )
            if stat.S_IMODE(status.st_mode) & ~LEDGER_FILE_MODE:
                # An existing file others could read is tightened before anything is written.
                os.fchmod(descriptor, LEDGER_FILE_MODE)
        except LedgerError:
            os.close(descriptor)
            raise
        except OSError as error:
            os.close(descriptor)
            raise LedgerError(
                error.errno, f"{what} cannot be checked ({errno_name(error)})"
            ) from None
        self._descriptor = descriptor
        self._release = weakref.finalize(self, os.close, descriptor)
        return descriptor

    def append(self, record: LedgerRecord) -> None:
        """Append ``record`` as one line, in one write.

        Raises:
            LedgerError: The file cannot be opened or the write failed; the ledger is then
                marked failed.
        """
        line = encode_record(record)
        with self._lock:
            try:
                descriptor = self._open_locked()
                # The lock on the file, not just the thread lock: another process's record is
                # never between this one's look at the last byte and its write. A writer
                # killed mid-write releases it as it dies, its torn line then being seen here.
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                try:
                    if self._needs_newline(descriptor):
                        line = b"\n" + line
                    written = 0
                    while written < len(line):
                        written += os.write(descriptor, line[written:])
                finally:
                    fcntl.flock(descriptor, fcntl.LOCK_UN)
            except OSError as error:
                # The next open looks at the file's last byte again, so a record written
                # after this one, by this process or another, starts on a new line.
                self._close_locked()
                if not isinstance(error, LedgerError):
                    error = LedgerError(
                        error.errno,
                        f"the ledger {self.path} could not be written ({errno_name(error)})",
                    )
                self.failure = str(error)
                raise error from None
            except BaseException:
                self._close_locked()
                raise

    @staticmethod
    def _needs_newline(descriptor: int) -> bool:
        """Return whether the file ends in a torn line, which the next record must not extend."""
        size = os.fstat(descriptor).st_size
        return size > 0 and os.pread(descriptor, 1, size - 1) != b"\n"

    def close(self) -> None:
        """Release the file; the next record, if any, opens it again."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        release, self._release, self._descriptor = self._release, None, None
        if release is not None:
            release()


@dataclass(frozen=True, slots=True)
class LedgerContents:
    """What a ledger file holds: its records and what could not be read."""

    records: tuple[LedgerRecord, ...]
    problems: tuple[str, ...] = field(default=())


def decode_record(data: dict[str, object]) -> LedgerRecord:
    """Build a record from one decoded line; a record without ``secretRefs`` has none.

    ``operatorAsked`` is read when present; a record without it says nothing of the operator.

    Raises:
        KeyError, ValueError, TypeError: The line is not a ledger record.
    """
    refs = data.get("secretRefs") or []
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        raise TypeError("secretRefs is not a list of names")
    duration = data["durationMs"]
    if not isinstance(duration, int):
        raise TypeError("durationMs is not an integer")
    snippet = data.get("errorSnippet")
    asked = data.get("operatorAsked")
    if asked is not None and not isinstance(asked, bool):
        raise TypeError("operatorAsked is not a boolean")
    return LedgerRecord(
        id=str(data["id"]),
        timestamp=str(data["timestamp"]),
        tool_name=str(data["toolName"]),
        provider_id=str(data["providerId"]),
        policy_applied=str(data["policyApplied"]),
        approval_disposition=Disposition(data["approvalDisposition"]),
        duration_ms=duration,
        is_error=bool(data["isError"]),
        sanitized_args=str(data["sanitizedArgs"]),
        error_snippet=None if snippet is None else str(snippet),
        secret_refs=tuple(refs),
        operator_asked=asked,
    )


def _decode_line(line: bytes) -> LedgerRecord:
    """Decode one line as a record.

    Raises:
        ValueError, KeyError, TypeError: The line is not a record.
    """
    try:
        decoded = json.loads(line)
    except RecursionError:
        # The decoder counts its depth and gives up long before the stack would run out.
        raise ValueError("nested too deeply") from None
    if not isinstance(decoded, dict):
        raise TypeError("not an object")
    return decode_record(decoded)


def read_ledger(path: str | os.PathLike[str]) -> LedgerContents:
    """Read a ledger file, skipping and reporting what is not a whole record.

    A line that is not a record is skipped and reported. When such a line holds a whole record
    after a torn prefix (a writer that did not know the line before it was torn), the record is
    read and only the prefix is reported as torn. A last line without its newline, left by a
    crash mid-write, is reported as torn. Nothing in the file makes this function raise.

    Args:
        path: The ledger file. A missing file reads as empty.

    Returns:
        The records, and one problem per line skipped.

    Raises:
        OSError: The file exists but cannot be read.
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return LedgerContents(())
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    records: list[LedgerRecord] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(_decode_line(line))
            continue
        except (ValueError, KeyError, TypeError) as error:
            failure = type(error).__name__
        start = line.rfind(RECORD_START)
        if start > 0:
            try:
                records.append(_decode_line(line[start:]))
            except (ValueError, KeyError, TypeError):
                pass
            else:
                problems.append(f"line {number}: torn line of {start} bytes skipped")
                continue
        if line.startswith(RECORD_START) and failure == "JSONDecodeError":
            # The start of a record cut short, then a newline from the next writer.
            problems.append(f"line {number}: torn line of {len(line)} bytes skipped")
        else:
            problems.append(f"line {number}: not a ledger record ({failure})")
    if torn:
        problems.append(f"line {len(lines) + 1}: torn last line of {len(torn)} bytes skipped")
    return LedgerContents(tuple(records), tuple(problems))
