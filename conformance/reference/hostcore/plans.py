"""Plan and Goal checkpoints: SubmitPlan/SubmitGoal and plans.* (§5.1, §8.6,
§8.7; §10 items 11 and 12).

One ``plan_approvals`` row carries a proposal and, once approved, its
execution. Transitions (everything else is refused with a PLAN_* code):

    proposal:  pending --approve--> approved    (execution: queued)
               pending --reject---> rejected
               pending --deadline-> expired     (PLAN_APPROVAL_TIMEOUT)
               pending --abort/restart--> interrupted (PLAN_APPROVAL_INTERRUPTED)
    execution: queued --claim--> running --finish--> completed
               queued/running --restart--> interrupted

A resolution must name the live row exactly (proposal, session, turn, tool
call and, when given, version); each transition bumps ``version``, so an
answer to an older version fails closed. Nothing is ever replayed.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .clock import iso
from .errors import HostError, invalid_params
from .params import one_of, optional_int, optional_str, required_str
from .sessions import PERMISSION_MODES, load_session, running_turn
from .store import next_seq

if TYPE_CHECKING:
    from .host import HostCore

KINDS = ("plan", "goal")
TOOL_KINDS = {"SubmitPlan": "plan", "SubmitGoal": "goal"}
ACTIONS = ("approve", "reject")


def _artifact(row: sqlite3.Row) -> dict[str, Any] | None:
    if row["artifact_path"] is None:
        return None
    return {"relativePath": row["artifact_path"], "sha256": row["artifact_sha256"], "sizeBytes": row["artifact_size"]}


def proposal(row: sqlite3.Row) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "turnId": row["turn_id"],
        "toolCallId": row["tool_call_id"],
        "kind": row["kind"],
        "plan": row["markdown"],
        "markdown": row["markdown"],
        "title": row["title"],
        "question": row["question"],
        "status": row["status"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
        "version": row["version"],
    }
    optional = {
        "expiresAt": row["expires_at"],
        "resolvedAt": row["resolved_at"],
        "action": row["action"],
        "targetPermissionMode": row["target_permission_mode"],
        "errorCode": row["error_code"],
        "artifact": _artifact(row),
        "executionId": row["execution_id"],
        "executionState": row["execution_state"],
    }
    return wire | {key: value for key, value in optional.items() if value is not None}


def execution(row: sqlite3.Row) -> dict[str, Any] | None:
    if row["execution_id"] is None:
        return None
    return {
        "id": row["execution_id"],
        "proposalId": row["id"],
        "sessionId": row["session_id"],
        "kind": row["kind"],
        "plan": row["markdown"],
        "title": row["title"],
        "question": row["question"],
        "artifact": _artifact(row),
        "targetPermissionMode": row["target_permission_mode"],
        "state": row["execution_state"],
    }


def planning_state(db: sqlite3.Connection, session_id: str) -> tuple[str, str | None]:
    """(PlanningState, kind being negotiated or None)."""
    pending = db.execute(
        "SELECT kind FROM plan_approvals WHERE session_id = ? AND status = 'pending'", (session_id,)
    ).fetchone()
    if pending is not None:
        return "awaiting_approval", pending["kind"]
    session = load_session(db, session_id)
    if session is not None and session["mode"] in KINDS:
        return "planning", session["mode"]
    return "inactive", None


def _row(db: sqlite3.Connection, proposal_id: str) -> sqlite3.Row | None:
    return db.execute("SELECT * FROM plan_approvals WHERE id = ?", (proposal_id,)).fetchone()


def _changed(host: HostCore, session_id: str, **fields: Any) -> None:
    """plans.changed: exactly the documented fields; absent ones omitted."""
    with host.store.transaction() as db:
        state, kind = planning_state(db, session_id)
    params: dict[str, Any] = {"sessionId": session_id, "state": state}
    if kind is not None:
        params["kind"] = kind
    host.emit("plans.changed", params | fields)


# -- submission -----------------------------------------------------------------------


def write_artifact(root: str, kind: str, markdown: str) -> dict[str, Any]:
    """The exact bytes in a new file under .pi/<kind>/; never overwrites."""
    data = markdown.encode("utf-8")
    folder = os.path.join(root, ".pi", kind)
    os.makedirs(folder, exist_ok=True)
    name = f"{uuid.uuid4().hex}.md"
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return {"relativePath": f".pi/{kind}/{name}", "sha256": hashlib.sha256(data).hexdigest(), "sizeBytes": len(data)}


def submit(host: HostCore, session_id: str, turn_id: str | None, call_id: str, kind: str, args: Any) -> dict[str, Any]:
    """Creates the pending proposal; raises HostError(PLAN_*) when refused."""
    title, markdown, question = _submission(args)
    sweep_expired(host)
    with host.store.transaction() as db:
        session = load_session(db, session_id)
        if session is None:
            raise HostError("PLAN_SESSION_NOT_FOUND", f"session {session_id!r} does not exist")
        _check_submittable(db, session, turn_id, kind)
        root = session["project_path"]
        if root is None:
            raise HostError("PLAN_WORKSPACE_REQUIRED", "a plan artifact needs the session's project folder")
        artifact = write_artifact(root, kind, markdown)
        proposal_id = f"plan_{uuid.uuid4().hex}"
        now = host.clock.now()
        db.execute(
            "INSERT INTO plan_approvals (id, session_id, turn_id, tool_call_id, kind, title, question, markdown,"
            " status, version, created_at, updated_at, expires_at, artifact_path, artifact_sha256, artifact_size, seq)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 1, ?, ?, ?, ?, ?, ?, ?)",
            (
                proposal_id, session_id, turn_id, call_id, kind, title, question, markdown, iso(now), iso(now),
                iso(now + timedelta(seconds=host.plan_approval_ttl_s)),
                artifact["relativePath"], artifact["sha256"], artifact["sizeBytes"], next_seq(db, "plan_approvals"),
            ),
        )  # fmt: skip
        row = _row(db, proposal_id)
    assert row is not None
    wire = proposal(row)
    _changed(host, session_id, proposalId=proposal_id, proposal=wire)
    return wire


def _submission(args: Any) -> tuple[str, str, str]:
    if not isinstance(args, dict):
        raise invalid_params("SubmitPlan args must be an object")
    title = required_str(args, "title")
    markdown = required_str(args, "markdown", blank_ok=True)
    question = required_str(args, "question")
    if not markdown.strip():
        raise invalid_params("markdown must not be blank")
    return title, markdown, question


def _check_submittable(db: sqlite3.Connection, session: sqlite3.Row, turn_id: str | None, kind: str) -> None:
    if session["mode"] not in KINDS:
        raise HostError("PLAN_NOT_ACTIVE", "the session is not planning; enter Plan or Goal first")
    if session["mode"] != kind:
        # §10 item 11: the other kind's submit fails before any artifact is written.
        raise HostError("PLAN_KIND_MISMATCH", f"the session negotiates a {session['mode']}, not a {kind}")
    live = running_turn(db, session["id"])
    if live is None or turn_id != live["id"]:
        raise HostError("PLAN_TURN_MISMATCH", "a proposal must come from the session's running turn")
    busy = db.execute(
        "SELECT 1 FROM plan_approvals WHERE session_id = ?"
        " AND (status = 'pending' OR execution_state IN ('queued', 'running'))",
        (session["id"],),
    ).fetchone()
    if busy is not None:  # §8.6: one pending approval and one execution per session
        raise HostError("PLAN_ALREADY_PENDING", "the session already has a pending or executing plan")


def submit_method(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    kind = one_of(params, "kind", KINDS, "plan")
    assert kind is not None
    wire = submit(
        host,
        required_str(params, "sessionId"),
        required_str(params, "turnId"),
        required_str(params, "toolCallId"),
        kind,
        params,
    )
    return {"ok": True, "proposal": wire}


def enter(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    session_id = required_str(params, "sessionId")
    turn_id = required_str(params, "turnId")
    required_str(params, "toolCallId")
    kind = params.get("kind", "plan")
    if kind not in KINDS:
        raise invalid_params(f"kind must be plan or goal, got {kind!r}")
    with host.store.transaction() as db:
        session = load_session(db, session_id)
        if session is None:
            raise HostError("PLAN_SESSION_NOT_FOUND", f"session {session_id!r} does not exist")
        live = running_turn(db, session_id)
        if live is None or live["id"] != turn_id:
            raise HostError("PLAN_TURN_MISMATCH", "only the session's running Agent turn may enter planning")
        # Compare-and-swap: only an Agent session moves to the kind's mode.
        if db.execute("UPDATE sessions SET mode = ? WHERE id = ? AND mode = 'agent'", (kind, session_id)).rowcount != 1:
            raise HostError("PLAN_MODE_CONFLICT", f"the session is in {session['mode']} mode, not agent")
    _changed(host, session_id)
    return {"ok": True, "state": "planning", "kind": kind}


# -- reading -----------------------------------------------------------------------------


def pending(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    session_id = required_str(params, "sessionId")
    sweep_expired(host)
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT * FROM plan_approvals WHERE session_id = ? AND status = 'pending' ORDER BY seq", (session_id,)
        ).fetchall()
        state, kind = planning_state(db, session_id)
    result: dict[str, Any] = {"plans": [proposal(row) for row in rows], "state": state}
    if kind is not None:
        result["kind"] = kind
    return result


def queued_executions(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    session_id = optional_str(params, "sessionId")
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT * FROM plan_approvals WHERE execution_state = 'queued' AND (? IS NULL OR session_id = ?)"
            " ORDER BY seq",
            (session_id, session_id),
        ).fetchall()
    return {"executions": [execution(row) for row in rows]}


# -- resolution ------------------------------------------------------------------------


_STATUS_ERRORS = {
    "expired": "PLAN_APPROVAL_TIMEOUT",
    "interrupted": "PLAN_APPROVAL_INTERRUPTED",
    "approved": "PLAN_APPROVAL_STALE",
    "rejected": "PLAN_APPROVAL_STALE",
}


def resolve(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    proposal_id = required_str(params, "proposalId")
    identity = (required_str(params, "sessionId"), required_str(params, "turnId"), required_str(params, "toolCallId"))
    version = optional_int(params, "version", minimum=0)
    action = one_of(params, "action", ACTIONS, None)
    if action is None:
        raise invalid_params("action is required")
    target = one_of(params, "targetPermissionMode", PERMISSION_MODES, None)
    if action == "approve" and target is None:
        raise invalid_params("approve requires targetPermissionMode")
    sweep_expired(host)
    with host.store.transaction() as db:  # resolution is serialized (§8.6)
        row = _live_row(db, proposal_id, identity, version)
        now = iso(host.clock.now())
        if action == "approve":
            db.execute(
                "UPDATE plan_approvals SET status = 'approved', action = 'approve', target_permission_mode = ?,"
                " execution_id = ?, execution_state = 'queued', resolved_at = ?, updated_at = ?,"
                " version = version + 1 WHERE id = ?",
                (target, f"exec_{uuid.uuid4().hex}", now, now, proposal_id),
            )
            # The session leaves its contract mode for Agent with the chosen
            # permission mode; app settings are not touched (§5.1).
            db.execute(
                "UPDATE sessions SET mode = 'agent', permission_mode = ? WHERE id = ?", (target, row["session_id"])
            )
        else:
            db.execute(
                "UPDATE plan_approvals SET status = 'rejected', action = 'reject', resolved_at = ?, updated_at = ?,"
                " version = version + 1 WHERE id = ?",
                (now, now, proposal_id),
            )
        updated = _row(db, proposal_id)
        assert updated is not None
        state, _ = planning_state(db, row["session_id"])
    return _resolved(host, updated, state, action)


def _live_row(
    db: sqlite3.Connection, proposal_id: str, identity: tuple[str, str, str], version: int | None
) -> sqlite3.Row:
    row = _row(db, proposal_id)
    if row is None:
        raise HostError("PLAN_NOT_FOUND", f"no proposal {proposal_id!r}")
    if (row["session_id"], row["turn_id"], row["tool_call_id"]) != identity:
        raise HostError("PLAN_APPROVAL_STALE", "the session, turn or tool call does not match the proposal")
    if row["status"] != "pending":
        raise HostError(_STATUS_ERRORS.get(row["status"], "PLAN_APPROVAL_STALE"), f"the proposal is {row['status']}")
    if version is not None and version != row["version"]:
        raise HostError("PLAN_APPROVAL_STALE", f"version {version} is stale; the proposal is at {row['version']}")
    return row


def _resolved(host: HostCore, row: sqlite3.Row, state: str, action: str) -> dict[str, Any]:
    wire, run = proposal(row), execution(row)
    target = row["target_permission_mode"]
    # For plans.resolve the two may be JSON null but are always present (§5.1).
    _changed(host, row["session_id"], proposalId=row["id"], proposal=wire, action=action,
             targetPermissionMode=target, execution=run)  # fmt: skip
    result: dict[str, Any] = {"ok": True, "proposal": wire, "state": state, "action": action}
    if target is not None:
        result["targetPermissionMode"] = target
    if run is not None:
        result["execution"] = run
    return result


# -- executions -----------------------------------------------------------------------


def _transition(host: HostCore, params: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    execution_id = required_str(params, "executionId")
    with host.store.transaction() as db:
        row = db.execute("SELECT * FROM plan_approvals WHERE execution_id = ?", (execution_id,)).fetchone()
        if row is None:
            raise HostError("PLAN_EXECUTION_NOT_FOUND", f"no execution {execution_id!r}")
        if row["execution_state"] != source:
            raise HostError("PLAN_EXECUTION_STALE", f"the execution is {row['execution_state']}, not {source}")
        db.execute(
            "UPDATE plan_approvals SET execution_state = ?, updated_at = ?, version = version + 1 WHERE id = ?",
            (target, iso(host.clock.now()), row["id"]),
        )
        updated = _row(db, row["id"])
    assert updated is not None
    run = execution(updated)
    _changed(host, updated["session_id"], proposalId=updated["id"], execution=run)
    return {"ok": True, "execution": run}


def claim_execution(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return _transition(host, params, "queued", "running")


def finish_execution(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return _transition(host, params, "running", "completed")


# -- interruption and expiry ------------------------------------------------------------


def abort(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """Pending work becomes interrupted; an approved session stays in Agent."""
    session_id = required_str(params, "sessionId")
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT id FROM plan_approvals WHERE session_id = ? AND status = 'pending'", (session_id,)
        ).fetchall()
        _mark(db, [row["id"] for row in rows], "interrupted", "PLAN_APPROVAL_INTERRUPTED", iso(host.clock.now()))
    for row in rows:
        _changed(host, session_id, proposalId=row["id"])
    return {"ok": True, "interrupted": len(rows)}


def _mark(db: sqlite3.Connection, ids: list[str], status: str, error_code: str, now: str) -> None:
    for proposal_id in ids:
        db.execute(
            "UPDATE plan_approvals SET status = ?, error_code = ?, updated_at = ?, version = version + 1"
            " WHERE id = ? AND status = 'pending'",
            (status, error_code, now, proposal_id),
        )


def sweep_expired(host: HostCore) -> int:
    """Pending approvals past their absolute deadline become expired."""
    now = iso(host.clock.now())
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT id, session_id FROM plan_approvals WHERE status = 'pending' AND expires_at <= ?", (now,)
        ).fetchall()
        _mark(db, [row["id"] for row in rows], "expired", "PLAN_APPROVAL_TIMEOUT", now)
    for row in rows:
        _changed(host, row["session_id"], proposalId=row["id"])
    return len(rows)


def interrupt_at_startup(db: sqlite3.Connection, now: str) -> None:
    """§5.1/§8.7: before serving, earlier pending approvals and queued/running
    executions are interrupted, in one transaction; none is replayed. A
    pending session keeps its contract mode; an approved one stays Agent."""
    rows = db.execute("SELECT id FROM plan_approvals WHERE status = 'pending'").fetchall()
    _mark(db, [row["id"] for row in rows], "interrupted", "PLAN_APPROVAL_INTERRUPTED", now)
    db.execute(
        "UPDATE plan_approvals SET execution_state = 'interrupted', updated_at = ?, version = version + 1"
        " WHERE execution_state IN ('queued', 'running')",
        (now,),
    )


def artifacts_list(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """§4: the session's Plan/Goal checkpoint artifacts, oldest first."""
    session_id = required_str(params, "sessionId")
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT * FROM plan_approvals WHERE session_id = ? AND artifact_path IS NOT NULL ORDER BY seq",
            (session_id,),
        ).fetchall()
    artifacts = []
    for row in rows:
        artifact = _artifact(row)
        assert artifact is not None  # the query selected rows with one
        artifacts.append(artifact | {"proposalId": row["id"], "kind": row["kind"], "title": row["title"]})
    return {"artifacts": artifacts}


METHODS = {
    "artifacts.list": (artifacts_list, False),
    "plans.enter": (enter, False),
    "plans.submit": (submit_method, False),
    "plans.pending": (pending, False),
    "plans.resolve": (resolve, False),
    "plans.queuedExecutions": (queued_executions, False),
    "plans.claimExecution": (claim_execution, False),
    "plans.finishExecution": (finish_execution, False),
    "plans.abort": (abort, False),
}
