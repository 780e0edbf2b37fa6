"""Mutants that break the ledger and the debug log (decision R6).

This module owns the broken reference hosts that write a record wrongly (a field renamed, the
substituted arguments kept, a refusal left out), keep the ledger file unsafely (its mode, a
symlink followed, two writes unlocked) or read it back wrongly (a torn line fatal, damage called
torn). Each entry is a :class:`~conformance.selftest.base.Mutant`. It changes behaviour only and
never prints a value.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant, Patch

_local = threading.local()
_REG = "reference_impl._registry"


def _remember_substitution(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def substitute(parsed: Any, resolved: Any) -> Any:
        arguments = original(parsed, resolved)
        _local.substituted = arguments.raw
        return arguments

    return substitute


def _ledger_from_substituted(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        raw = getattr(_local, "substituted", None)
        _local.substituted = None
        if raw is not None:
            fields["sanitized_args"] = raw
        return original(**fields)

    return build


def _log_substituted(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        raw = getattr(_local, "substituted", None)
        _local.substituted = None
        if raw is not None:
            self.log.debug("call %s: substituted %s", call.id, raw)
        return original(self, call, *args)

    return record


def _refs_duplicated(original: Any) -> Callable[..., Any]:
    def build(**fields: Any) -> Any:
        refs = tuple(fields["secret_refs"])
        return original(**{**fields, "secret_refs": refs + refs[:1]})

    return build


def _refusing(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def refuse(self: Any, call: Any, refusal: Any) -> Any:
        _local.refusing = True
        try:
            return original(self, call, refusal)
        finally:
            _local.refusing = False

    return refuse


def _record_unless_refusing(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def record(self: Any, call: Any, *args: Any) -> Any:
        if getattr(_local, "refusing", False):
            return None
        return original(self, call, *args)

    return record


def _redaction_stops_at_first_brace(original: Callable[[str, int], int]) -> Callable[..., int]:
    """A malformed candidate's redaction ends at the first ``}``, balanced or not."""

    @functools.wraps(original)
    def redaction_end(text: str, body_start: int) -> int:
        close = text.find("}", body_start)
        if close < 0:
            return len(text)
        return close + 2 if text.startswith("}", close + 1) else close + 1

    return redaction_end


def _ledger_export(name: str, transform: Callable[[Any], Any]) -> tuple[Patch, Patch]:
    """Patch a ledger function where it is defined and where the package re-exports it, so
    that callers through either name meet the mutant."""
    return (("reference_impl._ledger", name, transform), ("reference_impl", name, transform))


def _provider_renamed(original: Callable[..., dict[str, object]]) -> Callable[..., Any]:
    """The record's providerId is written as provider."""

    @functools.wraps(original)
    def to_json_dict(self: Any) -> dict[str, object]:
        data = original(self)
        return {("provider" if key == "providerId" else key): item for key, item in data.items()}

    return to_json_dict


def _duration_always_zero(original: Callable[..., dict[str, object]]) -> Callable[..., Any]:
    """Every record's durationMs is written as 0."""

    @functools.wraps(original)
    def to_json_dict(self: Any) -> dict[str, object]:
        return {**original(self), "durationMs": 0}

    return to_json_dict


def _forbidden_as_policy_denied(original: Any) -> Callable[..., Any]:
    """SECRET_FORBIDDEN is recorded as POLICY_DENIED."""
    from reference_impl._types import Disposition

    def build(**fields: Any) -> Any:
        if fields["approval_disposition"] is Disposition.SECRET_FORBIDDEN:
            fields["approval_disposition"] = Disposition.POLICY_DENIED
        return original(**fields)

    return build


def _secret_refs_required(original: Callable[..., Any]) -> Callable[..., Any]:
    """A record without secretRefs fails to decode."""

    @functools.wraps(original)
    def decode(data: dict[str, object]) -> Any:
        if "secretRefs" not in data:
            raise KeyError("secretRefs")
        return original(data)

    return decode


def _two_writes_unlocked(original: Callable[..., None]) -> Callable[..., None]:
    """Each record is two writes outside the lock: its text, then its newline."""
    from reference_impl import _ledger

    @functools.wraps(original)
    def append(self: Any, record: Any) -> None:
        line = _ledger.encode_record(record)
        descriptor = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, _ledger.LEDGER_FILE_MODE
        )
        try:
            os.write(descriptor, line[:-1])
            time.sleep(0)  # another writer may run between the text and its newline
            os.write(descriptor, b"\n")
        finally:
            os.close(descriptor)

    return append


def _no_record_start(_original: Any) -> bytes:
    """The reader no longer looks for a whole record after a torn prefix on one line."""
    return b"\x00no record starts here\x00"


