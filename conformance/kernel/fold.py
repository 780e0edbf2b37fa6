"""Folding check records into one outcome per requirement (decisions S1.1, S1.3, S1.4, S1.7).

This module owns the rules that turn what the checks judged into each requirement's outcome:

- a requirement **fails** when a failing check names it (a SHOULD is then non-strict); it is
  ``non-conformant (baselined)`` only when every check failing it was baselined by a
  known-failure entry, and baselining marks only the requirements a failure named;
- it **errors** when a check citing it errored;
- it **passes** only when some executed check judged it and every check citing it did: none
  was skipped, none ran blind to it (an ``unchecked`` entry, or a surface it depends on left
  unsearched), none failed at another requirement before reaching it;
- it is **unchecked** when a check citing it could not judge it, and **not applicable** only
  when every check citing it said it cannot arise, or its scope is not the run's, and never
  while a check naming it failed;
- inside a narrowed run's selection, a MUST no check ran for is unchecked; outside it, a
  requirement is ``not-selected`` unless a check found it failing or errored.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from conformance.kernel.records import (
    BASELINED_REQUIREMENT,
    COUNT_KEYS,
    EXCLUDED,
    NOT_APPLICABLE,
    NOT_APPLICABLE_PREFIX,
    NOT_CHECKED,
    NOT_SELECTED,
    UNCHECKED,
    CheckResult,
    Outcome,
    RequirementInfo,
    RequirementResult,
)

#: The folded outcomes a requirement outside the selection shows as ``not-selected``: every
#: outcome that would read as a pass or as the run's own gap, never a finding.
_UNSELECTED: Final = frozenset(
    {
        Outcome.PASS.value,
        Outcome.ACCEPTED.value,
        Outcome.FLAKY.value,
        UNCHECKED,
        NOT_CHECKED,
        NOT_APPLICABLE,
    }
)

#: The requirements a surface is evidence for, beyond invariant 1's family (which every surface
#: is evidence for): a surface left unsearched blinds a check to these (decisions S1.3).
SURFACE_EVIDENCE: Final = {
    "ledger": frozenset({"LEDG-004", "SCRUB-014"}),
    "approval request": frozenset({"APPR-005", "SCRUB-014"}),
    "host log": frozenset({"LOG-001", "SCRUB-014"}),
    "printed output": frozenset({"SCRUB-014"}),
}


def blinded_by(requirement: str, not_searched: Iterable[str]) -> list[str]:
    """Return the unsearched surfaces that were evidence for ``requirement``.

    Every surface is evidence for invariant 1's family (``INV1``, ``INV1-...``); the others are
    evidence for what :data:`SURFACE_EVIDENCE` names.
    """
    return [
        surface
        for surface in not_searched
        if requirement.startswith("INV1") or requirement in SURFACE_EVIDENCE.get(surface, ())
    ]


def counts(requirement: str, cited: Iterable[CheckResult]) -> dict[str, int]:
    """Return how the checks citing ``requirement`` went, as every report counts them."""
    found = dict.fromkeys(COUNT_KEYS, 0)
    for check in cited:
        if requirement in check.failed or check.outcome in (
            Outcome.FAIL,
            Outcome.BASELINED,
            Outcome.UNEXPECTED_PASS,
        ):
            found["fail"] += 1
        elif check.outcome is Outcome.ERROR:
            found["error"] += 1
        elif check.outcome is Outcome.SKIPPED:
            found["skipped"] += 1
        elif unjudged(requirement, check):
            found["unchecked"] += 1
        else:
            found["pass"] += 1
    return found


def applicable(entry: RequirementInfo, scopes: Iterable[str] | None) -> bool:
    """Return whether ``entry``'s scope applies to the run (``scopes`` ``None``: all do)."""
    return scopes is None or entry.scope in set(scopes)


def scopes_for(path: str, capabilities: Iterable[str]) -> frozenset[str]:
    """Return the requirement scopes that apply to a run on ``path`` against a host that
    announced ``capabilities``.

    Every host answers for ``any-host`` rules; only the reference implementation for its own
    (``reference-only``); only a run through MCP for the wire's rules (``mcp``). Whether the run
    is through MCP is the suite's own path, never a capability the host announced
    (decisions S1.8).
    """
    scopes = {"any-host"}
    if "reference" in set(capabilities):
        scopes.add("reference-only")
    if path == "mcp":
        scopes.add("mcp")
    return frozenset(scopes)


def run_scopes(host: Mapping[str, Any]) -> frozenset[str]:
    """Return the scopes of a run against ``host`` (its report entry, whose ``via`` is the
    suite's path)."""
    return scopes_for(str(host.get("via") or ""), host.get("capabilities") or ())


def requirement_outcomes(
    catalog: Sequence[RequirementInfo],
    checks: Iterable[CheckResult],
    scopes: Iterable[str] | None = None,
    selected: AbstractSet[str] | None = None,
) -> list[RequirementResult]:
    """Fold the checks' outcomes into one outcome per requirement (the module's rules).

    Args:
        catalog: Every requirement, in catalog order.
        checks: Every check result of the run.
        scopes: The scopes that apply to the run (:func:`scopes_for`); all of them if omitted.
        selected: The requirement IDs the run set out to check; ``None`` when not known.

    Returns:
        One result per requirement, in catalog order.
    """
    by_requirement: dict[str, list[CheckResult]] = {entry.id: [] for entry in catalog}
    for check in checks:
        noted = [rid for rid, _ in (*check.non_strict, *check.alternatives)]
        for requirement in dict.fromkeys((*check.requirements, *check.failed, *noted)):
            by_requirement.setdefault(requirement, []).append(check)
    scope_set = None if scopes is None else frozenset(scopes)
    return [
        _within(_fold_one(entry, by_requirement.get(entry.id, []), scope_set), selected)
        for entry in catalog
    ]


