"""The durable notification inbox (§4a, protocol v4; §10 items 6 and 7).

A row is inserted only by session.endTurn, in the same transaction that
makes the turn terminal, so one terminal turn yields at most one row; the
inbox keeps the newest NOTIFICATION_LIMIT rows. No server notification is
emitted: the row travels back in the endTurn result (§4a).
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import TYPE_CHECKING, Any

from . import limits
from .clock import iso
from .params import optional_bool, optional_int, required_str

if TYPE_CHECKING:
    from .host import HostCore


def insert(
    host: HostCore, db: sqlite3.Connection, turn: sqlite3.Row, title: str, error_code: str | None
) -> dict[str, Any]:
    failed = turn["status"] == "error"
    row = {
        "id": f"ntf_{uuid.uuid4().hex}",  # a later terminal turn gets a new id (§4a)
        "kind": "task.failed" if failed else "task.completed",
        "session_id": turn["session_id"],
        "session_title": title,  # the snapshot; a later rename leaves it (§4)
        "turn_id": turn["id"],
        "error_code": error_code if failed else None,
        "created_at": iso(host.clock.now()),
    }
    db.execute(
        "INSERT INTO notifications (id, kind, session_id, session_title, turn_id, error_code, created_at)"
        " VALUES (:id, :kind, :session_id, :session_title, :turn_id, :error_code, :created_at)",
        row,
    )
    # §4a / §10.7: bounded to the newest 200 durable rows.
    db.execute(
        "DELETE FROM notifications WHERE seq NOT IN (SELECT seq FROM notifications ORDER BY seq DESC LIMIT ?)",
        (limits.NOTIFICATION_LIMIT,),
    )
    return record(db.execute("SELECT * FROM notifications WHERE id = ?", (row["id"],)).fetchone())


def record(row: sqlite3.Row) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row["id"],
        "kind": row["kind"],
        "sessionId": row["session_id"],
        "sessionTitle": row["session_title"],
        "turnId": row["turn_id"],
        "createdAt": row["created_at"],
        "readAt": row["read_at"],
    }
    if row["error_code"] is not None:
        out["errorCode"] = row["error_code"]
    return out


def list_(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    unread_only = optional_bool(params, "unreadOnly", False)
    limit = min(optional_int(params, "limit", minimum=1) or limits.NOTIFICATION_LIMIT, limits.NOTIFICATION_LIMIT)
    where = "WHERE read_at IS NULL" if unread_only else ""
    with host.store.transaction() as db:
        rows = db.execute(f"SELECT * FROM notifications {where} ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        # unreadCount is global, whatever the filter (§4a).
        unread = db.execute("SELECT COUNT(*) FROM notifications WHERE read_at IS NULL").fetchone()[0]
    return {"notifications": [record(row) for row in rows], "unreadCount": int(unread)}


def mark_read(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    notification_id = required_str(params, "id")
    with host.store.transaction() as db:
        exists = db.execute("SELECT 1 FROM notifications WHERE id = ?", (notification_id,)).fetchone()
        # Idempotent: an already-read row stays read and still answers ok.
        db.execute(
            "UPDATE notifications SET read_at = ? WHERE id = ? AND read_at IS NULL",
            (iso(host.clock.now()), notification_id),
        )
    return {"ok": exists is not None}


def mark_all_read(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    with host.store.transaction() as db:
        db.execute("UPDATE notifications SET read_at = ? WHERE read_at IS NULL", (iso(host.clock.now()),))
    return {"ok": True}


def clear(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    # Inbox rows only: turns stay terminal, so none becomes eligible again.
    with host.store.transaction() as db:
        db.execute("DELETE FROM notifications")
    return {"ok": True}


METHODS = {
    "notification.list": (list_, False),
    "notification.markRead": (mark_read, False),
    "notification.markAllRead": (mark_all_read, False),
    "notification.clear": (clear, False),
}
