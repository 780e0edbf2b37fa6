"""The mutants of control characters in values and results and of number and separator text in
arguments: the older checks of each mutant's requirement pass it, and ``test_returns_hunt``,
written for them, catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_returns.py``): a
form b that leaves U+0000 unescaped, a parser that reads a number as any run of number
characters, one that ends a string at a raw U+2028, a result that ends at its first NUL, an
empty result replaced by the host's own words, and a result stripped of its opening
byte-order mark. Run in this process against the mutant, in one run of every check of its
requirement, the older checks pass and the new module fails naming it. The new module's run
against the unmutated reference host is the suite's own run in CI. Nothing here prints a
value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_returns import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo

_MODULE: Final = "conformance.checks.test_returns_hunt"

#: Older checks left out of the runs to keep them short: the grammar and scrub vectors cite
#: these requirements by the hundred, each one ordinary argument text or a value or two; the
#: model check draws seeded campaigns; the large-result paths send megabyte results. None
#: holds U+0000 in a value, a malformed number or a raw line separator, and a whole run of the
#: suite against each mutant's fault passes.
_LEFT_OUT: Final = "test_grammar or test_model or test_output_paths or test_scrub_vector"

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of the mutant's requirement runs against it once: the module written for it
    fails it naming the requirement, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=_LEFT_OUT)


def test_mutants_still_apply() -> None:
    """Each mutant's patches still replace what they name, and each is undone after it."""
    patches_apply_and_undo(CASES)
