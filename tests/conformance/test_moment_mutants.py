"""The approval queue's and the approval timeout's mutants pass every older check of their
requirement; the check of queue moments written for each catches it.

Each mutant (``conformance/selftest/catalog_moments.py``) breaks the count of open prompts or the
approval timeout at a moment the older checks never reach: a timeout, a late answer, a QUEUE_FULL
refusal, a reset or an approved call still running; a reference-free prompt, or one for another
tool; a refusal of resolution made while the queue is full; a rule or trust standing in for an
answer that never came; a second prompt restarting the first one's countdown. The older checks
of the mutant's requirement pass it, and the checks of ``test_queue_moments`` fail it naming the
requirement: one run of every check of the requirement shows both. Nothing here prints a value.
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

#: The check module written for these mutants.
MODULE: Final = "conformance.checks.test_queue_moments"

#: The model check and the checks written after these find some of these mutants too
#: (:data:`~tests.conformance.mutant_classes.LATER_CHECKS`): they are left out of the older
#: checks here.
_MODEL: Final = LATER_CHECKS

#: (mutant, the ``-k`` expression choosing the check of the module that catches it).
CASES: Final = (
    ("timeout-frees-slot-twice", "test_limit_exact_after and timeouts"),
    ("queue-full-frees-a-slot", "test_limit_exact_after and queue"),
    ("plain-prompts-uncounted", "test_every_prompt_counts"),
    ("pending-limit-per-tool", "test_limit_is_one_for_every_tool"),
    ("late-answer-accepted", "test_late_answer_never_runs"),
    ("timeout-keeps-its-slot", "test_limit_exact_after and timeouts"),
    ("queue-full-before-resolution", "test_resolution_refusal_while_queue_full"),
    ("timeout-falls-back-to-rule", "test_timeout_ignores_permissive_rules"),
    ("countdown-restarts-for-all", "test_each_prompt_keeps_its_own_timeout"),
    ("plain-prompt-standard-timeout", "test_late_answer_never_runs"),
    ("slot-held-while-executing", "test_limit_exact_after and executing"),
    ("reset-empties-queue", "test_limit_exact_after and reset"),
)

_IDS: Final = [case[0] for case in CASES]


@pytest.mark.history
@pytest.mark.parametrize(("mutant", "check"), CASES, ids=_IDS)
def test_only_the_moment_checks_catch_the_mutant(tmp_path: Path, mutant: str, check: str) -> None:
    """Every check of the mutant's requirement runs against it once: those of queue moments
    fail it naming the requirement, and every older one passes it. ``check`` names the moment
    check written for it, for the reader."""
    del check
    only_new_checks_catch(tmp_path, mutant, (MODULE,), left_out=_MODEL)


def test_moment_checks_pass_the_unmutated_host(tmp_path: Path) -> None:
    """The checks of queue moments, together, pass the reference host."""
    run = run_suite(tmp_path, target=["--pyargs", MODULE])
    assert run.status == 0, (
        f"the moment checks fail the reference host: {run.failed_requirements()}"
    )


def test_moment_mutants_apply_and_undo() -> None:
    """Each mutant's patches still apply (the late-answer line is still in its function once),
    and are undone after it."""
    patches_apply_and_undo(name for name, _check in CASES)
