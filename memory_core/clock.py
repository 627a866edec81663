"""The real clock."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["SystemClock"]


class SystemClock:
    """Wall-clock UTC time."""

    def now(self) -> datetime:
        """Return the current instant in UTC."""
        return datetime.now(UTC)
