"""The kernel's vocabulary: outcomes, verdicts, and the records it judges.

This module owns the words every report spells (a check's :class:`Outcome`, a requirement's
folded outcome, the run's verdict and its exit code) and the three records the kernel reads and
writes: :class:`RequirementInfo` (one catalog entry), :class:`CheckResult` (what one executed
check judged) and :class:`RequirementResult` (one requirement's outcome). It imports nothing
from the rest of the suite, so every other module may import it. Records hold labels, IDs and
static text only, never a value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

#: A skip reason that begins with these words marks a requirement that cannot arise on the path
#: under test (decisions S1.1): it is reported "not applicable", never "unchecked".
NOT_APPLICABLE_PREFIX: Final = "not applicable: "


class Outcome(enum.Enum):
    """A check's or a requirement's outcome, as every report spells it."""

    PASS = "pass"
    FAIL = "fail"
    NON_STRICT = "non-strict"
    ACCEPTED = "accepted-alternative"
    SKIPPED = "skipped"
    ERROR = "error"
    BASELINED = "baselined"
    """A failure or error the host's expectations file lists as known; it does not fail the run."""
    FLAKY = "flaky"
    """A check listed as flaky that failed without finding a value, then passed on a rerun."""
    UNEXPECTED_PASS = "unexpected-pass"
    """A check listed as a known failure that passed: strict expectations fail the run."""


# --- verdicts and their exit codes ---------------------------------------------------------------

#: Every MUST was checked and held.
CONFORMANT: Final = "conformant"
#: A check failed, or a known failure of the expectations file passed.
NOT_CONFORMANT: Final = "not-conformant"
#: The harness could not judge the run: a check errored, the host restarted as another, no
#: check ran, or the harness reported a problem of its own.
HARNESS_ERROR: Final = "harness-error"
#: Every failure is a known failure of the host's expectations file: the run passes, and the
#: report shows each MUST failed as non-conformant (baselined).
BASELINED: Final = "non-conformant (baselined)"
#: Some MUST went unchecked and the host did not declare it (decisions S1.2): never conformant.
INCOMPLETE: Final = "incomplete"
#: Every MUST checked held, and the ones left unchecked are all declared so in the host's
#: expectations file, with a reason (decisions S1.2).
DECLARED: Final = "conformant (declared unchecked)"
#: Every MUST the run was narrowed to was checked and held, and the run names its narrowing
#: (``--requirements``, ``-k``, ``-m``, ``--deselect``, ...): never a plain ``conformant``, since
#: the requirements outside the selection were not looked at (decisions S1.7).
NARROWED: Final = "conformant (narrowed)"

#: Each verdict's exit code: 0 passes a CI gate, 1 fails it, 2 is a harness error.
EXIT_CODES: Final = {
    CONFORMANT: 0,
    BASELINED: 0,
    DECLARED: 0,
    NARROWED: 0,
    NOT_CONFORMANT: 1,
    INCOMPLETE: 1,
    HARNESS_ERROR: 2,
}

# --- requirement outcomes beyond a check's -------------------------------------------------------

#: A requirement no collected check cites (a SHOULD or EITHER without a check).
NOT_CHECKED: Final = "not-checked"
#: A requirement whose every check was skipped, or ran without being able to judge it: the host
#: did not let the suite see what it needs (decisions S1.1). Never passed.
UNCHECKED: Final = "unchecked"
#: A requirement that cannot arise on the path under test, with the reason (decisions S1.1).
NOT_APPLICABLE: Final = "not-applicable"
#: A requirement the design excludes; reported with its reason, never checked.
EXCLUDED: Final = "excluded"
#: A requirement outside a narrowed run's selection (decisions S1.7): never passed, whatever
#: the selected checks that cite it saw; a failure or an error they found stays visible.
NOT_SELECTED: Final = "not-selected"
#: A MUST whose every failure is baselined (and the verdict of a run whose every failure is).
BASELINED_REQUIREMENT: Final = BASELINED