def _secret_refs_loose(original: Callable[..., Any]) -> Callable[..., Any]:
    """A record whose secretRefs is not a list of names is read anyway, coerced to strings."""

    @functools.wraps(original)
    def decode(data: dict[str, object]) -> Any:
        refs = data.get("secretRefs")
        if refs is not None and not isinstance(refs, list):
            refs = list(str(refs))
        if isinstance(refs, list):
            data = {**data, "secretRefs": [str(ref) for ref in refs]}
        return original(data)

    return decode


def _damage_called_torn(original: Callable[..., Any]) -> Callable[..., Any]:
    """Every damaged line is reported as a torn line, whatever its damage."""

    @functools.wraps(original)
    def read(path: Any) -> Any:
        contents = original(path)
        problems = tuple(
            problem.split(":", 1)[0] + ": torn line skipped" for problem in contents.problems
        )
        return type(contents)(contents.records, problems)

    return read


def _every_open_failure_a_fifo(original: Callable[..., Any]) -> Callable[..., Any]:
    """Every ledger open that fails is reported as a FIFO at the path, whatever the cause."""
    from reference_impl import LedgerError

    @functools.wraps(original)
    def open_locked(self: Any) -> Any:
        try:
            return original(self)
        except LedgerError as error:
            raise LedgerError(error.errno, f"the ledger {self.path} is a FIFO") from None

    return open_locked


def _torn_line_fatal(original: Callable[..., Any]) -> Callable[..., Any]:
    """A reader meeting a torn last line gives up on the whole file."""

    @functools.wraps(original)
    def read(path: Any) -> Any:
        contents = original(path)
        if any("torn" in problem for problem in contents.problems):
            raise ValueError("the ledger's last line is torn")
        return contents

    return read


def _seed_truncated(original: Callable[..., None]) -> Callable[..., None]:
    """The ledger file is emptied when the host first writes to it."""

    @functools.wraps(original)
    def append(self: Any, record: Any) -> None:
        if not getattr(self, "_mutant_opened", False):
            self._mutant_opened = True
            with open(self.path, "wb"):
                pass
        original(self, record)

    return append


def _follows_symlinks(original: int) -> int:
    """The ledger opens its path with no O_NOFOLLOW, so a symbolic link there is followed."""
    return original & ~os.O_NOFOLLOW


def _failure_never_refuses(original: Callable[..., Any]) -> Callable[..., Any]:
    """The registry never asks whether the ledger can take a record: every call runs."""

    @functools.wraps(original)
    def fault(self: Any) -> Any:
        return None

    return fault


