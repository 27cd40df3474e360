"""Host RPC §4/§4a: session, notification and todo results."""

from __future__ import annotations

from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given

from conformance.protocol import rpc_limits
from conformance.protocol import rpc_session as s
from conformance.protocol.violations import Exercise, Violation

NOTE = {
    "id": "n1",
    "kind": "task.completed",
    "sessionId": "s1",
    "sessionTitle": "Chat",
    "turnId": "t1",
    "createdAt": "2026-12-01T10:00:00Z",
    "readAt": None,
}
SUMMARY = {"id": "s1", "title": "Chat", "messageCount": 0, "thinkingLevel": "off"}


def broken(findings: Any) -> list[str]:
    out = list(findings)
    assert any(isinstance(f, Exercise) for f in out)
    return sorted({f.requirement for f in out if isinstance(f, Violation)})


def test_session_list() -> None:
    assert broken(s.session_list_result([SUMMARY])) == []
    assert broken(s.session_list_result({"sessions": [SUMMARY, {**SUMMARY, "thinkingLevel": "omit"}]})) == []
    assert broken(s.session_list_result([{**SUMMARY, "messageCount": -1}])) == ["RPC-4-session.list"]
    assert broken(s.session_list_result([{**SUMMARY, "messageCount": "3"}])) == ["RPC-4-session.list"]
    assert broken(s.session_list_result({"items": []})) == ["RPC-4-session.list"]
    assert broken(s.session_list_result([{**SUMMARY, "thinkingLevel": "huge"}])) == ["RPC-4-thinking-levels"]
    no_level = {k: v for k, v in SUMMARY.items() if k != "thinkingLevel"}
    assert broken(s.session_list_result([no_level])) == ["RPC-4-thinking-levels"]


def test_session_create() -> None:
    assert broken(s.session_create_result({"session": {**SUMMARY, "fastMode": False}})) == []
    assert broken(s.session_create_result({"sessionId": "s1"}, params={})) == []
    assert (
        broken(s.session_create_result({"id": "s1", "thinkingLevel": "high"}, params={"thinkingLevel": "high"})) == []
    )
    assert broken(s.session_create_result({"id": "s1", "thinkingLevel": "high"}, params={})) == ["RPC-4-session.create"]
    assert broken(s.session_create_result({"session": {"id": "s1", "fastMode": True}})) == ["RPC-4-session.create"]
    assert broken(s.session_create_result({"ok": True})) == ["RPC-4-session.create"]


def test_session_get() -> None:
    window = {"messageStart": 0, "messageEnd": 5, "hasMoreBefore": False, "hasMoreAfter": True, "messages": []}
    assert broken(s.session_get_result({"messages": []}, params={"sessionId": "s1"})) == []
    assert broken(s.session_get_result(window, params={"messageLimit": 5})) == []
    assert broken(s.session_get_result({"messages": []}, params={"messageLimit": 5})) == ["RPC-4-session.get"]
    assert broken(s.session_get_result({**window, "hasMoreAfter": None}, params={"contentLimit": 9})) == [
        "RPC-4-session.get"
    ]
    assert broken(s.session_get_result({"navigationParent": {}}, params={})) == ["RPC-4-session.get"]


def ok() -> dict[str, Any]:
    return {"id": 1, "result": {"ok": True}}


def invalid() -> dict[str, Any]:
    return {"id": 1, "error": {"code": 1002, "message": "m", "data": {"errorCode": "INVALID_PARAMS"}}}


MAX = rpc_limits.SESSION_TITLE_MAX_CODE_POINTS


@pytest.mark.parametrize(
    ("title", "valid"),
    [
        ("", False),
        ("   ", False),  # blank after trimming
        ("a", True),
        ("😀" * (MAX - 1), True),  # code points, not UTF-16 units or bytes
        ("😀" * MAX, True),
        ("😀" * (MAX + 1), False),
        ("  " + "x" * MAX + "  ", True),  # trimmed first
        (None, False),
    ],
)
def test_rename_title_bound(title: object, valid: bool) -> None:
    assert s.title_is_valid(title) is valid
    assert broken(s.rename_result(ok() if valid else invalid(), title=title)) == []
    assert broken(s.rename_result(invalid() if valid else ok(), title=title)) == ["RPC-4-session.rename"]


def test_rename_needs_a_boolean_ok_and_the_right_refusal() -> None:
    assert broken(s.rename_result({"id": 1, "result": {}}, title="x")) == ["RPC-4-session.rename"]
    conflict = {"id": 1, "error": {"code": 1008, "message": "m", "data": {"errorCode": "CONFLICT"}}}
    assert broken(s.rename_result(conflict, title="")) == ["RPC-4-session.rename"]


def test_begin_and_end_turn() -> None:
    assert broken(s.begin_turn_result({"turnId": "t1"})) == []
    assert broken(s.begin_turn_result({"turnId": 5})) == ["RPC-4-session.beginTurn"]
    assert broken(s.end_turn_result({"ok": True, "notification": NOTE})) == []
    assert broken(s.end_turn_result({"ok": False})) == []
    assert broken(s.end_turn_result({"notification": NOTE})) == ["RPC-4-session.endTurn"]
    assert broken(s.end_turn_result({"ok": True, "notification": {**NOTE, "kind": "task.aborted"}})) == [
        "RPC-4-notification-shape"
    ]


