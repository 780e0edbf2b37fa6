"""The registry state machine: random interleavings of calls, rule changes, permission changes
and operator answers, with the ledger, handler and non-disclosure invariants after each step."""

from __future__ import annotations

import pytest
from hypothesis import settings

from fuzz import profiles
from fuzz.stateful import run_machine


@pytest.mark.req(
    "LEDG-005", "INV1", "INV2", "INV4", "APPR-001", "APPR-006", "APPR-008", "APPR-010",
    "FENCE-001", "FENCE-002", "FENCE-003", "LOG-001", "APPR-005", "SUBST-004",
)  # fmt: skip
def test_registry_state_machine_keeps_its_invariants() -> None:
    """After every step: one ledger record per call, no handler for a refused or revoked call,
    and no value on any surface."""
    run_machine(settings(profiles.scaled(0.1), stateful_step_count=25))
