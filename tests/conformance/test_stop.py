"""Tests of ``--stop-when-decided``: a run that ends once its verdict is decided, and says so.

The self-test and the mutation runner pass it; a stopped run must never read as a pass, must
stop only once nothing later could make it conformant, and a run without it runs every check.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import pytest

from conformance.outcomes import Outcome
from conformance.report import (
    CONFORMANT,
    INCOMPLETE,
    CheckResult,
    RequirementInfo,
    RunData,
    summary_lines,
    verdict_text,
)
from conformance.selftest import pool, runner, strip
from tests.conformance.suite_runs import run_suite


def _passing_run(stopped: str | None) -> RunData:
    check = CheckResult("c::a", ("VAULT-003",))
    check.outcome = Outcome.PASS
    return RunData(
        host={"name": "h", "version": "1", "language": "x", "capabilities": []},
        vectors_digest=None,
        checks=[check],
        catalog=[RequirementInfo("VAULT-003", "MUST", "R7.1", "no read without references")],
        hardening=[],
        problems=[],
        started=datetime.datetime.now(datetime.UTC),
        duration_s=0.0,
        stopped=stopped,
    )


def test_a_stopped_run_is_never_conformant() -> None:
    """Every check that ran passed, yet a run that ended early certifies nothing."""
    assert _passing_run(None).verdict() == CONFORMANT
    assert _passing_run("stopped early").verdict() == INCOMPLETE


def test_the_verdict_line_names_the_stop() -> None:
    """The verdict sentence, and so every renderer, says the run ended early and why."""
    report = {"verdict": INCOMPLETE, "stopped": "stopped early, the verdict decided: x"}
    assert verdict_text(report).endswith("(stopped early, the verdict decided: x)")


def test_verdict_mode_stops_at_the_first_failure(tmp_path: Path) -> None:
    """Against a broken host, a run stops at its first failing check, names the stop in the
    JSON, Markdown and terminal reports, and is not conformant."""
    run = run_suite(
        tmp_path,
        "--host",
        "mutant:partial-substitution",
        "--requirements",
        "SUBST-004",
        "-k",
        "all_or_nothing",
        "--stop-when-decided",
    )
    report = run.report()
    assert report["verdict"] == "not-conformant"
    assert report["stopped"].startswith("stopped early, the verdict decided: ")
    failed = [check for check in report["checks"] if check["outcome"] == "fail"]
    assert len(failed) == 1, failed
    # The failure was the last check that ran: nothing ran after the decision.
    assert report["checks"][-1]["id"] == failed[0]["id"]
    assert "stopped early, the verdict decided" in run.md_path.read_text(encoding="utf-8")
    assert any(report["stopped"] in line for line in summary_lines(report, ()))
    assert 'name="secref-stopped"' in run.junit_path.read_text(encoding="utf-8")


def test_target_mode_runs_on_until_its_requirement_fails(tmp_path: Path) -> None:
    """Named requirements are decided by a failure naming them; the checks citing them run
    first, so the run ends there with the requirement among the failure's names."""
    run = run_suite(
        tmp_path,
        "--host",
        "mutant:partial-substitution",
        "--stop-when-decided",
        "SUBST-004",
    )
    report = run.report()
    assert run.status == pytest.ExitCode.TESTS_FAILED
    assert "SUBST-004" in report["checks"][-1]["failedRequirements"]
    assert report["stopped"] is not None
    # Only checks citing the target ran before the decision.
    assert all("SUBST-004" in check["requirements"] for check in report["checks"])


def test_an_unchecked_must_stops_the_run(tmp_path: Path) -> None:
    """With a capability stripped, the run ends once a MUST has had every check and none could
    judge it: the verdict is incomplete, and the stop says which MUST."""
    adapter = f"{sys.executable} -m reference_impl.driver"
    command = strip.stripped_command(["observe.ledger"], adapter)
    run = run_suite(
        tmp_path, "--host", command, "--requirements", "LEDG-004", "--stop-when-decided"
    )
    report = run.report()
    assert report["verdict"] == "incomplete"
    assert report["stopped"].startswith("stopped early, the verdict decided: the MUST ")
    assert report["stopped"].endswith(" is unchecked")


def test_an_ordinary_run_is_not_stopped(tmp_path: Path) -> None:
    """Without the option, a run against a broken host runs every selected check and its
    report says it was not stopped."""
    run = run_suite(
        tmp_path, "--host", "mutant:partial-substitution", "--requirements", "SUBST-004"
    )
    report = run.report()
    assert report["stopped"] is None
    ids = [check["id"] for check in report["checks"]]
    failed = [check["id"] for check in report["checks"] if check["outcome"] == "fail"]
    assert failed
    # Checks ran on after the first failure, as far as the last one selected.
    assert ids.index(failed[0]) < len(ids) - 1


def test_expectations_and_the_stop_refuse_each_other(tmp_path: Path) -> None:
    """An expectations file is applied when the run ends, so a stop would come before a listed
    failure is forgiven: the combination is a usage error."""
    listed = tmp_path / "expected.yaml"
    listed.write_text("host: x\nknownFailures: []\n", encoding="utf-8")
    run = run_suite(tmp_path, "--expectations", str(listed), "--stop-when-decided")
    assert run.status == pytest.ExitCode.USAGE_ERROR


def test_pool_answers_in_the_order_given() -> None:
    """Side by side, each answer comes back in the order its run was given."""
    lists = [[str(index)] for index in range(6)]
    answers = list(pool.run_all(_echo, lists, workers=2))
    assert [report["arguments"] for report, _seconds in answers if report] == lists


def _echo(arguments: object) -> dict[str, object]:
    return {"arguments": list(arguments)}  # type: ignore[call-overload]


def test_pool_refuses_no_workers() -> None:
    """Zero workers is a caller's mistake, said as such."""
    with pytest.raises(ValueError, match="at least 1"):
        list(pool.run_all(_echo, [["x"]], workers=0))


@pytest.mark.slow
def test_selftest_side_by_side_reads_as_a_serial_run() -> None:
    """The self-test's rows, stops and score are the same with two workers as with one,
    durations aside, for mutants caught in process and through the driver."""
    names = ["partial-substitution", "scrub-after-cap", "fence-stamp-ignored"]

    def rows(workers: int) -> list[str]:
        lines: list[str] = []
        assert runner.selftest(names, out=lines.append, workers=workers) == 0
        # Durations differ from run to run; everything else must not.
        return [line.split(" s, ")[-1] + line.split("(")[0] for line in lines[:-1]]

    assert rows(1) == rows(2)
