"""The plugin's self-check and its outcome rules, on small check modules written for each test.

A check that cites an unknown ID or the same ID twice stops the run as a harness error; a MUST
without a check is found; a SHOULD missed is non-strict and the run passes; an EITHER choice is
reported; a leak found by the sweep fails the check naming surface, form and requirement; a
check skipped for a missing capability is never a pass.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance._hooks import self_check
from tests.conformance.suite_runs import run_suite

HEADER = """
import pytest
from conformance.canary import Kind
from conformance.outcomes import accept, require, should
from conformance.scenario import ECHO, args_json, config, make_secret, ref
"""


def write_check(tmp_path: Path, body: str) -> list[str]:
    """Write a check module into ``tmp_path`` and return the pytest target for it."""
    # Each nested session imports its module by name: one name per test keeps them apart.
    stem = "".join(char if char.isalnum() else "_" for char in tmp_path.name)
    module = tmp_path / f"test_probe_{stem}.py"
    module.write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    (tmp_path / "out").mkdir(exist_ok=True)
    return [str(module), "--rootdir", str(tmp_path)]


@pytest.mark.req("INV1")
def test_self_check_finds_each_problem() -> None:
    """Unknown IDs, a repeated citation and uncovered MUSTs are each named."""
    problems = self_check([("a", ("GRAM-001", "GRAM-001")), ("b", ("NOPE-1",))], complete=True)
    text = "\n".join(problems)
    assert "cites a requirement ID more than once" in text
    assert "unknown requirement IDs: NOPE-1" in text
    assert "MUST requirements without a check" in text
    assert "APPR-001" in text
    assert not self_check([("a", ("GRAM-001",))], complete=False)


@pytest.mark.req("INV1")
def test_unknown_id_is_a_harness_error(tmp_path: Path) -> None:
    """A check citing an unknown ID stops the run and the report says harness error."""
    target = write_check(
        tmp_path,
        """
        @pytest.mark.req("NOPE-001")
        def test_cites_nothing_known(host):
            pass
        """,
    )
    run = run_suite(tmp_path / "out", target=target)
    assert run.status == pytest.ExitCode.USAGE_ERROR
    report = run.report()
    assert report["verdict"] == "harness-error"
    assert any("NOPE-001" in problem for problem in report["problems"])


@pytest.mark.req("MSG-013", "GRAM-007")
def test_should_is_non_strict_and_either_is_reported(tmp_path: Path) -> None:
    """A missed SHOULD passes the run as non-strict; an EITHER choice is reported."""
    target = write_check(
        tmp_path,
        """
        @pytest.mark.req("MSG-013")
        def test_should_missed(host):
            should(False, "MSG-013", "the location is missing")

        @pytest.mark.req("GRAM-007")
        def test_either(host):
            accept("GRAM-007", "literal")
        """,
    )
    run = run_suite(tmp_path / "out", target=target)
    assert run.status == 0
    report = run.report()
    # A probe module instead of the check package is a narrowed run (decisions S1.7).
    assert report["verdict"] == "conformant (narrowed)"
    outcomes = {check["id"].split("::")[-1]: check["outcome"] for check in report["checks"]}
    assert outcomes == {
        "test_should_missed": "non-strict",
        "test_either": "accepted-alternative",
    }
    by_id = {item["id"]: item for item in report["requirements"]}
    assert by_id["MSG-013"]["outcome"] == "non-strict"
    assert by_id["GRAM-007"]["alternatives"] == ["literal"]


@pytest.mark.req("ORD-002", "MSG-011")
@pytest.mark.parametrize("holds", [True, False])
def test_a_check_that_would_stop_for_a_should_alone_is_a_suite_error(
    tmp_path: Path, holds: bool
) -> None:
    """require() and fail() naming SHOULD requirements alone end the check as the suite's own
    error, on any host and whether or not the condition holds: a check stopped there would
    leave the MUST judgments after it unmade, and a host that departs from the SHOULD, as it
    may, would get an incomplete run. Naming a MUST beside the SHOULD is a judgment that may
    stop the check."""
    target = write_check(
        tmp_path,
        f"""
        from conformance.outcomes import fail

        @pytest.mark.req("ORD-002", "MSG-011")
        def test_stops_at_a_should(host):
            require({holds}, "ORD-002", "another refusal won")
            require(True, "MSG-011", "the refusal is not the ruling's")

        @pytest.mark.req("ORD-002")
        def test_fails_a_should(host):
            fail(("ORD-002", "GRAM-006"), "another refusal won")

        @pytest.mark.req("ORD-002", "MSG-011")
        def test_names_a_must_beside(host):
            require({holds}, ("ORD-002", "MSG-011"), "another refusal won")
        """,
    )
    report = run_suite(tmp_path / "out", target=target).report()
    assert (report["verdict"], report["exitCode"]) == ("harness-error", 2)
    outcomes = {check["id"].split("::")[-1]: check["outcome"] for check in report["checks"]}
    assert outcomes == {
        "test_stops_at_a_should": "error",
        "test_fails_a_should": "error",
        "test_names_a_must_beside": "pass" if holds else "fail",
    }
    details = [check.get("detail", "") for check in report["checks"]]
    assert any("SHOULD requirements alone (ORD-002)" in detail for detail in details)


@pytest.mark.req("INV1", "LOG-001")
def test_leak_fails_naming_surface_and_form(tmp_path: Path) -> None:
    """A check whose host leaks fails, naming surface and form, and the run is not conformant."""
    target = write_check(
        tmp_path,
        """
        @pytest.mark.req("INV1-ECHO")
        def test_echo_with_scrubbing_by_static_text(host, mint):
            secret = make_secret(mint)
            from conformance.scenario import tool
            from conformance.host import HandlerKind
            # A static result holding the value of a secret the call does not reference: the
            # host has no reason to scrub it, so the sweep must find it.
            static = tool("static", HandlerKind.STATIC, text="leak " + secret.password)
            host.reset(config([secret], tools=(static,)))
            host.invoke("static", "{}")
        """,
    )
    run = run_suite(tmp_path / "out", target=target)
    assert run.status == 1
    (check,) = run.report()["checks"]
    assert check["outcome"] == "fail"
    assert "INV1" in check["failedRequirements"]
    assert "INV1-ECHO" in check["failedRequirements"]
    assert "form a on the result" in check["detail"]


@pytest.mark.req("INV1")
def test_missing_capability_skips(tmp_path: Path) -> None:
    """A check skipped for a missing capability is skipped with its reason, never passed, and
    the MUST it alone checks leaves the run incomplete."""
    target = write_check(
        tmp_path,
        """
        @pytest.mark.req("APPR-009")
        def test_needs_teleport(host):
            host.need("teleport")
        """,
    )
    run = run_suite(tmp_path / "out", target=target)
    report = run.report()
    (check,) = report["checks"]
    assert check["outcome"] == "skipped"
    assert "teleport" in check["detail"]
    assert report["verdict"] == "incomplete"
    assert report["unchecked"]["undeclared"][0]["id"] == "APPR-009"


@pytest.mark.req("INV1")
def test_the_suites_own_error_fails_no_requirement(tmp_path: Path) -> None:
    """A check that stops on the suite's own error judged nothing: the run is a harness error
    and no requirement it cites is failed."""
    target = write_check(
        tmp_path,
        """
        from conformance.outcomes import SuiteError

        @pytest.mark.req("INV1")
        def test_stops_on_its_own_error(host):
            raise SuiteError("the draws were not repeatable")
        """,
    )
    _assert_suite_error(tmp_path, target, "suite error: ")


@pytest.mark.req("APPR-009")
def test_a_call_thread_the_suite_cannot_start_fails_no_requirement(tmp_path: Path) -> None:
    """A pending call whose thread the suite cannot start (its process at a limit of threads or
    address space) is the suite's error: it once failed APPR-009 as if the host had broken."""
    target = write_check(
        tmp_path,
        """
        import threading

        @pytest.mark.req("APPR-009")
        def test_opens_a_pending_call(host, monkeypatch):
            def refuse(self):
                raise RuntimeError("can't start new thread")

            monkeypatch.setattr(threading.Thread, "start", refuse)
            host.start("recorder", "{}")
        """,
    )
    _assert_suite_error(tmp_path, target, "suite error: the suite could not start a thread")


def _assert_suite_error(tmp_path: Path, target: list[str], detail: str) -> None:
    """The one check in ``target`` errs on the suite's own error, whose text begins ``detail``:
    the run is a harness error and no requirement is failed."""
    run = run_suite(tmp_path / "out", target=target)
    report = run.report()
    assert report["verdict"] == "harness-error"
    (check,) = report["checks"]
    assert check["outcome"] == "error"
    assert check["failedRequirements"] == []
    assert check["detail"].startswith(detail)
    assert run.failed_requirements() == set()
