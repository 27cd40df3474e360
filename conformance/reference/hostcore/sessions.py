"""session.create/list/get/rename/appendMessage/beginTurn/endTurn (§4 Sessions).

Transcripts live in the ``messages`` table, ordered by insertion. Forking is
in :mod:`.fork`. Each handler is one transaction (see :mod:`.store`).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import TYPE_CHECKING, Any

from . import limits, notifications
from .clock import iso
from .errors import HostError, invalid_params, not_found
from .params import one_of, optional_bool, optional_int, optional_str, required_str, session_id
from .store import next_seq
from .workspace import canonical_path, upsert_project

if TYPE_CHECKING:
    from .host import HostCore

MODES = ("plan", "goal", "agent")
PERMISSION_MODES = ("ask", "accept-edits", "auto")
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")  # §4
ROLES = ("user", "assistant", "toolResult", "tool", "system")
TERMINAL_STATUSES = ("completed", "error", "aborted")  # §4a SessionEndTurnParams.status


def validate_title(raw: Any) -> str:
    """§4 session.rename: trimmed, 1..80 Unicode code points."""
    if not isinstance(raw, str):
        raise invalid_params("title must be a string")
    title = raw.strip()
    if not title:
        raise invalid_params("title must not be blank")
    if len(title) > limits.TITLE_MAX_CODE_POINTS:  # len() counts code points
        raise invalid_params(f"title has {len(title)} code points; the limit is {limits.TITLE_MAX_CODE_POINTS}")
    return title


def load_session(db: sqlite3.Connection, sid: str) -> sqlite3.Row | None:
    return db.execute(
        "SELECT s.*, p.path AS project_path FROM sessions s LEFT JOIN projects p ON p.id = s.project_id"
        " WHERE s.id = ? AND s.deleted = 0",
        (sid,),
    ).fetchone()


def require_session(db: sqlite3.Connection, sid: str) -> sqlite3.Row:
    row = load_session(db, sid)
    if row is None:
        raise not_found(f"session {sid!r} does not exist")
    return row


def running_turn(db: sqlite3.Connection, sid: str) -> sqlite3.Row | None:
    return db.execute("SELECT * FROM turns WHERE session_id = ? AND status = 'running'", (sid,)).fetchone()


def summary(db: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    count = db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (row["id"],)).fetchone()[0]
    return {
        "id": row["id"],
        "title": row["title"],
        "titleSource": row["title_source"],
        "projectId": row["project_id"],
        "projectPath": row["project_path"],
        "mode": row["mode"],
        "permissionMode": row["permission_mode"],
        "providerId": row["provider_id"],
        "modelId": row["model_id"],
        "thinkingLevel": row["thinking_level"],
        "fastMode": bool(row["fast_mode"]),
        "messageCount": int(count),  # host-authoritative (§4 session.list)
        "running": running_turn(db, row["id"]) is not None,
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def insert_session(host: HostCore, db: sqlite3.Connection, values: dict[str, Any]) -> str:
    now = iso(host.clock.now())
    row = {
        "id": f"ses_{uuid.uuid4().hex}",
        "project_id": None,
        "title": limits.DEFAULT_SESSION_TITLE,
        "title_source": "default",
        "mode": "agent",
        "permission_mode": "ask",
        "provider_id": None,
        "model_id": None,
        "thinking_level": "off",
        "fast_mode": 0,
        "created_at": now,
        "updated_at": now,
        "seq": next_seq(db, "sessions"),
    } | values
    columns = ", ".join(row)
    db.execute(f"INSERT INTO sessions ({columns}) VALUES ({', '.join(':' + c for c in row)})", row)
    return str(row["id"])


def create(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    values = _create_values(params)
    project_path = optional_str(params, "projectPath")
    if params.get("isolated") is not None and optional_bool(params, "isolated", False):
        if project_path is None:
            raise invalid_params("isolated sessions require projectPath")
        # ADR 0329 worktrees are outside this reference; refuse before creating.
        raise HostError("WORKTREE_UNSUPPORTED", "this host cannot create isolated worktrees")
    with host.store.transaction() as db:
        values["project_id"] = _project_id(host, db, params, project_path)
        inherit = optional_str(params, "inheritPermissionFromSessionId")
        if inherit is not None:
            values["permission_mode"] = require_session(db, inherit)["permission_mode"]
        sid = insert_session(host, db, values)
        return {"session": summary(db, require_session(db, sid))}


def _create_values(params: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {
        "mode": one_of(params, "mode", MODES, "agent"),
        "permission_mode": one_of(params, "permissionMode", PERMISSION_MODES, "ask"),
        "provider_id": optional_str(params, "providerId"),
        "model_id": optional_str(params, "modelId"),
        "thinking_level": one_of(params, "thinkingLevel", THINKING_LEVELS, "off"),
        "fast_mode": int(optional_bool(params, "fastMode", False)),
    }
    if params.get("title") is not None:
        values["title"], values["title_source"] = validate_title(params["title"]), "manual"
    return values


def _project_id(host: HostCore, db: sqlite3.Connection, params: dict[str, Any], path: str | None) -> str | None:
    project_id = optional_str(params, "projectId")
    if project_id is not None:
        if db.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
            raise not_found(f"project {project_id!r} does not exist")
        return project_id
    if path is None:
        return None  # a path-less session (§5 step 5)
    return str(upsert_project(host, db, canonical_path(path, "projectPath"))["id"])


def list_(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    with host.store.transaction() as db:
        rows = db.execute(
            "SELECT s.*, p.path AS project_path FROM sessions s LEFT JOIN projects p ON p.id = s.project_id"
            " WHERE s.deleted = 0 ORDER BY s.updated_at DESC, s.seq DESC"
        ).fetchall()
        return {"sessions": [summary(db, row) for row in rows]}


def message_records(db: sqlite3.Connection, sid: str) -> list[dict[str, Any]]:
    rows = db.execute("SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (sid,)).fetchall()
    return [json.loads(row["body"]) for row in rows]


def get(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    sid = session_id(params, "sessionId", "id")
    limit = optional_int(params, "messageLimit", minimum=1)
    before = optional_int(params, "messageBefore", minimum=0)
    around = optional_str(params, "messageAround")
    if around is not None and (limit is None or before is not None):
        raise invalid_params("messageAround needs messageLimit and excludes messageBefore")
    with host.store.transaction() as db:
        result: dict[str, Any] = {"session": summary(db, require_session(db, sid))}
        messages = message_records(db, sid)
    if limit is None and before is None:
        return result | {"messages": messages}  # the complete, lossless projection
    if around is not None:
        ids = [message.get("id") for message in messages]
        if around not in ids:
            # §4: a missing id returns no session (an empty window, so a
            # reader that expects the cursors still finds them).
            empty = {"messageStart": 0, "hasMoreBefore": False, "messageEnd": 0, "hasMoreAfter": False}
            return {"session": None, "messages": []} | empty
        assert limit is not None
        start = max(0, min(ids.index(around) - limit // 2, len(messages) - limit))
        end = min(len(messages), start + limit)
    else:
        # messageBefore is an exclusive end offset, clamped to the transcript.
        end = min(before if before is not None else len(messages), len(messages))
        start = max(0, end - limit) if limit is not None else 0
    return result | {
        "messages": messages[start:end],
        "messageStart": start,
        "hasMoreBefore": start > 0,
        "messageEnd": end,
        "hasMoreAfter": end < len(messages),
    }


def rename(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    sid = session_id(params, "id", "sessionId")
    title = validate_title(params.get("title"))
    with host.store.transaction() as db:
        # updated_at, transcript and notification snapshots stay as they are.
        changed = db.execute(
            "UPDATE sessions SET title = ?, title_source = 'manual' WHERE id = ? AND deleted = 0", (title, sid)
        ).rowcount
    return {"ok": changed == 1}


def append_message(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    sid = required_str(params, "sessionId")
    message = params.get("message")
    if not isinstance(message, dict):
        raise invalid_params("message must be an object")
    source_id = required_str(message, "id")
    role = one_of(message, "role", ROLES, None)
    if role is None:
        raise invalid_params("message.role is required")
    turn_id = optional_str(params, "turnId") or optional_str(message, "turnId")
    with host.store.transaction() as db:
        if load_session(db, sid) is None:
            # D318: a queued outbox may name a session whose row is gone;
            # restore it as a stub under the same id so the queue drains.
            insert_session(host, db, {"id": sid})
        return _append(host, db, sid, source_id, role, turn_id, message)


def _append(
    host: HostCore, db: sqlite3.Connection, sid: str, source_id: str, role: str, turn_id: str | None, message: Any
) -> dict[str, Any]:
    done = db.execute("SELECT id FROM messages WHERE session_id = ? AND source_id = ?", (sid, source_id)).fetchone()
    if done is not None:  # idempotent by message id: a replay is a no-op
        return {"ok": True, "messageId": done["id"], "appended": False}
    stored_id = source_id
    if _indexed(db, stored_id):
        stored_id = f"{sid}:{source_id}"  # D444: indexed in another session
        while _indexed(db, stored_id):  # only if a client chose that very id itself
            stored_id = f"{sid}:{source_id}:{uuid.uuid4().hex[:8]}"
    body = json.dumps(message | {"id": stored_id}, ensure_ascii=False, separators=(",", ":"))
    db.execute(
        "INSERT INTO messages (id, source_id, session_id, turn_id, role, body) VALUES (?, ?, ?, ?, ?, ?)",
        (stored_id, source_id, sid, turn_id, role, body),
    )
    db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (iso(host.clock.now()), sid))
    return {"ok": True, "messageId": stored_id, "appended": True}


def _indexed(db: sqlite3.Connection, message_id: str) -> bool:
    return db.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone() is not None


def begin_turn(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    sid = required_str(params, "sessionId")
    provider, model = optional_str(params, "providerId"), optional_str(params, "modelId")
    with host.store.transaction() as db:
        require_session(db, sid)
        if params.get("sessionMessageId") is not None:
            # No collaboration deliveries exist in this reference.
            raise not_found("no queued collaboration delivery with that sessionMessageId")
        busy = running_turn(db, sid)
        if busy is not None:
            raise HostError("AGENT_BUSY", f"session already has running turn {busy['id']}")
        turn_id = f"turn_{uuid.uuid4().hex}"
        db.execute(
            "INSERT INTO turns (id, session_id, status, provider_id, model_id, started_at)"
            " VALUES (?, ?, 'running', ?, ?, ?)",
            (turn_id, sid, provider, model, iso(host.clock.now())),
        )
    return {"ok": True, "turnId": turn_id, "sessionId": sid}


def end_turn(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    turn_id = required_str(params, "turnId")
    status = one_of(params, "status", TERMINAL_STATUSES, None)
    if status is None:
        raise invalid_params("status is required")
    error_code = optional_str(params, "errorCode")
    # §4a: a missing or non-boolean createNotification means true.
    create_notification = params.get("createNotification") is not False
    usage = json.dumps(params["usage"]) if params.get("usage") is not None else None
    with host.store.transaction() as db:
        turn = db.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
        expected_session = params.get("sessionId")
        if turn is None or turn["status"] != "running" or expected_session not in (None, turn["session_id"]):
            return {"ok": False}  # missing or already terminal: nothing changes
        db.execute(
            "UPDATE turns SET status = ?, error_code = ?, usage = ?, ended_at = ? WHERE id = ?",
            (status, error_code, usage, iso(host.clock.now()), turn_id),
        )
        if status == "aborted" or not create_notification:
            return {"ok": True}
        turn = db.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
        title = db.execute("SELECT title FROM sessions WHERE id = ?", (turn["session_id"],)).fetchone()["title"]
        return {"ok": True, "notification": notifications.insert(host, db, turn, title, error_code)}


def delete(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """A soft delete: the rows stay, the session is gone from every read
    (todos.get and session.get then answer NOT_FOUND). A session with a
    running turn is refused, as projects.remove refuses one (§4)."""
    sid = session_id(params, "sessionId", "id")
    with host.store.transaction() as db:
        if load_session(db, sid) is None:
            return {"ok": False, "deleted": False}
        if running_turn(db, sid) is not None:
            raise HostError("AGENT_BUSY", "the session has a running turn")
        db.execute("UPDATE sessions SET deleted = 1 WHERE id = ?", (sid,))
    return {"ok": True, "deleted": True}


METHODS = {
    "session.delete": (delete, False),
    "session.create": (create, False),
    "session.list": (list_, False),
    "session.get": (get, False),
    "session.rename": (rename, False),
    "session.appendMessage": (append_message, False),
    "session.beginTurn": (begin_turn, False),
    "session.endTurn": (end_turn, False),
}
