"""The mutants of requests an MCP server sends its client during a call: the older checks of
MCP-003 pass each, and ``test_requests_hunt``, written for them, catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_requests.py``): a
scrubber that leaves the requests a tool asks for (sampling, roots, ping) as the tool wrote them,
one that leaves a sampling request's conversation, and an MCP layer that sends those requests
with result scrubbing off. Run over MCP against the mutant, in one run of every check of
MCP-003, the older checks pass and the new module fails naming it. The new module's run against
the unmutated reference host is the suite's own ``conformance-mcp`` run in CI. Nothing here
prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_requests import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo

pytest.importorskip("mcp", reason="the MCP layer's mutants need the MCP SDK")

_MODULE: Final = "conformance.checks.test_requests_hunt"

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of MCP-003 runs against the mutant over MCP once: the module written for it
    fails it naming MCP-003, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (_MODULE,))


def test_mutants_still_apply() -> None:
    """Each mutant's patches still replace what they name, and each is undone after it."""
    patches_apply_and_undo(CASES)
