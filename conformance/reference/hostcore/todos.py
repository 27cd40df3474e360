"""The session Todo checklist: TodoWrite and todos.get (§4 Session Todo checklist).

A TodoWrite replaces the whole ordered list in one transaction and advances
the revision (even for an empty list); todos.changed carries the same
snapshot todos.get returns, emitted after the commit.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from . import limits
from .clock import iso
from .errors import HostError, not_found
from .outcome import ToolFailure
from .sessions import load_session

if TYPE_CHECKING:
    from .host import HostCore

STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")


def snapshot(db: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    row = db.execute("SELECT * FROM todos WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return {"sessionId": session_id, "todos": [], "revision": 0, "updatedAt": None}
    return {
        "sessionId": session_id,
        "todos": json.loads(row["todos"]),
        "revision": row["revision"],
        "updatedAt": row["updated_at"],
    }


def get(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    sid = params.get("sessionId")
    if not isinstance(sid, str) or not sid.strip():
        # §4 names INVALID_ARGUMENT; it shares the INVALID_PARAMS slot (1002).
        raise HostError("INVALID_ARGUMENT", "sessionId must be a non-blank string")
    with host.store.transaction() as db:
        if load_session(db, sid) is None:
            raise not_found(f"session {sid!r} does not exist")
        return snapshot(db, sid)


def normalize(args: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The checked, normalized list and any warnings; ToolFailure if malformed."""
    if not isinstance(args, dict) or set(args) != {"todos"}:
        raise ToolFailure("TodoWrite accepts exactly { todos }", "TODO_INVALID")
    items = args["todos"]
    if not isinstance(items, list):
        raise ToolFailure("todos must be an array", "TODO_INVALID")
    if len(items) > limits.TODO_MAX_ITEMS:
        raise ToolFailure(f"todos has {len(items)} items; the limit is {limits.TODO_MAX_ITEMS}", "TODO_INVALID")
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen_in_progress = False
    for index, item in enumerate(items):
        todo = _item(index, item, warnings)
        if todo["status"] == "in_progress":
            if seen_in_progress:  # only the first stays in progress
                todo["status"] = "pending"
                warnings.append(f"todos[{index}] demoted to pending: one item may be in progress")
            seen_in_progress = True
        out.append(todo)
    return out, warnings


def _item(index: int, item: Any, warnings: list[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ToolFailure(f"todos[{index}] must be an object", "TODO_INVALID")
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ToolFailure(f"todos[{index}].content must be a non-blank string", "TODO_INVALID")
    content = content.strip()
    if len(content) > limits.TODO_MAX_CONTENT_CODE_POINTS:
        content = content[: limits.TODO_MAX_CONTENT_CODE_POINTS]
        warnings.append(f"todos[{index}].content truncated to {limits.TODO_MAX_CONTENT_CODE_POINTS} characters")
    status = item.get("status", "pending")
    priority = item.get("priority") or "medium"
    if status not in STATUSES or priority not in PRIORITIES:
        raise ToolFailure(f"todos[{index}] has an unknown status or priority", "TODO_INVALID")
    todo = {"content": content, "status": status, "priority": priority}
    if isinstance(item.get("id"), str):
        todo["id"] = item["id"]
    return todo


def write(host: HostCore, session_id: str, todos: list[dict[str, Any]]) -> dict[str, Any]:
    with host.store.transaction() as db:
        current = snapshot(db, session_id)
        db.execute(
            "INSERT OR REPLACE INTO todos (session_id, todos, revision, updated_at) VALUES (?, ?, ?, ?)",
            (session_id, json.dumps(todos), current["revision"] + 1, iso(host.clock.now())),
        )
        result = snapshot(db, session_id)
    host.emit("todos.changed", result)  # after the commit
    return result


METHODS = {"todos.get": (get, False)}
