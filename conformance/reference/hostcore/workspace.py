"""workspace.get/set/clear and projects.create/list (§4 Workspace, Projects).

The selected workspace is a mutable UI selection stored in ``settings``; it
never decides a durable session's tool root (§5 step 4). Project paths are
canonicalized (absolute, symlinks resolved) so one folder is one project.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from typing import TYPE_CHECKING, Any

from .clock import iso
from .errors import invalid_params
from .params import required_str
from .store import next_seq

if TYPE_CHECKING:
    from .host import HostCore

WORKSPACE_KEY = "workspace.path"


def canonical_path(raw: str, name: str = "path") -> str:
    if "\x00" in raw:
        raise invalid_params(f"{name} must not contain NUL")
    if not os.path.isabs(raw):
        raise invalid_params(f"{name} must be absolute, got {raw!r}")
    return os.path.realpath(raw)


def workspace_get(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    with host.store.transaction() as db:
        row = db.execute("SELECT value FROM settings WHERE key = ?", (WORKSPACE_KEY,)).fetchone()
    return {"path": row["value"] if row else None}


def workspace_set(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    path = canonical_path(required_str(params, "path"))
    if not os.path.isdir(path):
        raise invalid_params(f"workspace path is not a directory: {path}")
    with host.store.transaction() as db:
        db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (WORKSPACE_KEY, path))
    return {"ok": True, "path": path}


def workspace_clear(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    with host.store.transaction() as db:
        db.execute("DELETE FROM settings WHERE key = ?", (WORKSPACE_KEY,))
    return {"ok": True}


def upsert_project(host: HostCore, db: sqlite3.Connection, path: str) -> sqlite3.Row:
    """The project row for a canonical path, created or touched."""
    now = iso(host.clock.now())
    row = db.execute("SELECT * FROM projects WHERE path = ?", (path,)).fetchone()
    if row is None:
        name = os.path.basename(path.rstrip(os.sep)) or path
        db.execute(
            "INSERT INTO projects (id, path, name, created_at, last_opened_at, seq) VALUES (?, ?, ?, ?, ?, ?)",
            (f"prj_{uuid.uuid4().hex}", path, name, now, now, next_seq(db, "projects")),
        )
    else:
        touch = (now, next_seq(db, "projects"), row["id"])
        db.execute("UPDATE projects SET last_opened_at = ?, seq = ? WHERE id = ?", touch)
    return db.execute("SELECT * FROM projects WHERE path = ?", (path,)).fetchone()


def project_record(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "path": row["path"],
        "name": row["name"],
        "pinned": bool(row["pinned"]),
        "createdAt": row["created_at"],
        "lastOpenedAt": row["last_opened_at"],
    }


def projects_create(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    # §4: upserts the record and leaves the selected workspace alone.
    path = canonical_path(required_str(params, "path"))
    with host.store.transaction() as db:
        row = upsert_project(host, db, path)
    return {"id": row["id"], "project": project_record(row)}


def projects_list(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    # §4: pinned first, then most recently opened (seq breaks same-ms ties).
    with host.store.transaction() as db:
        rows = db.execute("SELECT * FROM projects ORDER BY pinned DESC, last_opened_at DESC, seq DESC").fetchall()
    return {"projects": [project_record(row) for row in rows]}


METHODS = {
    "workspace.get": (workspace_get, False),
    "workspace.set": (workspace_set, False),
    "workspace.clear": (workspace_clear, False),
    "projects.create": (projects_create, False),
    "projects.list": (projects_list, False),
}
