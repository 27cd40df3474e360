"""Time, injectable: handlers never call the system clock directly, so tests
of expiry and timeouts can move time instead of sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time (timezone-aware UTC), for stored timestamps."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic scale, for deadlines and durations."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class OffsetClock:
    """The system clock shifted by a fixed amount (``--clock-offset-s``): lets
    a test start a host-core "later" to see expiry without waiting."""

    def __init__(self, offset_s: float) -> None:
        self._offset = timedelta(seconds=offset_s)
        self._offset_s = offset_s

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset

    def monotonic(self) -> float:
        return time.monotonic() + self._offset_s


def iso(moment: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a Z, as §4a's createdAt shows."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
