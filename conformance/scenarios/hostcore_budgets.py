"""Fixed host-core scenarios for the §2.1 budgets: Bash per session and in all,
reads, and mutations (with their FIFO order, §8)."""

from __future__ import annotations

import functools
from pathlib import Path

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreCommand
from conformance.protocol import rpc_limits
from conformance.protocol.rpc_admission import (
    counters_match,
    mutations_global,
    mutations_in_order,
    mutations_per_session,
    not_blocked_behind,
    read_not_held,
    reads_global,
    session_total,
)
from conformance.scenarios.hostcore_looks import (
    _abort_waiter,
    _counted,
    _judge_running,
    _oldest_first,
    _queued,
    _session_running,
    _taken,
    _taken_blocker,
)
from conformance.scenarios.hostcore_rig import Rig, rig


def budget_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 with Bash blockers in three sessions (budgets 2 per session, 4 in all):
    session A sends a1..a4 (two run, two wait on A's budget), then a Read in A
    (queued calls hold nothing), then B sends b1..b3 (b1, b2 run past A's
    waiters), then C sends c1 (waits: 4 run). Then a1 ends (a3 must be next),
    c1 is aborted while it waits, and everything is released."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-budgets",
        (
            "RPC-2.1-bash-session-budget",
            "RPC-2.1-bash-global-budget",
            "RPC-2.1-no-head-of-line-blocking",
            "RPC-2.1-queued-holds-nothing",
            "RPC-2.1-health-counters",
            "RPC-2.1-oldest-runnable-first",
            "RPC-2.1-waiter-release",
        ),
    ) as r:
        if r is None:
            return
        a, b, c = r.session(), r.session(), r.session()
        if a is None or b is None or c is None:
            return
        # Each call is sent once the one before is admitted or queued: two
        # requests in flight at once may enter admission in either order.
        for name in ("a1", "a2", "a3", "a4"):
            _taken_blocker(r, a, name)
        read = r.execute(a, "read-a", "Read", {"path": "notes.txt"})
        for name in ("b1", "b2", "b3"):
            _taken_blocker(r, b, name)
        _taken_blocker(r, c, "c1")
        expected = {"a1", "a2", "b1", "b2"}
        settled = r.wait_for(lambda: expected <= r.started() and read.answer is not None)
        _judge_running(r)
        held_back: list[str] = []
        if settled:
            r.peer.add(not_blocked_behind([]))  # b1 and b2 ran past A's waiting calls
        else:
            free = rpc_limits.MAX_BASH_GLOBAL - len(r.started())
            held_back = [n for n in ("b1", "b2") if n not in r.started()] if free > 0 else []
            r.peer.add(not_blocked_behind(held_back))
        if not held_back:
            # Behind a head-of-line blocking queue the Read waits for another reason.
            r.peer.add(read_not_held(read.answer, 2))
        r.wait_for(functools.partial(_counted, r))
        running = len(r.started())
        r.peer.add(counters_match(r.health(), running=running, waiting=len(r.pending()) - running))
        _oldest_first(r, a, "a1")
        _abort_waiter(r, "c1")
        r.finish()
        r.wait_for(lambda: (r.health() or {"active": 0}).get("active") == 0)
        r.peer.add(counters_match(r.health(), running=0, waiting=0))


def reads_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 with Reads of named pipes (a Read runs from opening its pipe until
    the harness closes the write end): session S runs 2 Bash blockers and 3
    Reads (4 per session: one Read waits); then 9 Reads in three more
    sessions (8 reads in all: S's 2 and 6 more run)."""
    with rig(
        command, recorder, response_s, work, "admission-reads", ("RPC-2.1-read-budget", "RPC-2.1-session-budget")
    ) as r:
        if r is None:
            return
        s = r.session()
        if s is None:
            return
        for name in ("s1", "s2"):
            _taken_blocker(r, s, name)
        for name in ("r1", "r2", "r3"):
            r.reader(s, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: len(_session_running(r, s)) >= 4 and _queued(r) >= 1 or len(_session_running(r, s)) > 4)
        r.peer.add(session_total(len(_session_running(r, s))))
        others = [r.session() for _ in range(3)]
        if None in others:
            return
        for i, sid in enumerate(others):
            for j in range(4 if i < 2 else 1):
                r.reader(str(sid), f"t{i}{j}")
                if not r.wait_for(functools.partial(_taken, r, f"t{i}{j}")):
                    r.counters_ok = False
        r.wait_for(lambda: len(r.reading()) >= rpc_limits.MAX_READ_TOOLS and _queued(r) >= 3 or len(r.reading()) > 8)
        r.peer.add(reads_global(len(r.reading())))
        r.peer.add(session_total(len(_session_running(r, s))))


def mutations_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 and §8.1 with Writes to named pipes (they block until released):
    two in session M (one may run), then one in each of two more sessions (two
    may run in all), judged on toolBudget.mutations. Then, in a fresh
    session, a blocked Write followed by Writes of "2" and "3" to one file:
    released, they must land in arrival order."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-mutations",
        ("RPC-2.1-mutation-session-budget", "RPC-2.1-mutation-global-budget", "RPC-8-mutations-fifo"),
    ) as r:
        if r is None:
            return
        m = r.session()
        if m is None:
            return
        for name in ("w1", "w2"):
            r.writer(m, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: _mutations(r) >= 1 and _queued(r) >= 1 or _mutations(r) > 1)
        r.peer.add(mutations_per_session(_mutations(r)))
        for name in ("w3", "w4"):
            sid = r.session()
            if sid is None:
                return
            r.writer(sid, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: _mutations(r) >= 2 and _queued(r) >= 2 or _mutations(r) > 2)
        r.peer.add(mutations_global(_mutations(r)))
        r.release()
        if not r.wait_for(lambda: not r.pending(), timeout=2 * r.peer.response_s):
            return
        n = r.session()
        if n is None:
            return
        r.writer(n, "x1")
        if not r.wait_for(lambda: _mutations(r) >= 1) or not r.counters_ok:
            # Order is judged only when the counters showed "2" queued before
            # "3" was sent: a dispatcher that admits on worker threads may let
            # two back-to-back requests reach its queue either way round.
            return
        for name, text in (("x2", "2"), ("x3", "3")):
            r.execute(n, name, "Write", {"path": "order.txt", "content": text})
            if not r.wait_for(functools.partial(_taken, r, name)):
                return
        r.release("x1")
        if r.wait_for(lambda: not r.pending()):
            target = r.project / "order.txt"
            r.peer.add(mutations_in_order(target.read_text(encoding="utf-8") if target.exists() else None))


def _mutations(r: Rig) -> int:
    budget = r.health()
    count = budget.get("mutations") if budget else None
    return count if isinstance(count, int) else 0
