"""Step [12]: scrubbing a result, against a compiled-regex alternation of the same forms.

The design's figure is 0.42 ms for a 150,000-character result with 3 values and 4 forms each;
the ratio to a regex alternation, measured in the same run, is what this machine can compare.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks import workloads
from benchmarks.paired import paired_medians
from reference_impl import Scrubber


def regex_baseline(scrubber: Scrubber) -> Callable[[str], str]:
    """Return a scrub by one compiled alternation of the scrubber's forms, longest first."""
    table = dict(scrubber._needles)
    pattern = re.compile("|".join(re.escape(form) for form in table))
    replace = table.__getitem__

    def scrub(text: str) -> str:
        return pattern.sub(lambda match: replace(match.group()), text)

    return scrub


_DESIGN = Scrubber(workloads.scrub_pairs())
_SELF_SIMILAR = Scrubber(workloads.self_similar_pairs())

#: The scaling families: (text for a size, the scrubber it is scrubbed with).
FAMILIES: dict[str, tuple[Callable[[int], str], Scrubber]] = {
    # The design's workload at a constant density: 300 occurrences per 150,000 characters.
    "result": (lambda chars: workloads.result_text(chars, chars // 500), _DESIGN),
    "near-misses": (workloads.scrub_near_misses, _DESIGN),
    "self-similar": (workloads.self_similar_text, _SELF_SIMILAR),
}

_cache: dict[tuple[str, int], str] = {}


def _text(family: str, chars: int) -> str:
    key = (family, chars)
    if key not in _cache:
        _cache[key] = FAMILIES[family][0](chars)
    return _cache[key]


@pytest.mark.parametrize("occurrences", [0, 3, 300])
def test_scrub(benchmark: BenchmarkFixture, occurrences: int) -> None:
    """Scrub of the design's 150,000-character result: the figure next to the design's 0.42 ms."""
    text = workloads.result_text(workloads.RESULT_CHARS, occurrences)
    benchmark.extra_info["chars"] = len(text)
    scrubbed = benchmark(_DESIGN.scrub, text)
    assert scrubbed.count("[secret:") == occurrences


@pytest.mark.parametrize("occurrences", [0, 3, 300])
def test_scrub_regex_baseline(benchmark: BenchmarkFixture, occurrences: int) -> None:
    """The same scrub by a compiled regex alternation: the baseline the scrub's ratio uses."""
    text = workloads.result_text(workloads.RESULT_CHARS, occurrences)
    benchmark.extra_info["chars"] = len(text)
    scrubbed = benchmark(regex_baseline(_DESIGN), text)
    assert scrubbed == _DESIGN.scrub(text)


@pytest.mark.parametrize("chars", workloads.SCALE_CHARS)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_scrub_scaling(benchmark: BenchmarkFixture, family: str, chars: int) -> None:
    """Scrub at 1.5 KB to 1.5 MB, adversarial texts included: t(10n)/t(n) shows it is linear."""
    text = _text(family, chars)
    benchmark.extra_info["chars"] = len(text)
    benchmark(FAMILIES[family][1].scrub, text)


@pytest.mark.parametrize("occurrences", [0, 3, 300])
def test_scrub_ratio(benchmark: BenchmarkFixture, occurrences: int) -> None:
    """Scrub and the regex baseline in interleaved rounds: the ratio the target is in."""
    text = workloads.result_text(workloads.RESULT_CHARS, occurrences)
    baseline = regex_baseline(_DESIGN)
    benchmark.extra_info["paired_medians"] = paired_medians(
        [lambda: _DESIGN.scrub(text), lambda: baseline(text)]
    )
    benchmark(_DESIGN.scrub, text)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_scrub_series(benchmark: BenchmarkFixture, family: str) -> None:
    """The scrub at every size in interleaved rounds: the t(10n)/t(n) ratios of invariant 7."""
    scrubber = FAMILIES[family][1]
    texts = [_text(family, chars) for chars in workloads.SCALE_CHARS]
    benchmark.extra_info["paired_medians"] = paired_medians(
        [functools.partial(scrubber.scrub, text) for text in texts], rounds=15
    )
    benchmark(scrubber.scrub, texts[0])
