"""Broken maskers, each with the requirement whose check must catch it, and the reference masker.

This module owns the in-process maskers the harness tests itself with: the reference host's own
scrubber, which must pass every MUST, and deliberately broken maskers (the raw value only, the
wrong URL encoder for form c, no JSON form, a floor of 6 or 9, a value lost when it lies inside
another, a replacement that shows a prefix, ...). Each broken masker names the requirement that
must report it; :func:`selftest` runs the checks against each and says which were caught. A
mutant must never be offered as a masker to measure, and nothing here may print a value.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from conformance.canary import json_escape, required_forms
from conformance.masker.protocol import COMMAND, TEXT, InProcessMasker, Masker, Secret

#: The reference masker's version label: it is the reference host's scrubber of this checkout.
REFERENCE_NAME: Final = "secref reference scrubber"

#: Characters of each line a windowed mutant searches: a 4 KiB read.
WINDOW_CHARS: Final = 4096


def reference_function(secrets: Sequence[Secret], text: str) -> str:
    """Mask ``text`` with the reference host's scrubber, as its adapter does."""
    from conformance.masker.adapters.reference import mask

    return mask({secret.name: secret.value for secret in secrets}, text)


def reference_masker(capabilities: Sequence[str] = (TEXT, COMMAND)) -> Masker:
    """Return the reference scrubber as an in-process masker (a buffering wrapper too)."""
    from importlib import metadata

    return InProcessMasker(
        REFERENCE_NAME, metadata.version("secref-suite"), reference_function, capabilities
    )


def _required(value: str) -> list[str]:
    return list(required_forms(value).values())


def _quote_plus_forms(value: str) -> list[str]:
    plus = urllib.parse.quote_plus(value)
    return [value, json_escape(value), plus, plus.replace("+", "%20")]


@dataclass(frozen=True, slots=True)
class Recipe:
    """How a simple masker masks; each broken masker changes one thing.

    Attributes:
        forms: The forms it looks for.
        floor: The shortest value it masks, in code points.
        floor_in_bytes: Measure the floor in UTF-8 bytes instead.
        replacement: The text that stands for a value, from its name and value.
        count: Occurrences of each form replaced per text (-1: all).
        drop_contained: Forget a value that lies inside another value.
        per_line: Mask each line on its own.
        window: Search only this many characters of each line.
        after_space: Mask an occurrence only when a space comes right before it.
        skip_after_match: Resume one character late after each replacement.
        rewrite: Applied to the output.
    """

    forms: Callable[[str], list[str]] = _required
    floor: int = 8
    floor_in_bytes: bool = False
    replacement: Callable[[str, str], str] = lambda name, _value: f"[{name}]"
    count: int = -1
    drop_contained: bool = False
    per_line: bool = False
    window: int = 0
    after_space: bool = False
    skip_after_match: bool = False
    rewrite: Callable[[str], str] | None = field(default=None)

    def function(self) -> Callable[[Sequence[Secret], str], str]:
        """Return the masking function this recipe describes."""
        return lambda secrets, text: self._mask(secrets, text)

    def _guarded(self, secrets: Sequence[Secret]) -> list[Secret]:
        def size(value: str) -> int:
            return len(value.encode("utf-8")) if self.floor_in_bytes else len(value)

        kept = [secret for secret in secrets if size(secret.value) >= self.floor]
        if self.drop_contained:
            kept = [
                secret
                for secret in kept
                if not any(secret.value != o.value and secret.value in o.value for o in kept)
            ]
        return kept

    def _mask(self, secrets: Sequence[Secret], text: str) -> str:
        pairs: dict[str, str] = {}
        for secret in self._guarded(secrets):
            for form in self.forms(secret.value):
                pairs.setdefault(form, self.replacement(secret.name, secret.value))
        ordered = sorted(pairs.items(), key=lambda pair: -len(pair[0]))
        if self.per_line or self.window:
            lines = text.splitlines(keepends=True)
            if self.window:
                out = "".join(
                    self._one(line[: self.window], ordered) + line[self.window :] for line in lines
                )
            else:
                out = "".join(self._one(line, ordered) for line in lines)
        else:
            out = self._one(text, ordered)
        return self.rewrite(out) if self.rewrite else out

    def _one(self, text: str, ordered: list[tuple[str, str]]) -> str:
        if not ordered:
            return text
        if self.after_space or self.skip_after_match:
            return self._scan(text, ordered)
        for form, replacement in ordered:
            text = text.replace(form, replacement, self.count)
        return text

    def _scan(self, text: str, ordered: list[tuple[str, str]]) -> str:
        pattern = re.compile("|".join(re.escape(form) for form, _ in ordered))
        lookup = dict(ordered)
        pieces: list[str] = []
        at = 0
        while (match := pattern.search(text, at)) is not None:
            start, end = match.span()
            if self.after_space and (start == 0 or text[start - 1] != " "):
                pieces.append(text[at : start + 1])
                at = start + 1
                continue
            pieces.append(text[at:start] + lookup[match.group()])
            at = end
            if self.skip_after_match:
                pieces.append(text[at : at + 1])
                at += 1
        pieces.append(text[at:])
        return "".join(pieces)


