"""The mutants of the result path at large sizes, in awkward texts and across calls: the older
checks of each mutant's requirement pass it, and the check module written for it catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_outputs.py``): a
scrubber with a budget per form, a cap counting bytes, decided on the raw length or switched
off with scrubbing, a huge result cut before it is scrubbed, a scrub in blocks, results tidied
before the scrub, non-ASCII values skipped in ASCII text, JSON results re-encoded, a floor for
passwords only and a snippet cut before its scrub (``test_output_paths``); a late result logged
or handed to the next call, one scrub table for calls open at once, a session-wide scrubber and
a cached DENY lookup (``test_across_calls``). Run in this process against the mutant, the older
checks of its requirement pass and the new module fails naming it; against the unmutated
reference host the new modules pass.

Two mutants are caught by older checks too: ``module-logger-warning`` warns on a module logger,
which the in-process adapter now keeps in the host log as the driver's standard error keeps it,
so the older LOG-001 check of a throwing handler catches it in process; and
``execution-timeout-recorded-as-no-error`` is caught by ``test_ledger_endings``, written for
that ending. ``deny-cache-misses-provider`` passes the older checks of MSG-005; the model check
meets it only in some of its seeded campaigns (a whole run of the suite draws one that does), so
it is held here to the check written for it. Nothing here prints a value.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Final

import pytest

from conformance.host import HostConfig
from conformance.hosts.inprocess import InProcessHost
from conformance.selftest.base import applied
from conformance.selftest.catalog import get
from tests.conformance.suite_runs import run_suite

_PATHS: Final = "conformance.checks.test_output_paths"
_ACROSS: Final = "conformance.checks.test_across_calls"

#: (mutant, the new check module that catches it, the requirement whose older checks pass it).
CASES: Final = (
    ("scrub-budget-per-form", _PATHS, "SCRUB-009"),
    ("cap-counts-utf8-bytes", _PATHS, "CAP-003"),
    ("huge-result-capped-first", _PATHS, "CAP-002"),
    ("scrub-in-blocks", _PATHS, "SCRUB-003"),
    ("cap-decided-on-raw-length", _PATHS, "CAP-001"),
    ("cap-off-with-scrubbing-off", _PATHS, "CAP-001"),
    ("crlf-normalized", _PATHS, "SCRUB-003"),
    ("result-rstripped", _PATHS, "CAP-003"),
    ("ascii-text-skips-non-ascii-values", _PATHS, "SCRUB-005"),
    ("json-result-values-only", _PATHS, "SCRUB-003"),
    ("floor-only-for-passwords", _PATHS, "SCRUB-001"),
    ("snippet-cut-then-scrubbed", _PATHS, "CAP-002"),
    ("late-result-logged", _ACROSS, "LOG-001"),
    ("completion-queue", _ACROSS, "INV1"),
    ("shared-scrub-table", _ACROSS, "INV1-ECHO"),
    ("session-wide-scrub", _ACROSS, "INV5"),
    ("deny-cache-misses-provider", _ACROSS, "MSG-005"),
)

#: (mutant, the new check module that catches it).
CAUGHT: Final = tuple((mutant, module) for mutant, module, _older in CASES)

#: (mutant, an older check that catches it too).
ALSO_OLDER: Final = (
    ("module-logger-warning", "test_log_holds_no_value"),
    ("execution-timeout-recorded-as-no-error", "test_execution_timeout_recorded"),
)

#: The new check modules, each once.
MODULES: Final = (_PATHS, _ACROSS)

#: Checks left out of the older runs besides the new modules: the grammar vectors cite the
#: invariants and the ledger by the hundred, each resolving one ordinary argument text, and none
#: sends a large, awkward or late result; they are left out to keep the runs short.
_LEFT_OUT: Final = "test_output_paths or test_across_calls or test_grammar"


@pytest.mark.parametrize(("mutant", "module", "older"), CASES, ids=[case[0] for case in CASES])
def test_older_checks_pass_the_mutant(tmp_path: Path, mutant: str, module: str, older: str) -> None:
    """Every older check of the requirement passes the mutant."""
    run = run_suite(
        tmp_path,
        "--host",
        f"mutant:{mutant}",
        "--requirements",
        older,
        "-k",
        f"not ({_LEFT_OUT})",
    )
    passed = [row for row in run.report()["checks"] if row["outcome"] == "pass"]
    assert run.status == 0, f"an older check of {older} caught {mutant}"
    assert passed, f"no older check of {older} ran"


@pytest.mark.parametrize(("mutant", "module"), CAUGHT, ids=[case[0] for case in CAUGHT])
def test_new_module_catches_the_mutant(tmp_path: Path, mutant: str, module: str) -> None:
    """The module written for the mutant, alone, fails it naming the mutant's requirement."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", target=["--pyargs", module])
    requirement = get(mutant).requirement
    assert run.status != 0, f"{module} let {mutant} through"
    assert requirement in run.failed_requirements(), f"{module} did not name {requirement}"


def test_new_modules_pass_the_unmutated_host(tmp_path: Path) -> None:
    """The new modules, together, pass the reference host."""
    run = run_suite(tmp_path, target=["--pyargs", *MODULES])
    assert run.status == 0, f"the new modules fail the reference host: {run.failed_requirements()}"


@pytest.mark.parametrize(("mutant", "check"), ALSO_OLDER, ids=[case[0] for case in ALSO_OLDER])
def test_mutant_caught_by_an_older_check(tmp_path: Path, mutant: str, check: str) -> None:
    """A module logger's warning is searched in process, and an execution timeout's record is
    judged by the check of ledger endings: each mutant fails naming its requirement."""
    requirement = get(mutant).requirement
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", "-k", check)
    assert run.status != 0, f"{check} let {mutant} through"
    assert requirement in run.failed_requirements(), f"{check} did not name {requirement}"


def test_in_process_log_keeps_other_loggers() -> None:
    """In process, a record the host process writes to a logger other than the registry's is
    reported in the host log; the suite's own records are not."""
    host = InProcessHost()
    try:
        host.reset(HostConfig())
        logging.getLogger("reference_impl.some_module").warning("host record %d", 1)
        logging.getLogger("conformance.some_module").warning("suite record")
        messages = [record.message for record in host.observe().log_records]
        assert "host record 1" in messages
        assert "suite record" not in messages
        host.reset(HostConfig())
        assert "host record 1" not in [record.message for record in host.observe().log_records]
    finally:
        host.close()
    assert host._process_log not in logging.getLogger().handlers


def test_mutants_still_apply() -> None:
    """Each mutant's patches still apply, and each is undone after it."""
    names = [name for name, _module in CAUGHT] + [name for name, _check in ALSO_OLDER]
    for name in dict.fromkeys(names):
        mutant = get(name)
        targets = [(module, dotted) for module, dotted, _ in mutant.patches]

        def current(where: tuple[str, str]) -> object:
            owner: object = importlib.import_module(where[0])
            *parents, attribute = where[1].split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            return vars(owner)[attribute]

        before = [current(where) for where in targets]
        with applied(mutant):
            during = [current(where) for where in targets]
        after = [current(where) for where in targets]
        assert all(a is not b for a, b in zip(before, during, strict=True)), name
        assert after == before, name
