"""Mutants that break scrubbing and the result cap (decisions R5 and R6.1).

This module owns the broken reference hosts that leave a form of a value in a result (an
encoding missed, an overlap dropped, a failure text unscrubbed) or that cut the result wrongly
against the cap. Each entry is a :class:`~conformance.selftest.base.Mutant`. It changes
behaviour only and never prints a value.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Callable
from typing import Any, Final

from conformance.selftest.base import Mutant

_local = threading.local()
_REG = "reference_impl._registry"


def _scrub_after_cap(original: type) -> type:
    from reference_impl._cap import cap

    class CappedFirst(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            return str(super().scrub(cap(text)))

    return CappedFirst


def _without_form_d(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        found = original(value)
        return tuple(form for form in found if "%20" not in form) or found[:1]

    return forms


def _constant(value: Any) -> Callable[[Any], Any]:
    return lambda _original: value


def _cap_note_outside(original: Callable[..., str]) -> Callable[..., str]:
    from reference_impl._limits import RESULT_CAP_CHARS

    def cap(text: str, limit: int = RESULT_CAP_CHARS) -> str:
        if len(text) <= limit:
            return text
        return text[:limit] + f"\n[result cut; it had {len(text)} characters]"

    return cap


def _without_json_escape(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    from reference_impl._scrub import json_escape

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        escaped = json_escape(value)
        return tuple(form for form in original(value) if form == value or form != escaped)

    return forms


def _scrubbing_forced(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load(path: Any) -> Any:
        return dataclasses.replace(original(path), result_scrubbing_enabled=True)

    return load


def _remember_failure(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.failed = result.is_error
        return result

    return run


def _failure_text_kept(original: type) -> type:
    class SuccessOnly(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if getattr(_local, "failed", False):
                return text
            return str(super().scrub(text))

    return SuccessOnly


def _without_identity(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """Form a, the value itself, is not among the scrubbed forms."""

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        return tuple(form for form in original(value) if form != value)

    return forms


def _plus_kept(original: Callable[[str], tuple[str, ...]]) -> Callable[..., Any]:
    """The scrubbed form c leaves '+' in the value as it is instead of %2B."""

    @functools.wraps(original)
    def forms(value: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(form.replace("%2B", "+") for form in original(value)))

    return forms


def _form_table_writes(byte: int, text: str) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    """Form c's byte table writes ``byte`` as ``text``, as another URL encoder would."""

    def transform(original: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(text if index == byte else entry for index, entry in enumerate(original))

    return transform


def _placeholder_without_field(original: Callable[..., str]) -> Callable[..., str]:
    """The placeholder names the secret's id but not the field."""

    @functools.wraps(original)
    def placeholder(reference: Any) -> str:
        return f"[secret:{reference.id}]"

    return placeholder


def _merge_drops_overlapped(original: Callable[..., str]) -> Callable[..., str]:
    """After an overlap the merge stops looking for the form it passed over."""

    @functools.wraps(original)
    def merge(self: Any, text: str) -> str:
        needles = self._needles
        found = [text.find(form) for form, _ in needles]
        active = [index for index, position in enumerate(found) if position >= 0]
        pieces: list[str] = []
        cursor = 0
        while active:
            best = min(active, key=found.__getitem__)
            form, replacement = needles[best]
            pieces.append(text[cursor : found[best]])
            pieces.append(replacement)
            cursor = found[best] + len(form)
            survivors: list[int] = []
            for index in active:
                if found[index] < cursor:
                    if index != best:
                        continue  # overlapped by the replacement: never looked for again
                    found[index] = text.find(needles[index][0], cursor)
                    if found[index] < 0:
                        continue
                survivors.append(index)
            active = survivors
        pieces.append(text[cursor:])
        return "".join(pieces)

    return merge


def _rescanning(original: Callable[..., str]) -> Callable[..., str]:
    """Each form is replaced in turn over the text already scrubbed, placeholders included."""

    @functools.wraps(original)
    def scrub(self: Any, text: str) -> str:
        for form, replacement in self._needles:
            text = text.replace(form, replacement)
        return text

    return scrub


def _scrub_up_to_cut(original: type) -> type:
    """An over-cap result is scrubbed only up to where the cap will cut it."""
    from reference_impl._limits import RESULT_CAP_CHARS

    class UpToCut(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if len(text) <= RESULT_CAP_CHARS:
                return str(super().scrub(text))
            note = f"\n[result cut to {RESULT_CAP_CHARS} characters; it had {len(text)}]"
            keep = RESULT_CAP_CHARS - len(note)
            return str(super().scrub(text[:keep])) + text[keep:]

    return UpToCut


def _timeout_quotes_arguments(original: Callable[..., Any]) -> Callable[..., Any]:
    """The execution-timeout text quotes the substituted arguments."""
    from reference_impl._types import ToolResult

    @functools.wraps(original)
    def run(self: Any, tool: Any, arguments: Any, timeout: float) -> Any:
        result = original(self, tool, arguments, timeout)
        _local.timed_out = result.is_error and " timed out after " in result.text
        if _local.timed_out:
            return ToolResult(f"{result.text} while running {arguments.raw}", is_error=True)
        return result

    return run


def _timeout_text_unscrubbed(original: type) -> type:
    """The scrubber leaves an execution-timeout text as it is."""

    class TimeoutKept(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            if getattr(_local, "timed_out", False):
                return text
            return str(super().scrub(text))

    return TimeoutKept


def _near_window_only(original: Callable[..., int]) -> Callable[..., int]:
    """After an overlap, a passed-over form is looked for in the next 256 characters only."""
    from reference_impl._scrub import _NEAR_WINDOW

    def find_after(text: str, form: str, start: int) -> int:
        return text.find(form, start, start + _NEAR_WINDOW)

    return find_after


def _drops_after_placeholder(original: type) -> type:
    """Each placeholder swallows the character that follows it."""

    class Swallowing(original):  # type: ignore[misc]
        def scrub(self, text: str) -> str:
            scrubbed = str(super().scrub(text))
            return re.sub(r"(\[secret:[^\]]*\]).", r"\1", scrubbed, flags=re.DOTALL)

    return Swallowing


def _shortest_first(original: type) -> type:
    """Where forms start at one place, the shortest is replaced, not the longest."""

    class ShortestFirst(original):  # type: ignore[misc]
        def __init__(self, resolved: Any) -> None:
            super().__init__(resolved)
            needles: tuple[tuple[str, str], ...] = getattr(self, "_needles")  # noqa: B009
            ordered = sorted(needles, key=lambda item: len(item[0]))
            self._needles = tuple(ordered)
            self._forms = tuple(form for form, _ in ordered)
            self._replacements = tuple(replacement for _, replacement in ordered)
            self._sizes = tuple(len(form) for form, _ in ordered)

    return ShortestFirst


def _cap_limit(limit: int) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """The cap cuts at ``limit`` characters instead of 150,000."""

    def transform(original: Callable[..., str]) -> Callable[..., str]:
        @functools.wraps(original)
        def cap(text: str, _limit: int = limit) -> str:
            return original(text, limit)

        return cap

    return transform


def _cap_at_limit(original: Callable[..., str]) -> Callable[..., str]:
    """A result of exactly the cap's length is cut as if it were over."""
    from reference_impl._limits import RESULT_CAP_CHARS

    @functools.wraps(original)
    def cap(text: str, limit: int = RESULT_CAP_CHARS) -> str:
        return original(text, limit - 1) if len(text) == limit else original(text, limit)

    return cap


def _surrogates_delivered(original: Any) -> Any:
    """A value holding a lone surrogate is delivered, and the scrubber misses its escape."""
    import re

    return re.compile("(?!)")


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant(
        "scrub-after-cap",
        "SCRUB-011",
        "The result is cut to the cap before it is scrubbed.",
        ((_REG, "Scrubber", _scrub_after_cap),),
    ),
    Mutant(
        "pct20-not-scrubbed",
        "SCRUB-006",
        "Form d, URL form encoding with %20 for spaces, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_form_d),),
    ),
    Mutant(
        "floor-nine",
        "SCRUB-001",
        "Values need 9 code points, not 8, to be scrubbed.",
        (("reference_impl._scrub", "SCRUB_MIN_CODE_POINTS", _constant(9)),),
    ),
    Mutant(
        "cap-note-outside",
        "CAP-001",
        "The note about a cut is appended after cutting at the cap, so the result exceeds it.",
        ((_REG, "cap", _cap_note_outside),),
        via="driver",
    ),
    Mutant(
        "json-escape-not-scrubbed",
        "SCRUB-004",
        "Form b, the value's JSON string escape, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_json_escape),),
        via="driver",
    ),
    Mutant(
        "scrubbing-switch-ignored",
        "SCRUB-012",
        "resultScrubbingEnabled false is ignored and results are still scrubbed.",
        (("reference_impl.harness", "load_policy", _scrubbing_forced),),
        via="driver",
    ),
    Mutant(
        "failure-text-unscrubbed",
        "SCRUB-010",
        "Failure text built from a handler's exception is not scrubbed.",
        (
            ("reference_impl._execute", "Executor.run", _remember_failure),
            (_REG, "Scrubber", _failure_text_kept),
        ),
    ),
    Mutant(
        "identity-form-not-scrubbed",
        "SCRUB-003",
        "Form a, the value itself, is not scrubbed.",
        (("reference_impl._scrub", "forms", _without_identity),),
    ),
    Mutant(
        "plus-not-encoded",
        "SCRUB-005",
        "The scrubbed form c keeps '+' as it is instead of %2B, so the real form c survives.",
        (("reference_impl._scrub", "forms", _plus_kept),),
    ),
    Mutant(
        "star-form-encoded",
        "SCRUB-005",
        "Form c writes '*' as %2A, as quote_plus does, so the design's form c (which keeps '*') "
        "survives.",
        (("reference_impl._scrub", "_FORM_TABLE", _form_table_writes(0x2A, "%2A")),),
    ),
    Mutant(
        "tilde-form-kept",
        "SCRUB-005",
        "Form c keeps '~', as quote_plus does, so the design's form c (%7E) survives.",
        (("reference_impl._scrub", "_FORM_TABLE", _form_table_writes(0x7E, "~")),),
    ),
    Mutant(
        "placeholder-without-field",
        "SCRUB-007",
        "The placeholder is [secret:<id>], without the field.",
        (("reference_impl._scrub", "placeholder", _placeholder_without_field),),
        via="driver",
    ),
    Mutant(
        "overlap-drops-form",
        "SCRUB-009",
        "When occurrences overlap, a form passed over is never looked for again and survives.",
        (("reference_impl._scrub", "Scrubber._merge", _merge_drops_overlapped),),
    ),
    Mutant(
        "scrub-rescans-placeholders",
        "SCRUB-016",
        "The reference scrubber replaces each form in turn, rescanning the placeholders it wrote.",
        (("reference_impl._scrub", "Scrubber.scrub", _rescanning),),
        driver=False,
    ),
    Mutant(
        "scrub-stops-at-cut",
        "CAP-002",
        "An over-cap result is scrubbed only up to the cut, so a value straddling it leaves a "
        "fragment.",
        ((_REG, "Scrubber", _scrub_up_to_cut),),
    ),
    Mutant(
        "lone-surrogate-delivered-unscrubbed",
        "SCRUB-017",
        "A value holding a lone surrogate is delivered and its JSON escape is not scrubbed.",
        (
            ("reference_impl._resolve", "_LONE_SURROGATE", _surrogates_delivered),
            ("reference_impl._scrub", "_LONE_SURROGATE", _surrogates_delivered),
        ),
    ),
    Mutant(
        "timeout-text-unscrubbed",
        "SCRUB-010",
        "The execution-timeout text quotes the substituted arguments and is not scrubbed.",
        (
            ("reference_impl._execute", "Executor.run", _timeout_quotes_arguments),
            (_REG, "Scrubber", _timeout_text_unscrubbed),
        ),
        via="driver",
    ),
    Mutant(
        "overlap-rescan-near-only",
        "SCRUB-009",
        "After an overlap a passed-over value is looked for in the next 256 characters only.",
        (("reference_impl._scrub", "_find_after", _near_window_only),),
    ),
    Mutant(
        "placeholder-swallows-next-char",
        "SCRUB-020",
        "Each placeholder swallows the character that follows the occurrence it replaced.",
        ((_REG, "Scrubber", _drops_after_placeholder),),
        via="driver",
    ),
    Mutant(
        "scrub-shortest-first",
        "SCRUB-020",
        "Where forms start at one place the shortest is replaced, leaving the rest of the longer.",
        ((_REG, "Scrubber", _shortest_first),),
    ),
    Mutant(
        "cap-cuts-to-a-few",
        "CAP-003",
        "The cap cuts every result to 64 characters.",
        ((_REG, "cap", _cap_limit(64)),),
        via="driver",
    ),
    Mutant(
        "cap-cuts-at-the-limit",
        "CAP-003",
        "A result of exactly 150,000 characters is cut.",
        ((_REG, "cap", _cap_at_limit),),
    ),
)
