"""Running a check again that the host's expectations file lists as flaky (decisions S1.6).

This module owns the one place the suite runs a check more than once. When an expectations file
lists a check (by check, vector or requirement) as ``flaky``, and the check failed or errored
without finding a value, it runs again, at most :data:`MAX_FLAKY_RERUNS` times. If a rerun
passes, the check is ``flaky`` and its requirements hold, and every report says so. If every
attempt fails, the check is the failure its first attempt found, with the attempts counted: a
flaky entry never forgives a failure. A check that found a value, in any form, on any attempt,
has failed and is never run again: a leak is never flaky. Nor is a check that met a host
restarting as another (decisions S1.8), which ends the run.

Only the attempt kept is logged: its reports reach the terminal, JUnit files and a parallel
run's controller, and its result, hardening rows and user properties are the check's. An attempt
set aside leaves nothing behind but its first failure's detail, redacted, in the kept result.
Every attempt's canaries stay in the check's redaction (:mod:`conformance._hooks` keeps the
first attempt's start) and in the run's, so a rerun's values are redacted from every report as
any check's are. It must never rerun a check without bound, never rerun a leak, and never log a
report that was set aside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pytest
from _pytest.runner import runtestprotocol

from conformance import _hooks
from conformance.expectations import Entry, rerun_entry
from conformance.outcomes import HardeningRow, Outcome
from conformance.report import CheckResult

#: Reruns a check listed flaky gets after a failure that found no value: it runs at most
#: ``1 + MAX_FLAKY_RERUNS`` times. Bounded, so a listed check that always fails costs a known
#: multiple of its time; small, so "flaky" cannot stretch to "passes once in many tries".
MAX_FLAKY_RERUNS: Final = 2

#: The outcomes of an attempt that passed: the check held on it.
_PASSING: Final = frozenset({Outcome.PASS, Outcome.NON_STRICT, Outcome.ACCEPTED})


@dataclass(slots=True)
class _Attempt:
    """One run of a check: its reports, unlogged, and what it left in the session's state."""

    reports: list[pytest.TestReport]
    result: CheckResult | None
    hardening: list[HardeningRow]
    properties: list[tuple[str, object]]


class FlakyReruns:
    """Runs a check listed flaky again after a failure without a value, within the bound.

    Registered by :mod:`conformance.plugin` only when the expectations file lists flaky checks.

    Args:
        config: The session's config.
        entries: The expectations file's flaky entries.
    """

    def __init__(self, config: pytest.Config, entries: Sequence[Entry]) -> None:
        self.config = config
        self.entries = tuple(entries)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """Run a conformance check, again while a flaky entry allows it; log the attempt kept."""
        state = self.config.stash.get(_hooks.STATE_KEY, None)
        if state is None or not state.active or not _hooks.is_conformance_check(item):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        attempts: list[_Attempt] = []
        entry: Entry | None = None
        while True:
            attempt = self._attempt(item, nextitem, state)
            attempts.append(attempt)
            again = None if attempt.result is None else rerun_entry(self.entries, attempt.result)
            entry = entry or again
            session = item.session
            if (
                again is None
                or len(attempts) > MAX_FLAKY_RERUNS
                or session.shouldstop
                or session.shouldfail
            ):
                break
        kept = _settle(attempts, entry)
        if kept.result is not None:
            state.results[item.nodeid] = kept.result
        state.hardening.extend(kept.hardening)
        item.user_properties[:] = kept.properties
        for report in kept.reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    @staticmethod
    def _attempt(item: pytest.Item, nextitem: pytest.Item | None, state: _hooks.State) -> _Attempt:
        """Run the check once, unlogged, and take back what it left in the session's state."""
        properties = list(item.user_properties)
        rows = len(state.hardening)
        state.results.pop(item.nodeid, None)
        reports = runtestprotocol(item, log=False, nextitem=nextitem)
        attempt = _Attempt(
            reports,
            state.results.pop(item.nodeid, None),
            state.hardening[rows:],
            list(item.user_properties),
        )
        del state.hardening[rows:]
        item.user_properties[:] = properties
        return attempt


def _settle(attempts: Sequence[_Attempt], entry: Entry | None) -> _Attempt:
    """Return the attempt that stands for the check, its result saying how the attempts went.

    A leak on any attempt is the check's failure; a pass after failures makes the check
    ``flaky``; attempts none of which passed leave the first failure, with the count.
    """
    if len(attempts) == 1 or entry is None:
        return attempts[-1]
    count = len(attempts)
    first, last = attempts[0], attempts[-1]
    found = first.result.detail if first.result is not None else None
    listed = f"listed flaky: {entry.note()}"
    if last.result is not None and last.result.leak:
        # A value found on a rerun is a failure like any other: a leak is never flaky.
        last.result.attempts = count
        last.result.detail = (
            f"{last.result.detail or 'value found'} [on attempt {count} of {count}; {listed}, "
            "but a value found is never flaky]"
        )
        return last
    if last.result is not None and last.result.outcome in _PASSING:
        last.result.outcome = Outcome.FLAKY
        last.result.attempts = count
        last.result.duration_s = sum(item.result.duration_s for item in attempts if item.result)
        last.result.detail = (
            f"failed {count - 1} of {count} attempts, then passed; the first failure: "
            f"{found or 'failed'} [flaky: {entry.note()}]"
        )
        last.properties = [
            ("outcome", Outcome.FLAKY.value) if key == "outcome" else (key, value)
            for key, value in last.properties
        ]
        for report in last.reports:
            if report.when == "teardown":
                report.user_properties = list(last.properties)
        return last
    if first.result is not None:
        first.result.attempts = count
        first.result.detail = f"{found or 'failed'} [{listed}; none of {count} attempts passed]"
    return first
