"""``python -m benchmarks.report``: run the benchmarks and print the ratios next to the design.

This module owns the report: it runs ``pytest benchmarks`` with pytest-benchmark, saves the
JSON, reads the medians back, and prints one table with the design's JVM figures, the ratios the
targets are stated in, and a verdict for each target. It exits non-zero when a target is missed
or pytest fails, which includes a ``--benchmark-compare-fail`` regression. Absolute times are
reported, never asserted: only ratios taken in one run are compared with targets.

Arguments it does not know are passed to pytest, so ``--benchmark-compare`` and
``--benchmark-compare-fail=median:10%`` work as they do with ``pytest benchmarks``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from benchmarks import workloads
from benchmarks.memory import scrub_peak_memory
from benchmarks.overhead import FIRST_CHECK_TARGET, RUN_OVERHEAD_TARGET, RunCost, measure_run

#: Where the JSON goes unless ``--json`` says otherwise; pytest-benchmark's own storage also
#: keeps every run under ``.benchmarks/`` for ``--benchmark-compare``.
DEFAULT_JSON: Final = Path(".benchmarks") / "latest.json"

# The targets of the benchmarks issue, as ratios taken in one run.
SCAN_TARGET: Final = 0.25
SCAN_PLAIN_TARGET: Final = 0.05
SCRUB_TARGET: Final = 0.35
SCALING_TARGET: Final = 11.0
MEMORY_TARGET: Final = 3.0

# The design's JVM figures (design, "Cost, measured"), in seconds.
DESIGN_SCAN: Final = 174e-9
DESIGN_PARSE: Final = 5.8e-6
DESIGN_SCRUB: Final = 0.42e-3

_PYTEST_ARGS: Final = (
    "benchmarks",
    "-p",
    "no:cacheprovider",
    "-q",
    "--benchmark-only",
    "--benchmark-autosave",
    "--benchmark-sort=name",
    "--benchmark-columns=median,iqr,rounds",
)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table: a measurement, its figure, the design's, and a verdict."""

    what: str
    figure: str
    design: str = ""
    ratio: str = ""
    target: str = ""
    met: bool | None = None


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


@dataclass(frozen=True, slots=True)
class Results:
    """What one run saved: each benchmark's median, and the interleaved medians of the pairs."""

    medians: dict[str, float]
    paired: dict[str, list[float]]


