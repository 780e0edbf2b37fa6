"""Planted bugs: each breaks the reference host one way, and a fuzz property under the
deterministic ``ci`` settings must find it within the short run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import settings

from fuzz import profiles
from fuzz.properties import prop
from fuzz.stateful import run_machine
from tests.fuzz import planted


def _refound(run: Callable[[], None]) -> str:
    """Run a property that must fail; return its message (which names no value)."""
    with pytest.raises((AssertionError, ExceptionGroup)) as caught:
        run()
    return str(caught.value)


@pytest.mark.req("SCRUB-005", "SCRUB-009")
def test_scrubbing_without_the_plus_form_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scrubber that drops the ``+`` form is caught by the scrub property."""
    planted.scrub_without_plus_form(monkeypatch)
    message = _refound(prop("scrub", profiles.ci(0.5, shrink=False)))
    assert "survived" in message or "oracle" in message


@pytest.mark.req("GRAM-014", "MSG-002")
def test_a_missed_key_check_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that never looks at keys is caught by the parse property."""
    planted.missed_key_check(monkeypatch)
    message = _refound(prop("parse", profiles.ci(0.5, shrink=False)))
    assert "accepted" in message or "locate" in message or "references" in message


@pytest.mark.req("GRAM-009")
def test_a_missed_unterminated_marker_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scanner that skips unterminated markers is caught by the parse property."""
    planted.missed_unterminated_marker(monkeypatch)
    _refound(prop("parse", profiles.ci(0.5, shrink=False)))


@pytest.mark.req("GRAM-009")
def test_a_missed_unterminated_marker_is_found_on_arbitrary_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same planted bug is found by the hand-written scan on arbitrary text."""
    planted.missed_unterminated_marker(monkeypatch)
    message = _refound(prop("text", profiles.ci(0.5, shrink=False)))
    assert "not reported" in message or "differ" in message


@pytest.mark.req("FENCE-001", "INV4")
def test_a_fence_that_ignores_revocation_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fence blind to revocations is caught by the state machine."""
    planted.fence_ignores_revocation(monkeypatch)
    message = _refound(
        lambda: run_machine(settings(profiles.ci(0.2, shrink=False), stateful_step_count=25))
    )
    assert "revoked" in message
