"""session.fork (§4 Sessions, §8.8, §8.9; §10 items 8 and 9).

A fork is one snapshot taken under the store lock: the child gets the
source's transcript (cut inclusively at ``throughMessageId`` when given) with
new message and tool-call ids, and the source's execution configuration, but
no turns, notifications or other per-session state. It all happens in one
transaction, so a failure leaves no child behind (§8.8).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import TYPE_CHECKING, Any

from .errors import HostError, not_found
from .params import optional_str, required_str
from .sessions import insert_session, require_session, running_turn, summary, validate_title

if TYPE_CHECKING:
    from .host import HostCore

# Content blocks whose "id" is a tool-call id (pi and Anthropic spellings).
_TOOL_CALL_TYPES = ("toolCall", "tool_use", "toolUse")
_UNFINISHED = ("streaming", "error")


def fork(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    source_id = required_str(params, "sessionId")
    through = optional_str(params, "throughMessageId")
    title = validate_title(params["title"]) if params.get("title") is not None else None
    with host.store.transaction() as db:
        source = require_session(db, source_id)
        rows = db.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (source_id,)).fetchall()
        if through is not None:
            rows = _cut(rows, through)
        _check_live_turn(db, source_id, rows, through)
        child_id = insert_session(host, db, _inherited(source, title))
        _copy(db, child_id, rows)
        return {"session": summary(db, require_session(db, child_id)), "sourceSessionId": source_id}


def _cut(rows: list[sqlite3.Row], through: str) -> list[sqlite3.Row]:
    for index, row in enumerate(rows):
        if row["id"] == through:
            return rows[: index + 1]  # inclusive (§8.9)
    raise not_found(f"message {through!r} is not in the source session")


def _check_live_turn(db: sqlite3.Connection, source_id: str, rows: list[sqlite3.Row], through: str | None) -> None:
    """§4: while the source runs, only a completed assistant prefix that owns
    no message of the running turn may be forked; anything else is CONFLICT."""
    live = running_turn(db, source_id)
    if live is None:
        return
    if through is None:
        raise HostError("CONFLICT", "the source session has a running turn; fork through a completed message")
    anchor = json.loads(rows[-1]["body"])
    if anchor.get("role") != "assistant" or anchor.get("status") in _UNFINISHED or anchor.get("isError"):
        raise HostError("CONFLICT", "while the source runs, the anchor must be a completed assistant message")
    if any(row["turn_id"] == live["id"] for row in rows):
        raise HostError("CONFLICT", "the selected prefix holds messages of the running turn")


def _inherited(source: sqlite3.Row, title: str | None) -> dict[str, Any]:
    values = {
        name: source[name]
        for name in ("project_id", "mode", "permission_mode", "provider_id", "model_id", "thinking_level", "fast_mode")
    }
    values["title"], values["title_source"] = (title, "manual") if title else (source["title"], source["title_source"])
    return values


def _copy(db: sqlite3.Connection, child_id: str, rows: list[sqlite3.Row]) -> None:
    call_ids: dict[str, str] = {}
    for row in rows:
        new_id = f"msg_{uuid.uuid4().hex}"
        body = _remap_calls(json.loads(row["body"]), call_ids)
        body["id"] = new_id
        body.pop("turnId", None)  # the child starts without turns
        db.execute(
            "INSERT INTO messages (id, source_id, session_id, turn_id, role, body) VALUES (?, ?, ?, NULL, ?, ?)",
            (new_id, new_id, child_id, row["role"], json.dumps(body, ensure_ascii=False, separators=(",", ":"))),
        )


def _remap_calls(value: Any, call_ids: dict[str, str]) -> Any:
    """A copy with every tool-call id replaced, consistently across the transcript."""

    def fresh(old: str) -> str:
        return call_ids.setdefault(old, f"call_{uuid.uuid4().hex}")

    if isinstance(value, list):
        return [_remap_calls(item, call_ids) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _remap_calls(item, call_ids) for key, item in value.items()}
    for key in ("toolCallId", "parentToolCallId"):
        if isinstance(out.get(key), str):
            out[key] = fresh(out[key])
    if out.get("type") in _TOOL_CALL_TYPES and isinstance(out.get("id"), str):
        out["id"] = fresh(out["id"])
    return out


METHODS = {"session.fork": (fork, False)}
