"""The legal sweep: the whole suite against every legal variant, none of which may be failed.

This module owns ``python -m conformance.selftest legal``. A legal variant is a reference host
changed only where the rulings leave the host a choice (decisions S1.12): the unit tests hold
each to the checks of its own requirements with one example of the model check, but a false
verdict can come from any check, and from a model example no short run draws. The sweep runs
the whole suite, in a process of its own as a user's gate does, against each variant (and its
adapter's hidden capabilities), at the model check's whole CI budget or, with ``--campaign N``,
N examples from a fresh seed that is printed with the row, so that a run can be replayed.

A variant's run passes when no check failed and the verdict is not ``not-conformant``: a false
non-conformant verdict on a host that follows the rulings is the fault this looks for. It must
also be ``conformant``, unless the variant leaves some fact of a call observable nowhere
(:data:`conformance.selftest.variants.PARTLY_OBSERVED`, a hidden observation, or one of
:data:`UNOBSERVABLE`): then ``incomplete`` is the verdict the rulings ask for (S1.2). A row
says which requirements failed or went unchecked, never a value. The sweep exits 0 when every
run passed, 1 when any did not, and 2 on bad usage.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance.kernel.records import INCOMPLETE, NOT_CONFORMANT
from conformance.model import budget as model_budget
from conformance.selftest.base import Variant
from conformance.selftest.hosts import driver_command
from conformance.selftest.strip import stripped_command
from conformance.selftest.variants import PARTLY_OBSERVED, VARIANTS
from conformance.selftest.variants_legal import NARROWED

__all__ = ["Row", "judge", "legal_variants", "sweep"]

#: Variants that announce every capability and still leave one fact unobservable, so that
#: their whole run is ``incomplete`` (decisions S1.2), with the reason.
UNOBSERVABLE: Final[Mapping[str, str]] = {
    "mcp-refusal-prefixed-error": "an unregistered tool's refusal is a JSON-RPC error naming no "
    "disposition, and no record names it (ORD-006 unchecked)",
}

#: The outcomes of a requirement that fail a legal variant's run.
_FAILING: Final = ("fail", "error")


def legal_variants() -> tuple[Variant, ...]:
    """Return every legal variant, in the order the catalogs hold them."""
    return (*VARIANTS, *PARTLY_OBSERVED, *NARROWED)


def may_be_incomplete(variant: Variant) -> bool:
    """Whether the rulings ask for ``incomplete`` on ``variant``'s whole run."""
    hides_an_observation = any(name.startswith("observe.") for name in variant.hidden)
    return variant in PARTLY_OBSERVED or hides_an_observation or variant.name in UNOBSERVABLE


@dataclass(frozen=True, slots=True)
class Row:
    """One variant's run.

    Attributes:
        name: The variant.
        verdict: The run's verdict, or what went wrong when no report came.
        exit_code: The command line's exit code.
        seconds: How long the run took.
        failed: The requirements a check failed or errored on.
        unchecked: The requirements left unchecked.
        seed: The model check's campaign seed, when ``--campaign`` drew one.
        passed: Whether the run is what a legal host must get.
    """

    name: str
    verdict: str
    exit_code: int
    seconds: float
    failed: tuple[str, ...]
    unchecked: tuple[str, ...]
    seed: int | None
    passed: bool

    def line(self) -> str:
        """Return the row as the sweep prints it."""
        mark = "ok     " if self.passed else "FALSE  "
        parts = [
            f"{mark}{self.name:<34} {self.verdict} (exit {self.exit_code}, {self.seconds:.0f} s"
        ]
        if self.seed is not None:
            parts.append(f", model seed {self.seed}")
        parts.append(")")
        if self.failed:
            parts.append(f" failed: {', '.join(self.failed)}")
        if self.unchecked:
            parts.append(f" unchecked: {', '.join(self.unchecked)}")
        return "".join(parts)


