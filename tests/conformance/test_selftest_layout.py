"""The self-test package's shape: small modules, and no way back to the console script.

The mutant catalog, the self-test and mutation testing of the reference host live in
``conformance/selftest``, one area of the catalog per module. These pin that every module there
stays short enough to read whole, that the catalog lists each mutant once and in its order, and
that the runner and the mutation runner can be imported without :mod:`conformance.cli`, which
imports the runner lazily: the two must never form an import cycle again.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import conformance.selftest
from conformance.selftest import catalog

#: The most lines a module of the self-test package may hold.
MAX_LINES = 600

_PACKAGE = Path(conformance.selftest.__file__).resolve().parent


@pytest.mark.parametrize("module", sorted(_PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_module_is_short(module: Path) -> None:
    """Every module of the self-test package holds at most 600 lines."""
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module.name} has {lines} lines"


def test_catalog_holds_every_area_once_in_order() -> None:
    """Every ``catalog_*`` module's mutants are in the catalog, each once, in its order."""
    areas = sorted(path.stem for path in _PACKAGE.glob("catalog_*.py"))
    defined = [
        mutant.name
        for area in areas
        for mutant in importlib.import_module(f"conformance.selftest.{area}").MUTANTS
    ]
    assert sorted(defined) == sorted(catalog.ORDER)
    assert [mutant.name for mutant in catalog.MUTANTS] == list(catalog.ORDER)
    assert len(set(catalog.ORDER)) == len(catalog.ORDER)


@pytest.mark.parametrize(
    "module",
    [
        "conformance.selftest.runner",
        "conformance.selftest.strip",
        "conformance.selftest.hosts",
        "conformance.selftest.mutation",
        "conformance.selftest.mutation_workers",
        "conformance.selftest.mutation_local_workers",
    ],
)
def test_selftest_does_not_import_the_console_script(module: str) -> None:
    """Importing the self-test in a fresh process leaves :mod:`conformance.cli` unimported."""
    probe = f"import sys, {module}; print('conformance.cli' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