def _deep_line_raises(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger reader decodes a line without catching the decoder's RecursionError."""
    from reference_impl import _ledger

    @functools.wraps(original)
    def decode(line: bytes) -> Any:
        decoded = json.loads(line)
        if not isinstance(decoded, dict):
            raise TypeError("not an object")
        return _ledger.decode_record(decoded)

    return decode


def _appends_onto_torn_line(original: Callable[..., Any]) -> Callable[..., Any]:
    """The ledger never looks at the file's last byte, so a record is glued to a torn line."""

    @functools.wraps(original)
    def needs_newline(descriptor: int) -> bool:
        return False

    return staticmethod(needs_newline)


def _describe_lets_base_exceptions_out(original: Callable[..., Any]) -> Callable[..., Any]:
    """Formatting a handler's exception catches Exception only, as it once did."""

    @functools.wraps(original)
    def describe(error: BaseException | None) -> str:
        try:
            return str(error)
        except Exception:
            return type(error).__name__

    return describe


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "ledger-substituted-args",
        "LEDG-004",
        "The ledger's sanitizedArgs is built from the substituted arguments.",
        (
            (_REG, "substitute", _remember_substitution),
            (_REG, "LedgerRecord", _ledger_from_substituted),
        ),
    ),
    Mutant(
        "debug-log-holds-value",
        "LOG-001",
        "A DEBUG log record quotes the substituted arguments.",
        (
            (_REG, "substitute", _remember_substitution),
            (_REG, "Registry._record", _log_substituted),
        ),
        via="driver",
    ),
    Mutant(
        "secret-refs-duplicated",
        "LEDG-002",
        "The ledger's secretRefs repeats the first reference.",
        ((_REG, "LedgerRecord", _refs_duplicated),),
        via="driver",
    ),
    Mutant(
        "refusals-not-recorded",
        "LEDG-005",
        "A refused call writes no ledger record.",
        (
            (_REG, "Registry._refuse", _refusing),
            (_REG, "Registry._record", _record_unless_refusing),
        ),
        via="driver",
    ),
    Mutant(
        "redaction-stops-at-first-brace",
        "LEDG-007",
        "sanitizedArgs redacts a malformed candidate only up to its first }, so text after "
        "balanced inner braces stays visible.",
        (("reference_impl._sanitize", "_redaction_end", _redaction_stops_at_first_brace),),
    ),
    Mutant(
        "ledger-field-renamed",
        "LEDG-001",
        "The ledger writes providerId as provider.",
        (("reference_impl._types", "LedgerRecord.to_json_dict", _provider_renamed),),
        via="driver",
    ),
    Mutant(
        "ledger-duration-zero",
        "LEDG-021",
        "Every ledger record's durationMs reads 0, whatever the call took.",
        (("reference_impl._types", "LedgerRecord.to_json_dict", _duration_always_zero),),
        via="driver",
    ),
    Mutant(
        "old-records-undecodable",
        "LEDG-003",
        "A ledger record without secretRefs fails to decode.",
        _ledger_export("decode_record", _secret_refs_required),
        driver=False,
    ),
    Mutant(
        "forbidden-recorded-as-denied",
        "LEDG-008",
        "SECRET_FORBIDDEN is recorded in the ledger as POLICY_DENIED.",
        ((_REG, "LedgerRecord", _forbidden_as_policy_denied),),
        via="driver",
    ),
    Mutant(
        "ledger-mode-0644",
        "LEDG-009",
        "The ledger file is created with mode 0644, readable by everyone.",
        (("reference_impl._ledger", "LEDGER_FILE_MODE", lambda _original: 0o644),),
        driver=False,
    ),
    Mutant(
        "ledger-two-writes",
        "LEDG-010",
        "Each ledger record is two writes outside the lock, its text then its newline.",
        (("reference_impl._ledger", "JsonlLedger.append", _two_writes_unlocked),),
        driver=False,
    ),
    Mutant(
        "torn-line-fatal",
        "LEDG-011",
        "Reading a ledger whose last line is torn fails instead of skipping the line.",
        _ledger_export("read_ledger", _torn_line_fatal),
        driver=False,
    ),
    Mutant(
        "ledger-follows-symlinks",
        "LEDG-012",
        "The ledger is opened through a symbolic link at its path.",
        (("reference_impl._ledger", "_OPEN_FLAGS", _follows_symlinks),),
        driver=False,
    ),
    Mutant(
        "ledger-failure-runs-calls",
        "LEDG-013",
        "After an append fails, later calls still run.",
        ((_REG, "Registry._ledger_fault", _failure_never_refuses),),
        driver=False,
    ),
    Mutant(
        "ledger-error-misnamed",
        "LEDG-012",
        "Every ledger path the reference host refuses is reported as a FIFO, a symbolic link, a "
        "directory and a missing parent directory included, so the error misleads the operator.",
        (("reference_impl._ledger", "JsonlLedger._open_locked", _every_open_failure_a_fifo),),
        driver=False,
    ),
    Mutant(
        "damage-called-torn",
        "LEDG-014",
        "The ledger reader reports every line it skips as torn, a whole record with a field "
        "missing or of the wrong type included, so its report misleads about the damage.",
        _ledger_export("read_ledger", _damage_called_torn),
        driver=False,
    ),
    Mutant(
        "glued-record-dropped",
        "LEDG-011",
        "A whole record appended onto a torn line without a newline is lost with the torn "
        "prefix instead of being read.",
        (("reference_impl._ledger", "RECORD_START", _no_record_start),),
        driver=False,
    ),
    Mutant(
        "secret-refs-not-validated",
        "LEDG-014",
        "A ledger line whose secretRefs is not a list of names is read as a record, its "
        "secretRefs coerced to strings, instead of being skipped and reported.",
        (("reference_impl._ledger", "decode_record", _secret_refs_loose),),
        driver=False,
    ),
    Mutant(
        "ledger-deep-line-raises",
        "LEDG-014",
        "Reading a ledger line nested too deeply raises RecursionError.",
        (("reference_impl._ledger", "_decode_line", _deep_line_raises),),
        driver=False,
    ),
    Mutant(
        "ledger-appends-onto-torn-line",
        "LEDG-015",
        "A record appended after a torn last line is glued to it.",
        (("reference_impl._ledger", "JsonlLedger._needs_newline", _appends_onto_torn_line),),
        driver=False,
    ),
    Mutant(
        "hostile-exception-text-escapes",
        "LEDG-016",
        "A handler exception whose text raises a BaseException makes invoke raise.",
        (("reference_impl._execute", "_describe", _describe_lets_base_exceptions_out),),
        driver=False,
    ),
    Mutant(
        "old-records-undecodable-via-driver",
        "LEDG-003",
        "A ledger record without secretRefs fails to decode, seen through a seeded ledger.",
        _ledger_export("decode_record", _secret_refs_required),
        via="driver",
    ),
    Mutant(
        "existing-ledger-emptied",
        "LEDG-020",
        "The host empties an existing ledger file when it first writes to it.",
        (("reference_impl._ledger", "JsonlLedger.append", _seed_truncated),),
        via="driver",
    ),
)
