"""Which check modules cite which requirement, so that a narrowed self-test run collects only
those.

This module owns the self-test's collection index. Most self-test runs are narrowed to one
requirement (``--requirements``), yet pytest collects all of the suite's checks, about two
thousand, before it deselects the others: a third of a short run. One collection in the
self-test's own process records, for each requirement, the modules whose checks cite it; a run
narrowed to some requirements then collects only those modules and selects exactly the checks
a whole collection would have selected. It never changes which checks run or how they are
judged, and it prints nothing.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from conformance import _hooks
from conformance.arguments import CHECKS, base_arguments

_INDEX: dict[str, tuple[str, ...]] | None = None
#: Every check module, in the order a whole collection meets them.
_ORDER: list[str] = []

#: Check modules a narrowed run collects after the others that cite its requirements. The
#: model check cites most of the catalog and takes seconds of real approval timeouts; put last,
#: it runs only when no targeted check has already decided a ``--stop-when-decided`` run.
LAST: tuple[str, ...] = ("conformance.checks.test_model",)


class _Indexer:
    """Records the module of every check under each requirement it cites."""

    def __init__(self) -> None:
        self.modules: dict[str, dict[str, None]] = {}
        self.order: dict[str, int] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            module: Any = getattr(item, "module", None)
            if module is None or not _hooks.is_conformance_check(item):
                continue
            self.order.setdefault(module.__name__, len(self.order))
            for requirement in _hooks.cited(item):
                self.modules.setdefault(requirement, {})[module.__name__] = None


def check_modules() -> Mapping[str, tuple[str, ...]]:
    """Return, for each requirement, the check modules whose checks cite it (collected once per
    process; a forked worker inherits its parent's)."""
    global _INDEX
    if _INDEX is None:
        _ORDER.clear()
        indexer = _Indexer()
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main([*base_arguments(), "--collect-only"], [indexer])
        # Each requirement's modules in the whole collection's order, so that a narrowed run
        # runs its checks in the order a whole one would.
        _INDEX = {
            rid: tuple(sorted(modules, key=indexer.order.__getitem__))
            for rid, modules in indexer.modules.items()
        }
        _ORDER.extend(sorted(indexer.order, key=indexer.order.__getitem__))
    return _INDEX


def modules_for(arguments: Sequence[str]) -> tuple[str, ...]:
    """Return what a run with ``arguments`` needs to collect: the modules citing the requirements
    its ``--requirements`` names, in the whole collection's order but :data:`LAST` after the
    rest, or the whole check package when it names none (or one that no module cites, so that
    the run reports it as the whole collection would)."""
    if "--requirements" not in arguments:
        return (CHECKS,)
    position = list(arguments).index("--requirements") + 1
    if position >= len(arguments):
        return (CHECKS,)
    index = check_modules()
    wanted = [part.strip() for part in arguments[position].split(",") if part.strip()]
    if not wanted or any(rid not in index for rid in wanted):
        return (CHECKS,)
    chosen = {module for rid in wanted for module in index[rid]}
    ordered = [module for module in _ORDER if module in chosen]
    return tuple(sorted(ordered, key=lambda module: module in LAST))
