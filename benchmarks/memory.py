"""Peak extra memory of one scrub, measured with tracemalloc.

This module owns the memory figure of the benchmarks: how many bytes a scrub allocates at its
peak, beyond the text it is given, compared with the size of the text it returns. It must never
run inside a timed benchmark, because tracing slows every allocation.
"""

from __future__ import annotations

import sys
import tracemalloc
from dataclasses import dataclass

from benchmarks import workloads
from reference_impl import Scrubber


@dataclass(frozen=True, slots=True)
class PeakMemory:
    """A scrub's peak extra allocation and its result's size, in bytes."""

    peak_extra: int
    result_size: int

    @property
    def ratio(self) -> float:
        """Peak extra memory as a multiple of the result's size."""
        return self.peak_extra / self.result_size


def scrub_peak_memory(
    chars: int = workloads.RESULT_CHARS, occurrences: int = 300, repeats: int = 3
) -> PeakMemory:
    """Scrub the design's workload under tracemalloc and return the smallest peak seen.

    Args:
        chars: The result's length.
        occurrences: How many forms it holds.
        repeats: Scrubs measured; the smallest peak leaves out one-off allocator growth.

    Returns:
        The peak allocation above what was live before the scrub, and the result's size.
    """
    scrubber = Scrubber(workloads.scrub_pairs())
    text = workloads.result_text(chars, occurrences)
    scrubber.scrub(text)  # warm the code paths outside the trace
    peaks: list[int] = []
    size = 0
    for _ in range(repeats):
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            result = scrubber.scrub(text)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        size = sys.getsizeof(result)
        peaks.append(peak - before)
        del result
    return PeakMemory(min(peaks), size)
