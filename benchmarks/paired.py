"""Medians of functions timed in interleaved rounds, for ratios that survive a noisy machine.

This module owns the ratios the targets are stated in. Timing a benchmark and its baseline one
after the other lets a burst of load on a shared machine land on one of them only; timing them
in alternating rounds, each round a batch long enough to read the clock reliably, gives both
the same share of the noise. It must never be used for an absolute figure: pytest-benchmark
measures those.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Final

#: Rounds per function; the median of 31 ignores up to 15 disturbed rounds.
ROUNDS: Final = 31

#: Seconds one batch of calls should take, so that the clock's resolution does not matter.
BATCH_SECONDS: Final = 2e-3


def _batch(function: Callable[[], object], number: int, clock: Callable[[], float]) -> float:
    start = clock()
    for _ in range(number):
        function()
    return clock() - start


def paired_medians(
    functions: Sequence[Callable[[], object]],
    rounds: int = ROUNDS,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Return each function's median seconds per call, timed in interleaved rounds.

    Args:
        functions: Callables taking no argument.
        rounds: How many rounds; each times one batch of every function, in rotating order.
        clock: What a batch is timed by: the wall clock by default; ``time.thread_time``
            counts only this thread's CPU time, so a batch the scheduler paused for another
            process is not charged for the pause (the loose-bound tests, which share a busy
            machine with other jobs, take it).

    Returns:
        The median seconds per call of each function, in the order given.
    """
    numbers: list[int] = []
    for function in functions:
        number = 1
        while _batch(function, number, clock) < BATCH_SECONDS and number < 1 << 20:
            number *= 2
        numbers.append(number)
    samples: list[list[float]] = [[] for _ in functions]
    count = len(functions)
    for round_index in range(rounds):
        for offset in range(count):
            index = (round_index + offset) % count
            samples[index].append(_batch(functions[index], numbers[index], clock) / numbers[index])
    return [statistics.median(sample) for sample in samples]
