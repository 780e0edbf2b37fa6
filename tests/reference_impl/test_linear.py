"""Bounded work on adversarial input: scan, parse, sanitize and scrub stay linear.

Each test times the same function on an input and on one ten times larger, in the same run,
and asserts a loose ratio (under 30, where linear is about 10 and quadratic about 100). No
absolute time is asserted, so a slow runner cannot fail it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from conformance.timing import growth_ratio
from reference_impl import (
    Field,
    Reference,
    Scrubber,
    SecretValue,
    forms,
    has_marker,
    parse_arguments,
    sanitize_arguments,
)
from tests.reference_impl.support import ID_A, NOTES_A, PASSWORD_A, USERNAME_A, ref

pytestmark = pytest.mark.req("INV7")

RATIO_BOUND = 30.0


def growth(func: Callable[[str], object], small: str, large: str) -> float:
    """Return t(large) / t(small), measured as the conformance suite measures it, by this
    thread's CPU time: the work is done here, and a busy machine's waits are not counted."""
    return growth_ratio(func, small, large, RATIO_BOUND, clock=time.thread_time)


def marker_flood(count: int) -> str:
    return json.dumps({"a": "{{secret:" * count})


def close_flood(count: int) -> str:
    return json.dumps({"a": "}}" * count})


def nested_marker_flood(count: int) -> str:
    return json.dumps({"a": "{{secret:{" * count + "}}" * count})


def reference_flood(count: int) -> str:
    return json.dumps({"a": (ref(ID_A) + " ") * (count // 5)})


def many_strings(count: int) -> str:
    return json.dumps({"a": ["{{secret:x"] * (count // 10), "b": "{{secret:y}}"})


def escaped_flood(count: int) -> str:
    return '{"a": "' + "\\u007b" * count + '"}'


def deep_nesting(count: int) -> str:
    return "[" * count + '"{{secret:x}}"' + "]" * count


INPUTS = {
    "markers": marker_flood,
    "closing-braces": close_flood,
    "nested-markers": nested_marker_flood,
    "valid-references": reference_flood,
    "many-strings": many_strings,
    "escapes": escaped_flood,
    "deep-nesting": deep_nesting,
}
STEPS: dict[str, Callable[[str], object]] = {
    "scan": has_marker,
    "parse": parse_arguments,
    "sanitize": sanitize_arguments,
}


@pytest.mark.parametrize("shape", list(INPUTS))
@pytest.mark.parametrize("step", list(STEPS))
def test_grammar_steps_are_linear(step: str, shape: str) -> None:
    """2,000 against 20,000 repetitions of each adversarial shape."""
    make = INPUTS[shape]
    ratio = growth(STEPS[step], make(2_000), make(20_000))
    assert ratio < RATIO_BOUND, f"{step} on {shape}: t(10n)/t(n) = {ratio:.1f}"


@pytest.mark.parametrize("shape", ["markers", "closing-braces"])
def test_raw_text_floods_are_linear(shape: str) -> None:
    """The same floods as raw argument text that is not JSON."""
    unit = "{{secret:" if shape == "markers" else "}}"
    for name, step in STEPS.items():
        ratio = growth(step, unit * 2_000, unit * 20_000)
        assert ratio < RATIO_BOUND, f"{name}: t(10n)/t(n) = {ratio:.1f}"


SCRUB_VALUES = {
    "password": PASSWORD_A,
    "username": USERNAME_A,
    "notes": NOTES_A,
    "repetitive": "aaaaaaaaaaaaaaab",
}


@pytest.mark.parametrize("which", list(SCRUB_VALUES))
def test_scrub_is_linear_on_near_misses(which: str) -> None:
    """A value's longest form minus its last character, repeated over 150 KB and 1.5 MB."""
    value = SCRUB_VALUES[which]
    scrubber = Scrubber([(Reference(ID_A, Field.PASSWORD), SecretValue(value))])
    longest = max(forms(value), key=len)
    near_miss = longest[:-1]
    small = near_miss * (150_000 // len(near_miss))
    large = near_miss * (1_500_000 // len(near_miss))
    assert scrubber.scrub(large) == large
    ratio = growth(scrubber.scrub, small, large)
    assert ratio < RATIO_BOUND, f"scrub on {which}: t(10n)/t(n) = {ratio:.1f}"


def test_scrub_is_linear_with_many_matches() -> None:
    """Every form of three values, back to back, over 150 KB and 1.5 MB."""
    values = [PASSWORD_A, USERNAME_A, NOTES_A]
    scrubber = Scrubber(
        (Reference(ID_A, field), SecretValue(value))
        for field, value in zip(Field, values, strict=True)
    )
    unit = "x".join(form for value in values for form in forms(value))
    small = unit * (150_000 // len(unit))
    large = unit * (1_500_000 // len(unit))
    leftover = [value for value in values if value in scrubber.scrub(large)]
    assert leftover == []
    ratio = growth(scrubber.scrub, small, large)
    assert ratio < RATIO_BOUND, f"t(10n)/t(n) = {ratio:.1f}"
