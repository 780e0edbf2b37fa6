"""How a check states its verdict: require a MUST, note a SHOULD, report an EITHER.

This module owns the small vocabulary checks use instead of bare ``assert``: :func:`require`
raises :class:`RequirementError`, which names the requirement IDs it violates; :func:`should`
records a non-strict finding and lets the check go on; :func:`accept` records which of an
EITHER's alternatives the host chose; :func:`hardening` adds a row to the hardening table. A
judgment that rests on a disposition the suite could not learn (:class:`UnlearnedDisposition`)
leaves its requirements unchecked, never passed nor failed. A check, or a suite-side host
adapter (:func:`start_call_thread`), that cannot go on for a reason of the suite's own raises
:class:`SuiteError`. The plugin reads these records after each check. Messages are static
text, reference names and labels: no function here may be handed a value or a canary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, NoReturn

import pytest

from conformance.catalog import SHOULD, load_catalog
from conformance.kernel.records import NOT_APPLICABLE_PREFIX as NOT_APPLICABLE_PREFIX
from conformance.kernel.records import Outcome as Outcome


class RequirementError(AssertionError):
    """A check found the host violating the named requirements.

    Attributes:
        requirements: The violated requirement IDs, most specific first.
        detail: What was wrong; never a value.
    """

    def __init__(self, requirements: str | Sequence[str], detail: str) -> None:
        ids = (requirements,) if isinstance(requirements, str) else tuple(requirements)
        super().__init__(f"[{', '.join(ids)}] {detail}")
        self.requirements = ids
        self.detail = detail


class LeakError(RequirementError):
    """The canary sweep found a value on a surface it searched: a failure whatever the check
    could or could not see otherwise (decisions S1.3)."""


class SuiteError(Exception):
    """The check could not go on for a reason of the suite's own, not the host's: it judged
    nothing, and the run ends as a harness error (decisions S1.1), never as a failure of the
    requirements the check cites.

    Attributes:
        detail: What went wrong; never a value.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def start_call_thread(run: Callable[[], None], name: str) -> None:
    """Start the thread a suite-side host adapter runs one pending call on.

    A thread the suite cannot start (the process has reached its limit of threads or of
    address space) is the suite's failure, not the host's: it raises :class:`SuiteError`, so
    the check errors and no requirement it cites is failed.

    Raises:
        SuiteError: The thread could not be started.
    """
    try:
        threading.Thread(target=run, name=name, daemon=True).start()
    except RuntimeError as error:
        raise SuiteError(f"the suite could not start a thread for a call ({error})") from error


@dataclass(frozen=True, slots=True)
class HardeningRow:
    """One observation for the hardening table (decisions R5.6): never a failure.

    Attributes:
        form: The hardening form's name, e.g. ``base64@1``.
        surface: Where it was looked for.
        scrubbed: Whether the host removed it.
        check: The check that saw it.
    """

    form: str
    surface: str
    scrubbed: bool
    check: str


@dataclass(slots=True)
class CheckRecord:
    """What one check recorded besides passing or failing."""

    nodeid: str
    non_strict: list[tuple[str, str]] = field(default_factory=list)
    alternatives: list[tuple[str, str]] = field(default_factory=list)
    hardening: list[HardeningRow] = field(default_factory=list)
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    """(requirement, reason) for each cited requirement the check could not judge."""
    unlearned: bool = False
    """An :class:`UnlearnedDisposition` was compared since the last judgment."""


_current: CheckRecord | None = None


@contextmanager
def recording(nodeid: str) -> Iterator[CheckRecord]:
    """Collect what the check ``nodeid`` records while the block runs.

    Args:
        nodeid: The check's pytest node id.

    Yields:
        The record the check fills.
    """
    global _current
    previous, record = _current, CheckRecord(nodeid)
    _current = record
    try:
        yield record
    finally:
        _current = previous


def _record() -> CheckRecord:
    if _current is None:
        # Outside the plugin there is nothing to note a SHOULD on: be strict.
        return CheckRecord("<no check>")
    return _current


#: Why a judgment that rested on a disposition the suite could not learn is left unchecked.
UNLEARNED_REASON: Final = (
    "the call's disposition could not be learned over MCP: no result _meta key, no JSON-RPC "
    "error data and no ledger record named it (decisions R9.8, S1.12)"
)


class UnlearnedDisposition(str):
    """A call's disposition the suite could not learn (over MCP: decisions R9.8).

    It reads as ``UNKNOWN``, equals nothing, and every comparison with it notes, in the running
    check, that the judgment being made rests on what the suite does not know: the next
    :func:`require`, :func:`fail` or :func:`should` then leaves its requirements unchecked
    instead of passing or failing them (decisions S1.1, S1.12).
    """

    __slots__ = ()

    def __new__(cls) -> UnlearnedDisposition:
        return super().__new__(cls, "UNKNOWN")

    def __eq__(self, other: object) -> bool:
        _consulted()
        return False

    def __ne__(self, other: object) -> bool:
        _consulted()
        return True

    def __hash__(self) -> int:
        # A set or a dict is searched by hash, without a comparison: ``disposition in {...}``
        # rests on what the suite does not know as much as ``==`` does.
        _consulted()
        return str.__hash__(self)


