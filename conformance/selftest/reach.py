"""How far the model check reaches alone: every catalog mutant against the model check only.

The self-test asks whether some check catches each mutant, naming its requirement. This asks a
narrower question of the model check (``conformance/checks/test_model.py``): with its CI budget
and seed and no other check, which mutants does it fail at all, naming what, and after how
many steps? A mutant it misses is left to its named checks, which the self-test holds to
catching it; the figure says how much of the catalog the model would find unaided, the way an
independent host's new fault meets it. Each mutant is reached on its own path (in process,
behind the reference driver, or over MCP), as the self-test reaches it.

It is a measurement, not a gate: it exits 0 whatever the model finds (a model check skipped as
unchecked included, which is a row of its own), 1 when a run gave no report or no model row or
the model check errored, 2 for an unknown name. It prints mutant names, requirement IDs and the
model's own step counts, never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from conformance.model.budget import FIRST_SEEN
from conformance.selftest import collection, pool, runner
from conformance.selftest.catalog import BY_NAME, MUTANTS

#: The model check's row in a report.
MODEL_CHECK: Final = "test_model.py::test_model"


def model_arguments(name: str) -> list[str]:
    """Return the suite arguments that run the model check alone against mutant ``name`` on
    its own path."""
    mutant = BY_NAME[name]
    return [*runner.host_arguments(mutant, runner.path_of(mutant, "catalog")), "-k", "test_model"]


def read_row(report: dict[str, Any] | None) -> tuple[str, tuple[str, ...], str]:
    """Return what one run's report says of the model check: ``"found"`` (it failed),
    ``"should"`` (it passed but reported a SHOULD missed), ``"missed"`` (it passed),
    ``"unchecked"`` (it was skipped: the mutant left what it compares unlearnable, so the run
    is incomplete, never conformant), or ``"no-run"`` (no report, no model row, or an error:
    no verdict); the requirements it named; where it first saw the divergence."""
    rows = [row for row in (report or {}).get("checks", ()) if MODEL_CHECK in str(row["id"])]
    if not rows:
        return "no-run", (), ""
    row = rows[0]
    named = tuple(dict.fromkeys(str(r) for r in row.get("failedRequirements") or ()))
    if row["outcome"] == "fail" and named:
        seen = FIRST_SEEN.search(str(row.get("detail") or ""))
        return "found", named, seen.group(0) if seen else ""
    if row["outcome"] == "non-strict":
        # The report lists each SHOULD missed with its detail: only the requirement is shown.
        missed = row.get("nonStrict") or ()
        return "should", tuple(dict.fromkeys(str(item["requirement"]) for item in missed)), ""
    if row["outcome"] in ("pass", "accepted-alternative"):
        return "missed", (), ""
    if row["outcome"] == "skipped":
        return "unchecked", (), ""
    return "no-run", (), ""


def reach(
    names: Sequence[str] = (),
    *,
    workers: int = 1,
    out: Callable[[str], None] | None = None,
) -> int:
    """Run the model check alone against every mutant (or those named) and print a row each,
    then the count found.

    Returns:
        0 when every run gave the model check a row that passed, failed or was skipped; 1 when
        one gave no report or no model row, or the model check errored; 2 when a name is
        unknown.
    """
    out = out or runner.progress
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        out(f"unknown mutants: {', '.join(unknown)}")
        return 2
    chosen = list(names) if names else [mutant.name for mutant in MUTANTS]
    runs = [model_arguments(name) for name in chosen]
    found = reported = unchecked = broken = 0
    if workers > 1:
        # Collected here once, so that every forked worker inherits the index (as selftest).
        collection.check_modules()
    answers = pool.run_all(runner.run_suite, runs, workers)
    for name, (report, seconds) in zip(chosen, answers, strict=True):
        status, named, seen = read_row(report)
        found += status == "found"
        reported += status == "should"
        unchecked += status == "unchecked"
        broken += status == "no-run"
        detail = (f"named {', '.join(named)}" + (f", {seen}" if seen else "")) if named else "-"
        out(
            f"{status:<9} {name:<40} breaks {BY_NAME[name].requirement:<11} {detail} "
            f"({seconds:.1f} s)"
        )
    left = len(chosen) - found - reported - unchecked - broken
    out(
        f"model reach: {found}/{len(chosen)} mutants found by the model check alone, at its CI "
        f"budget; {reported} reported as a SHOULD missed; {left} left to their named checks"
        + (f"; {unchecked} left the model check unchecked" if unchecked else "")
        + (f"; {broken} runs gave no verdict" if broken else "")
    )
    return 1 if broken else 0
