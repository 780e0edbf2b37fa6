"""The mutants of refusal lists, awkward values, deep nesting and ledger endings: the older
checks of each mutant's requirement pass it, and the check module written for it catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_records.py``):
refusals that name the first secret or field of a call or cut a long list of unknown ids short,
values tidied or rewritten a second time on their way to the handler, a parser that leaves
strings past 64 levels unread, and ledger records of QUEUE_FULL calls and execution timeouts
that do not say how the call ended. Run in this process against the mutant, in one run of
every check of its requirement, the older checks pass and the new module fails naming it;
against the unmutated reference host the new modules pass. Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.conformance.mutant_classes import (
    LATER_CHECKS,
    only_new_checks_catch,
    patches_apply_and_undo,
)
from tests.conformance.suite_runs import run_suite

_MESSAGES: Final = "conformance.checks.test_message_lists"
_VALUES: Final = "conformance.checks.test_awkward_values"
_DEPTH: Final = "conformance.checks.test_deep_nesting"
_ENDINGS: Final = "conformance.checks.test_ledger_endings"

#: (mutant, the new check module that catches it, the requirement whose older checks pass it).
#: The depth mutant breaks a requirement no older check cites: the older checks of reading
#: strings at any depth stand in for it.
CASES: Final = (
    ("ai-refusal-reworded", _MESSAGES, "MSG-011"),
    ("ai-refusal-names-first-id", _MESSAGES, "MSG-011"),
    ("ai-tag-password-only", _MESSAGES, "MSG-011"),
    ("unknown-ids-capped", _MESSAGES, "MSG-007"),
    ("empty-field-names-first-field", _MESSAGES, "MSG-008"),
    ("sequential-replace", _VALUES, "SUBST-005"),
    ("value-newline-stripped", _VALUES, "SUBST-005"),
    ("value-nfc-normalised", _VALUES, "SUBST-005"),
    ("deep-strings-unread", _DEPTH, "GRAM-011"),
    ("queue-full-recorded-as-no-error", _ENDINGS, "LEDG-001"),
    ("queue-full-recorded-as-timeout", _ENDINGS, "LEDG-005"),
    ("execution-timeout-recorded-as-timeout", _ENDINGS, "LEDG-005"),
)

#: The new check modules, each once.
MODULES: Final = tuple(dict.fromkeys(module for _, module, _ in CASES))

#: Older checks left out of the runs. The grammar vectors cite SUBST-005 and the LEDG
#: requirements by the hundred: each resolves an argument text built around ordinary canaries
#: and reads one ledger record, and none holds a value of an awkward shape or a QUEUE_FULL or
#: timed-out call, so they are left out to keep the runs short (GRAM-011's older checks are
#: those vectors, and its run keeps them). The checks of the moments around a full queue read
#: the AI-provider refusal's words too: they are not older checks.
#: The model check and the checks written after these find some of these mutants too
#: (:data:`~tests.conformance.mutant_classes.LATER_CHECKS`): they are left out of the older
#: checks here.
_LEFT_OUT: Final = f"test_grammar or test_queue_moments or {LATER_CHECKS}"


def _left_out(older: str) -> str:
    """Return the ``-k`` expression of the older checks a run of ``older`` leaves out."""
    return f"test_queue_moments or {LATER_CHECKS}" if older == "GRAM-011" else _LEFT_OUT


@pytest.mark.history
@pytest.mark.parametrize(("mutant", "module", "older"), CASES, ids=[case[0] for case in CASES])
def test_only_the_new_module_catches_the_mutant(
    tmp_path: Path, mutant: str, module: str, older: str
) -> None:
    """Every check of the mutant's requirement and of ``older`` runs against it once: the module
    written for it fails it naming the requirement, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (module,), older=older, left_out=_left_out(older))


def test_new_modules_pass_the_unmutated_host(tmp_path: Path) -> None:
    """The new modules, together, pass the reference host."""
    run = run_suite(tmp_path, target=["--pyargs", *MODULES])
    assert run.status == 0, f"the new modules fail the reference host: {run.failed_requirements()}"


def test_mutants_still_apply() -> None:
    """Each mutant's lines are still in their functions, and each patch is undone after it."""
    patches_apply_and_undo(name for name, _module, _older in CASES)
