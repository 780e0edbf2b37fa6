"""Tests of the self-test's collection index: a run narrowed to some requirements collects only
the modules citing them, and selects exactly the checks a whole collection would."""

from __future__ import annotations

import contextlib
import io

import pytest

from conformance import _hooks
from conformance.arguments import CHECKS, base_arguments
from conformance.selftest import collection


class _Selected:
    def __init__(self) -> None:
        self.ids: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.ids = [item.nodeid for item in items]


def _selected(modules: tuple[str, ...], requirements: str) -> list[str]:
    seen = _Selected()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(
            [*base_arguments(modules), "--collect-only", "--requirements", requirements], [seen]
        )
    return seen.ids


@pytest.mark.parametrize("requirements", ["LEDG-004", "SUBST-004,FENCE-001", "INV1"])
def test_a_narrowed_collection_selects_what_the_whole_one_does(requirements: str) -> None:
    """The modules the index names for some requirements hold every check citing them: the
    narrowed collection selects the same checks, in the same order, as the whole package, but
    for the checks of ``collection.LAST``, which come after the rest."""
    modules = collection.modules_for(["--requirements", requirements])
    assert modules != (CHECKS,)
    whole = _selected((CHECKS,), requirements)
    last = tuple(f"{module.replace('.', '/')}.py::" for module in collection.LAST)
    expected = sorted(whole, key=lambda nodeid: nodeid.startswith(last))
    assert _selected(modules, requirements) == expected


def test_index_names_a_module_for_every_cited_requirement() -> None:
    """Every requirement a check cites has at least one module, and each module it names does
    hold a check citing it."""
    index = collection.check_modules()
    assert index
    catalog = _hooks.load_catalog()
    assert set(index) <= set(catalog)
    assert all(modules for modules in index.values())


def test_unnarrowed_or_unknown_selections_collect_everything() -> None:
    """With no --requirements, an empty one or an ID no check cites, the whole package is
    collected, so the run reports the selection as a whole collection would."""
    assert collection.modules_for([]) == (CHECKS,)
    assert collection.modules_for(["--requirements"]) == (CHECKS,)
    assert collection.modules_for(["--requirements", "NOPE-999"]) == (CHECKS,)
