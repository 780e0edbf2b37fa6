"""The mutants of refusal lists, awkward values, deep nesting and ledger endings: the older
checks of each mutant's requirement pass it, and the check module written for it catches it.

Each mutant is an entry of the mutant catalog (``conformance/selftest/catalog_records.py``):
refusals that name the first secret or field of a call or cut a long list of unknown ids short,
values tidied or rewritten a second time on their way to the handler, a parser that leaves
strings past 64 levels unread, and ledger records of QUEUE_FULL calls and execution timeouts
that do not say how the call ended. Run in this process against the mutant, the older checks
of its requirement pass and the new module fails naming it; against the unmutated reference
host the new modules pass. Nothing here prints a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from conformance.selftest.base import applied
from conformance.selftest.catalog import get
from tests.conformance.suite_runs import run_suite

_MESSAGES: Final = "conformance.checks.test_message_lists"
_VALUES: Final = "conformance.checks.test_awkward_values"
_DEPTH: Final = "conformance.checks.test_deep_nesting"
_ENDINGS: Final = "conformance.checks.test_ledger_endings"

#: (mutant, the new check module that catches it, the requirement whose older checks pass it).
#: The depth mutant breaks a requirement no older check cites: the older checks of reading
#: strings at any depth stand in for it.
CASES: Final = (
    ("ai-refusal-reworded", _MESSAGES, "MSG-011"),
    ("ai-refusal-names-first-id", _MESSAGES, "MSG-011"),
    ("ai-tag-password-only", _MESSAGES, "MSG-011"),
    ("unknown-ids-capped", _MESSAGES, "MSG-007"),
    ("empty-field-names-first-field", _MESSAGES, "MSG-008"),
    ("sequential-replace", _VALUES, "SUBST-005"),
    ("value-newline-stripped", _VALUES, "SUBST-005"),
    ("value-nfc-normalised", _VALUES, "SUBST-005"),
    ("deep-strings-unread", _DEPTH, "GRAM-011"),
    ("queue-full-recorded-as-no-error", _ENDINGS, "LEDG-001"),
    ("queue-full-recorded-as-timeout", _ENDINGS, "LEDG-005"),
    ("execution-timeout-recorded-as-timeout", _ENDINGS, "LEDG-005"),
)

#: The new check modules, each once.
MODULES: Final = tuple(dict.fromkeys(module for _, module, _ in CASES))

#: The new modules by the name ``-k`` knows them by.
_NEW: Final = " or ".join(module.rsplit(".", 1)[1] for module in MODULES)

#: Checks left out of the older runs besides the new modules. The grammar vectors cite SUBST-005
#: and the LEDG requirements by the hundred: each resolves an argument text built around
#: ordinary canaries and reads one ledger record, and none holds a value of an awkward shape or
#: a QUEUE_FULL or timed-out call, so they are left out to keep the runs short (GRAM-011's
#: older checks are those vectors, and its run keeps them). The checks of the moments around a
#: full queue read the AI-provider refusal's words too: they are not older checks.
_LEFT_OUT: Final = "test_grammar or test_queue_moments"


def _left_out(older: str) -> str:
    """Return the ``-k`` expression of the checks an older run of ``older`` leaves out."""
    if older == "GRAM-011":
        return f"{_NEW} or test_queue_moments"
    return f"{_NEW} or {_LEFT_OUT}"


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
        f"not ({_left_out(older)})",
    )
    passed = [row for row in run.report()["checks"] if row["outcome"] == "pass"]
    assert run.status == 0, f"an older check of {older} caught {mutant}"
    assert passed, f"no older check of {older} ran"


@pytest.mark.parametrize(("mutant", "module", "older"), CASES, ids=[case[0] for case in CASES])
def test_new_module_catches_the_mutant(
    tmp_path: Path, mutant: str, module: str, older: str
) -> None:
    """The module written for the mutant, alone, fails it naming the mutant's requirement."""
    run = run_suite(tmp_path, "--host", f"mutant:{mutant}", target=["--pyargs", module])
    requirement = get(mutant).requirement
    assert run.status != 0, f"{module} let {mutant} through"
    assert requirement in run.failed_requirements(), f"{module} did not name {requirement}"


def test_new_modules_pass_the_unmutated_host(tmp_path: Path) -> None:
    """The new modules, together, pass the reference host."""
    run = run_suite(tmp_path, target=["--pyargs", *MODULES])
    assert run.status == 0, f"the new modules fail the reference host: {run.failed_requirements()}"


def test_mutants_still_apply() -> None:
    """Each mutant's lines are still in their functions, and each patch is undone after it."""
    import importlib

    for name, _module, _older in CASES:
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
