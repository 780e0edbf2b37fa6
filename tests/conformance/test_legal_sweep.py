"""The legal sweep holds the whole suite's verdict on every legal variant (decisions S1.12).

``secref-conformance legal`` runs the whole suite against each legal variant, as a user's gate
would, and fails when any is judged not-conformant, when a check failed, when the exit code and
the report disagree (decisions S1), or when a variant that shows everything is left
incomplete. These check its judgment on reports of each kind and one real run; they check the
suite's own tool, not a host, so they cite no requirement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.selftest.legal import UNOBSERVABLE, judge, legal_variants, may_be_incomplete
from conformance.selftest.variants import BY_NAME, PARTLY_OBSERVED
from tests.conformance.suite_runs import console

#: A legal variant that shows everything, and one that leaves a call's disposition unobservable.
_FULL = BY_NAME["kill-switch-unfenced"]
_PARTLY = PARTLY_OBSERVED[0]


def _report(verdict: str, exit_code: int, **outcomes: str) -> dict[str, Any]:
    requirements = [{"id": rid.replace("_", "-"), "outcome": out} for rid, out in outcomes.items()]
    return {"verdict": verdict, "exitCode": exit_code, "requirements": requirements}


@pytest.mark.parametrize(
    ("variant", "report", "exit_code", "passed"),
    [
        (_FULL, _report("conformant", 0, FENCE_006="accepted-alternative"), 0, True),
        (_FULL, _report("not-conformant", 1, ORD_004="fail"), 1, False),
        (_FULL, _report("harness-error", 2, ORD_004="error"), 2, False),
        # Everything shown, yet some MUST unchecked: a gate the legal host cannot pass.
        (_FULL, _report("incomplete", 1, ORD_004="unchecked"), 1, False),
        (_PARTLY, _report("incomplete", 1, LEDG_006="unchecked"), 1, True),
        (_PARTLY, _report("not-conformant", 1, LEDG_006="fail"), 1, False),
        # The command line and its report disagree (decisions S1).
        (_FULL, _report("conformant", 0), 1, False),
        (_FULL, None, 2, False),
    ],
    ids=[
        "conformant",
        "not-conformant",
        "harness-error",
        "incomplete-though-all-shown",
        "incomplete-where-unobservable",
        "failed-where-unobservable",
        "exit-code-disagrees",
        "no-report",
    ],
)
def test_a_run_is_judged_as_a_legal_host_must_be(
    variant: Any, report: dict[str, Any] | None, exit_code: int, passed: bool
) -> None:
    row = judge(variant, report, exit_code, 1.0)
    assert row.passed is passed
    assert ("FALSE" in row.line()) is not passed


def test_only_variants_that_hide_a_fact_may_be_incomplete() -> None:
    """The variants allowed an incomplete verdict are those that leave a fact unobservable: the
    partly observed ones, those whose adapter hides an observation, and the named ones."""
    names = {variant.name for variant in legal_variants()}
    assert set(UNOBSERVABLE) <= names
    allowed = {variant.name for variant in legal_variants() if may_be_incomplete(variant)}
    assert {variant.name for variant in PARTLY_OBSERVED} <= allowed
    assert "kill-switch-unfenced" not in allowed
    assert "arguments-kept-whole" not in allowed  # it hides a capability, not an observation


def test_the_command_line_runs_the_sweep_and_names_the_seed(tmp_path: Path) -> None:
    """A narrowed sweep of one variant with a two-example campaign: one row, its model seed, a
    closing line, exit 0; an unknown variant is a usage error."""
    done, _ = console(
        tmp_path, "legal", "kill-switch-unfenced", "--campaign", "2", "--", "-k", "kill_switch"
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if "kill-switch-unfenced" in line]
    assert len(rows) == 1
    assert rows[0].startswith("ok")
    assert "conformant (narrowed)" in rows[0]
    assert "model seed" in rows[0]
    assert done.stdout.splitlines()[-1] == "legal sweep: 1 of 1 judged as the rulings ask"
    wrong, _ = console(tmp_path, "legal", "no-such-variant")
    assert wrong.returncode == 2
    assert "no legal variant is called no-such-variant" in wrong.stderr
