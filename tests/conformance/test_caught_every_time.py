"""Checks whose vector was once random catch their mutant on every run, not when the dice fall.

Two checks used to draw two random secret ids and judge an order built from them: the unknown
ids a refusal names (MSG-007) and the descriptors a prompt carries (APPR-002). A host that sorts
either was caught only when the random ids happened to be out of order, about one run in two.
The checks now choose ids in descending order. These run each check against the mutant that
sorts, several times over, and require a failure naming the requirement on every run; and run
the checks for the other classes' mutants (many references, many occurrences, long failure
texts, generated vault failure kinds and tool names) against them too, so that a change
that made one of them miss would show here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.mutant_classes import runs_that_catch
from tests.conformance.suite_runs import run_suite

#: How many times each check runs against its mutant.
RUNS = 5

#: (mutant, check module, ``-k`` expression picking the checks, requirement a failure names).
CASES = (
    (
        "unknown-ids-sorted",
        "conformance.checks.test_ordering",
        "test_unknown_ids_listed_once_in_order",
        "MSG-007",
    ),
    (
        "descriptors-sorted",
        "conformance.checks.test_approval",
        "test_request_descriptors and password",
        "APPR-002",
    ),
    (
        "ends-only-resolved",
        "conformance.checks.test_many_references",
        "test_one_unknown_reference_among_many and middle",
        "SUBST-004",
    ),
    (
        "unknown-vault-kinds-echoed",
        "conformance.checks.test_open_alphabets",
        "test_generated_vault_failure_kinds",
        "MSG-009",
    ),
    (
        "tool-rules-case-folded",
        "conformance.checks.test_open_alphabets",
        "test_near_named_tool_keeps_its_own_rule",
        "POL-004",
    ),
    (
        "tool-lookup-case-folded",
        "conformance.checks.test_open_alphabets",
        "test_near_names_are_unknown_tools",
        "ORD-006",
    ),
)


@pytest.mark.parametrize(
    ("mutant", "module", "selection", "requirement"), CASES, ids=[case[0] for case in CASES]
)
def test_mutant_caught_on_every_run(
    tmp_path: Path, mutant: str, module: str, selection: str, requirement: str
) -> None:
    """Each of ``RUNS`` runs of the check against the mutant fails naming its requirement."""
    caught = runs_that_catch(tmp_path, mutant, module, selection, requirement, RUNS)
    assert caught == RUNS, f"{mutant} was caught in {caught} of {RUNS} runs"


@pytest.mark.parametrize(
    ("mutant", "module", "selection", "requirement"), CASES, ids=[case[0] for case in CASES]
)
def test_checks_pass_the_reference_host(
    tmp_path: Path, mutant: str, module: str, selection: str, requirement: str
) -> None:
    """The same checks pass against the reference host, so a catch is the mutant's doing."""
    run = run_suite(tmp_path, "-k", selection, target=["--pyargs", module])
    assert run.status == 0, f"the checks for {requirement} failed the reference host"