#: The per-requirement check counts every report shows.
COUNT_KEYS: Final = ("pass", "fail", "error", "skipped", "unchecked")

#: The requirement outcomes that hold: a MUST with one of these was checked and held.
HELD: Final = frozenset({Outcome.PASS.value, Outcome.FLAKY.value, Outcome.ACCEPTED.value})


@dataclass(frozen=True, slots=True)
class RequirementInfo:
    """What the kernel and the reports need to know of one catalog entry.

    ``title`` is the entry's short name (at most 70 characters), shown beside its ID; it comes
    last, so that a record built by position needs none.
    """

    id: str
    level: str
    section: str
    statement: str
    scope: str = "any-host"
    alternatives: tuple[str, ...] = ()
    reason: str | None = None
    title: str = ""


@dataclass(slots=True)
class CheckResult:
    """One check's outcome.

    Attributes:
        nodeid: The pytest node id, which carries vector IDs as parameter ids.
        requirements: The requirement IDs the check cites.
        vectors: The vector IDs it ran.
        outcome: Its outcome.
        failed: The requirement IDs a failure names.
        non_strict: (requirement, detail) for each SHOULD the host missed.
        alternatives: (requirement, alternative) for each EITHER choice seen.
        detail: Why it failed, errored or was skipped; static text and labels only.
        duration_s: Seconds the check took.
        unchecked: (requirement, reason) for each cited requirement it could not judge
            (decisions S1.1): never passed by this check.
        reads: The capabilities the check used or asked for.
        swept_only: Those of ``reads`` that only the canary sweep read, never the check's body:
            a failure that is not a leak did not rest on them.
        leaked_on: Those of ``reads`` whose surfaces the canary sweep found a value on: a leak
            rests on them and on the body's reads, not on the other surfaces swept.
        sweeps: For each call the canary sweep covered, the surfaces searched.
        not_searched: The surfaces the sweep could not search: unseen, never clean.
        leak: Whether the failure is a value the canary sweep found, on any attempt: such a
            failure is never flaky and never rerun (decisions S1.6).
        harness: Whether the check errored because the run cannot go on, such as a host that
            restarted as another (decisions S1.8): the run is a harness error, and no entry of
            an expectations file changes that.
        attempts: How many times the check ran: more than once only when an expectations
            file lists it as flaky and it failed without finding a value (decisions S1.6).
    """

    nodeid: str
    requirements: tuple[str, ...]
    vectors: tuple[str, ...] = ()
    outcome: Outcome = Outcome.PASS
    failed: tuple[str, ...] = ()
    non_strict: list[tuple[str, str]] = field(default_factory=list)
    alternatives: list[tuple[str, str]] = field(default_factory=list)
    detail: str | None = None
    duration_s: float = 0.0
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    leak: bool = False
    reads: tuple[str, ...] = ()
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    not_searched: tuple[str, ...] = ()
    harness: bool = False
    attempts: int = 1
    swept_only: tuple[str, ...] = ()
    leaked_on: tuple[str, ...] = ()

    @property
    def executed(self) -> bool:
        """Whether the check's body ran to a verdict (not skipped, not a harness error)."""
        return self.outcome not in (Outcome.SKIPPED, Outcome.ERROR)

    def copy(self) -> CheckResult:
        """Return a copy whose lists can be changed without touching this record."""
        return CheckResult(
            self.nodeid,
            self.requirements,
            self.vectors,
            self.outcome,
            self.failed,
            list(self.non_strict),
            list(self.alternatives),
            self.detail,
            self.duration_s,
            list(self.unchecked),
            self.leak,
            self.reads,
            [dict(sweep) for sweep in self.sweeps],
            self.not_searched,
            self.harness,
            self.attempts,
            self.swept_only,
            self.leaked_on,
        )


@dataclass(slots=True)
class RequirementResult:
    """One requirement's outcome over every check that cites it."""

    info: RequirementInfo
    outcome: str
    checks: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