@dataclass(frozen=True, slots=True)
class MaskerMutant:
    """A broken masker and the requirement that must report it.

    Attributes:
        name: What it breaks, as a slug.
        requirement: The MASK ID whose row must show it.
        recipe: How it masks.
        chunked: Mask each read of a wrapped child's output on its own.
        behaviour: For an EITHER requirement, the behaviour the report must name instead of a
            failure.
    """

    name: str
    requirement: str
    recipe: Recipe
    chunked: bool = False
    behaviour: str = ""

    def masker(self) -> Masker:
        """Return this mutant as an in-process masker with text and command paths."""
        # Only a mutant that breaks the command path needs one: the text path is far quicker.
        paths = (TEXT, COMMAND) if self.chunked else (TEXT,)
        return InProcessMasker(
            f"mutant:{self.name}", "0", self.recipe.function(), paths, chunked=self.chunked
        )


def _sha256_prefix(name: str, value: str) -> str:
    return f"[{name}:{hashlib.sha256(value.encode('utf-8')).hexdigest()[:10]}]"


MUTANTS: Final = (
    MaskerMutant("raw-value-only", "MASK-002", Recipe(forms=lambda value: [value])),
    MaskerMutant("quote-plus-for-form-c", "MASK-003", Recipe(forms=_quote_plus_forms)),
    MaskerMutant(
        "no-json-form", "MASK-002", Recipe(forms=lambda v: _required(v)[:1] + _required(v)[2:])
    ),
    MaskerMutant("no-pct20-form", "MASK-004", Recipe(forms=lambda v: _required(v)[:3])),
    MaskerMutant("floor-of-9", "MASK-005", Recipe(floor=9)),
    MaskerMutant("floor-of-6", "MASK-006", Recipe(floor=6), behaviour="masks-shorter"),
    MaskerMutant(
        "floor-in-bytes", "MASK-006", Recipe(floor_in_bytes=True), behaviour="masks-shorter"
    ),
    MaskerMutant("needs-space-before", "MASK-007", Recipe(after_space=True)),
    MaskerMutant("resumes-a-character-late", "MASK-008", Recipe(skip_after_match=True)),
    MaskerMutant("drops-a-value-inside-another", "MASK-009", Recipe(drop_contained=True)),
    MaskerMutant("first-occurrence-only", "MASK-010", Recipe(count=1)),
    MaskerMutant("searches-4-kib-of-each-line", "MASK-011", Recipe(window=WINDOW_CHARS)),
    MaskerMutant("line-by-line", "MASK-012", Recipe(per_line=True)),
    MaskerMutant("masks-each-read", "MASK-013", Recipe(), chunked=True),
    MaskerMutant(
        "replacement-shows-prefix", "MASK-014", Recipe(replacement=lambda n, v: v[:2] + "*****")
    ),
    MaskerMutant(
        "replacement-shows-length", "MASK-015", Recipe(replacement=lambda n, v: f"[{n}:{len(v)}]")
    ),
    MaskerMutant("replacement-unsalted-hash", "MASK-016", Recipe(replacement=_sha256_prefix)),
    MaskerMutant(
        "strips-trailing-spaces",
        "MASK-017",
        Recipe(rewrite=lambda text: re.sub(r"[ \t]+\n", "\n", text)),
    ),
)


def mutant(name: str) -> MaskerMutant:
    """Return the mutant called ``name``.

    Raises:
        KeyError: No mutant has that name.
    """
    for item in MUTANTS:
        if item.name == name:
            return item
    raise KeyError(name)
