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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from conformance.canary import Canary, Finding


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
