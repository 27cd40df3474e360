"""Extension-originated ("child") requests and their pending answers (§2)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.protocol.limits import MAX_CHILD_IDS_PER_GENERATION, MAX_OUTSTANDING_CHILDREN

from .jsonrpc import JsonObject, Response, request_message
from .runtime import EventLike
from .writer import FrameWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChildOutcome:
    """The host's answer: a result, or a JSON-RPC error object."""

    result: Any = None
    error: JsonObject | None = None


def confirmed(outcome: ChildOutcome) -> bool:
    """§2.2: a dropped request or an error denies; only an explicit
    {"confirmed": true} confirms."""
    answer = outcome.result if outcome.error is None else None
    return isinstance(answer, dict) and answer.get("confirmed") is True


class ChildBudgetExhausted(Exception):
    """§2: at most 128 outstanding child requests and 65,536 ids per process."""


class PendingChild:
    """One child request awaiting its answer. ``wake`` without an outcome
    means the parent request was cancelled."""

    def __init__(self, child_id: str, done: EventLike | None = None) -> None:
        self.id = child_id
        self.outcome: ChildOutcome | None = None
        self._done: EventLike = done if done is not None else threading.Event()
        # Run by the reader thread as the answer arrives, before any later
        # frame is read (§2.12: a new catalog epoch is in force for every call
        # the host writes after its acknowledgement).
        self.on_answer: Callable[[ChildOutcome], None] | None = None

    def resolve(self, outcome: ChildOutcome) -> None:
        self.outcome = outcome
        if self.on_answer is not None:
            self.on_answer(outcome)
        self._done.set()

    def wake(self) -> None:
        self._done.set()

    def wait(self) -> None:
        self._done.wait()


class ChildRequests:
    """Allocates child ids and routes the host's responses back to waiters."""

    def __init__(
        self,
        writer: FrameWriter,
        *,
        max_outstanding: int = MAX_OUTSTANDING_CHILDREN,
        max_ids: int = MAX_CHILD_IDS_PER_GENERATION,
        events: Callable[[], EventLike] = threading.Event,
    ) -> None:
        self._writer = writer
        self._events = events
        self._max_outstanding = max_outstanding
        self._max_ids = max_ids
        self._lock = threading.Lock()
        self._issued = 0  # never decreases: §2 forbids id reuse in a generation
        self._pending: dict[str, PendingChild] = {}

    def open(self, prefix: str) -> PendingChild:
        """Allocate a fresh id and register the waiter (nothing sent yet)."""
        with self._lock:
            if len(self._pending) >= self._max_outstanding:
                raise ChildBudgetExhausted(f"{self._max_outstanding} child requests are already outstanding")
            if self._issued >= self._max_ids:
                raise ChildBudgetExhausted(f"all {self._max_ids} child request ids of this process are used")
            self._issued += 1
            child = PendingChild(f"{prefix}-{self._issued}", self._events())
            self._pending[child.id] = child
            return child

    def send(self, child: PendingChild, method: str, params: JsonObject) -> None:
        self._writer.send(request_message(child.id, method, params))

    def forget(self, child_id: str) -> None:
        """Stop waiting; a later answer for this id is diagnosed and dropped."""
        with self._lock:
            self._pending.pop(child_id, None)

    def resolve(self, response: Response) -> None:
        with self._lock:
            child = self._pending.pop(response.id, None) if isinstance(response.id, str) else None
        if child is None:
            # A late answer to a cancelled child, or a stray id: never answered.
            log.warning("ignoring response for unknown or settled child request id %r", response.id)
            return
        child.resolve(ChildOutcome(response.result, response.error))
