"""The survivor classes of mutation testing, each killed by the check written for it.

A fresh-seed mutation run left survivors in these classes: what the ledger records for refused
calls and host failures, which calls carry an errorSnippet, stray characters at JSON's separator
places, a pending limit above small numbers, a revocation spanning the prompts of several calls,
a look-alike marker beside a real reference, the error a policy file with one unknown member
gets, a value inside another at the start of a scrubbed text, a long value that overlaps
itself, and a host failure whose record cannot be built. Each case below names a one-line mutant
of the reference host of that class (cosmic-ray's operators, or the same kind of change), which
the checks before these let through; the mutants are entries of the mutant catalog
(``conformance/selftest/catalog_lines.py`` and ``catalog_survivors.py``), which the self-test
catches with the whole suite. Here each is held to the check module written for its class on
its own: run in this process against the mutant, the module must fail naming the mutant's
requirement, and against the unmutated reference host it must pass. Nothing here prints a
value.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Final

import pytest

from conformance.selftest.base import applied
from conformance.selftest.catalog import get
from tests.conformance.suite_runs import run_suite

#: (mutant, the check module written for its class, which must catch it on its own).
CASES: Final = (
    ("refusal-recorded-as-no-error", "conformance.checks.test_ledger_outcomes"),
    ("host-failure-recorded-without-snippet", "conformance.checks.test_ledger_outcomes"),
    ("host-failure-hides-its-lost-record", "conformance.checks.test_ledger_outcomes"),
    ("snippet-on-every-call", "conformance.checks.test_ledger_outcomes"),
    ("reader-inverts-error-snippet", "conformance.checks.test_ledger_outcomes"),
    ("low-characters-taken-for-a-comma", "conformance.checks.test_separators"),
    ("high-characters-close-a-container", "conformance.checks.test_separators"),
    ("parse-position-compared-by-identity", "conformance.checks.test_separators"),
    ("pending-count-compared-by-identity", "conformance.checks.test_large_limits"),
    ("tool-stamp-moves-once", "conformance.checks.test_fence_spans"),
    ("provider-stamp-moves-once", "conformance.checks.test_fence_spans"),
    ("look-alike-read-beside-a-real-marker", "conformance.checks.test_lookalike_beside"),
    ("policy-error-names-second-unknown", "conformance.checks.test_reference_only"),
    ("overlap-test-inverted", "conformance.checks.test_exact_results"),
    ("self-overlap-window-masked", "conformance.checks.test_exact_results"),
    ("failure-record-error-raised", "conformance.checks.test_ledger_outcomes"),
)

#: The check modules of the cases, each once.
CHECKS: Final = tuple(dict.fromkeys(check for _, check in CASES))


@pytest.mark.parametrize(("mutant", "check"), CASES, ids=[case[0] for case in CASES])
def test_class_mutant_is_killed_by_its_check(mutant: str, check: str, tmp_path: Path) -> None:
    """The check module of the mutant's class, alone, fails it naming its requirement."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", target=["--pyargs", check])
    requirement = get(mutant).requirement
    assert run.status != 0, f"{check} let {mutant} through"
    assert requirement in run.failed_requirements(), f"{check} did not name {requirement}"


def test_class_checks_pass_the_unmutated_host(tmp_path: Path) -> None:
    """The check modules of the classes, together, pass the reference host."""
    run = run_suite(tmp_path, target=["--pyargs", *CHECKS])
    assert run.status == 0, f"the class checks fail the reference host: {run.failed_requirements()}"


def test_class_mutants_still_apply() -> None:
    """Each mutant's line is still in its function once, and the patch is undone after it."""
    for name, check in CASES:
        mutant = get(name)
        before = [_current(module, dotted) for module, dotted, _ in mutant.patches]
        with applied(mutant):
            during = [_current(module, dotted) for module, dotted, _ in mutant.patches]
        after = [_current(module, dotted) for module, dotted, _ in mutant.patches]
        assert all(a is not b for a, b in zip(before, during, strict=True)), name
        assert after == before, name
        assert importlib.util.find_spec(check) is not None, check


def _current(module: str, dotted: str) -> object:
    owner: object = importlib.import_module(module)
    *parents, attribute = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return vars(owner)[attribute]


@pytest.mark.history
def test_the_whole_older_suite_passes_a_value_inside_another(tmp_path: Path) -> None:
    """``overlap-test-inverted`` writes no whole form anywhere, so no leak search sees it, and
    no older exact comparison ends its occurrences with a value inside another: every check but
    the one written for it passes the mutant."""
    run = run_suite(
        tmp_path,
        "--host",
        "mutant:overlap-test-inverted",
        "-k",
        "not test_value_inside_another_is_replaced_once",
    )
    assert run.status == 0, f"an older check caught it: {run.failed_requirements()}"
    assert run.report()["verdict"].startswith("conformant")


@pytest.mark.history
@pytest.mark.req("LEDG-007")
def test_withheld_calls_unredacted_is_reported_by_its_check_alone(tmp_path: Path) -> None:
    """``withheld-calls-unredacted`` keeps malformed candidates in the sanitizedArgs of calls
    the kill switch or RBAC withholds (a cosmic-ray survivor of ``_sanitize``: the whole suite
    passed it cleanly). The older LEDG-007 checks pass it; the check of withheld calls reports
    LEDG-007 not fully met (a SHOULD: reported, never failed)."""
    older_dir, newer_dir = tmp_path / "older", tmp_path / "newer"
    older_dir.mkdir()
    newer_dir.mkdir()
    host = ("--host", "mutant:withheld-calls-unredacted")
    newer_check = "test_malformed_redacted_on_withheld_calls"
    older = run_suite(older_dir, *host, "--requirements", "LEDG-007", "-k", f"not {newer_check}")
    newer = run_suite(newer_dir, *host, "--requirements", "LEDG-007", "-k", newer_check)

    def outcome(run: Any) -> str:
        rows = {row["id"]: row["outcome"] for row in run.report()["requirements"]}
        return str(rows["LEDG-007"])

    assert (older.status, newer.status) == (0, 0)
    assert outcome(older) == "pass"
    assert outcome(newer) == "non-strict"
