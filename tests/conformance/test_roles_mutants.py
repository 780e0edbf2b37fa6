"""The mutants that judge a call by its reference fields or read the admin role once: the older
checks of each mutant's requirement pass it, and ``test_roles_hunt``, written for them, catches
it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_roles.py``): a
secret policy, a feature switch and a fence that guard passwords and notes only, YOLO mode that
lifts ``secretBearingCalls = DENY`` or approves a prompt it finds open, and an admin role read
when the prompt opens or once for the session. Run in this process against the mutant, in one
run of every check of its requirement, the older checks pass and the new module fails naming
it. The new module's run against the unmutated reference host is the suite's own run in CI.
Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_roles import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo

_MODULE: Final = "conformance.checks.test_roles_hunt"

#: Older checks left out of the runs to keep them short: the model check draws seeded
#: campaigns that take most of a run, and the grammar and ordering vectors cite these
#: requirements by the dozen with password references only. None gives a username-only call
#: these controls or demotes an admin, and a whole run of the suite against each mutant's
#: fault passes.
_LEFT_OUT: Final = "test_model or test_grammar or test_ordering_vector"

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of the mutant's requirement runs against it once: the module written for it
    fails it naming the requirement, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=_LEFT_OUT)


def test_mutants_still_apply() -> None:
    """Each mutant's lines are still in their functions, and each patch is undone after it."""
    patches_apply_and_undo(CASES)
