"""Applying a host team's expectations to a run's check records (decisions S1.2, S1.4, S1.6).

This module owns what an expectations file may change, and nothing about reading one
(:mod:`conformance.expectations` parses and validates the file). A known-failure entry turns a
failing or errored check it matches into ``baselined``; an entry whose matched checks all pass
is an unexpected pass, which fails the run, so a fixed bug cannot stay listed. A flaky entry
forgives nothing here: it lets a check that failed without finding a value run again during the
run (:mod:`conformance._rerun`), and a check that then passed is ``flaky``. A leak is never
flaky, and no entry touches a check that met a host restarting as another (decisions S1.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from conformance.kernel.fold import unjudged
from conformance.kernel.records import BASELINED_REQUIREMENT, CheckResult, Outcome

_FAILING: Final = frozenset({Outcome.FAIL, Outcome.ERROR})
_PASSING: Final = frozenset({Outcome.PASS, Outcome.NON_STRICT, Outcome.ACCEPTED})


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
        if entry.kind == "requirement":
            # A check that could not judge the requirement did not show it holds: only a pass
            # that judged it makes the entry an unexpected pass (decisions S1.1, S1.3).
            passed = [check for check in passed if not unjudged(entry.id, check)]
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
