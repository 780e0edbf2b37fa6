"""The mutants of members an MCP server sends beyond the surfaces a client shows: the older checks
of MCP-003 pass each, and ``test_members_hunt``, written for them, catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_members.py``): a
scrubber that leaves the ``_meta`` below a result's root, or ``annotations``, or an embedded
resource's ``uri`` and ``mimeType``, or the notifications a handler asks for, as the handler
wrote them; one that scrubs exactly the members decisions R9.3 lists by name; and an MCP layer
that sends the handler's notifications with result scrubbing off. Run over MCP against the
mutant, in one run of every check of MCP-003, the older checks pass and the new module fails
naming it. The new module's run against the unmutated reference host is the suite's own
``conformance-mcp`` run in CI. Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_members import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo

pytest.importorskip("mcp", reason="the MCP layer's mutants need the MCP SDK")

_MODULE: Final = "conformance.checks.test_members_hunt"

#: The checks written after this class: the requests a server sends its client. Some of these
#: mutants leave those requests unscrubbed too (every ``_meta`` below the root, or all but the
#: named surfaces), which the later module catches as it was written to; it is left out of the
#: older checks here.
_LATER: Final = "test_requests_hunt"

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of MCP-003 runs against the mutant over MCP once: the module written for it
    fails it naming MCP-003, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=_LATER)


def test_mutants_still_apply() -> None:
    """Each mutant's patches still replace what they name, and each is undone after it."""
    patches_apply_and_undo(CASES)
