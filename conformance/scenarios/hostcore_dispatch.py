"""Fixed host-core scenarios for the §2.1 dispatcher: prompts hold no slot,
the dispatcher cap, overload refusals, abort idempotence and tools.output
order."""

from __future__ import annotations

import functools
import shlex
import tempfile
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreCommand
from conformance.protocol import rpc_errors, rpc_limits
from conformance.protocol.rpc_admission import (
    OVERLOAD_LIMIT,
    Call,
    abort_settled,
    answered_meanwhile,
    dispatcher_bounded,
    output_in_order,
    overload_error_code,
    overload_named,
    prompts_hold_nothing,
    queue_bounded,
)
from conformance.scenarios.hostcore_looks import _taken_blocker
from conformance.scenarios.hostcore_rig import Rig, rig
from conformance.scenarios.hostcore_sessions import _prompted


def prompt_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1: six Bash calls wait on permission prompts in three "ask" sessions;
    the counters show nothing admitted, and four Bash calls of two other
    sessions all start."""
    with rig(command, recorder, response_s, work, "admission-prompts", ("RPC-2.1-permission-no-slot",)) as r:
        if r is None:
            return
        asking = [r.session() for _ in range(3)]
        if None in asking:
            return
        for i, sid in enumerate(asking):
            for j in range(2):
                r.leave_open.add(f"p{i}{j}")
                r.execute(str(sid), f"p{i}{j}", "Bash", {"command": "true"}, **r.pin)

        def prompted() -> int:
            return sum(1 for n in r.peer.notifications if n.get("method") == "permissions.request")

        if not r.wait_for(lambda: prompted() >= 6):
            r.health()  # still answering? (Unresponsive ends the scenario)
            # This host-core asks no permission for Bash in the default mode: nothing to judge.
            recorder.untestable("no Bash call raised a permissions.request", "RPC-2.1-permission-no-slot")
            return
        budget = r.health()
        free = [r.session(), r.session()]
        if None in free:
            return
        names = [f"f{i}{j}" for i in range(2) for j in range(2)]
        for name in names:
            r.blocker(str(free[int(name[1])]), name)
        r.wait_for(lambda: set(names) <= r.started())
        r.peer.add(prompts_hold_nothing(budget, len(set(names) & r.started()), len(names)))
        _deny_open(r)


def _deny_open(r: Rig) -> None:
    """Deny the prompts the scenario left open."""
    for note in r.peer.notifications:
        params = note.get("params") if note.get("method") == "permissions.request" else None
        if isinstance(params, dict) and params.get("toolCallId") in r.leave_open:
            r.peer.send("permissions.resolve", {"requestId": params.get("requestId"), "decision": "deny"})


def dispatcher_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1: 33 Reads of a path outside their sessions' roots, each left
    waiting on its permission prompt (§5: ask mode prompts for them). Such a
    call holds no execution slot and is not queued for admission either (a
    queued call waits at most 30 s; a prompt has no deadline, §6), so the
    dispatcher's 32 is all that bounds them: one of the 33 must be refused.
    The sessions are created first, so a dispatcher that counts every request
    (app.health, permissions.resolve, ...) refuses only Reads. The prompts are
    never answered: stdin EOF ends them (§6, host shutdown)."""
    judges = ("RPC-2.1-dispatcher-cap",)
    with rig(command, recorder, response_s, work, "admission-dispatcher", judges) as r:
        if r is None:
            return
        outside = Path(tempfile.mkdtemp(prefix="outside-", dir=work)) / "secret.txt"
        outside.write_text("outside\n", encoding="utf-8")
        sessions = [r.session() for _ in range(rpc_limits.MAX_ACTIVE_REQUESTS + 1)]
        if None in sessions:
            return
        for n, sid in enumerate(sessions):
            name = f"d{n}"
            r.leave_open.add(name)
            call = r.execute(str(sid), name, "Read", {"path": str(outside)})
            if not r.wait_for(functools.partial(_prompted_or_answered, r, call)):
                reason = "a Read of a path outside its session's root raised no permission prompt and got no answer"
                recorder.untestable(reason, *judges)
                break
            if call.answer is not None:
                _dispatcher_refusal(r, call.answer, n)
                break
        else:
            r.peer.add(dispatcher_bounded(len(sessions), limit=rpc_limits.MAX_ACTIVE_REQUESTS))
        r.peer.stdin_eof(response_s)


