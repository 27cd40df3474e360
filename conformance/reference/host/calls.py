"""One host request to a child, and the table of the states it moves through.

::

    queued -admit-> write-pending -start-write-> writing -written-> written -response-> settled
      |                  |                          |                  |
      +-----cancel-------+-> skipped (never sent)   | cancel: flagged, +-cancel-> tombstoned -response-> forgotten
                                                    | acted on once written        (late: ignored + diagnosed)

§1.9: a frame cancelled before the writer starts it is skipped and nothing
is sent; once writing began, the complete frame goes out, followed by at most
one ``$/cancelRequest``. The waiter is dropped at once in both cases. Any
(state, input) pair missing from :data:`TRANSITIONS` is a bug in the host
(a local error), never something a child can cause.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from .runtime import EventLike

QUEUED = "queued"  # waiting for a concurrency slot (§0, §1.1 max_concurrent_requests)
WRITE_PENDING = "write-pending"  # in the writer's queue, not started
WRITING = "writing"
WRITTEN = "written"
SETTLED = "settled"
SKIPPED = "skipped"  # cancelled before its frame was started: never sent
TOMBSTONED = "tombstoned"  # cancelled after it was written: a response is late

TRANSITIONS: dict[tuple[str, str], str] = {
    (QUEUED, "admit"): WRITE_PENDING,
    (QUEUED, "cancel"): SKIPPED,
    (QUEUED, "lost"): SETTLED,
    (WRITE_PENDING, "start-write"): WRITING,
    (WRITE_PENDING, "cancel"): SKIPPED,
    (WRITE_PENDING, "lost"): SETTLED,
    (WRITING, "written"): WRITTEN,
    (WRITING, "response"): SETTLED,  # the child may answer before we note the write
    (WRITING, "lost"): SETTLED,
    (WRITTEN, "response"): SETTLED,
    (WRITTEN, "cancel"): TOMBSTONED,
    (WRITTEN, "lost"): SETTLED,
    (TOMBSTONED, "response"): TOMBSTONED,
    (TOMBSTONED, "lost"): TOMBSTONED,
}


class LocalError(RuntimeError):
    """The host misused its own state table (a bug here, not the child's fault)."""


def advance(state: str, event: str) -> str:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise LocalError(f"no transition from {state!r} on {event!r}") from None


@dataclass(frozen=True)
class CallOutcome:
    """How a call ended for its caller.

    ``status``: "ok" (a result), "error" (a JSON-RPC error object from the
    child), "invalid" (a result the host refused: ``message`` says why,
    ``result`` keeps it for inspection), "cancelled" (the caller cancelled; the waiter was dropped),
    "timeout" (no answer in time; cancelled like a user would), "lost" (the
    generation ended first), "refused" (never sent: the host was not ready
    or the method is not routed to this extension).
    """

    status: str
    result: Any = None
    error: dict[str, Any] | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(eq=False)
class Call:
    id: int
    method: str
    frame: bytes
    done: EventLike
    settled: EventLike  # set when the child has answered (even late) or died
    counts: bool  # holds a concurrency slot once admitted
    params: Any = None  # what was sent, to judge the result against (§1.2 output_schema)
    state: str = QUEUED
    cancel_requested: bool = False
    cancel_reason: str = "user"
    outcome: CallOutcome | None = None
    children: set[Any] = field(default_factory=set)
    admitted: bool = False

    def move(self, event: str) -> None:
        self.state = advance(self.state, event)

    @property
    def active(self) -> bool:
        """An active parent / progress target: on the wire and not cancelled."""
        return self.state in (WRITING, WRITTEN) and not self.cancel_requested and self.outcome is None

    def finish(self, outcome: CallOutcome) -> None:
        """Hand the outcome to the waiter (once)."""
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


class PendingCall:
    """The caller's handle: ``wait()`` for the outcome, ``cancel()`` it (§1.9)."""

    def __init__(self, call: Call, canceller: Any) -> None:
        self._call = call
        self._canceller = canceller

    @property
    def id(self) -> int:
        return self._call.id

    @property
    def method(self) -> str:
        return self._call.method

    @property
    def state(self) -> str:
        return self._call.state

    def poll(self, timeout: float | None = 0.0) -> CallOutcome | None:
        """The outcome if it arrives within ``timeout``, else None (nothing cancelled)."""
        self._call.done.wait(timeout)
        return self._call.outcome

    def wait(self, timeout: float | None = None) -> CallOutcome:
        """The outcome; after ``timeout`` the call is cancelled and "timeout" returned."""
        if not self._call.done.wait(timeout):
            self._canceller(self._call, "timeout")
        outcome = self._call.outcome
        assert outcome is not None
        return outcome

    def cancel(self, reason: str = "user") -> None:
        self._canceller(self._call, reason)


@dataclass
class CallBook:
    """One generation's calls, guarded by its connection's lock: the next id,
    the calls the child may still answer (by id), the tombstoned ids (oldest
    first, §1.9), the calls queued for admission and how many are admitted
    (§0, §1.1), and the last $/progress sequence of each call (§2.6)."""

    next_id: int = 1
    calls: dict[int, Call] = field(default_factory=dict)
    tombstones: collections.deque[int] = field(default_factory=collections.deque)
    admission: collections.deque[Call] = field(default_factory=collections.deque)
    active: int = 0
    progress: dict[int, int] = field(default_factory=dict)
