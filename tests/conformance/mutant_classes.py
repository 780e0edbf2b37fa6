"""Hold a class's mutants to what their checks were written for: the older checks pass each
one, and the new checks catch it.

This module owns the two tests the mutant classes share (``test_moment_mutants``,
``test_output_mutants``, ``test_record_mutants``): :func:`only_new_checks_catch`, one nested run
of every check of a mutant's requirement, older and new, against the mutant, which must fail in
the new checks alone, on the mutant's own path (:func:`mutant_host`); and
:func:`patches_apply_and_undo`, that each mutant's patches still
replace what they name and are undone after it. Neither prints a value.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from conformance.selftest.base import applied
from conformance.selftest.catalog import get
from conformance.selftest.runner import host_arguments, path_of
from tests.conformance.suite_runs import run_suite

#: The ``-k`` expression of the checks written after the first mutant classes (moments, outputs,
#: records): the model check, whose world now holds every moment and output class, and the
#: modules of the later classes. Each may catch an earlier class's mutant too, which is what it
#: was written for; the earlier classes' tests leave them out of their "older checks". A new
#: check module of a later class is added here.
LATER_CHECKS: Final = " or ".join(
    (
        "test_model",
        "test_roles_hunt",
        "test_text_hunt",
        "test_wire_hunt",
        "test_returns_hunt",
        "test_time_hunt",
        "test_dice_hunt",
        "test_members_hunt",
        "test_requests_hunt",
    )
)


def only_new_checks_catch(
    tmp_path: Path,
    mutant: str,
    new_modules: Sequence[str],
    *,
    older: str | None = None,
    left_out: str = "",
) -> None:
    """Run every check of the mutant's requirement (and of ``older``, a requirement whose older
    checks stand in for a new one's) against the mutant, in one nested run: the checks of
    ``new_modules`` fail it naming its requirement, and every other check passes it.

    Args:
        tmp_path: Where the run writes its reports.
        mutant: The mutant's catalog name.
        new_modules: The dotted names of the check modules written for its class.
        older: Another requirement whose checks must pass the mutant too.
        left_out: A ``-k`` expression of older checks left out to keep the run short.
    """
    requirement = get(mutant).requirement
    chosen = ",".join(dict.fromkeys((requirement, *((older,) if older else ()))))
    arguments = [*mutant_host(mutant), "--requirements", chosen]
    if left_out:
        arguments += ["-k", f"not ({left_out})"]
    run = run_suite(tmp_path, *arguments)
    files = tuple(module.rsplit(".", 1)[1] + ".py::" for module in new_modules)
    rows: list[dict[str, Any]] = run.report()["checks"]

    def new(row: dict[str, Any]) -> bool:
        return any(name in str(row["id"]) for name in files)

    earlier = [row for row in rows if not new(row)]
    caught_by_older = [row["id"] for row in earlier if row["outcome"] in _CAUGHT]
    assert caught_by_older == [], f"older checks caught {mutant}: {caught_by_older[:3]}"
    # A run whose older checks were all skipped (a host that did not start in time, say) is no
    # evidence either way: say what they ended as, and why, rather than only that none passed.
    assert any(row["outcome"] == "pass" for row in earlier), "no older check passed: " + "; ".join(
        f"{row['id']} {row['outcome']} {row.get('detail') or ''}" for row in earlier[:3]
    )
    assert any(new(row) and row["outcome"] == "fail" for row in rows), f"{mutant} got through"
    assert requirement in run.failed_requirements(), f"no new check named {requirement}"


#: The outcomes of a check that found the mutant.
_CAUGHT = ("fail", "error")


def mutant_host(mutant: str) -> list[str]:
    """Return the arguments that check the mutant on its own path: in this process, behind
    the reference driver, or over that driver's MCP endpoint (its ``via``)."""
    changed = get(mutant)
    return host_arguments(changed, path_of(changed, "catalog"))


def runs_that_catch(
    tmp_path: Path, mutant: str, module: str, selection: str, requirement: str, runs: int
) -> int:
    """Run the checks of ``module`` that ``selection`` (a ``-k`` expression) chooses against
    ``mutant`` ``runs`` times, each with fresh canaries and ids, and return how many runs failed
    naming ``requirement``: a check that catches by design catches in every one."""
    caught = 0
    for run_number in range(runs):
        run = run_suite(
            tmp_path / f"run-{run_number}",
            "--host",
            f"mutant:{mutant}",
            "-k",
            selection,
            target=["--pyargs", module],
        )
        caught += run.status != 0 and requirement in run.failed_requirements()
    return caught


def patches_apply_and_undo(names: Iterable[str]) -> None:
    """Each named mutant's patches replace what they name while it is applied (a one-line
    patch's line is still in its function) and are undone after it."""
    for name in names:
        mutant = get(name)
        targets = [(module, dotted) for module, dotted, _ in mutant.patches]
        before = [_current(*where) for where in targets]
        with applied(mutant):
            during = [_current(*where) for where in targets]
        after = [_current(*where) for where in targets]
        assert all(a is not b for a, b in zip(before, during, strict=True)), name
        assert after == before, name


def _current(module: str, dotted: str) -> object:
    owner: object = importlib.import_module(module)
    *parents, attribute = dotted.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return vars(owner)[attribute]
