"""The mutants whose fault lies in one character of a value or one digit of an id: the checks of
``test_dice_hunt`` catch each on every run.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_dice.py``). Two write
form b wrongly for one pair of characters (U+2028 and U+2029; the no-break and ideographic spaces).
The older checks see them only when a ``classes`` canary draws one of those characters, in some runs
and not others, so a test that they miss the mutant would be flaky and one that they catch it would
be too: here the new check, whose value holds every character a canary may draw, runs against each
several times and fails naming SCRUB-004 on every run. The others leave a ``\\u00e9`` a value holds
unescaped, write form c of an astral character wrongly above plane 1, take only RFC 9562 ids, and
search the vault by an id's first group; no value or id the older checks use can show them (no
shuffle puts ``u`` and four hex digits after a canary's backslash, every astral character drawn or
held lies in plane 1, every id is a version 4 one, and no unknown id is one digit off a known one):
one run of every check of each one's requirement finds the older checks passing and the new ones
failing. The new module's run against the unmutated reference host is the suite's own run in CI.
Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_dice import MUTANTS
from tests.conformance.mutant_classes import (
    only_new_checks_catch,
    patches_apply_and_undo,
    runs_that_catch,
)

_MODULE: Final = "conformance.checks.test_dice_hunt"

#: How many times the new check runs against each form b mutant.
RUNS: Final = 3

#: The form b mutants, which the older checks catch only when the dice fall on them.
DRAWN: Final = ("json-escape-line-separators", "json-escape-space-separators")

#: The mutants no older check catches: no canary's shuffle puts ``u`` and four hex digits after
#: its backslash, no astral character the older checks use lies above plane 1, no id they use
#: is other than a version 4 one, and none they name as unknown is one digit off a known one.
NEVER_DRAWN: Final = (
    "json-escape-keeps-u-escapes",
    "form-c-astral-planes-folded",
    "ids-rfc-version-variant-only",
    "ids-matched-by-first-group",
)


#: Older checks left out of the runs of the mutants no older check catches: those whose values
#: are ``classes`` canaries. About one draw in forty thousand puts ``u`` and four hex digits
#: after such a canary's backslash, which would let one of them catch the third mutant and make
#: this test flaky; a whole run of the suite against each of these mutants passes.
_LEFT_OUT: Final = "classes or test_thousands_of_one_form or test_each_form_alone"


@pytest.mark.parametrize("mutant", DRAWN)
def test_form_b_mutant_caught_on_every_run(tmp_path: Path, mutant: str) -> None:
    """Each of ``RUNS`` runs of the new check against the mutant fails naming SCRUB-004."""
    caught = runs_that_catch(
        tmp_path,
        mutant,
        _MODULE,
        "test_every_drawn_character_scrubbed_in_every_form",
        "SCRUB-004",
        RUNS,
    )
    assert caught == RUNS, f"{mutant} was caught in {caught} of {RUNS} runs"


@pytest.mark.history
@pytest.mark.parametrize("mutant", NEVER_DRAWN)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of the mutant's requirement runs against it once: the module written for it
    fails it naming the requirement, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=_LEFT_OUT)


def test_mutants_still_apply() -> None:
    """Each mutant's patches still replace what they name, and each is undone after it."""
    names = tuple(mutant.name for mutant in MUTANTS)
    assert set(names) == {*DRAWN, *NEVER_DRAWN}
    patches_apply_and_undo(names)
