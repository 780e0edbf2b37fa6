"""The mutants of the approval flow at moments that span two prompts, and of the fence and the
queue against controls applied while prompts are open: the older checks of each mutant's
requirement pass it, and ``test_time_hunt``, written for them, catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_time.py``): a fence
that keeps one binding per tool (the stamps, or the count of ``secret.read`` losses) refreshed by
each prompt that opens, a fence that guards secret-bearing calls only, a fence that re-reads the
rule in force tool first beside saves that leave the stamps alone, a countdown that any operator
action restarts, and a kill-switch that empties the approval queue's count. Run in this process
against the mutant, in one run of every check of its requirement, the older checks pass and the
new module fails naming it. The new module's run against the unmutated reference host is the
suite's own run in CI; a host whose prompts arrive after the approval timeout leaves the
late-answer check unchecked. Nothing here prints a value.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.catalog_time import MUTANTS
from reference_impl import Answer, harness
from tests.conformance.mutant_classes import only_new_checks_catch, patches_apply_and_undo
from tests.conformance.suite_runs import run_suite

_MODULE: Final = "conformance.checks.test_time_hunt"

#: Older checks left out of the runs to keep them short: the model check draws seeded
#: campaigns that take most of a run, and the large-limit check holds 257 prompts open. Neither
#: holds one call's prompt across a change and a second call's prompt, fences a reference-free
#: prompt, or kills a tool with the queue full, and a whole run of the suite against each
#: mutant's fault passes.
_LEFT_OUT: Final = "test_model or test_large_pending_limit_holds"

#: Further older checks left out for one mutant: the timeout checks that never act on the host
#: while a prompt is open wait out a timeout each, and pass the restarted countdown anyway.
_ALSO_LEFT_OUT: Final = {
    "control-restarts-countdown": "test_limit_exact_after or test_timeout_ignores_permissive",
}

#: The mutants, by name.
CASES: Final = tuple(mutant.name for mutant in MUTANTS)


@pytest.mark.history
@pytest.mark.parametrize("mutant", CASES)
def test_only_the_new_module_catches_the_mutant(tmp_path: Path, mutant: str) -> None:
    """Every check of the mutant's requirement runs against it once: the module written for it
    fails it naming the requirement, and every older check passes it."""
    also = _ALSO_LEFT_OUT.get(mutant)
    left_out = f"{_LEFT_OUT} or {also}" if also else _LEFT_OUT
    only_new_checks_catch(tmp_path, mutant, (_MODULE,), left_out=left_out)


def test_mutants_still_apply() -> None:
    """Each mutant's patches still replace what they name, and each is undone after it."""
    patches_apply_and_undo(CASES)


def _prompt_after_the_timeout(_self: object, _request: object, timeout: float) -> Answer:
    """A prompt that reaches its operator only once the approval timeout has run out: the
    call ends TIMEOUT with the operator never asked, as over a loaded MCP wire."""
    time.sleep(timeout)
    return Answer.TIMEOUT


def test_a_prompt_that_never_reaches_the_operator_leaves_the_late_answer_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every try times out before its prompt is shown, the late-answer check has put
    nothing to the host: it leaves APPR-008 unchecked, saying why, and neither passes nor
    fails it; the run is then never conformant."""
    monkeypatch.setattr(harness._CallbackOperator, "ask", _prompt_after_the_timeout)
    run = run_suite(
        tmp_path,
        "-k",
        "test_late_answer_after_a_control_never_runs and yolo",
        target=["--pyargs", _MODULE],
    )
    report = run.report()
    (row,) = report["checks"]
    assert row["outcome"] == "skipped", row["outcome"]
    assert [item["requirement"] for item in row["unchecked"]] == ["APPR-008"]
    assert "never reached the operator" in row["unchecked"][0]["reason"]
    assert "APPR-008" not in run.failed_requirements()
    assert not report["verdict"].startswith("conformant")
