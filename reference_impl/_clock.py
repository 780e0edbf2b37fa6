"""The clock port: wall time for ledger timestamps, monotonic time for durations.

This module owns the host's notion of time so that tests can fix it. It must never sleep.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Tells the time."""

    def now(self) -> datetime:
        """Return the current wall time, timezone-aware."""
        ...

    def monotonic(self) -> float:
        """Return seconds on a clock that never goes back."""
        ...


class SystemClock:
    """The machine's clocks."""

    def now(self) -> datetime:
        """Return the current UTC time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return time.monotonic()


class FixedClock:
    """A clock that stands still until told to move, for tests."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._monotonic = 0.0

    def now(self) -> datetime:
        """Return the fixed wall time."""
        return self._now

    def monotonic(self) -> float:
        """Return the fixed monotonic time."""
        return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both clocks forward."""
        from datetime import timedelta

        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds
