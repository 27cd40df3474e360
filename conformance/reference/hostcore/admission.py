"""§2.1 runtime admission for tools.execute: class budgets and a FIFO queue.

What it is responsible for:

* reserving total, class, session and session-mutation capacity atomically,
  only when all of them fit;
* queueing what does not fit (at most ``queue_limit`` waiters; beyond that
  the call is refused as overloaded) -- a queued call holds no capacity;
* whenever capacity returns, admitting the *oldest runnable* waiters: a
  waiter blocked by its class or session never blocks unrelated work behind
  it, and a session's mutations stay in arrival order (they share one
  per-session slot);
* a waiter that times out or is cancelled leaves the queue, and a
  reservation made for it before it picked up its permit is released;
* health counters: admitted reservations (including those not yet picked
  up by their caller) and the number still waiting.

Permission prompts happen before admission, so they hold no slot.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from . import limits

ToolClass = Literal["shell", "reads", "mutations", "plugins", "other"]


@dataclass(frozen=True)
class Budget:
    total: int = limits.TOOL_TOTAL
    per_session: int = limits.TOOLS_PER_SESSION
    queue_limit: int = limits.TOOL_QUEUE_LIMIT
    # class -> (global limit, per-session limit or None)
    classes: dict[str, tuple[int, int | None]] = field(
        default_factory=lambda: {
            "shell": (limits.SHELL_GLOBAL, limits.SHELL_PER_SESSION),
            "reads": (limits.READS_GLOBAL, None),
            "mutations": (limits.MUTATIONS_GLOBAL, limits.MUTATIONS_PER_SESSION),
            "plugins": (limits.PLUGINS_GLOBAL, None),
        }
    )


class Overloaded(Exception):
    """The queue is full, or the wait ran out: retryable (§2.1)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Cancelled(Exception):
    """The caller gave up (tools.abort) while waiting."""


@dataclass(eq=False)  # identity: two waiters of one session and class are distinct
class _Ticket:
    session: str
    tool_class: ToolClass
    admitted: bool = False


class Permit:
    """An admitted reservation; release it exactly once."""

    def __init__(self, admission: Admission, ticket: _Ticket) -> None:
        self._admission = admission
        self._ticket: _Ticket | None = ticket

    def release(self) -> None:
        if self._ticket is not None:
            self._admission._release(self._ticket)
            self._ticket = None


class Admission:
    def __init__(self, budget: Budget | None = None, *, wait_s: float = limits.ADMISSION_WAIT_S) -> None:
        self.budget = budget if budget is not None else Budget()
        self.wait_s = wait_s
        self._changed = threading.Condition()
        self._queue: list[_Ticket] = []  # arrival order
        self._held: list[_Ticket] = []  # admitted, permit picked up or not

    def acquire(self, session: str, tool_class: ToolClass, cancelled: Callable[[], bool]) -> Permit:
        """Block until admitted. Raises Overloaded or Cancelled."""
        ticket = _Ticket(session, tool_class)
        with self._changed:
            self._queue.append(ticket)
            self._pump()
            if not ticket.admitted and self._waiting() > self.budget.queue_limit:
                self._queue.remove(ticket)
                raise Overloaded(f"the tool queue is full ({self.budget.queue_limit} waiting)")
            if not self._changed.wait_for(lambda: ticket.admitted or cancelled(), self.wait_s) or not ticket.admitted:
                self._abandon(ticket)
                if cancelled():
                    raise Cancelled()
                raise Overloaded(f"no capacity within {self.wait_s:g} s")
            return Permit(self, ticket)

    def wake(self) -> None:
        """Re-check waiters' cancellation (called by tools.abort)."""
        with self._changed:
            self._changed.notify_all()

    def health(self) -> dict[str, int]:
        with self._changed:
            by_class = Counter(t.tool_class for t in self._held)
            return {
                "active": len(self._held),
                "queued": self._waiting(),
                "total": len(self._held),
                "shell": by_class["shell"],
                "reads": by_class["reads"],
                "mutations": by_class["mutations"],
                "plugins": by_class["plugins"],
            }

    # -- under the lock ------------------------------------------------------------

    def _waiting(self) -> int:
        return sum(1 for t in self._queue if not t.admitted)

    def _pump(self) -> None:
        """Admit, oldest first, every waiter that fits now."""
        admitted = False
        for ticket in self._queue:
            if not ticket.admitted and self._fits(ticket):
                ticket.admitted = True
                self._held.append(ticket)
                admitted = True
        if admitted:
            self._queue = [t for t in self._queue if not t.admitted]
            self._changed.notify_all()

    def _fits(self, ticket: _Ticket) -> bool:
        held = self._held
        if len(held) >= self.budget.total:
            return False
        if sum(1 for t in held if t.session == ticket.session) >= self.budget.per_session:
            return False
        limit = self.budget.classes.get(ticket.tool_class)
        if limit is None:
            return True
        global_limit, session_limit = limit
        same_class = [t for t in held if t.tool_class == ticket.tool_class]
        if len(same_class) >= global_limit:
            return False
        return session_limit is None or sum(1 for t in same_class if t.session == ticket.session) < session_limit

    def _abandon(self, ticket: _Ticket) -> None:
        if ticket in self._queue:
            self._queue.remove(ticket)
        if ticket.admitted:
            # Admitted just as the caller gave up: release, don't leak it.
            self._release_locked(ticket)

    def _release(self, ticket: _Ticket) -> None:
        with self._changed:
            self._release_locked(ticket)

    def _release_locked(self, ticket: _Ticket) -> None:
        if ticket in self._held:
            self._held.remove(ticket)
            self._pump()
            self._changed.notify_all()
