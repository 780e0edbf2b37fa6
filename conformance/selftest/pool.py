"""Running many suite runs side by side, one process per core, each answer in the caller's order.

This module owns the self-test's parallelism. Each run is one in-process ``pytest.main`` in a
worker process of its own (forked, so the suite is imported once), with its own mutant applied
or its own adapter started, so runs share no state but the files they are told to write. Answers
come back in the order the runs were given, whichever finishes first, so a table printed from
them reads as a serial run's. It never decides a verdict; that is the caller's.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

#: Runs the suite with the given arguments and returns its JSON report, or ``None``.
SuiteRunner = Callable[[Sequence[str]], "dict[str, Any] | None"]

#: One answer: the run's report (or ``None``) and how long the run took, in seconds.
Answer = tuple["dict[str, Any] | None", float]


def default_workers() -> int:
    """Return how many runs go side by side by default: one more than the cores this process
    may use, since a run spends part of its time waiting (for an adapter to start, or out an
    MCP session's grace for late messages) and another run can use the core meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


def _timed(run: SuiteRunner, arguments: Sequence[str]) -> Answer:
    started = time.monotonic()
    report = run(arguments)
    return report, time.monotonic() - started


def run_all(
    run: SuiteRunner, argument_lists: Sequence[Sequence[str]], workers: int = 1
) -> Iterator[Answer]:
    """Run the suite once per argument list and yield each answer in the order given.

    Args:
        run: What one run does (a module-level function, so that a worker can call it).
        argument_lists: The arguments of each run.
        workers: How many runs go side by side; 1 runs them one by one in this process.

    Yields:
        Each run's report (or ``None``) and its duration in seconds, in the order given.

    Raises:
        ValueError: ``workers`` is less than 1.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if workers == 1 or len(argument_lists) <= 1:
        for arguments in argument_lists:
            yield _timed(run, arguments)
        return
    # Forked workers start with the suite already imported; each keeps its own modules, so a
    # mutant one applies is never seen by another. What is imported by now lives for the whole
    # run: frozen, the collector never walks it again, in any worker (each run's pytest
    # collects garbage at its end, which otherwise re-walks every module of the suite).
    # The caller's own heap is thawed once the pool is done, so that nothing outlives it frozen.
    gc.freeze()
    context = multiprocessing.get_context("fork")
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures: list[Future[Answer]] = [
                pool.submit(_timed, run, list(arguments)) for arguments in argument_lists
            ]
            try:
                for future in futures:
                    yield future.result()
            finally:
                # A caller that stops early, or an interrupt, leaves no queued run behind.
                for future in futures:
                    future.cancel()
    finally:
        gc.unfreeze()
