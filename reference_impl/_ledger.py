"""Step [14], the operation ledger: one JSON line per call that reaches the pre-pass.

This module owns writing and reading ledger records (decisions R6.2, R6.7). The file is created
readable by its owner only and opened once, with ``O_APPEND``; each record is one ``write`` of
one whole line under a lock, so concurrent calls never interleave. A reader skips a torn last
line and reports it. Records are built by the registry from the agent's own arguments: this
module must never be handed a substituted argument or an unscrubbed text.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from reference_impl._types import Disposition, LedgerRecord

#: Owner read and write only (decisions R6.7).
LEDGER_FILE_MODE = 0o600


class Ledger(Protocol):
    """Receives one record per call."""

    def append(self, record: LedgerRecord) -> None:
        """Persist ``record``."""
        ...


class MemoryLedger:
    """Keeps records in a list, for tests that do not need the file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[LedgerRecord] = []

    def append(self, record: LedgerRecord) -> None:
        """Keep ``record``."""
        with self._lock:
            self.records.append(record)


def encode_record(record: LedgerRecord) -> bytes:
    """Return one ledger line: compact JSON, ASCII only, ending in a newline."""
    return (json.dumps(record.to_json_dict(), separators=(",", ":")) + "\n").encode("ascii")


class JsonlLedger:
    """Appends records to a JSON Lines file created with mode 0600.

    The file is opened at the first record and kept open, so a record costs one ``write``, not
    an ``open`` and a ``close`` as well. :meth:`close` releases the descriptor, and so does the
    ledger's collection; a record appended after :meth:`close`, or after a failed write, opens the
    file again. A file moved away while it is open keeps receiving records until then.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._descriptor: int | None = None
        self._release: Callable[[], object] | None = None

    def append(self, record: LedgerRecord) -> None:
        """Append ``record`` as one line, in one write."""
        line = encode_record(record)
        with self._lock:
            descriptor = self._descriptor
            if descriptor is None:
                descriptor = os.open(
                    self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, LEDGER_FILE_MODE
                )
                self._descriptor = descriptor
                self._release = weakref.finalize(self, os.close, descriptor)
            try:
                written = 0
                while written < len(line):
                    written += os.write(descriptor, line[written:])
            except BaseException:
                # As when every record opened the file: the next record starts afresh.
                self._close_locked()
                raise

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
    )


def read_ledger(path: str | os.PathLike[str]) -> LedgerContents:
    """Read a ledger file, skipping and reporting what is not a whole record.

    Args:
        path: The ledger file. A missing file reads as empty.

    Returns:
        The records, and one problem per line skipped. A last line without its newline, left by
        a crash mid-write, is reported as torn.
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
            decoded = json.loads(line)
            if not isinstance(decoded, dict):
                raise TypeError("not an object")
            records.append(decode_record(decoded))
        except (ValueError, KeyError, TypeError) as error:
            problems.append(f"line {number}: not a ledger record ({type(error).__name__})")
    if torn:
        problems.append(f"line {len(lines) + 1}: torn last line of {len(torn)} bytes skipped")
    return LedgerContents(tuple(records), tuple(problems))
