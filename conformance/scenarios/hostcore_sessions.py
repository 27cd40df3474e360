"""Fixed host-core scenarios for §8: independent sessions, fork snapshots and
one approval per session (a late answer fails closed)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreCommand, HostcorePeer, handshake_params
from conformance.protocol.rpc_admission import (
    TOOL_CALL_ID,
    ids_remapped,
    late_refused,
    one_pending,
    sessions_apart,
    source_unchanged,
)
from conformance.scenarios.hostcore_looks import _answered, _messages
from conformance.scenarios.hostcore_rig import OTHER_TEXT, Rig, rig


def sessions_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.2: session A (project P) gets an allow-session grant for Write and
    runs a Bash blocker; meanwhile session B (project Q) reads its own
    notes.txt and writes, which needs its own prompt."""
    with rig(command, recorder, response_s, work, "sessions-independent", ("RPC-8-sessions-independent",)) as r:
        if r is None:
            return
        other = Path(tempfile.mkdtemp(prefix="project-", dir=work))
        (other / "notes.txt").write_text(f"{OTHER_TEXT}\n", encoding="utf-8")
        a, b = r.session(), r.session(other)
        if a is None or b is None:
            return
        first = r.execute(a, "write-a", "Write", {"path": "a.txt", "content": "a"})
        if not r.wait_for(lambda: first.answer is not None):
            return
        asked_a = _prompted(r, "write-a")
        r.blocker(a, "a-runs")
        if not r.wait_for(lambda: "a-runs" in r.started()):
            return
        read = r.execute(b, "read-b", "Read", {"path": "notes.txt"})
        r.wait_for(lambda: read.answer is not None)
        second = r.execute(b, "write-b", "Write", {"path": "b.txt", "content": "b"})
        r.wait_for(lambda: second.answer is not None)
        leaked = asked_a and not _prompted(r, "write-b") and (second.answer or {}).get("result", {}).get("ok") is True
        r.peer.add(sessions_apart(read.answer, OTHER_TEXT, leaked_grant=leaked))


def _prompted(r: Rig, call: str) -> bool:
    for note in r.peer.notifications:
        params = note.get("params")
        if note.get("method") == "permissions.request" and isinstance(params, dict):
            if params.get("toolCallId") == call:
                return True
    return False


def fork_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.8 / §8.9: a fork leaves the source transcript as it was; a fork
    through a message gives the copied messages and tool calls new ids."""
    with rig(command, recorder, response_s, work, "fork") as r:
        if r is None:
            return
        sid = r.session()
        if sid is None:
            return
        tool_call = {"type": "toolCall", "id": TOOL_CALL_ID, "name": "Read", "arguments": {"path": "notes.txt"}}
        for mid, role, content in (
            ("fm-1", "user", [{"type": "text", "text": "read the notes"}]),
            ("fm-2", "assistant", [tool_call]),
            ("fm-3", "user", [{"type": "text", "text": "thanks"}]),
        ):
            if (
                r.peer.call(
                    "session.appendMessage",
                    {"sessionId": sid, "message": {"id": mid, "role": role, "content": content}},
                )
                is None
            ):
                return
        before = _messages(r, sid)
        if before is None:
            return
        whole = r.peer.call("session.fork", {"sessionId": sid})
        if whole is None or "result" not in whole:
            return  # whether forks succeed is judged by the §4/§10 checks
        r.peer.add(source_unchanged(before, _messages(r, sid)))
        part = r.peer.call("session.fork", {"sessionId": sid, "throughMessageId": "fm-2"})
        result = part.get("result") if part else None
        session = result.get("session") if isinstance(result, dict) else None
        child = session.get("id") if isinstance(session, dict) else None
        if isinstance(child, str):
            copied = _messages(r, child)
            if copied:
                r.peer.add(ids_remapped(before, copied))


def approval_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.6: a Plan-mode session's running turn submits two plans; at most one
    approval may be pending afterwards (the second is refused or replaces it)."""
    with rig(command, recorder, response_s, work, "one-approval") as r:
        if r is None:
            return
        sid = r.session()
        begun = r.peer.call("session.beginTurn", {"sessionId": sid}) if sid is not None else None
        turn = (begun.get("result") or {}).get("turnId") if begun else None
        if not isinstance(sid, str) or not isinstance(turn, str):
            return
        # Into Plan mode the documented way (§4 plans.enter from the running turn).
        entered = r.peer.call("plans.enter", {"sessionId": sid, "turnId": turn, "toolCallId": "enter", "kind": "plan"})
        if entered is None or "result" not in entered:
            return  # whether plans.enter works is judged by the state machine
        for n in (1, 2):
            args = {"title": f"Plan {n}", "markdown": f"# Plan {n}\n\nSteps.\n", "question": "Proceed?"}
            call = r.execute(sid, f"submit-{n}", "SubmitPlan", args, turnId=turn)
            if not r.wait_for(functools.partial(_answered, call)):
                return
        pending = r.peer.call("plans.pending", {"sessionId": sid})
        if pending is not None and "result" in pending:
            r.peer.add(one_pending(pending["result"]))
            _late_answer(r, command, pending["result"])


def _late_answer(r: Rig, command: HostcoreCommand, pending: Any) -> None:
    """§8.7: the pending proposal, approved after a restart, fails closed."""
    plans = pending.get("plans") if isinstance(pending, dict) else None
    first = plans[0] if isinstance(plans, list) and plans and isinstance(plans[0], dict) else None
    if first is None:
        return
    r.finish()
    r.peer.stdin_eof(r.peer.response_s)
    r.peer.close()
    with HostcorePeer(command, r.data_dir, r.peer.recorder, response_s=r.peer.response_s) as peer:
        response = peer.call("app.handshake", handshake_params())
        if response is None or "result" not in response:
            return
        params = {
            "proposalId": first.get("id", first.get("proposalId")),
            "sessionId": first.get("sessionId"),
            "turnId": first.get("turnId"),
            "toolCallId": first.get("toolCallId"),
            "version": first.get("version"),
            "action": "approve",
            "targetPermissionMode": "auto",
        }
        answer = peer.call("plans.resolve", params)
        got = peer.call("session.get", {"sessionId": first.get("sessionId")})
        result = got.get("result") if got else None
        session = result.get("session") if isinstance(result, dict) else None
        peer.add(late_refused(answer, session.get("mode") if isinstance(session, dict) else None))
