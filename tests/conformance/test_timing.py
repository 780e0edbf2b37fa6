"""The growth ratio that tells linear work from quadratic (invariant 7), on either clock.

The bounded-work tests of the reference host time their work by the thread's CPU time; the
conformance checks, whose host may be another process, by the wall clock. Both must put a
linear step under the bound and a quadratic one over it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from conformance.timing import best_time, growth_ratio

BOUND = 30.0


def linear(text: str) -> int:
    return sum(text.count("x", i, i + 64) for i in range(0, len(text), 8))


def quadratic(text: str) -> int:
    return sum(text.count("x", i) for i in range(0, len(text), 8))


CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "thread CPU": time.thread_time,
}


@pytest.mark.req("INV7")
@pytest.mark.parametrize("clock", list(CLOCKS))
def test_linear_work_is_under_the_bound_and_quadratic_over_it(clock: str) -> None:
    small, large = "x" * 2_000, "x" * 20_000
    # Linear work must read under the bound in one of three measurements too: on the wall
    # clock, four test workers beside the other jobs on two cores once read 30.2.
    linear_readings = (
        growth_ratio(linear, small, large, BOUND, clock=CLOCKS[clock]) for _ in range(3)
    )
    assert any(ratio < BOUND for ratio in linear_readings)
    # growth_ratio keeps the lowest ratio and stops at the first under the bound, so that load
    # never fails linear work; the price is that one measurement whose small run was slowed
    # throughout reads quadratic work low (24.8 for a usual 82 to 86, once, on the wall clock
    # beside six other jobs on two cores). So quadratic work must read over the bound in one of
    # three measurements: a tool that cannot see quadratic growth never does.
    readings = (growth_ratio(quadratic, small, large, BOUND, clock=CLOCKS[clock]) for _ in range(3))
    assert any(ratio >= BOUND for ratio in readings)


@pytest.mark.req("INV7")
def test_the_thread_clock_does_not_count_a_wait() -> None:
    """A measurement that waits (as a preempted thread does) costs wall time, not CPU time."""
    done = threading.Event()

    def waits(seconds: float) -> None:
        done.wait(seconds)

    assert best_time(waits, 0.02, 1, clock=time.perf_counter) >= 0.02
    assert best_time(waits, 0.02, 1, clock=time.thread_time) < 0.01
