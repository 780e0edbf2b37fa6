"""The end-of-run barrier over late output (decisions S1.9): what a host wrote after a check.

A check searches the surfaces it observed while it ran. A host can still write afterwards: on
standard error a moment after the invoke response, in a log line no later observation reads, in
an MCP notification after the call's result. Before the verdict is given the suite drains every
such stream and searches all of it for every canary the run issued.

This module owns the shape of that barrier's answer. A host object that keeps late output offers
``late_findings(canaries) -> LateReport``; the plugin calls it once per host at the end of the
run, after the host is closed and its streams are drained, and turns the report into a check
result the verdict kernel judges like any other. A stream the host could not keep whole (evicted
from a bounded buffer, cut at a size limit, a message the client could not read) is named in
:attr:`LateReport.unsearched`: it is a surface not searched, never a clean one. Nothing here may
print a value: a finding names the label, the form and where.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from conformance.canary import (
    MIN_GUARDED_CODE_POINTS,
    SURFACE_REQUIREMENTS,
    Finding,
    Guarded,
    Surface,
    required_forms,
)

if TYPE_CHECKING:
    from conformance.canary import Canary

#: The requirements a value in a host's late standard error violates: non-disclosure (design,
#: invariant 1) and the host log rule (decisions R6.6), since what a host writes there is its
#: log.
STDERR_REQUIREMENTS: Final = tuple(
    dict.fromkeys((*SURFACE_REQUIREMENTS[Surface.PRINTED], *SURFACE_REQUIREMENTS[Surface.LOG]))
)

#: Characters of the windows a search indexes: the shortest guarded value, so every form of
#: every guarded value has at least one.
WINDOW: Final = MIN_GUARDED_CODE_POINTS

#: The widest stride a search scans at; it needs forms at least ``stride + WINDOW - 1`` long.
MAX_STRIDE: Final = 8


@dataclass(slots=True)
class LateReport:
    """What the barrier found in one host's late output.

    Attributes:
        findings: Required forms of a run canary found in output no check's sweep read.
        searched: The streams searched whole, by name (``standard error``, ``MCP session``).
        unsearched: (stream, why) for each stream, or part of one, the barrier could not read
            whole: never clean (decisions S1.3, S1.9).
    """

    findings: list[Finding] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)
    unsearched: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: LateReport) -> None:
        """Add ``other``'s findings and streams to this report."""
        self.findings.extend(other.findings)
        self.searched.extend(other.searched)
        self.unsearched.extend(other.unsearched)


@runtime_checkable
class KeepsLateOutput(Protocol):
    """A host object whose late output the barrier can search."""

    def late_findings(self, canaries: Sequence[Canary]) -> LateReport:
        """Search everything kept since the run began for every form of ``canaries``."""
        ...


def run_guarded(canaries: Iterable[Canary]) -> tuple[Guarded, ...]:
    """Return the run's canaries as the values the barrier guards.

    Every canary of at least :data:`MIN_GUARDED_CODE_POINTS` code points, a username included:
    the host log and standard error may hold no value at all (decisions R6.6), as the
    per-check sweep of the ``printed`` surface has it.
    """
    return tuple(
        Guarded(canary.label, canary.value, canary.label.endswith(".username"))
        for canary in canaries
        if len(canary.value) >= MIN_GUARDED_CODE_POINTS
    )


class FormSearch:
    """Finds every required form (decisions R5.2) of many values in long text, quickly.

    Each form is indexed by its :data:`WINDOW`-character windows at the first ``stride``
    offsets; the text is cut into windows every ``stride`` characters, and only the forms
    whose window turns up are searched for whole. A stride of 1 is cheapest to build; a wider
    one is cheaper per character of text, for long streams. :meth:`stream` searches text that
    arrives in pieces, with an overlap as long as the longest form, so a form cut across two
    pieces is found.

    Args:
        guarded: The values to look for.
        stride: Characters between two windows of the text, at most :data:`MAX_STRIDE`; it is
            narrowed to what the shortest form allows.
    """

    def __init__(self, guarded: Sequence[Guarded], stride: int = 1) -> None:
        self.forms: list[tuple[Guarded, str, str]] = [
            (item, name, form)
            for item in guarded
            for name, form in required_forms(item.value).items()
            if len(form) >= WINDOW
        ]
        shortest = min((len(form) for _, _, form in self.forms), default=WINDOW)
        self.stride = max(1, min(stride, MAX_STRIDE, shortest - WINDOW + 1))
        self.longest = max((len(form) for _, _, form in self.forms), default=WINDOW)
        self._index: dict[str, list[int]] = {}
        for number, (_, _, form) in enumerate(self.forms):
            for offset in range(self.stride):
                self._index.setdefault(form[offset : offset + WINDOW], []).append(number)
        self._keys = frozenset(self._index)

    def __bool__(self) -> bool:
        return bool(self.forms)

    def find(self, text: str) -> set[int]:
        """Return the numbers (in :attr:`forms`) of the forms found whole in ``text``."""
        last = len(text) - WINDOW
        if last < 0 or not self.forms:
            return set()
        starts = range(0, last + 1, self.stride)
        ends = range(WINDOW, last + 1 + WINDOW, self.stride)
        # Slicing and the set lookups run in C: no Python-level loop over the text.
        hits = self._keys.intersection(map(text.__getitem__, map(slice, starts, ends)))
        candidates = {number for window in hits for number in self._index[window]}
        return {number for number in candidates if self.forms[number][2] in text}

    def stream(self, pieces: Iterable[str]) -> set[int]:
        """Return the forms found in the text ``pieces`` make together, read piece by piece."""
        found: set[int] = set()
        tail = ""
        keep = self.longest - 1
        for piece in pieces:
            text = tail + piece
            found |= self.find(text)
            tail = text[-keep:] if keep > 0 else ""
        return found


def present(canaries: Iterable[Canary], text: str) -> list[Canary]:
    """Return the canaries of which some required form begins somewhere in ``text``.

    A cheap first pass for short text: the text's own :data:`WINDOW`-character windows are
    collected once, and a canary is kept only when the start of one of its forms is among them;
    no index of every form of every canary is built. :class:`FormSearch` then looks for the
    few kept in full.
    """
    last = len(text) - WINDOW
    if last < 0:
        return []
    windows = set(map(text.__getitem__, map(slice, range(last + 1), range(WINDOW, len(text) + 1))))
    return [
        canary
        for canary in canaries
        if len(canary.value) >= MIN_GUARDED_CODE_POINTS
        and any(form[:WINDOW] in windows for form in required_forms(canary.value).values())
    ]


def decoded(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield ``chunks`` decoded as UTF-8, as the ``printed`` surface decodes standard error
    (an invalid byte becomes U+FFFD), a character cut between two chunks kept whole."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    rest = decoder.decode(b"", final=True)
    if rest:
        yield rest


def stream_findings(
    search: FormSearch,
    segments: Iterable[tuple[str, Iterable[str]]],
    surface: Surface = Surface.PRINTED,
    requirements: tuple[str, ...] = STDERR_REQUIREMENTS,
) -> list[Finding]:
    """Return a finding for each form found in each segment of a stream.

    Args:
        search: The forms to look for.
        segments: (where, text pieces) for each part searched on its own, such as one start
            of an adapter; ``where`` is printable and holds no host text.
        surface: The surface the findings name.
        requirements: The requirement IDs each finding violates.
    """
    findings: list[Finding] = []
    for where, pieces in segments:
        for number in sorted(search.stream(pieces)):
            item, name, _ = search.forms[number]
            findings.append(Finding(surface, name, item.label, where, requirements))
    return findings
