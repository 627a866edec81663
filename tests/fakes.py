"""Test doubles: a clock the test moves by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)


class FrozenClock:
    """A clock that only moves when told to."""

    def __init__(self, now: datetime = START) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def set(self, now: datetime) -> None:
        self._now = now
