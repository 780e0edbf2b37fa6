"""Bounded work (invariant 7): for each adversarial family, ten times the input costs about ten
times the work, checked as a ratio within one run and with a loose bound, never as a time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import reference_impl as host
from conformance.timing import growth_ratio
from fuzz.strategies import POOL_IDS
from reference_impl import Field, Reference, SecretValue

REF = "{{secret:" + POOL_IDS[0] + "}}"

#: Ten times the input may cost at most this many times the work. Linear is 10; quadratic
#: would be 100. The slack absorbs a noisy runner.
BOUND = 30


def _string(body: str) -> str:
    return '{"a": "' + body + '", "b": "' + REF + '"}'


FAMILIES: dict[str, Callable[[int], str]] = {
    "marker repeats": lambda n: _string("{{secret:" * n),
    "closing-brace repeats": lambda n: _string(REF + "}}" * n),
    "opening-brace repeats": lambda n: _string("{" * n + REF),
    "near misses": lambda n: _string("{{secre:{{secret{secret:{{SECRET;{{\u017fecret:" * n + REF),
    "valid references": lambda n: _string(REF * n),
    "malformed bodies": lambda n: _string("{{secret:{{hunter2}}}}" * n),
    "deep nesting": lambda n: '{"a": ' + "[" * n + '"' + REF + '"' + "]" * n + "}",
    "deep objects": lambda n: '{"a": ' + '{"k": ' * n + '"' + REF + '"' + "}" * n + "}",
    "many escapes": lambda n: _string("\\u007b\\u007bsecret:x\\u007d" * n),
    "escaped backslashes": lambda n: _string("\\\\u007b" * n + REF),
    "many members": lambda n: "{" + ", ".join(f'"k{i}": "{REF}"' for i in range(n)) + "}",
}


def _grammar_work(raw: str) -> None:
    if host.has_marker(raw):
        host.parse_arguments(raw)
    host.sanitize_arguments(raw)


def _ratio(work: Callable[[str], object], small: str, large: str) -> float:
    # By this thread's CPU time: the work is done here, and a busy machine's waits (other jobs
    # of the test command beside this one) are not counted.
    return growth_ratio(work, small, large, BOUND, clock=time.thread_time)


@pytest.mark.req("INV7")
@pytest.mark.parametrize("family", list(FAMILIES))
def test_parsing_and_sanitizing_are_linear(family: str) -> None:
    """Scan, parse and sanitize an adversarial family at n and 10n: the cost ratio is bounded."""
    build = FAMILIES[family]
    ratio = _ratio(_grammar_work, build(400), build(4000))
    assert ratio < BOUND, f"{family}: 10x the input cost {ratio:.1f}x"


SCRUB_FAMILIES: dict[str, tuple[list[str], Callable[[int], str]]] = {
    "near-miss prefix": (["aaaaaaab"], lambda n: "a" * (8 * n)),
    "back-to-back values": (["abcdefgh"], lambda n: "abcdefgh" * n),
    "overlapping values": (["abababab", "babababa", "ababababa"], lambda n: "ab" * (4 * n)),
    "prefix values": (["xxxxxxxx", "xxxxxxxxy"], lambda n: "xxxxxxxxz" * n),
    "encoded forms": (['p w+d "q" 8'], lambda n: "p+w%2Bd+%22q%22+8 p%20w%2Bd" * n),
}


@pytest.mark.req("INV7")
@pytest.mark.parametrize("family", list(SCRUB_FAMILIES))
def test_scrubbing_is_linear(family: str) -> None:
    """Scrub an adversarial result at n and 10n: the cost ratio is bounded."""
    values, build = SCRUB_FAMILIES[family]
    scrubber = host.Scrubber(
        (Reference(POOL_IDS[0], field), SecretValue(value))
        for field, value in zip(list(Field) * 2, values, strict=False)
    )
    ratio = _ratio(scrubber.scrub, build(500), build(5000))
    assert ratio < BOUND, f"{family}: 10x the result cost {ratio:.1f}x"
