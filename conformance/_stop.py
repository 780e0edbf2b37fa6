"""Ending a run as soon as its verdict is decided, for callers that need only the verdict.

This module owns ``--stop-when-decided``, which the self-test and the mutation runner pass: a
run that has a failed, errored or unexpectedly passing check, or a MUST whose every selected
check has finished without judging it, can no longer be ``conformant``, so nothing later can
change what such a caller learns. Given requirement IDs, the run orders the checks citing them
first and ends once each of them is decided instead. It orders checks and ends the session; it
never changes a check's outcome, a requirement's outcome or the verdict, and the report names
the stop (decisions S1.7), so that an early stop is never read as a pass. A user's ordinary run
never passes the option and runs every check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

import pytest

from conformance import _hooks
from conformance.outcomes import Outcome
from conformance.report import UNCHECKED, CheckResult, requirement_outcomes, run_scopes

#: What a generated corpus case carries in its id (:mod:`conformance.vectorgen`): the
#: hand-written checks of a requirement run before its generated cases.
GENERATED_MARK: Final = "gen-"

#: The option's value when no requirement is named: stop once the verdict is decided.
VERDICT: Final = "verdict"

#: Check outcomes that decide a verdict on their own (decisions S1.2): a failure or an
#: unexpected pass makes it not conformant, an error a harness error.
DECIDING: Final = frozenset({Outcome.FAIL, Outcome.UNEXPECTED_PASS, Outcome.ERROR})


def targets_of(value: str | None) -> tuple[str, ...] | None:
    """Return the requirement IDs ``--stop-when-decided`` names: ``()`` for the whole verdict,
    ``None`` when the option was not given."""
    if value is None:
        return None
    if value == VERDICT:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


class DecidedStop:
    """Orders the checks so that a decision comes early, and ends the session once it has.

    Args:
        config: The pytest config.
        targets: The requirements whose outcome the caller needs; empty for the verdict.
    """

    def __init__(self, config: pytest.Config, targets: Sequence[str]) -> None:
        self.config = config
        self.targets: tuple[str, ...] = tuple(targets)
        #: For each requirement watched, how many of its selected checks have not finished.
        self.left: Counter[str] = Counter()
        #: Each watched requirement's finished checks.
        self.done: dict[str, list[CheckResult]] = {}
        self.session: pytest.Session | None = None

    def _watched(self, ids: Iterable[str]) -> list[str]:
        catalog = self.config.stash[_hooks.STATE_KEY].catalog
        if self.targets:
            return [rid for rid in ids if rid in self.targets]
        return [rid for rid in ids if rid in catalog and catalog[rid].level == "MUST"]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Put the checks of the requirements watched first, those of the rarest first."""
        self.session = session
        checks = {item.nodeid for item in items if _hooks.is_conformance_check(item)}
        for item in items:
            if item.nodeid in checks:
                self.left.update(self._watched(_hooks.cited(item)))

        def key(item: pytest.Item) -> tuple[int, int, str, int]:
            watched = self._watched(_hooks.cited(item)) if item.nodeid in checks else []
            if not watched:
                return (1, 0, "", 0)
            # Grouped by the rarest requirement a check cites, so that the requirement with
            # the fewest checks is decided first; a generated case after the hand-written ones.
            rarest = min(watched, key=lambda rid: (self.left[rid], rid))
            return (0, self.left[rarest], rarest, int(GENERATED_MARK in item.nodeid))

        items.sort(key=key)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """After a check's last phase, end the session if the run is now decided."""
        if report.when != "teardown" or self.session is None:
            return
        state = self.config.stash[_hooks.STATE_KEY]
        result = state.results.get(report.nodeid)
        if result is None:
            return
        reason = self._decision(result, state)
        if reason is not None and not self.session.shouldfail:
            state.stopped = f"stopped early, the verdict decided: {reason}"
            # shouldfail, not shouldstop: pytest then ends as it does after -x, not as if the
            # run had been interrupted, which would be a harness error.
            self.session.shouldfail = state.stopped

    def _decision(self, result: CheckResult, state: _hooks.State) -> str | None:
        watched = self._watched(result.requirements)
        for requirement in watched:
            self.left[requirement] -= 1
            self.done.setdefault(requirement, []).append(result)
        if self.targets:
            named = {*result.failed, *(rid for rid, _ in result.non_strict)}
            hit = [rid for rid in self.targets if rid in named]
            if hit:
                return f"{result.nodeid} failed naming {', '.join(hit)}"
            if all(self.left[rid] <= 0 for rid in self.targets):
                return f"every check of {', '.join(self.targets)} has run"
            return None
        if result.outcome in DECIDING:
            return f"{result.nodeid} ended {result.outcome.value}"
        for requirement in watched:
            if self.left[requirement] > 0:
                continue
            # The same fold the report makes, over this requirement's checks alone.
            entry = state.catalog[requirement]
            folded = requirement_outcomes(
                [entry], self.done[requirement], run_scopes(state.host_info)
            )
            if folded and folded[0].outcome == UNCHECKED:
                return f"the MUST {requirement} is unchecked"
        return None