def judge(
    variant: Variant,
    report: Mapping[str, Any] | None,
    exit_code: int,
    seconds: float,
    seed: int | None = None,
) -> Row:
    """Hold one variant's run to what a legal host must get."""
    if report is None:
        return Row(variant.name, "no report", exit_code, seconds, (), (), seed, False)
    requirements = report.get("requirements", ())
    failed = tuple(entry["id"] for entry in requirements if entry["outcome"] in _FAILING)
    unchecked = tuple(entry["id"] for entry in requirements if entry["outcome"] == "unchecked")
    verdict = str(report.get("verdict", ""))
    allowed = (INCOMPLETE,) if may_be_incomplete(variant) else ()
    passed = (
        not failed
        and verdict != NOT_CONFORMANT
        and report.get("exitCode") == exit_code
        and (exit_code == 0 or verdict in allowed)
    )
    return Row(variant.name, verdict, exit_code, seconds, failed, unchecked, seed, passed)


def _command(variant: Variant, workers: int, report: Path, extra: Sequence[str]) -> list[str]:
    adapter = driver_command(variant.name)
    host = stripped_command(variant.hidden, adapter) if variant.hidden else adapter
    via = ["--via", "mcp"] if variant.via == "mcp" else []
    # A narrowed variant is an adapter of its own behind the driver: its path is the driver's.
    return [
        sys.executable,
        "-m",
        "conformance.cli",
        "--host",
        host,
        *via,
        "--workers",
        str(workers),
        "--report-json",
        str(report),
        *(["--", *extra] if extra else []),
    ]


def _run(
    variant: Variant, workers: int, campaign: int | None, extra: Sequence[str], folder: Path
) -> Row:
    report = folder / f"{variant.name}.json"
    environment = dict(os.environ)
    for name in (model_budget.EXAMPLES_ENV, model_budget.SEED_ENV):
        environment.pop(name, None)
    seed = None
    if campaign is not None:
        # Drawn here rather than by the run, whose own line about it pytest captures: the row
        # then names the seed that replays the run.
        seed = random.SystemRandom().randrange(model_budget.SEED_BOUND)
        environment[model_budget.EXAMPLES_ENV] = str(campaign)
        environment[model_budget.SEED_ENV] = str(seed)
    started = time.monotonic()
    done = subprocess.run(
        _command(variant, workers, report, extra),
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    seconds = time.monotonic() - started
    if not report.exists():
        # The command line's own last words say why (a usage error, an adapter that would not
        # start); they name options and commands, never a value.
        said = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Row(
            variant.name, f"no report: {said}", done.returncode, seconds, (), (), seed, False
        )
    loaded = json.loads(report.read_text(encoding="utf-8"))
    return judge(variant, loaded, done.returncode, seconds, seed)


def sweep(
    names: Sequence[str],
    *,
    workers: int = 1,
    campaign: int | None = None,
    extra: Sequence[str] = (),
    write: Callable[[str], None] = print,
) -> int:
    """Run the suite against each legal variant named (every one when ``names`` is empty),
    print a row for each as it ends and a closing line; return 0 when every run passed, else 1.

    Raises:
        KeyError: A name is no legal variant's.
    """
    known = {variant.name: variant for variant in legal_variants()}
    chosen = [known[name] for name in names] if names else list(known.values())
    budget = f"{campaign} model examples from fresh seeds" if campaign else "the CI budget"
    noun = "variant" if len(chosen) == 1 else "variants"
    write(
        f"legal sweep: the whole suite against {len(chosen)} legal {noun}, {budget}"
        + (f", with {shlex.join(extra)}" if extra else "")
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="secref-legal-") as directory:
        for variant in chosen:
            row = _run(variant, workers, campaign, extra, Path(directory))
            rows.append(row)
            write(row.line())
    wrong = [row.name for row in rows if not row.passed]
    if wrong:
        write(f"legal sweep: {len(wrong)} of {len(rows)} judged wrongly: " + ", ".join(wrong))
        return 1
    write(f"legal sweep: {len(rows)} of {len(rows)} judged as the rulings ask")
    return 0
