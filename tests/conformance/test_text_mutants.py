"""The mutants of the grammar, substitution, the scrubber and the refusal messages at sizes and
in shapes no ordinary call reaches: the older checks of each mutant's requirement pass it, and
``test_text_hunt``, written for them, catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_text.py``): a
scrub table of the first 32 values, values past 1 KiB left unscrubbed, a marker scan of the
first megabyte, strings past 64 KiB left unread, a string scan that stops after 64 references,
a refusal of unknown ids cut to 4,096 characters, a parser that skips ``isspace`` white space
and one that unwraps a Markdown code fence. Run in this process against the mutant, in one run
of every check of its requirement, the older checks pass and the new module fails naming it.
The new module's run against the unmutated reference host is the suite's own run in CI.
Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog import get
from conformance.selftest.catalog_text import MUTANTS
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo

_MODULE: Final = "conformance.checks.test_text_hunt"

#: Older checks left out of the runs to keep them short: the grammar vectors cite most of
#: these requirements by the hundred, each resolving one ordinary argument text; the model
#: check draws seeded campaigns of a few references each; the large-result paths send
#: megabyte results of one value; the queue moments hold prompts open to fill the queue. None
#: sends what these mutants break on, and a whole run of the suite against each mutant's fault
#: passes.
_LEFT_OUT: Final = "test_grammar or test_model or test_output_paths or test_queue_moments"

#: Left out as well for the scrubber's mutants: the scrub vectors, each a value or two of
#: under a hundred characters.
_LEFT_OUT_SCRUB: Final = _LEFT_OUT + " or test_scrub_vector"

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of the mutant's requirement runs against it once: the module written for it
    fails it naming the requirement, and every older check passes it."""
    scrubber = get(mutant).requirement.startswith("SCRUB-")
    left_out = _LEFT_OUT_SCRUB if scrubber else _LEFT_OUT
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=left_out)


def test_mutants_still_apply() -> None:
    """Each mutant's lines are still in their functions, and each patch is undone after it."""
    patches_apply_and_undo(CASES)
