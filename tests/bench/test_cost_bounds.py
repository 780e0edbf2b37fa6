"""Loose bounds on the cost of the hot paths, like the design's overhead test.

Each bound sits about an order of magnitude above what the benchmarks measure, and each is a
ratio taken in one run where it can be, so a slow or busy runner passes and a regression to
something quadratic fails. Each batch is timed by this thread's CPU time, not the wall clock:
these tests share two cores with the other CI jobs and with each other, and a batch paused for
another process would otherwise be charged for the pause. The figures themselves are printed
in the terminal summary. The benchmarks (``python -m benchmarks.report``) are where targets are
checked.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable

import pytest

from benchmarks import workloads
from benchmarks.paired import paired_medians
from benchmarks.test_scrub import regex_baseline
from reference_impl import Scrubber, has_marker, parse_arguments

#: Measured about 0.15 (docs/benchmarks.md); a scan that cost this much of a parse has lost its
#: fast path.
SCAN_BOUND = 1.5

#: Measured about 0.15 to 0.65 of the regex alternation; twice the baseline means a regression.
SCRUB_BOUND = 2.0

#: Linear work grows about 10 times from n to 10 n; quadratic work grows about 100 times.
SCALING_BOUND = 30.0

Record = Callable[[str, str], None]


@pytest.mark.req("COST-001")
def test_scan_is_a_small_part_of_a_parse(cost_figures: Record) -> None:
    """The marker scan of 1.5 KB of file-write arguments costs a fraction of parsing them."""
    raw = workloads.file_write_arguments()
    scan, parse = paired_medians(
        [functools.partial(has_marker, raw), functools.partial(json.loads, raw)],
        rounds=9,
        clock=time.thread_time,
    )
    cost_figures(
        "scan", f"{scan * 1e9:.0f} ns per call vs {parse * 1e6:.1f} µs json.loads (1.5 KB)"
    )
    assert scan / parse < SCAN_BOUND


@pytest.mark.req("COST-001")
def test_scrub_of_a_capped_result_is_fast(cost_figures: Record) -> None:
    """Scrubbing 150,000 characters with 3 values in 4 forms stays near a regex alternation."""
    scrubber = Scrubber(workloads.scrub_pairs())
    text = workloads.result_text(workloads.RESULT_CHARS, 3)
    baseline = regex_baseline(scrubber)
    scrub, regex = paired_medians(
        [functools.partial(scrubber.scrub, text), functools.partial(baseline, text)],
        rounds=5,
        clock=time.thread_time,
    )
    cost_figures("scrub", f"{scrub * 1e3:.2f} ms per 150k result (regex {regex * 1e3:.2f} ms)")
    assert scrub / regex < SCRUB_BOUND


#: Measurements of a ratio over the bound before it is believed: a busy runner can slow one,
#: but a quadratic step is slow every time (as conformance.timing holds its ratios).
ATTEMPTS = 3


def _growth(function: Callable[[str], object], small: str, large: str) -> float:
    """Return the lowest t(large) / t(small) of up to :data:`ATTEMPTS` paired measurements,
    measuring again only while the ratio is at or over :data:`SCALING_BOUND`."""
    growth = float("inf")
    for _ in range(ATTEMPTS):
        low, high = paired_medians(
            [functools.partial(function, small), functools.partial(function, large)],
            rounds=5,
            clock=time.thread_time,
        )
        growth = min(growth, high / low)
        if growth < SCALING_BOUND:
            break
    return growth


@pytest.mark.req("INV7")
@pytest.mark.parametrize(
    ("step", "function", "make"),
    [
        pytest.param("scan", has_marker, workloads.near_miss_arguments, id="scan-near-misses"),
        pytest.param(
            "parse", parse_arguments, workloads.near_miss_arguments, id="parse-near-misses"
        ),
        pytest.param(
            "parse",
            parse_arguments,
            workloads.file_write_arguments_with_reference,
            id="parse-reference",
        ),
        pytest.param(
            "scrub",
            Scrubber(workloads.scrub_pairs()).scrub,
            workloads.scrub_near_misses,
            id="scrub-near-misses",
        ),
        pytest.param(
            "scrub",
            Scrubber(workloads.self_similar_pairs()).scrub,
            workloads.self_similar_text,
            id="scrub-self-similar",
        ),
    ],
)
def test_work_is_linear(
    cost_figures: Record, step: str, function: Callable[[str], object], make: Callable[[int], str]
) -> None:
    """Ten times the input costs about ten times as much, adversarial input included."""
    growth = _growth(function, make(15_000), make(150_000))
    cost_figures(f"{step} t(10n)/t(n), {make.__name__}", f"{growth:.1f}")
    assert growth < SCALING_BOUND


def test_run_rows_judge_the_ratio_and_the_first_check() -> None:
    """The run-overhead rows are met only by a finished run inside both targets, and show the
    absolute seconds beside the ratio."""
    from benchmarks.overhead import RunCost
    from benchmarks.report import run_rows

    good = run_rows(RunCost(wall=30.0, bodies=15.0, first_check=1.5, checks=9, status=0))
    assert [row.met for row in good] == [True, True]
    assert good[0].figure == "30.0 s / 15.0 s"
    assert good[0].ratio == "2.00"
    slow = run_rows(RunCost(wall=50.0, bodies=15.0, first_check=3.5, checks=9, status=0))
    assert [row.met for row in slow] == [False, False]
    failed = run_rows(RunCost(wall=30.0, bodies=15.0, first_check=1.5, checks=9, status=1))
    assert [row.met for row in failed] == [False, False]


def test_a_run_is_timed_from_launch_to_its_first_check() -> None:
    """The probe times a real launch: checks ran, their bodies took time, and the first began
    after launch and (a loose bound) well within half a minute."""
    from benchmarks.overhead import measure_run

    cost = measure_run(("-k", "test_single_refusal"))
    assert cost.checks > 0
    assert cost.bodies > 0
    assert 0 < cost.first_check < 30
