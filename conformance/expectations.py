"""A host team's expectations file: known failures and flaky checks, applied strictly.

This module owns reading ``--expectations FILE`` (JSON or YAML, checked against
``conformance/schemas/expectations.schema.json``) and applying it to a run's check results. A
failing or errored check that a known-failure entry matches becomes ``baselined``: the run can
pass, and the report shows each MUST it fails as "non-conformant (baselined)". An entry whose
matched checks all pass is an unexpected pass, and fails the run, so a fixed bug cannot stay
listed. A flaky entry forgives nothing here (decisions S1.6): it lets a check that failed
without finding a value run again, a bounded number of times, during the run
(:mod:`conformance._rerun`); a check that then passed is ``flaky`` and holds, and every other
failure stays a failure. A leak is never flaky, and no entry touches a check that met a host
restarting as another (decisions S1.8). It reads only the file it is given and reports only
IDs, reasons and issue links, never a value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from conformance.outcomes import Outcome

if TYPE_CHECKING:  # report.py imports this module
    from conformance.report import CheckResult

#: The format version this module reads.
EXPECTATIONS_VERSION: Final = 1

#: The requirement outcome of a MUST whose every failure is baselined (and the verdict of a run
#: whose every failure is).
BASELINED_REQUIREMENT: Final = "non-conformant (baselined)"

#: Bytes an expectations file may hold. A real file lists a few hundred entries at most; the
#: bound matches the driver protocol's line limit, so no input the suite reads is unbounded.
MAX_FILE_BYTES: Final = 16 * 1024 * 1024

_FAILING: Final = frozenset({Outcome.FAIL, Outcome.ERROR})
_PASSING: Final = frozenset({Outcome.PASS, Outcome.NON_STRICT, Outcome.ACCEPTED})
_KINDS: Final = ("check", "vector", "requirement")


class ExpectationsError(ValueError):
    """The expectations file cannot be read or does not match its schema: a harness error."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of the file: which checks it matches, and why.

    Attributes:
        kind: ``check``, ``vector`` or ``requirement``.
        id: The check, vector or requirement ID.
        reason: Why it fails (or flakes).
        issue: Where it is tracked, if anywhere.
    """

    kind: str
    id: str
    reason: str
    issue: str | None = None

    @property
    def label(self) -> str:
        """The entry as the report names it, e.g. ``vector GV-120``."""
        return f"{self.kind} {self.id}"

    def note(self) -> str:
        """Return the reason with the issue link, for a check's detail."""
        return f"{self.reason} ({self.issue})" if self.issue else self.reason

    def matches(self, check: CheckResult) -> bool:
        """Return whether this entry is about ``check``."""
        if self.kind == "check":
            return _check_matches(self.id, check.nodeid)
        if self.kind == "vector":
            return self.id in check.vectors or check.nodeid.endswith(f"[{self.id}]")
        return self.id in check.requirements or self.id in check.failed

    def fails(self, check: CheckResult) -> bool:
        """Return whether ``check`` fails the way this entry expects (or is already baselined)."""
        if check.outcome not in (*_FAILING, Outcome.BASELINED):
            return False
        if self.kind != "requirement" or check.outcome is not Outcome.FAIL:
            return True
        return self.id in check.failed


def _check_matches(pattern: str, nodeid: str) -> bool:
    """Match a node id by its whole text, or a suffix after ``/`` or ``::``, with or without
    its parameters (node ids differ between a source tree and an installed package)."""
    base = nodeid.split("[", 1)[0]
    return any(
        text == pattern or text.endswith(("/" + pattern, "::" + pattern)) for text in (nodeid, base)
    )


@dataclass(frozen=True, slots=True)
class Expectations:
    """A parsed expectations file.

    Attributes:
        source: Where it was read from.
        known: Known failures, strict.
        flaky: Flaky checks, never strict.
        host: The host it says it is for, if it says.
        unchecked: MUST requirements declared unchecked, each with its reason (decisions S1.2).
    """

    source: str
    known: tuple[Entry, ...] = ()
    flaky: tuple[Entry, ...] = ()
    host: str | None = None
    unchecked: tuple[Entry, ...] = ()


