"""The mutants of the result path at large sizes, in awkward texts and across calls: the older
checks of each mutant's requirement pass it, and the check module written for it catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_outputs.py``): a
scrubber with a budget per form, a cap counting bytes, decided on the raw length or switched
off with scrubbing, a huge result cut before it is scrubbed, a scrub in blocks, results tidied
before the scrub, non-ASCII values skipped in ASCII text, JSON results re-encoded, a floor for
passwords only and a snippet cut before its scrub (``test_output_paths``); a late result logged
or handed to the next call, one scrub table for calls open at once, a session-wide scrubber and
a cached DENY lookup (``test_across_calls``). Run in this process against the mutant, in one
run of every check of its requirement, the older checks pass and the new module fails naming
it; against the unmutated reference host the new modules pass.

Two mutants are caught by older checks too: ``module-logger-warning`` warns on a module logger,
which the in-process adapter now keeps in the host log as the driver's standard error keeps it,
so the older LOG-001 check of a throwing handler catches it in process; and
``execution-timeout-recorded-as-no-error`` is caught by ``test_ledger_endings``, written for
that ending. ``deny-cache-misses-provider`` passes the older checks of MSG-005; the model check
meets it only in some of its seeded campaigns (a whole run of the suite draws one that does), so
it is held here to the check written for it. Nothing here prints a value.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import pytest

from conformance.host import HostConfig
from conformance.hosts.inprocess import InProcessHost
from conformance.selftest.catalog import get
from tests.conformance.mutant_classes import (
    LATER_CHECKS,
    only_new_checks_catch,
    patches_apply_and_undo,
)
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

#: (mutant, an older check that catches it too).
ALSO_OLDER: Final = (
    ("module-logger-warning", "test_log_holds_no_value"),
    ("execution-timeout-recorded-as-no-error", "test_execution_timeout_recorded"),
)

#: The new check modules, each once.
MODULES: Final = (_PATHS, _ACROSS)

#: Older checks left out of the runs: the grammar vectors cite the invariants and the ledger by
#: the hundred, each resolving one ordinary argument text, and none sends a large, awkward or
#: late result; they are left out to keep the runs short.
#: The model check and the checks written after these find some of these mutants too
#: (:data:`~tests.conformance.mutant_classes.LATER_CHECKS`): they are left out of the older
#: checks here.
_LEFT_OUT: Final = f"test_grammar or {LATER_CHECKS}"


@pytest.mark.history
@pytest.mark.parametrize(("mutant", "module", "older"), CASES, ids=[case[0] for case in CASES])
def test_only_the_new_module_catches_the_mutant(
    tmp_path: Path, mutant: str, module: str, older: str
) -> None:
    """Every check of the mutant's requirement and of ``older`` runs against it once: the module
    written for it fails it naming the requirement, and every older check passes it."""
    only_new_checks_catch(tmp_path, mutant, (module,), older=older, left_out=_LEFT_OUT)


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
    """Each mutant's lines are still in their functions, and each patch is undone after it."""
    patches_apply_and_undo(name for name, _module, _older in CASES)
