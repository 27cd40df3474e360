"""The one serialized writer of a child's stdin (§0 "Transport defaults").

Writing is a *role*, held by one thread at a time (``busy``): frames go out
whole and one after another, never interleaved, never abandoned half way.
The role normally belongs to the writer worker (:meth:`SerialWriter.run`).
As a fast path, the thread that just queued a frame may take the role while
it is free and write without blocking (:meth:`SerialWriter.pump`); if the
pipe takes only part of the frame, the rest is put back at the head of the
queue as a continuation and the worker finishes it -- the frame has begun,
so it is completed, and a caller never blocks on a child that stopped
reading. A frame whose call was cancelled before its first byte is skipped.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from . import calls as cs
from .calls import Call
from .channel import Channel
from .runtime import ConditionLike

# (bytes, the call the frame starts -- None for notifications and answers,
#  continuation?, the instant after which an unstarted frame is dropped or None)
Item = tuple[bytes, Call | None, bool, float | None]


class SerialWriter:
    def __init__(
        self,
        channel: Channel,
        lock: ConditionLike,
        *,
        on_written: Callable[[Call], None],
        on_failed: Callable[[Exception], None],
        now: Callable[[], float],
    ) -> None:
        self._channel = channel
        self._lock = lock
        self._on_written = on_written  # called under the lock
        self._on_failed = on_failed  # called without the lock
        self._now = now
        self.expired = 0  # best-effort frames dropped unstarted past their deadline
        self.queue: collections.deque[Item] = collections.deque()
        self.closed = False
        self._busy = False

    # -- under the lock ---------------------------------------------------------
    def enqueue(self, data: bytes, call: Call | None, *, expires_at: float | None = None) -> None:
        self.queue.append((data, call, False, expires_at))
        self._lock.notify_all()

    def close(self) -> None:
        self.closed = True
        self._lock.notify_all()

    def _take(self) -> tuple[bytes, Call | None] | None:
        """Pop the next frame to write and take the role; None if it was skipped."""
        data, call, continuation, expires_at = self.queue.popleft()
        if expires_at is not None and self._now() > expires_at:
            self.expired += 1  # §1.10: best-effort delivery gave up
            return None
        if call is not None and not continuation:
            if call.state != cs.WRITE_PENDING:
                return None  # cancelled before it started (§1.9), or lost
            call.move("start-write")
        self._busy = True
        return data, call

    def _done(self, call: Call | None) -> None:
        self._busy = False
        if call is not None:
            self._on_written(call)
        self._lock.notify_all()

    # -- the worker -------------------------------------------------------------------
    def run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: (bool(self.queue) and not self._busy) or self.closed)
                if self.closed:
                    return
                item = self._take()
            if item is None:
                continue
            data, call = item
            try:
                self._channel.write(data)
            except (OSError, ValueError) as exc:
                self._fail(exc)
                return
            with self._lock:
                self._done(call)

    # -- the fast path ------------------------------------------------------------------
    def pump(self) -> None:
        """Write what is queued from this thread while the role is free, never blocking."""
        while True:
            with self._lock:
                if self._busy or self.closed or not self.queue:
                    return
                item = self._take()
            if item is None:
                continue
            data, call = item
            try:
                written = self._channel.try_write(data)
            except (OSError, ValueError) as exc:
                self._fail(exc)
                return
            with self._lock:
                if written < len(data):
                    self.queue.appendleft((data[written:], call, True, None))  # the worker completes it
                    self._busy = False
                    self._lock.notify_all()
                    return
                self._done(call)

    def _fail(self, exc: Exception) -> None:
        with self._lock:
            self.closed = True
            self._busy = False
            self._lock.notify_all()
        self._on_failed(exc)