def schema() -> dict[str, Any]:
    """Return the expectations file's JSON Schema."""
    text = (
        resources.files("conformance")
        .joinpath("schemas", "expectations.schema.json")
        .read_text(encoding="utf-8")
    )
    document: dict[str, Any] = json.loads(text)
    return document


def parse(document: object, source: str = "<expectations>") -> Expectations:
    """Return ``document`` (the decoded file) as :class:`Expectations`.

    Raises:
        ExpectationsError: It does not match the schema.
    """
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    if errors:
        lines = [
            f"/{'/'.join(str(part) for part in error.absolute_path)}: {error.message}"
            for error in errors[:5]
        ]
        raise ExpectationsError(f"{source} does not match its schema: " + "; ".join(lines))
    assert isinstance(document, dict)

    def entries(key: str) -> tuple[Entry, ...]:
        found: list[Entry] = []
        for item in document.get(key, ()):
            kind = next(name for name in _KINDS if name in item)
            found.append(Entry(kind, str(item[kind]), str(item["reason"]), item.get("issue")))
        return tuple(found)

    host = document.get("host")
    return Expectations(
        source, entries("knownFailures"), entries("flaky"), host, entries("unchecked")
    )


def load(path: str | Path) -> Expectations:
    """Read an expectations file: JSON when it ends in ``.json``, YAML otherwise.

    The file must be a regular file of at most :data:`MAX_FILE_BYTES`; YAML anchors and aliases
    are refused, since an alias can make a file of a kilobyte expand without bound.

    Raises:
        ExpectationsError: The file cannot be read, is not a regular file, is too large, uses a
            YAML alias, cannot be decoded, or does not match the schema.
    """
    target = Path(path)
    text = _read_bounded(target)
    try:
        if target.suffix.lower() == ".json":
            document: object = json.loads(text)
        else:
            document = _safe_yaml(text, target)
    except ExpectationsError:
        raise
    except ValueError as error:  # json.JSONDecodeError and yaml.YAMLError both
        raise ExpectationsError(f"{target} is not valid JSON or YAML: {error}") from error
    except Exception as error:  # RecursionError, MemoryError, and yaml's other errors
        raise ExpectationsError(f"{target} cannot be decoded ({type(error).__name__})") from error
    try:
        return parse(document, str(target))
    except ExpectationsError:
        raise
    except Exception as error:  # a document deep enough to break the schema check, say
        raise ExpectationsError(
            f"{target} cannot be checked against its schema ({type(error).__name__})"
        ) from error


