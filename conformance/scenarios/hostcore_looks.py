"""Looks at a running rig that several admission scenarios share: what runs,
what waits, and the judging of both against the budgets."""

from __future__ import annotations

import functools
from typing import Any

from conformance.protocol import rpc_limits
from conformance.protocol.rpc_admission import Call, bash_global, bash_per_session, oldest_first, waiter_released
from conformance.scenarios.hostcore_rig import Rig


def _answered(call: Call) -> bool:
    return call.answer is not None


def _messages(r: Rig, sid: str) -> list[dict[str, Any]] | None:
    response = r.peer.call("session.get", {"sessionId": sid})
    result = response.get("result") if response else None
    messages = result.get("messages") if isinstance(result, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def _session_running(r: Rig, sid: str) -> set[str]:
    return {n for n in r.running() if r.calls[n].session == sid} | r.reading(sid)


def _queued(r: Rig) -> int:
    """toolBudget.queued (a large number when it cannot be read: then the wait ends on the other condition)."""
    budget = r.health() if r.counters_ok else None
    queued = budget.get("queued") if budget else None
    return queued if isinstance(queued, int) else 1 << 30


def _taken_blocker(r: Rig, sid: str, name: str) -> None:
    r.blocker(sid, name)
    if not r.wait_for(functools.partial(_taken, r, name)):
        r.counters_ok = False


def _judge_running(r: Rig) -> None:
    started = r.running()
    per_session: dict[str, int] = {}
    for name in started:
        call = r.calls.get(name)
        if call is not None:
            per_session[call.session] = per_session.get(call.session, 0) + 1
    budget = r.health()
    r.peer.add(bash_per_session(per_session))
    r.peer.add(bash_global(len(started), budget.get("shell") if budget else None))


def _counted(r: Rig) -> bool:
    """Whether the counters agree with the markers (a correct host gets there)."""
    budget = r.health() if r.counters_ok else None
    if budget is None:
        return True
    running = len(r.started())
    active = budget.get("active")
    counted = budget.get("shell") == running and budget.get("queued") == len(r.pending()) - running
    return counted and (not isinstance(active, int) or active <= running)


def _oldest_first(r: Rig, session: str, ending: str) -> None:
    before = r.started()
    queued = sorted((c for c in r.calls.values() if c.name not in before and c.answer is None), key=lambda c: c.order)
    runnable = [c for c in queued if _runnable(r, c, before - {ending})]
    r.release(ending)
    if not r.wait_for(lambda: r.calls[ending].answer is not None and bool(r.started() - before)):
        return
    _judge_running(r)
    newcomers = sorted((r.calls[n] for n in r.started() - before if n in r.calls), key=lambda c: c.order)
    if newcomers:
        r.peer.add(oldest_first(newcomers[0], runnable))


def _runnable(r: Rig, call: Call, running: set[str]) -> bool:
    """By the spec's numbers, with ``running`` the calls still running."""
    mine = sum(1 for n in running if r.calls[n].session == call.session)
    return len(running) < rpc_limits.MAX_BASH_GLOBAL and mine < rpc_limits.MAX_BASH_PER_SESSION


def _abort_waiter(r: Rig, name: str) -> None:
    call = r.calls[name]
    if name in r.started() or call.answer is not None:
        return  # not waiting: nothing to judge
    still = sum(1 for c in r.pending() if c.name not in r.started() and c.name != name)
    r.peer.call("tools.abort", {"sessionId": call.session, "toolCallId": name, "toolName": "Bash"})
    r.wait_for(lambda: call.answer is not None)
    queued = None
    if call.answer is not None:
        r.wait_for(lambda: (r.health() or {"queued": still}).get("queued") == still)
        queued = (r.health() or {}).get("queued")
    r.peer.add(waiter_released(call.answer, queued, still))


def _taken(r: Rig, name: str) -> bool:
    """The call started, or the counters show it admitted or waiting."""
    if not r.counters_ok or name in r.started() or name in r.held or r.calls[name].answer is not None:
        return True
    budget = r.health()
    if budget is None:
        return True
    held = budget.get("active", 0) if isinstance(budget.get("active"), int) else 0
    waiting = budget.get("queued", 0) if isinstance(budget.get("queued"), int) else 0
    return held + waiting >= len(r.pending())