def _consulted() -> None:
    if _current is not None:
        _current.unlearned = True


def _unlearned(requirements: str | Sequence[str]) -> bool:
    """Whether the judgment being made consulted an unlearned disposition; if so, note its
    requirements unchecked (the flag is taken)."""
    if _current is None or not _current.unlearned:
        return False
    _current.unlearned = False
    unchecked(requirements, UNLEARNED_REASON)
    return True


def _stopping(requirements: str | Sequence[str]) -> None:
    """Refuse a judgment that would stop a check for SHOULD requirements alone.

    A check that stops at a SHOULD never makes the judgments after it, so a host that differs
    from a SHOULD, as the rulings let it, would see the MUST requirements those judgments cite
    reported unchecked and the run incomplete (decisions S1). A SHOULD is noted with
    :func:`should`, which lets the check go on. The refusal comes whether or not the condition
    holds, so the first run of such a check on any host shows it.

    Raises:
        SuiteError: Every one of ``requirements`` is a SHOULD of the catalog.
    """
    ids = (requirements,) if isinstance(requirements, str) else tuple(requirements)
    catalog = load_catalog()
    levels = {entry.level if (entry := catalog.get(rid)) else None for rid in ids}
    if ids and levels == {SHOULD}:
        raise SuiteError(
            f"a check would stop for SHOULD requirements alone ({', '.join(ids)}); "
            "a SHOULD is noted with should() and the check goes on"
        )


def fail(requirements: str | Sequence[str], detail: str) -> NoReturn:
    """Fail the check for violating ``requirements``.

    Raises:
        RequirementError: Always, unless the failure rests on an unlearned disposition.
        pytest.skip.Exception: It does: ``requirements`` are unchecked, never failed.
        SuiteError: ``requirements`` are SHOULDs alone (:func:`_stopping`).
    """
    __tracebackhide__ = True  # the failure is the check's, not this helper's
    _stopping(requirements)
    if _unlearned(requirements):
        pytest.skip(UNLEARNED_REASON)
    raise RequirementError(requirements, detail)


def require(condition: bool, requirements: str | Sequence[str], detail: str) -> None:
    """Fail the check unless ``condition`` holds.

    Args:
        condition: What the requirement demands, already evaluated.
        requirements: The requirement IDs violated when it does not hold.
        detail: What was wrong; static text and names only.

    Raises:
        RequirementError: ``condition`` is false.
        pytest.skip.Exception: ``condition`` rests on a disposition the suite could not learn
            (:class:`UnlearnedDisposition`) and is false: ``requirements`` are unchecked. When
            it holds they are unchecked too, and the check goes on.
        SuiteError: ``requirements`` are SHOULDs alone (:func:`_stopping`), whether or not
            ``condition`` holds.
    """
    __tracebackhide__ = True  # the failure is the check's, not this helper's
    _stopping(requirements)
    if _unlearned(requirements):
        if not condition:
            pytest.skip(UNLEARNED_REASON)
        return
    if not condition:
        raise RequirementError(requirements, detail)


def should(condition: bool, requirement: str, detail: str) -> bool:
    """Note a SHOULD: when ``condition`` is false the requirement is reported non-strict.

    The check goes on either way; outside a plugin-run check a false condition raises.

    Returns:
        ``condition``.

    Raises:
        RequirementError: ``condition`` is false and no check is recording.
    """
    __tracebackhide__ = True  # the failure is the check's, not this helper's
    if _unlearned(requirement):
        return condition
    if not condition:
        if _current is None:
            raise RequirementError(requirement, detail)
        _current.non_strict.append((requirement, detail))
    return condition


def accept(requirement: str, alternative: str) -> None:
    """Report which alternative of an EITHER requirement the host chose."""
    _record().alternatives.append((requirement, alternative))


def hardening(form: str, surface: str, scrubbed: bool) -> None:
    """Add one row to the hardening table (SCRUB-015)."""
    record = _record()
    record.hardening.append(HardeningRow(form, surface, scrubbed, record.nodeid))


def unchecked(requirements: str | Sequence[str], reason: str) -> None:
    """Record that the running check could not judge ``requirements``, and why (decisions S1.1).

    The check goes on and may still pass for the other requirements it cites; these are
    reported unchecked by it, never passed.

    Args:
        requirements: The requirement IDs left unjudged.
        reason: What the host did not let the suite see; static text only.
    """
    ids = (requirements,) if isinstance(requirements, str) else tuple(requirements)
    record = _record()
    for requirement in ids:
        record.unchecked.append((requirement, reason))


def not_applicable(reason: str) -> NoReturn:
    """Skip the running check because its rule cannot arise on the path under test.

    Raises:
        pytest.skip.Exception: Always, with a reason the reports count as not applicable.
    """
    __tracebackhide__ = True  # the failure is the check's, not this helper's
    pytest.skip(NOT_APPLICABLE_PREFIX + reason)
