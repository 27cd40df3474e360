"""Plan and Goal checkpoints of the reference host-core (§5.1, §8.6, §8.7).

Over real pipes, except expiry: that one runs the host-core in process on a
clock the test moves, so no test waits 30 minutes (or sleeps at all).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hostcore_peer import HostcorePeer, Message, Spawn, error_code

from conformance.reference.hostcore import HostCore
from conformance.reference.hostcore.errors import HostError

MARKDOWN = "# Plan\r\n\n- step one  \n- ünïcödé ☃\n\n```sh\necho 'x'\n```\n"


def _planning_session(hostcore: HostcorePeer, root: Path, mode: str = "plan") -> tuple[str, str]:
    sid = hostcore.result("session.create", {"projectPath": str(root), "mode": mode})["session"]["id"]
    turn = hostcore.result("session.beginTurn", {"sessionId": sid})["turnId"]
    return sid, turn


def _submit(hostcore: HostcorePeer, sid: str, turn: str, call: str, tool: str = "SubmitPlan") -> Message:
    args = {"title": "Refactor", "markdown": MARKDOWN, "question": "Go ahead?"}
    params = {"sessionId": sid, "turnId": turn, "toolCallId": call, "toolName": tool, "args": args}
    result: Message = hostcore.result("tools.execute", params)
    return result


def _changed(hostcore: HostcorePeer) -> list[Message]:
    return [n["params"] for n in hostcore.notifications if n["method"] == "plans.changed"]


def _resolve(proposal: Message, **extra: Any) -> Message:
    identity = {k: proposal[k] for k in ("sessionId", "turnId", "toolCallId")}
    return {"proposalId": proposal["id"], "version": proposal["version"], **identity, **extra}


def test_acceptance_11_submit_writes_exact_markdown_bytes(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path)
    result = _submit(hostcore, sid, turn, "c1")
    assert result["ok"] is True
    proposal, artifact = result["content"]["proposal"], result["content"]["artifact"]
    assert artifact["relativePath"].startswith(".pi/plan/") and artifact["relativePath"].endswith(".md")
    data = (tmp_path / artifact["relativePath"]).read_bytes()
    assert data == MARKDOWN.encode()  # exact bytes, CR and trailing spaces kept
    assert artifact["sha256"] == hashlib.sha256(data).hexdigest() and artifact["sizeBytes"] == len(data)
    assert (proposal["title"], proposal["question"], proposal["kind"]) == ("Refactor", "Go ahead?", "plan")
    assert proposal["status"] == "pending" and "expiresAt" in proposal
    events = _changed(hostcore)
    assert events[-1]["state"] == "awaiting_approval" and events[-1]["proposalId"] == proposal["id"]
    pending = hostcore.result("plans.pending", {"sessionId": sid})
    assert [p["id"] for p in pending["plans"]] == [proposal["id"]]
    assert pending["state"] == "awaiting_approval" and pending["kind"] == "plan"
    again = _submit(hostcore, sid, turn, "c2")  # one pending approval per session (§8.6)
    assert again["ok"] is False and again["errorCode"] == "PLAN_ALREADY_PENDING"
    assert len(list((tmp_path / ".pi" / "plan").iterdir())) == 1


@pytest.mark.parametrize(("mode", "tool"), [("plan", "SubmitGoal"), ("goal", "SubmitPlan")])
def test_acceptance_11_other_kind_fails_without_an_artifact(
    hostcore: HostcorePeer, tmp_path: Path, mode: str, tool: str
) -> None:
    sid, turn = _planning_session(hostcore, tmp_path, mode)
    result = _submit(hostcore, sid, turn, "c1", tool)
    assert result["ok"] is False and result["errorCode"] == "PLAN_KIND_MISMATCH"
    assert not (tmp_path / ".pi").exists()


def test_acceptance_11_goal_artifacts_are_unique(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path, "goal")
    first = _submit(hostcore, sid, turn, "g1", "SubmitGoal")["content"]["proposal"]
    assert first["kind"] == "goal" and first["artifact"]["relativePath"].startswith(".pi/goal/")
    hostcore.result("plans.resolve", _resolve(first, action="reject"))
    second = _submit(hostcore, sid, turn, "g2", "SubmitGoal")["content"]["proposal"]
    assert second["artifact"]["relativePath"] != first["artifact"]["relativePath"]
    assert len(list((tmp_path / ".pi" / "goal").iterdir())) == 2


def test_acceptance_11_only_matching_responses_resolve(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path)
    proposal = _submit(hostcore, sid, turn, "c1")["content"]["proposal"]
    stale = [
        _resolve(proposal, action="approve", targetPermissionMode="auto", turnId="turn_other"),
        _resolve(proposal, action="approve", targetPermissionMode="auto", toolCallId="c9"),
        _resolve(proposal, action="approve", targetPermissionMode="auto", version=proposal["version"] + 1),
    ]
    for params in stale:
        assert error_code(hostcore.error("plans.resolve", params)) == (1015, "PLAN_APPROVAL_STALE"), params
    no_mode = hostcore.error("plans.resolve", _resolve(proposal, action="approve"))
    assert error_code(no_mode) == (1002, "INVALID_PARAMS")
    assert hostcore.result("plans.pending", {"sessionId": sid})["plans"][0]["status"] == "pending"
    approved = hostcore.result(
        "plans.resolve", _resolve(proposal, action="approve", targetPermissionMode="accept-edits")
    )
    assert approved["ok"] is True and approved["proposal"]["status"] == "approved"
    execution = approved["execution"]
    assert execution["state"] == "queued" and execution["targetPermissionMode"] == "accept-edits"
    session = hostcore.result("session.get", {"sessionId": sid})["session"]
    assert (session["mode"], session["permissionMode"]) == ("agent", "accept-edits")
    event = _changed(hostcore)[-1]
    assert event["action"] == "approve" and event["execution"]["id"] == execution["id"]
    replay = hostcore.error("plans.resolve", _resolve(proposal, action="reject"))
    assert error_code(replay) == (1015, "PLAN_APPROVAL_STALE")  # already resolved
    # the execution lifecycle on the same row
    assert [e["id"] for e in hostcore.result("plans.queuedExecutions")["executions"]] == [execution["id"]]
    assert hostcore.result("plans.claimExecution", {"executionId": execution["id"]})["execution"]["state"] == "running"
    claim_again = hostcore.error("plans.claimExecution", {"executionId": execution["id"]})
    assert error_code(claim_again) == (1015, "PLAN_EXECUTION_STALE")
    finished = hostcore.result("plans.finishExecution", {"executionId": execution["id"]})
    assert finished["execution"]["state"] == "completed"


def test_reject_keeps_the_contract_mode_and_emits_nulls(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path, "goal")
    proposal = _submit(hostcore, sid, turn, "c1", "SubmitGoal")["content"]["proposal"]
    rejected = hostcore.result("plans.resolve", _resolve(proposal, action="reject"))
    assert rejected["proposal"]["status"] == "rejected" and rejected["state"] == "planning"
    assert hostcore.result("session.get", {"sessionId": sid})["session"]["mode"] == "goal"
    event = _changed(hostcore)[-1]
    assert event["targetPermissionMode"] is None and event["execution"] is None  # present, JSON null (§5.1)


def test_plans_enter_moves_an_agent_turn_into_planning(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path, "agent")
    bad = hostcore.error("plans.enter", {"sessionId": sid, "turnId": turn, "toolCallId": "e", "kind": "design"})
    assert error_code(bad) == (1002, "INVALID_PARAMS")
    entered = hostcore.result("plans.enter", {"sessionId": sid, "turnId": turn, "toolCallId": "e", "kind": "goal"})
    assert entered["state"] == "planning" and entered["kind"] == "goal"
    assert _changed(hostcore)[-1] == {"sessionId": sid, "state": "planning", "kind": "goal"}
    again = hostcore.error("plans.enter", {"sessionId": sid, "turnId": turn, "toolCallId": "e", "kind": "plan"})
    assert error_code(again)[0] == 1015  # compare-and-swap: no longer an Agent session


def test_acceptance_12_abort_interrupts_pending_work(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path)
    proposal = _submit(hostcore, sid, turn, "c1")["content"]["proposal"]
    assert hostcore.result("plans.abort", {"sessionId": sid}) == {"ok": True, "interrupted": 1}
    assert _changed(hostcore)[-1]["proposalId"] == proposal["id"]
    late = hostcore.error("plans.resolve", _resolve(proposal, action="approve", targetPermissionMode="auto"))
    assert error_code(late) == (1015, "PLAN_APPROVAL_INTERRUPTED")
    assert hostcore.result("session.get", {"sessionId": sid})["session"]["mode"] == "plan"


def test_acceptance_12_restart_interrupts_pending_and_queued_work(spawn_hostcore: Spawn, tmp_path: Path) -> None:
    first = spawn_hostcore()
    first.handshake()
    pending_sid, turn = _planning_session(first, tmp_path)
    pending = _submit(first, pending_sid, turn, "p1")["content"]["proposal"]
    queued_sid, turn2 = _planning_session(first, tmp_path)
    queued = _submit(first, queued_sid, turn2, "q1")["content"]["proposal"]
    approved = first.result("plans.resolve", _resolve(queued, action="approve", targetPermissionMode="ask"))
    first.kill()  # a crash: no chance to clean up
    second = spawn_hostcore()
    second.handshake()
    late = second.error("plans.resolve", _resolve(pending, action="approve", targetPermissionMode="auto"))
    assert error_code(late) == (1015, "PLAN_APPROVAL_INTERRUPTED")  # fails closed, never replayed
    assert second.result("plans.pending", {"sessionId": pending_sid})["plans"] == []
    assert second.result("plans.queuedExecutions")["executions"] == []
    claim = second.error("plans.claimExecution", {"executionId": approved["execution"]["id"]})
    assert error_code(claim) == (1015, "PLAN_EXECUTION_STALE")
    modes = {s["id"]: s["mode"] for s in second.result("session.list")["sessions"]}
    assert modes == {pending_sid: "plan", queued_sid: "agent"}  # §8.7


class MovableClock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        self.mono = 0.0

    def now(self) -> datetime:
        return self.moment

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)
        self.mono += seconds


def _ok(host: HostCore, method: str, params: Message | None = None) -> Any:
    outcome = host.call(method, params or {})
    assert not isinstance(outcome, HostError), (method, outcome.error_code, outcome.message)
    return outcome


def test_acceptance_12_expiry_at_the_30_minute_deadline(tmp_path: Path) -> None:
    clock = MovableClock()
    host = HostCore(tmp_path / "data", clock=clock)
    events: list[tuple[str, Message]] = []
    host.set_emitter(lambda method, params: events.append((method, params)))
    try:
        _ok(host, "app.handshake", {"protocolVersion": 11, "client": "electron-main", "clientVersion": "t"})
        sid = _ok(host, "session.create", {"projectPath": str(tmp_path), "mode": "plan"})["session"]["id"]
        turn = _ok(host, "session.beginTurn", {"sessionId": sid})["turnId"]
        args = {"title": "T", "markdown": "# M\n", "question": "Q?"}
        params = {"sessionId": sid, "turnId": turn, "toolCallId": "c", "toolName": "SubmitPlan", "args": args}
        proposal = _ok(host, "tools.execute", params)["content"]["proposal"]
        clock.advance(30 * 60 - 1)  # N-1: still pending
        host.sweep()
        assert _ok(host, "plans.pending", {"sessionId": sid})["plans"][0]["status"] == "pending"
        clock.advance(1)  # N: the absolute deadline
        host.sweep()
        assert _ok(host, "plans.pending", {"sessionId": sid}) == {"plans": [], "state": "planning", "kind": "plan"}
        expired = [p for m, p in events if m == "plans.changed" and p.get("proposalId") == proposal["id"]]
        assert expired[-1]["state"] == "planning"
        outcome = host.call("plans.resolve", _resolve(proposal, action="reject"))
        assert isinstance(outcome, HostError) and outcome.error_code == "PLAN_APPROVAL_TIMEOUT"
    finally:
        host.close()


def test_artifacts_list_names_every_checkpoint(hostcore: HostcorePeer, tmp_path: Path) -> None:
    sid, turn = _planning_session(hostcore, tmp_path)
    proposal = _submit(hostcore, sid, turn, "c1")["content"]["proposal"]
    listed = hostcore.result("artifacts.list", {"sessionId": sid})["artifacts"]
    assert listed == [proposal["artifact"] | {"proposalId": proposal["id"], "kind": "plan", "title": "Refactor"}]