@pytest.mark.parametrize(
    ("was_running", "status", "create", "due"),
    [
        (True, "completed", None, True),
        (True, "error", True, True),
        (True, "completed", "no", True),  # non-boolean counts as true
        (True, "completed", False, False),
        (True, "aborted", True, False),
        (False, "completed", True, False),  # already terminal
    ],
)
def test_end_turn_notification_rule(was_running: bool, status: str, create: object, due: bool) -> None:
    assert s.notification_due(was_running=was_running, status=status, create_notification=create) is due
    with_note, without = {"ok": True, "notification": NOTE}, {"ok": was_running}
    kwargs = {"was_running": was_running, "status": status, "create_notification": create}
    assert broken(s.end_turn_notification(with_note if due else without, **kwargs)) == []
    wrong = without if due else with_note
    assert broken(s.end_turn_notification(wrong, **kwargs)) == ["RPC-4-session.endTurn-notification-rule"]


@pytest.mark.parametrize(
    "change",
    [{"kind": "done"}, {"createdAt": "now"}, {"readAt": 0}, {"errorCode": 1}, {"sessionTitle": None}],
)
def test_bad_notifications(change: dict[str, Any]) -> None:
    assert broken(s.notification_shape({**NOTE, **change})) == ["RPC-4-notification-shape"]


def rows(n: int) -> list[dict[str, Any]]:
    # newest first: minutes count down
    return [
        {**NOTE, "id": f"n{i}", "createdAt": f"2026-12-01T{(n - i) // 60:02d}:{(n - i) % 60:02d}:00Z"} for i in range(n)
    ]


LIMIT = rpc_limits.MAX_NOTIFICATIONS


@pytest.mark.parametrize(("count", "ok"), [(LIMIT - 1, True), (LIMIT, True), (LIMIT + 1, False)])
def test_notification_list_bound(count: int, ok: bool) -> None:
    result = {"notifications": rows(count), "unreadCount": count}
    assert broken(s.notification_list_result(result)) == ([] if ok else ["RPC-4-notification.list"])


@pytest.mark.parametrize(("limit", "ok"), [(4, False), (5, True), (6, True), (0, True), ("5", True)])
def test_notification_list_honours_a_smaller_limit(limit: object, ok: bool) -> None:
    # 5 rows against limit N-1/N/N+1; a limit that is not a positive integer falls back to 200
    result = {"notifications": rows(5), "unreadCount": 5}
    assert broken(s.notification_list_result(result, limit=limit)) == ([] if ok else ["RPC-4-notification.list"])


def test_notification_list_order_and_filter() -> None:
    backwards = {"notifications": list(reversed(rows(3))), "unreadCount": 0}
    assert broken(s.notification_list_result(backwards)) == ["RPC-4-notification.list"]
    read = {"notifications": [{**NOTE, "readAt": "2026-12-01T11:00:00Z"}], "unreadCount": 0}
    assert broken(s.notification_list_result(read)) == []
    assert broken(s.notification_list_result(read, unread_only=True)) == ["RPC-4-notification.list"]
    assert broken(s.notification_list_result({"notifications": []})) == ["RPC-4-notification.list"]


def test_mark_read_mark_all_clear() -> None:
    assert broken(s.mark_read_result({"ok": True}, known_id=True)) == []
    assert broken(s.mark_read_result({"ok": False}, known_id=False)) == []
    assert broken(s.mark_read_result({"ok": False}, known_id=True)) == ["RPC-4-notification.markRead"]
    assert broken(s.mark_read_result({"ok": True}, known_id=False)) == ["RPC-4-notification.markRead"]
    assert broken(s.mark_read_result({})) == ["RPC-4-notification.markRead"]
    assert broken(s.mark_all_read_result({"ok": True})) == []
    assert broken(s.mark_all_read_result({"ok": False})) == ["RPC-4-notification.markAllRead"]
    assert broken(s.clear_result({"ok": True})) == []
    assert broken(s.clear_result(None)) == ["RPC-4-notification.clear"]


def test_todos() -> None:
    snapshot = {"sessionId": "s1", "todos": [], "revision": 0, "updatedAt": None}
    assert broken(s.todos_result(snapshot, session_id="s1")) == []
    assert broken(s.todos_result({**snapshot, "updatedAt": "2026-12-01T10:00:00Z"})) == []
    assert broken(s.todos_result(snapshot, session_id="s2")) == ["RPC-4-todos.get"]
    for change in ({"todos": {}}, {"revision": "1"}, {"updatedAt": "soon"}):
        assert broken(s.todos_result({**snapshot, **change})) == ["RPC-4-todos.get"]
    assert broken(s.todos_result({k: v for k, v in snapshot.items() if k != "updatedAt"})) == ["RPC-4-todos.get"]


CHECKS: list[Any] = [
    s.session_list_result,
    s.session_create_result,
    s.session_get_result,
    s.begin_turn_result,
    s.end_turn_result,
    s.notification_shape,
    s.notification_list_result,
    s.mark_read_result,
    s.mark_all_read_result,
    s.clear_result,
    s.todos_result,
]


@given(
    value=json_values(
        keys=["sessions", "session", "notifications", "notification", "createdAt", "ok", "todos", "messageCount"]
    )
)
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
