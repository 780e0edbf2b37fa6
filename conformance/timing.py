"""Growth ratios for the bounded-work checks (invariant 7).

This module owns the one way the project tells linear from quadratic by timing: the same work
on an input and on a larger one, in the same run, each timed as the best of a few repeats of
enough loops to be measurable, with the garbage collector held off. A ratio above the caller's
bound is measured again, up to three times, and the lowest kept: a busy runner can slow one
measurement, but a quadratic step is slow every time. It never asserts an absolute time.

The clock is the wall clock by default, since a host behind a driver works in another process.
Work done in the calling thread (the project's own tests of the reference host) is better timed
by that thread's CPU time (``time.thread_time``): on a machine running more processes than it
has cores, a longer measurement is likelier to be preempted than a short one, which inflates
the ratio on the wall clock (33 for a linear scrub, seen with the jobs of the test command side
by side), while the CPU time does not count the time the thread waited.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

Input = TypeVar("Input")

#: Repeats per measurement; the best is kept.
REPEATS = 3
#: Measurements of a ratio over the bound before it is believed.
ATTEMPTS = 3
#: Seconds the small input's measurement must last, so timer resolution does not dominate.
MIN_SECONDS = 0.002


def best_time(
    work: Callable[[Input], object],
    data: Input,
    loops: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Return the best of :data:`REPEATS` runs of ``loops`` calls of ``work(data)``.

    Args:
        work: The work to time.
        data: Its input.
        loops: Calls per run.
        clock: What times a run.
    """
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(REPEATS):
            start = clock()
            for _ in range(loops):
                work(data)
            best = min(best, clock() - start)
    finally:
        if enabled:
            gc.enable()
    return best


def growth_ratio(
    work: Callable[[Input], object],
    small: Input,
    large: Input,
    bound: float,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Return t(large) / t(small), measured in one run.

    Args:
        work: The work to time; called with ``small`` or ``large``.
        small: The smaller input.
        large: The larger input, typically ten times the smaller.
        bound: The caller's limit; a ratio at or above it is measured again.
        clock: What times a measurement: the wall clock, or ``time.thread_time`` for work done
            in this thread.

    Returns:
        The lowest ratio seen, at most :data:`ATTEMPTS` measurements.
    """
    loops = 1
    while best_time(work, small, loops, clock) < MIN_SECONDS and loops < 1 << 16:
        loops *= 2
    ratio = float("inf")
    for _ in range(ATTEMPTS):
        ratio = min(
            ratio, best_time(work, large, loops, clock) / best_time(work, small, loops, clock)
        )
        if ratio < bound:
            break
    return ratio
