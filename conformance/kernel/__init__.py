"""The verdict kernel: the one place a conformance run's outcome is decided.

This package owns turning a run's check records into each requirement's outcome and the verdict
(:func:`decide`), and what an expectations file may change on the way
(:mod:`conformance.kernel.baseline`). It is pure: no file, no process, no pytest, and it imports
nothing from the rest of the suite, so every report renderer can import it and none of them
needs to compute anything of its own. Its rules are stated in plain words in
``docs/conformance.md`` ("How the verdict is decided").
"""

from __future__ import annotations

from conformance.kernel.baseline import Applied, Entry, Expectations, apply, rerun_entry
from conformance.kernel.fold import (
    applicable,
    requirement_outcomes,
    run_scopes,
    scopes_for,
    unchecked_musts,
)
from conformance.kernel.records import (
    BASELINED,
    CONFORMANT,
    COUNT_KEYS,
    DECLARED,
    EXCLUDED,
    EXIT_CODES,
    HARNESS_ERROR,
    INCOMPLETE,
    NARROWED,
    NOT_APPLICABLE,
    NOT_APPLICABLE_PREFIX,
    NOT_CHECKED,
    NOT_CONFORMANT,
    NOT_SELECTED,
    UNCHECKED,
    CheckResult,
    Outcome,
    RequirementInfo,
    RequirementResult,
)
from conformance.kernel.verdict import Decision, Inputs, decide, verdict_line

__all__ = [
    "BASELINED",
    "CONFORMANT",
    "COUNT_KEYS",
    "DECLARED",
    "EXCLUDED",
    "EXIT_CODES",
    "HARNESS_ERROR",
    "INCOMPLETE",
    "NARROWED",
    "NOT_APPLICABLE",
    "NOT_APPLICABLE_PREFIX",
    "NOT_CHECKED",
    "NOT_CONFORMANT",
    "NOT_SELECTED",
    "UNCHECKED",
    "Applied",
    "CheckResult",
    "Decision",
    "Entry",
    "Expectations",
    "Inputs",
    "Outcome",
    "RequirementInfo",
    "RequirementResult",
    "applicable",
    "apply",
    "decide",
    "requirement_outcomes",
    "rerun_entry",
    "run_scopes",
    "scopes_for",
    "unchecked_musts",
    "verdict_line",
]
