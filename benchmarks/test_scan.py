"""Step [1] against step [2]: the marker scan, the parse, and ``json.loads`` of the same text.

The scan is all a call without references pays, so its figure is read next to ``json.loads`` of
the same text, measured in the same run (design, "Cost, measured": 174 ns against 5.8 µs).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import workloads
from benchmarks.paired import paired_medians
from reference_impl import has_marker, parse_arguments

#: The scan's texts: the design's 1.5 KB file write and its variants, and 1.5 MB of it.
SCAN_TEXTS: dict[str, Callable[[], str]] = {
    "file-write": workloads.file_write_arguments,
    "no-backslash": workloads.file_write_arguments_plain,
    "non-ascii": workloads.file_write_arguments_non_ascii,
    "reference-near-end": workloads.file_write_arguments_with_reference,
    "near-misses": workloads.near_miss_arguments,
    "file-write-1.5MB": lambda: workloads.scaled(workloads.file_write_arguments(), 1_500_000),
}

#: The scaling series: one family, the same text at 1.5 KB, 15 KB, 150 KB and 1.5 MB.
SCALE_FAMILIES: dict[str, Callable[[int], str]] = {
    "file-write": lambda chars: workloads.scaled(workloads.file_write_arguments(), chars),
    "reference-near-end": workloads.file_write_arguments_with_reference,
    "near-misses": workloads.near_miss_arguments,
}

_cache: dict[tuple[str, int], str] = {}


def _text(family: str, chars: int) -> str:
    key = (family, chars)
    if key not in _cache:
        _cache[key] = SCALE_FAMILIES[family](chars)
    return _cache[key]


@pytest.mark.parametrize("name", list(SCAN_TEXTS))
def test_scan(benchmark: BenchmarkFixture, name: str) -> None:
    """Marker scan of the text: the cost every call pays, reference or not."""
    raw = SCAN_TEXTS[name]()
    benchmark.extra_info["chars"] = len(raw)
    found = benchmark(has_marker, raw)
    assert found == (name == "reference-near-end")


@pytest.mark.parametrize("name", list(SCAN_TEXTS))
def test_json_loads(benchmark: BenchmarkFixture, name: str) -> None:
    """``json.loads`` of the same text: the baseline the scan's ratio is taken against."""
    raw = SCAN_TEXTS[name]()
    benchmark.extra_info["chars"] = len(raw)
    benchmark(json.loads, raw)


@pytest.mark.parametrize("chars", workloads.SCALE_CHARS)
@pytest.mark.parametrize("family", ["file-write", "near-misses"])
def test_scan_scaling(benchmark: BenchmarkFixture, family: str, chars: int) -> None:
    """Marker scan at 1.5 KB to 1.5 MB: t(10n)/t(n) shows it stays linear (invariant 7)."""
    raw = _text(family, chars)
    benchmark.extra_info["chars"] = len(raw)
    benchmark(has_marker, raw)


@pytest.mark.parametrize("chars", workloads.SCALE_CHARS)
@pytest.mark.parametrize("family", ["reference-near-end", "near-misses"])
def test_parse_scaling(benchmark: BenchmarkFixture, family: str, chars: int) -> None:
    """``parse_arguments`` at 1.5 KB to 1.5 MB: t(10n)/t(n) shows the parse stays linear."""
    raw = _text(family, chars)
    benchmark.extra_info["chars"] = len(raw)
    benchmark(parse_arguments, raw)


@pytest.mark.parametrize("name", list(SCAN_TEXTS))
def test_scan_ratio(benchmark: BenchmarkFixture, name: str) -> None:
    """Scan and ``json.loads`` of one text in interleaved rounds: the ratio the target is in."""
    raw = SCAN_TEXTS[name]()
    scan, parse = paired_medians([lambda: has_marker(raw), lambda: json.loads(raw)])
    benchmark.extra_info["paired_medians"] = [scan, parse]
    benchmark(has_marker, raw)


@pytest.mark.parametrize("family", ["file-write", "near-misses"])
def test_scan_series(benchmark: BenchmarkFixture, family: str) -> None:
    """The scan at every size in interleaved rounds: the t(10n)/t(n) ratios of invariant 7."""
    texts = [_text(family, chars) for chars in workloads.SCALE_CHARS]
    benchmark.extra_info["paired_medians"] = paired_medians(
        [functools.partial(has_marker, raw) for raw in texts]
    )
    benchmark(has_marker, texts[0])


@pytest.mark.parametrize("family", ["reference-near-end", "near-misses"])
def test_parse_series(benchmark: BenchmarkFixture, family: str) -> None:
    """The parse at every size in interleaved rounds: the t(10n)/t(n) ratios of invariant 7."""
    texts = [_text(family, chars) for chars in workloads.SCALE_CHARS]
    benchmark.extra_info["paired_medians"] = paired_medians(
        [functools.partial(parse_arguments, raw) for raw in texts], rounds=15
    )
    benchmark(parse_arguments, texts[0])
