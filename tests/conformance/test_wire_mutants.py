"""The MCP wire's mutants pass every older check of their requirement; the checks of
``test_wire_hunt.py`` catch each.

Each mutant breaks the reference host's MCP layer as an MCP server's author might: an
elicitation answer read leniently, or a cancel taken as no answer (MCP-008); an elicitation
naming only websites, or showing a head of the arguments (MCP-007); a reference-free call
approved for a client that cannot elicit (MCP-009); a debug log of each result for a client
that asked for debug logging (MCP-004). One nested run over MCP per mutant runs every check of
its requirement against it, behind the reference driver: the older checks (``test_mcp.py``)
pass it, and the new ones fail it naming the requirement.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.selftest.catalog_wire import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch

pytest.importorskip("mcp", reason="the MCP wire's mutants need the MCP SDK")

#: The module whose checks were written for these mutants.
NEW_MODULE = "conformance.checks.test_wire_hunt"


@pytest.mark.history
@pytest.mark.parametrize("mutant", [mutant.name for mutant in MUTANTS])
def test_only_the_new_checks_catch(tmp_path: Path, mutant: str) -> None:
    """Over MCP, every older check of the mutant's requirement passes it; a new one fails it,
    naming the requirement."""
    only_new_checks_catch(tmp_path, mutant, (NEW_MODULE,))
