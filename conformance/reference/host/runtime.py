"""Concurrency and time, injected, so one host runs on threads or on a virtual clock.

:class:`ThreadRuntime` is the real thing: OS threads, :mod:`threading`
events/conditions, :func:`time.monotonic`. The simulated runtime
(:mod:`.simulated`) gives the very same interface on greenlets and a virtual
clock, so backoff, grace and shutdown deadlines run in microseconds of wall
time in tests. The host never calls :mod:`time` or :mod:`threading` directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

# One interface for both references' concurrency (threads or greenlets on a
# virtual clock); hold a condition only for short, non-blocking work.
from conformance.reference.extension.runtime import ConditionLike, EventLike


class HostRuntime(Protocol):
    def event(self) -> EventLike: ...

    def condition(self) -> ConditionLike: ...

    def submit(self, job: Callable[[], None], name: str = "host-worker") -> None:
        """Run ``job`` concurrently with the caller, starting now."""

    def now(self) -> float:
        """Monotonic seconds."""

    def sleep(self, seconds: float) -> None: ...


class ThreadRuntime:
    """Threads and the monotonic clock (one thread per job: the host starts
    a handful per child, not one per request)."""

    def event(self) -> EventLike:
        return threading.Event()

    def condition(self) -> ConditionLike:
        return threading.Condition()

    def submit(self, job: Callable[[], None], name: str = "host-worker") -> None:
        threading.Thread(target=job, name=name, daemon=True).start()

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)
