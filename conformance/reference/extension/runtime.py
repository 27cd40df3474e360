"""What the server's concurrency is made of, so it can run for real or simulated.

In a real process the server uses OS threads and :mod:`threading` events and
conditions (:class:`Threads`). The harness can also run the very same server
in-process under a deterministic scheduler with a virtual clock
(:mod:`conformance.transport.simulated`), which supplies its own events,
conditions and workers with the same small interface. Locks stay real
threading locks: no code here blocks while holding one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol


class EventLike(Protocol):
    def is_set(self) -> bool: ...

    def set(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class ConditionLike(Protocol):
    def __enter__(self) -> Any: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any, /) -> Any: ...

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any: ...

    def notify_all(self) -> None: ...


class Runtime(Protocol):
    def event(self) -> EventLike: ...

    def condition(self) -> ConditionLike: ...

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` concurrently with the caller, starting now."""


class WorkerPool:
    """Threads that outlive one request. Every request still runs on a thread
    of its own at once (a busy pool grows), but starting a fresh thread per
    request used to dominate the round-trip time."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that waiting worker will take this job
        if spawn:
            threading.Thread(target=self._loop, name="call-worker", daemon=True).start()
        self._jobs.put(job)

    def _loop(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


class Threads(WorkerPool):
    """The runtime of a real extension process."""

    def event(self) -> EventLike:
        return threading.Event()

    def condition(self) -> ConditionLike:
        return threading.Condition()