def _prompted_or_answered(r: Rig, call: Call) -> bool:
    return call.answer is not None or _prompted(r, call.name)


def _dispatcher_refusal(r: Rig, answer: dict[str, Any], taken: int) -> None:
    if not rpc_errors.is_overload(answer):
        reason = "a Read of a path outside its session's root was answered without a permission prompt"
        r.peer.recorder.untestable(reason, "RPC-2.1-dispatcher-cap")
        return
    r.peer.add(overload_named(answer))
    r.peer.add(overload_error_code(answer))
    r.peer.add(dispatcher_bounded(taken, limit=rpc_limits.MAX_ACTIVE_REQUESTS))


def overload_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 / §7: Bash blockers, two per session, until one is refused. The
    refusal must say HOST_OVERLOADED. Whether queued calls count against the
    dispatcher's 32 is not said, so a refusal is demanded only past
    32 + 16 + 64 outstanding calls (every reading's bound exceeded)."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-overload",
        ("RPC-2.1-queue-bound", "RPC-2.1-overloaded-retryable", "RPC-7-overloaded-code"),
    ) as r:
        if r is None:
            return
        # Every session first: a dispatcher that counts every request refuses
        # session.create too once the calls fill it.
        sessions = [r.session() for _ in range(OVERLOAD_LIMIT // 2 + 1)]
        if None in sessions:
            return
        for n in range(OVERLOAD_LIMIT + 1):
            _taken_blocker(r, str(sessions[n // 2]), f"o{n}")
            refused = next((c for c in r.calls.values() if c.answer is not None), None)
            if refused is not None and refused.answer is not None:
                r.peer.add(overload_named(refused.answer))
                r.peer.add(overload_error_code(refused.answer))
                r.peer.add(dispatcher_bounded(n))
                r.peer.add(queue_bounded(n))
                return
        r.peer.add(dispatcher_bounded(OVERLOAD_LIMIT + 1))
        r.peer.add(queue_bounded(OVERLOAD_LIMIT + 1))


def abort_output_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.4: stdout and stderr chunks of one command in order; §8.5: abort twice,
    and the command's child process ends too."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "abort-and-output",
        ("RPC-8-tools-output-order", "RPC-8-abort-idempotent", "RPC-8-concurrent-requests"),
    ) as r:
        if r is None:
            return
        sid = r.session()
        if sid is None:
            return
        script = "printf 'o1\\n'; printf 'e1\\n' >&2; printf 'o2\\n'; printf 'e2\\n' >&2"
        out = r.execute(sid, "output", "Bash", {"command": script}, **r.pin)
        r.wait_for(lambda: out.answer is not None)
        if out.answer is not None and (out.answer.get("result") or {}).get("ok") is True:
            notes = [n for n in r.peer.notifications if n.get("method") == "tools.output"]
            r.peer.add(output_in_order(notes, sid, "output"))
        # §7: a changed shell pin is a tool outcome (judged in Rig.collect).
        dialect = next(d for d in rpc_limits.SHELL_DIALECTS if d != r.pin.get("expectedCommandShellDialect"))
        changed = r.execute(
            sid, "pin", "Bash", {"command": "true"}, **(r.pin | {"expectedCommandShellDialect": dialect})
        )
        r.wait_for(lambda: changed.answer is not None)
        pid_file = r.project / ".octet-child"
        marker = shlex.quote(str(r.started_dir / "tree"))
        command_line = f"sleep 300 & echo $! > {shlex.quote(str(pid_file))}; touch {marker}; wait"
        tree = r.execute(sid, "tree", "Bash", {"command": command_line}, **r.pin)
        if not r.wait_for(lambda: "tree" in r.started() and pid_file.exists()):
            return
        child = int(pid_file.read_text(encoding="utf-8").strip() or 0)
        meanwhile = r.peer.call("app.health")  # the tree's Bash call runs meanwhile
        r.peer.add(answered_meanwhile(meanwhile))
        if meanwhile is None:
            r.unresponsive = True
            return  # one request at a time: the aborts would go unanswered too
        params = {"sessionId": sid, "toolCallId": "tree", "toolName": "Bash"}
        first = r.peer.call("tools.abort", params)
        second = r.peer.call("tools.abort", params)
        r.wait_for(lambda: tree.answer is not None and not _alive(child))
        r.peer.add(abort_settled(first, second, _alive(child)))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
