"""A secret.read lost while the prompt is open and given back before the answer still refuses
the call (decisions R3.4): the loss is among the events that refuse, and the ruling's one
EITHER is for a DENY replaced before the answer, not for a permission.

``secret-read-given-back-forgiven`` asks only whether the user holds the permission at the
answer, as the reference host once did. The older cases of the FENCE-003 check drop the
permission for good, so they pass it; the cases that give it back catch it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.suite_runs import run_suite

MUTANT = "mutant:secret-read-given-back-forgiven"


@pytest.mark.history
@pytest.mark.req("FENCE-003")
def test_older_fence_checks_pass_the_mutant(tmp_path: Path) -> None:
    """Every FENCE-003 check but the given-back cases passes the mutant."""
    run = run_suite(
        tmp_path,
        "--host",
        MUTANT,
        "--requirements",
        "FENCE-003",
        "-k",
        "not (given-back or test_model)",
    )
    assert run.status == 0, f"an older check caught it: {run.failed_requirements()}"
    assert any(row["outcome"] == "pass" for row in run.report()["checks"])


@pytest.mark.req("FENCE-003")
def test_given_back_cases_catch_the_mutant(tmp_path: Path) -> None:
    """The cases that give secret.read back before the answer fail the mutant on FENCE-003."""
    run = run_suite(tmp_path, "--host", MUTANT, "--requirements", "FENCE-003", "-k", "given-back")
    assert run.status == 1
    assert "FENCE-003" in run.failed_requirements()
