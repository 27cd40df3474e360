"""Durable state in SQLite (standard library), one file in the data directory.

Every handler works inside :meth:`Store.transaction`: one lock serializes
them (the "host RPC lock" §4 session.fork mentions) and the transaction
commits or rolls back as a whole, so a failure never leaves half a change
(§8.8: a failed fork leaves no visible session). WAL journaling keeps every
committed change across a killed process, which is what "survives restart"
needs.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA_VERSION = 1  # this reference's own layout; not a wire field (§3)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, last_opened_at TEXT NOT NULL,
    seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, project_id TEXT REFERENCES projects(id),
    title TEXT NOT NULL, title_source TEXT NOT NULL,
    mode TEXT NOT NULL, permission_mode TEXT NOT NULL,
    provider_id TEXT, model_id TEXT, thinking_level TEXT NOT NULL, fast_mode INTEGER NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, seq INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE, source_id TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id), turn_id TEXT,
    role TEXT NOT NULL, body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_source ON messages(session_id, source_id);
CREATE TABLE IF NOT EXISTS turns (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    status TEXT NOT NULL, error_code TEXT, provider_id TEXT, model_id TEXT,
    usage TEXT, started_at TEXT NOT NULL, ended_at TEXT
);
CREATE TABLE IF NOT EXISTS notifications (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE, turn_id TEXT NOT NULL, kind TEXT NOT NULL,
    session_id TEXT NOT NULL, session_title TEXT NOT NULL, error_code TEXT,
    created_at TEXT NOT NULL, read_at TEXT
);
CREATE TABLE IF NOT EXISTS plan_approvals (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, kind TEXT NOT NULL,
    title TEXT NOT NULL, question TEXT NOT NULL, markdown TEXT NOT NULL,
    status TEXT NOT NULL, version INTEGER NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at TEXT,
    resolved_at TEXT, action TEXT, target_permission_mode TEXT, error_code TEXT,
    artifact_path TEXT, artifact_sha256 TEXT, artifact_size INTEGER,
    execution_id TEXT UNIQUE, execution_state TEXT, seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS todos (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    todos TEXT NOT NULL, revision INTEGER NOT NULL, updated_at TEXT
);
"""


class Store:
    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "hostcore.sqlite3"
        # One connection shared by the handler threads, always under _lock.
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a commit survives a killed process (not a power cut).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def next_seq(db: sqlite3.Connection, table: str) -> int:
    """A monotonic insertion counter for tables ordered by recency, so rows
    created within the same millisecond still order deterministically."""
    row = db.execute(f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}").fetchone()
    return int(row[0])
