"""The fixed CI sample: mutants the suite kills, applied by their text without cosmic-ray.

This module owns ``mutation_sample.json``: it picks the sample from a run's one-line kills,
seeded and the modules taken in turn (``stratified``, ``write_sample``), reads it back
(``load_sample``), and applies a recorded mutant to a module's source by its text
(``apply_line_mutation``), which is what ``tests/conformance/test_mutation.py`` runs in CI. It
never runs the suite itself and never writes anything but the sample file it is given.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

from conformance.selftest.mutation_draw import CORE_MODULES

#: Size of the fixed sample that runs in CI (tests/conformance/test_mutation.py).
CI_SAMPLE_SIZE: Final = 20

#: The checked-in sample file, shipped with the package, and where ``sample`` writes it.
SAMPLE_FILE: Final = "mutation_sample.json"
SAMPLE_PATH: Final = Path(__file__).with_name(SAMPLE_FILE)


def load_sample() -> list[dict[str, Any]]:
    """Read the fixed CI sample of mutants the suite kills.

    Returns:
        Entries with ``module``, ``operator``, ``line``, ``before`` and ``after``.
    """
    text = resources.files("conformance.selftest").joinpath(SAMPLE_FILE).read_text("utf-8")
    entries: list[dict[str, Any]] = json.loads(text)["mutants"]
    return entries


def apply_line_mutation(source: str, before: str, after: str, line_hint: int) -> str:
    """Apply a recorded one-line mutant to a module's source, found by its text.

    Args:
        source: the module's current source.
        before: the original line, stripped.
        after: the mutated line, stripped.
        line_hint: the line it was on when recorded; the nearest match wins.

    Returns:
        The mutated source.

    Raises:
        LookupError: no line reads ``before`` any more (the sample needs refreshing).
    """
    lines = source.splitlines(keepends=True)
    matches = [i for i, text in enumerate(lines) if text.strip() == before]
    if not matches:
        raise LookupError(f"no line reads {before!r}; refresh the sample")
    index = min(matches, key=lambda i: abs(i + 1 - line_hint))
    text = lines[index]
    indent = text[: len(text) - len(text.lstrip())]
    ending = text[len(text.rstrip("\r\n")) :]
    lines[index] = indent + after + ending
    return "".join(lines)


def stratified(
    records: Sequence[Mapping[str, Any]], size: int, seed: int
) -> list[Mapping[str, Any]]:
    """Draw ``size`` records, seeded, taking the modules in turn so that each is in the sample.

    Each module's records are shuffled with the seed; the draw then takes one from each module
    in ``CORE_MODULES`` order, round after round, until it has ``size`` or runs out.

    Args:
        records: the candidates, each with a ``module``.
        size: how many to draw.
        seed: the seed of every module's shuffle.

    Returns:
        At most ``size`` records, every module's first before any module's second.
    """
    rng = random.Random(seed)
    by_module: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_module.setdefault(str(record["module"]), []).append(record)
    for group in by_module.values():
        rng.shuffle(group)
    order = [m for m in CORE_MODULES if m in by_module] + sorted(set(by_module) - set(CORE_MODULES))
    rounds = itertools.zip_longest(*(by_module[m] for m in order))
    drawn = [record for row in rounds for record in row if record is not None]
    return drawn[:size]


def write_sample(report_json: Path, out: Path, size: int, seed: int) -> int:
    """Pick the fixed CI sample from a run's one-line kills and write it as the sample file.

    Only mutants the suite failed (exit 1, not a harness error or a timeout) whose change is
    one line are eligible, so that the CI test can apply each by its text without cosmic-ray.

    Args:
        report_json: a run's ``reports/mutation.json``.
        out: the sample file to write.
        size: how many mutants to pick.
        seed: the seed of the draw (``stratified``).

    Returns:
        How many mutants were written.
    """
    data = json.loads(report_json.read_text("utf-8"))
    killed = [
        r
        for r in data["mutants"]
        if r["status"] == "killed"
        and r["exit_code"] == 1
        and "\n" not in r["before"]
        and "\n" not in r["after"]
        and r["before"]
    ]
    picked = sorted(stratified(killed, size, seed), key=lambda r: (r["module"], r["line"]))
    payload = {
        "about": "Mutants the conformance suite kills, run in CI by "
        "tests/conformance/test_mutation.py::test_sampled_mutant_is_killed. Refresh with "
        "`python -m conformance.selftest.mutation run --per-module 10` then "
        "`python -m conformance.selftest.mutation sample` (docs/mutation.md).",
        "mutants": [
            {k: r[k] for k in ("module", "operator", "line", "before", "after")} for r in picked
        ],
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    return len(picked)