def _within(result: RequirementResult, selected: AbstractSet[str] | None) -> RequirementResult:
    """Apply the run's selection to one folded requirement (decisions S1.7)."""
    if selected is None or result.outcome == EXCLUDED:
        return result
    if result.info.id not in selected:
        if result.outcome in _UNSELECTED:
            result.outcome = NOT_SELECTED
            result.details = ["outside the run's selection"]
        return result
    if result.outcome == NOT_CHECKED and not result.checks and result.info.level == "MUST":
        result.outcome = UNCHECKED
        result.details = ["no check of it ran in this run"]
    return result


def unjudged(requirement: str, check: CheckResult) -> list[str]:
    """Return why ``check``, which cites ``requirement``, did not judge it (empty: it did)."""
    reasons = [reason for rid, reason in check.unchecked if rid == requirement]
    reasons += [
        f"the {surface} was not searched whole"
        for surface in blinded_by(requirement, check.not_searched)
    ]
    if check.outcome in (Outcome.FAIL, Outcome.BASELINED) and requirement not in check.failed:
        # A check that failed at another requirement stopped before judging this one; a
        # baselined failure is forgiven only where it was named (decisions S1.4, S1.6).
        if check.failed:
            reasons.append(f"{check.nodeid} failed at {', '.join(check.failed)} before judging it")
        elif check.outcome is Outcome.BASELINED:
            reasons.append(f"{check.nodeid} was baselined without naming it")
        else:
            reasons.append(f"{check.nodeid} failed without naming a requirement")
    return reasons


def _fold_one(
    entry: RequirementInfo, cited: list[CheckResult], scopes: frozenset[str] | None
) -> RequirementResult:
    result = RequirementResult(entry, NOT_CHECKED, [check.nodeid for check in cited])
    result.counts = counts(entry.id, cited)
    if entry.level == EXCLUDED:
        result.outcome = EXCLUDED
        if entry.reason:
            result.details.append(entry.reason)
        return result
    failed = [check for check in cited if entry.id in check.failed]
    errored = [check for check in cited if check.outcome is Outcome.ERROR]
    broken = [check for check in cited if check.outcome in (Outcome.FAIL, Outcome.BASELINED)]
    if not broken and not errored and not applicable(entry, scopes):
        # Out of the run's scope, and no check of it failed: it cannot arise here. A
        # requirement one of whose checks failed is never not-applicable (decisions S1.12).
        result.outcome = NOT_APPLICABLE
        result.details.append(f"a {entry.scope} rule, which does not apply to this run")
        return result
    non_strict = [detail for check in cited for req, detail in check.non_strict if req == entry.id]
    chosen = list(
        dict.fromkeys(
            alternative
            for check in cited
            for req, alternative in check.alternatives
            if req == entry.id
        )
    )
    result.alternatives = chosen
    if failed:
        if entry.level == "SHOULD":
            result.outcome = Outcome.NON_STRICT.value
        elif all(check.outcome is Outcome.BASELINED for check in failed):
            # Only a known-failure entry forgives a failure, and only where it was named.
            result.outcome = BASELINED_REQUIREMENT
        else:
            result.outcome = Outcome.FAIL.value
        result.details = [f"{check.nodeid}: {check.detail}" for check in failed]
        return result
    if errored:
        result.outcome = Outcome.ERROR.value
        result.details = [f"{check.nodeid}: {check.detail}" for check in errored]
        return result
    if non_strict:
        result.outcome = Outcome.NON_STRICT.value
        result.details = list(dict.fromkeys(non_strict))
        return result
    if not cited:
        return result
    judged = [
        check
        for check in cited
        if check.executed
        and check.outcome not in (Outcome.FAIL, Outcome.BASELINED)
        and not unjudged(entry.id, check)
    ]
    skipped = [check.detail or "skipped" for check in cited if check.outcome is Outcome.SKIPPED]
    blind_reasons = [
        reason
        for check in cited
        if check.outcome is not Outcome.SKIPPED
        for reason in unjudged(entry.id, check)
    ]
    # A case the suite could not see is a case not certified, however many others passed: a
    # host must not escape a check by hiding what it would have read.
    blind = [
        reason
        for reason in dict.fromkeys(skipped + blind_reasons)
        if not reason.startswith(NOT_APPLICABLE_PREFIX)
    ]
    if blind:
        result.outcome = UNCHECKED
        result.details = blind
        if judged:
            result.details.insert(
                0, f"{len(judged)} of {len(cited)} checks judged it; the others could not"
            )
    elif judged:
        if chosen:
            result.outcome = Outcome.ACCEPTED.value
        else:
            # A check that passed only on a rerun holds, and says so (decisions S1.6).
            flaky = [check for check in judged if check.outcome is Outcome.FLAKY]
            result.outcome = Outcome.FLAKY.value if flaky else Outcome.PASS.value
            result.details = [f"{check.nodeid}: {check.detail}" for check in flaky]
    elif chosen:
        result.outcome = Outcome.ACCEPTED.value
    else:
        result.outcome = NOT_APPLICABLE
        result.details = list(dict.fromkeys(skipped + blind_reasons))
    return result


def unchecked_musts(requirements: Iterable[RequirementResult]) -> list[RequirementResult]:
    """Return the MUST requirements the run could not check (decisions S1.2)."""
    return [
        item for item in requirements if item.info.level == "MUST" and item.outcome == UNCHECKED
    ]