def load(path: Path) -> Results:
    """Read a pytest-benchmark JSON file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    medians: dict[str, float] = {}
    paired: dict[str, list[float]] = {}
    for bench in data["benchmarks"]:
        medians[bench["name"]] = float(bench["stats"]["median"])
        pair = bench["extra_info"].get("paired_medians")
        if pair is not None:
            paired[bench["name"]] = [float(value) for value in pair]
    return Results(medians, paired)


def _ratio_row(what: str, numerator: float, denominator: float, target: float | None) -> Row:
    ratio = numerator / denominator
    return Row(
        what,
        _seconds(numerator),
        ratio=f"{ratio:.3f}",
        target="" if target is None else f"<= {target:g}",
        met=None if target is None else ratio <= target,
    )


def build_rows(results: Results) -> list[Row]:
    """Return the table's rows.

    Absolute figures are pytest-benchmark medians; ratios are medians of interleaved rounds
    (``benchmarks.paired``), so that load on the machine falls on both sides of each ratio.

    Args:
        results: One run's medians.

    Returns:
        The rows, each with its verdict when it carries a target.
    """
    medians, paired = results.medians, results.paired
    rows: list[Row] = [
        Row(
            "json.loads, 1.5 KB file write (the parse)",
            _seconds(medians["test_json_loads[file-write]"]),
            design=_seconds(DESIGN_PARSE),
        ),
        Row(
            "scan, 1.5 KB file write",
            _seconds(medians["test_scan[file-write]"]),
            design=_seconds(DESIGN_SCAN),
        ),
    ]
    for name, target in (
        ("file-write", SCAN_TARGET),
        ("no-backslash", SCAN_PLAIN_TARGET),
        ("non-ascii", None),
        ("reference-near-end", None),
        ("near-misses", None),
        ("file-write-1.5MB", None),
    ):
        scan, parse = paired[f"test_scan_ratio[{name}]"]
        rows.append(_ratio_row(f"scan / json.loads, {name}", scan, parse, target))
    rows.append(
        _ratio_row(
            "invoke / handler (transparency tax)",
            medians["test_invoke"],
            medians["test_handler_direct"],
            None,
        )
    )
    rows.append(Row("resolve 3 refs, 10,000 secrets, 50 pages", _seconds(medians["test_resolve"])))
    rows.append(
        Row(
            "scrub, 150,000 chars, 3 values, 3 occurrences",
            _seconds(medians["test_scrub[3]"]),
            design=_seconds(DESIGN_SCRUB),
            target="reported",
        )
    )
    for occurrences in (0, 3, 300):
        scrub, regex = paired[f"test_scrub_ratio[{occurrences}]"]
        rows.append(
            _ratio_row(
                f"scrub / regex alternation, {occurrences} occurrences", scrub, regex, SCRUB_TARGET
            )
        )
    series = (
        ("scan", "test_scan_series", ("file-write", "near-misses")),
        ("parse", "test_parse_series", ("reference-near-end", "near-misses")),
        ("scrub", "test_scrub_series", ("result", "near-misses", "self-similar")),
    )
    sizes = workloads.SCALE_CHARS
    for step, test, families in series:
        for family in families:
            times = paired[f"{test}[{family}]"]
            for index in range(len(sizes) - 1):
                rows.append(
                    _ratio_row(
                        f"{step} t(10n)/t(n), {family}, {sizes[index]:,} -> {sizes[index + 1]:,}",
                        times[index + 1],
                        times[index],
                        SCALING_TARGET,
                    )
                )
    return rows


def _memory_row() -> Row:
    peak = scrub_peak_memory()
    return Row(
        "scrub peak extra memory / result size",
        f"{peak.peak_extra:,} B",
        ratio=f"{peak.ratio:.2f}",
        target=f"<= {MEMORY_TARGET:g}",
        met=peak.ratio <= MEMORY_TARGET,
    )


def run_rows(cost: RunCost) -> list[Row]:
    """Return the rows of one whole in-process suite run: its wall time over its check bodies'
    own time, and the seconds from launch to the first check, each with its absolute figures."""
    finished = cost.status == 0 and cost.checks > 0
    return [
        Row(
            f"whole in-process run / its {cost.checks} check bodies",
            f"{cost.wall:.1f} s / {cost.bodies:.1f} s",
            ratio=f"{cost.ratio:.2f}",
            target=f"<= {RUN_OVERHEAD_TARGET:g}",
            met=finished and cost.ratio <= RUN_OVERHEAD_TARGET,
        ),
        Row(
            "launch to the first check's body",
            f"{cost.first_check:.2f} s",
            target=f"<= {FIRST_CHECK_TARGET:g} s",
            met=finished and cost.first_check <= FIRST_CHECK_TARGET,
        ),
    ]


def render(rows: Sequence[Row]) -> str:
    """Return the rows as an aligned text table."""
    header = Row("measurement", "median", "design (JVM)", "ratio", "target")
    table = [header, *rows]
    verdicts = ["verdict"] + [
        "" if row.met is None else ("met" if row.met else "MISSED") for row in rows
    ]
    columns = [
        [row.what for row in table],
        [row.figure for row in table],
        [row.design for row in table],
        [row.ratio for row in table],
        [row.target for row in table],
        verdicts,
    ]
    widths = [max(map(len, column)) for column in columns]
    lines = []
    for index in range(len(table)):
        cells = [column[index].ljust(width) for column, width in zip(columns, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print the table, and return the exit status.

    Args:
        argv: The command-line arguments; unknown ones are passed to pytest.

    Returns:
        0 when pytest passed and every target is met, 1 otherwise.
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report",
        description="Run the benchmarks with pytest-benchmark and print the medians next to the "
        "design's JVM figures, with the ratios the targets are stated in and a verdict for "
        "each. Exits 1 when a target is missed or pytest fails. Options it does not know go to "
        "pytest, e.g. --benchmark-compare.",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=DEFAULT_JSON,
        help="where to save the JSON (default: %(default)s)",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        help="report on a saved JSON instead of running the benchmarks (default: run them)",
    )
    args, passthrough = parser.parse_known_args(argv)
    command = ["python", "-m", "benchmarks.report", *(argv if argv is not None else sys.argv[1:])]

    status = 0
    source: Path = args.from_json or args.json
    if args.from_json is None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        pytest_command = [
            sys.executable,
            "-m",
            "pytest",
            *_PYTEST_ARGS,
            f"--benchmark-json={args.json}",
            *passthrough,
        ]
        status = subprocess.run(pytest_command, check=False).returncode
        if status != 0:
            print(f"\npytest exited with status {status}; see its output above.")
        if not args.json.exists():
            return status or 1

    rows = [*build_rows(load(source)), _memory_row(), *run_rows(measure_run())]
    print()
    print("Figures: pytest-benchmark medians. Ratios: medians of interleaved rounds, one run.")
    print(render(rows))
    missed = [row for row in rows if row.met is False]
    print()
    print(f"JSON: {source}")
    print(f"Reproduce: {shlex.join(command)}   (or: tox -e bench)")
    if missed:
        print(f"\nTARGETS MISSED: {len(missed)} of {sum(row.met is not None for row in rows)}")
        for row in missed:
            print(f"  - {row.what}: {row.ratio} (target {row.target})")
        return 1
    print("\nEvery target is met.")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
