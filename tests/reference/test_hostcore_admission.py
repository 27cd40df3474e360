"""The reference host-core's §2.1 admission, in process (no pipes needed).

Threads stand in for concurrent tools.execute calls; every wait is bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from conformance.reference.hostcore.admission import Admission, Budget, Cancelled, Overloaded, Permit, ToolClass

WAIT_S = 5.0


def never() -> bool:
    return False


class Waiter:
    """acquire() on its own thread; the outcome is read after join."""

    def __init__(self, admission: Admission, session: str, tool_class: ToolClass, cancel: Callable[[], bool] = never):
        self.permit: Permit | None = None
        self.error: BaseException | None = None
        self.admitted = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(admission, session, tool_class, cancel), daemon=True)
        self._thread.start()

    def _run(self, admission: Admission, session: str, tool_class: ToolClass, cancel: Callable[[], bool]) -> None:
        try:
            self.permit = admission.acquire(session, tool_class, cancel)
            self.admitted.set()
        except BaseException as exc:  # reported to the test
            self.error = exc

    def join(self) -> None:
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "acquire did not return"


def wait_queued(admission: Admission, count: int) -> None:
    for _ in range(500):
        if admission.health()["queued"] == count:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"expected {count} queued, health is {admission.health()}")


@pytest.mark.parametrize(
    ("tool_class", "per_session", "global_"),
    [("shell", 2, 4), ("mutations", 1, 2), ("reads", 4, 8), ("plugins", 4, 4)],
)
def test_class_budgets_at_n_and_n_plus_one(tool_class: ToolClass, per_session: int, global_: int) -> None:
    admission = Admission(wait_s=0.05)
    one_session = [admission.acquire("s1", tool_class, never) for _ in range(per_session)]
    with pytest.raises(Overloaded):  # N+1 in one session waits, then times out
        admission.acquire("s1", tool_class, never)
    permits = one_session + [admission.acquire(f"s{i}", tool_class, never) for i in range(2, 2 + global_ - per_session)]
    assert admission.health()[tool_class] == global_
    with pytest.raises(Overloaded):
        admission.acquire("other", tool_class, never)
    for permit in permits:
        permit.release()
    assert admission.health() == {k: 0 for k in admission.health()}


def test_total_and_per_session_budgets() -> None:
    admission = Admission(wait_s=0.05)
    held = [admission.acquire("s", "other", never) for _ in range(4)]
    with pytest.raises(Overloaded):
        admission.acquire("s", "other", never)  # 4 per session
    held += [admission.acquire(f"t{i}", "other", never) for i in range(12)]
    assert admission.health()["total"] == 16
    with pytest.raises(Overloaded):
        admission.acquire("u", "other", never)  # 16 in total
    for permit in held:
        permit.release()


def test_blocked_class_does_not_block_unrelated_work() -> None:
    admission = Admission(wait_s=WAIT_S)
    held = [admission.acquire("s1", "shell", never), admission.acquire("s1", "shell", never)]
    blocked = Waiter(admission, "s1", "shell")
    wait_queued(admission, 1)
    # younger, different class / session: admitted at once, past the blocked one
    admission.acquire("s1", "reads", never).release()
    admission.acquire("s2", "shell", never).release()
    assert not blocked.admitted.is_set()
    held[0].release()
    blocked.join()
    assert blocked.permit is not None
    blocked.permit.release()
    held[1].release()


def test_oldest_runnable_is_admitted_first() -> None:
    admission = Admission(wait_s=WAIT_S)
    gate = admission.acquire("s1", "mutations", never)
    order: list[str] = []
    waiters = []
    for name in ("first", "second"):
        waiter = Waiter(admission, "s1", "mutations")
        wait_queued(admission, len(waiters) + 1)
        waiters.append((name, waiter))
    gate.release()
    for name, waiter in waiters:
        waiter.admitted.wait(WAIT_S)
        order.append(name)
        assert waiter.permit is not None
        # the second is still waiting: one mutation per session, FIFO (§8.1)
        assert admission.health()["mutations"] == 1
        waiter.permit.release()
        waiter.join()
    assert order == ["first", "second"]


def test_queue_bound_refuses_as_overloaded() -> None:
    admission = Admission(Budget(queue_limit=2), wait_s=WAIT_S)
    held = admission.acquire("s", "mutations", never)
    cancel = threading.Event()
    queued = [Waiter(admission, "s", "mutations", cancel.is_set) for _ in range(2)]
    wait_queued(admission, 2)
    with pytest.raises(Overloaded, match="full"):
        admission.acquire("s", "mutations", never)
    assert admission.health()["queued"] == 2
    cancel.set()
    admission.wake()
    for waiter in queued:
        waiter.join()
        assert isinstance(waiter.error, Cancelled)
    assert admission.health()["queued"] == 0  # cancelled waiters left the queue
    held.release()


def test_timed_out_waiter_leaves_the_queue_and_holds_nothing() -> None:
    admission = Admission(wait_s=0.1)
    held = admission.acquire("s", "mutations", never)
    with pytest.raises(Overloaded, match="no capacity"):
        admission.acquire("s", "mutations", never)
    assert admission.health() == {
        "active": 1,
        "queued": 0,
        "total": 1,
        "shell": 0,
        "reads": 0,
        "mutations": 1,
        "plugins": 0,
    }
    held.release()
    admission.acquire("s", "mutations", never).release()  # nothing leaked


def test_release_is_idempotent() -> None:
    admission = Admission()
    permit = admission.acquire("s", "reads", never)
    permit.release()
    permit.release()
    assert admission.health()["reads"] == 0