def _read_bounded(target: Path) -> str:
    """Return the text of ``target``, a regular file of at most :data:`MAX_FILE_BYTES`."""
    import stat

    try:
        # Non-blocking, so that opening a FIFO cannot hang the run before it is refused.
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ExpectationsError(f"{target} is not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ExpectationsError(f"{target} cannot be read ({type(error).__name__})") from error
    if len(data) > MAX_FILE_BYTES:
        raise ExpectationsError(f"{target} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ExpectationsError(f"{target} is not UTF-8") from error


def _safe_yaml(text: str, target: Path) -> object:
    """Decode YAML that uses no anchor and no alias; refuse the file otherwise."""
    import yaml

    # The event stream is read linearly and expands nothing, so a file built to expand is
    # refused before any of it is built.
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            mark = event.start_mark
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ExpectationsError(
                f"{target} uses a YAML anchor or alias{where}; "
                "expectations files must spell every entry out"
            )
    return yaml.safe_load(text)


@dataclass(slots=True)
class Applied:
    """What applying the file to a run did, for the report.

    Attributes:
        source: The file.
        baselined: (check, entry label) for each failure the file expected.
        unexpected: (entry label, checks) for each known failure whose checks all passed.
        flaky: (check, entry label) for each check listed flaky that failed, then passed on a
            rerun (decisions S1.6).
        unused: Entries that matched no check of the run.
        declared: (requirement, reason) for each MUST declared unchecked.
    """

    source: str
    baselined: list[tuple[str, str]] = field(default_factory=list)
    unexpected: list[tuple[str, list[str]]] = field(default_factory=list)
    flaky: list[tuple[str, str]] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    declared: list[tuple[str, str]] = field(default_factory=list)

    def to_report(self) -> dict[str, Any]:
        """Return the report's ``expectations`` section."""
        return {
            "file": self.source,
            "baselined": [{"check": check, "entry": entry} for check, entry in self.baselined],
            "unexpectedPasses": [
                {"entry": entry, "checks": checks} for entry, checks in self.unexpected
            ],
            "flaky": [{"check": check, "entry": entry} for check, entry in self.flaky],
            "unused": list(self.unused),
            "declaredUnchecked": [
                {"requirement": requirement, "reason": reason}
                for requirement, reason in self.declared
            ],
        }


def apply(expectations: Expectations, checks: Sequence[CheckResult]) -> Applied:
    """Apply ``expectations`` to a run's check results, changing their outcomes in place.

    Args:
        expectations: The parsed file.
        checks: Every check result of the run.

    Returns:
        What changed, for the report.
    """
    applied = Applied(expectations.source)
    applied.declared = [(entry.id, entry.note()) for entry in expectations.unchecked]
    # A check that met a host restarting as another is the run's harness error (decisions S1.8).
    checks = [check for check in checks if not check.harness]
    for entry in expectations.known:
        matched = [check for check in checks if entry.matches(check)]
        if not matched:
            applied.unused.append(entry.label)
            continue
        failing = [check for check in matched if entry.fails(check)]
        for check in failing:
            if check.outcome in _FAILING:
                check.outcome = Outcome.BASELINED
                check.detail = f"{check.detail or 'failed'} [baselined: {entry.note()}]"
                applied.baselined.append((check.nodeid, entry.label))
        passed = [check for check in matched if check.outcome in _PASSING]
        if not failing and passed:
            applied.unexpected.append((entry.label, [check.nodeid for check in passed]))
            if entry.kind == "requirement":
                # Its checks passed, and other requirements they cite did too: only the entry
                # is wrong, and the report's expectations section and verdict say so.
                continue
            for check in passed:
                check.outcome = Outcome.UNEXPECTED_PASS
                check.detail = (
                    f"listed as a known failure ({entry.label}: {entry.note()}) but passed"
                )
    for entry in expectations.flaky:
        # Nothing is forgiven here (decisions S1.6): a check is flaky only if it failed without
        # finding a value and then passed on a rerun during the run (conformance._rerun).
        matched = [check for check in checks if entry.matches(check)]
        if not matched:
            applied.unused.append(entry.label)
        for check in matched:
            if check.outcome is Outcome.FLAKY:
                applied.flaky.append((check.nodeid, entry.label))
    return applied


def rerun_entry(entries: Iterable[Entry], check: CheckResult) -> Entry | None:
    """Return the flaky entry that lets ``check`` run again, or ``None`` (decisions S1.6).

    Only a check that failed or errored without finding a value, and whose run could go on,
    may run again: a leak is never flaky, and a host that restarted as another ends the run.

    Args:
        entries: The file's flaky entries.
        check: The result of the check's latest attempt.
    """
    if check.leak or check.harness or check.outcome not in _FAILING:
        return None
    return next((entry for entry in entries if entry.matches(check)), None)


def requirement_outcome(level: str, failed: Iterable[CheckResult]) -> str | None:
    """Return a requirement's outcome when every check failing it was forgiven, else ``None``.

    Args:
        level: The requirement's level.
        failed: The checks whose failure names the requirement.

    Returns:
        ``non-conformant (baselined)`` when each is baselined (``non-strict`` for a SHOULD),
        ``None`` when one still fails (or there are none). Only a known-failure entry forgives
        a failure; a flaky entry never does (decisions S1.6).
    """
    outcomes = {check.outcome for check in failed}
    if not outcomes or not outcomes <= {Outcome.BASELINED}:
        return None
    if level == "SHOULD":
        return Outcome.NON_STRICT.value
    return BASELINED_REQUIREMENT


def summary(applied: Mapping[str, Any]) -> list[str]:
    """Return terminal lines for a report's ``expectations`` section."""
    lines = [
        f"expectations {applied['file']}: {len(applied['baselined'])} baselined, "
        f"{len(applied['flaky'])} flaky, {len(applied['unexpectedPasses'])} unexpected passes, "
        f"{len(applied['unused'])} unused entries"
    ]
    for item in applied["unexpectedPasses"]:
        lines.append(f"unexpected pass: {item['entry']} is listed as failing but passed")
    return lines
