"""Host RPC §4 / §4a: session, notification and todo results.

Sans-IO and stateless; paths are relative to the value handed in.

Decisions where the text leaves room (never stricter than the text):
* session.list may answer an array of summaries or an object holding a
  ``sessions`` array; each summary needs an integer ``messageCount`` >= 0 and
  a ``thinkingLevel`` (RPC-4-thinking-levels; ``omit`` is accepted beside the
  canonical levels because session.configure stores it).
* session.create's result is not documented beyond creating the session: a
  session id must be findable (:func:`session_id`); defaults (thinking off,
  fastMode false) are judged only where the result shows those members.
* session.get: a window was requested when any of messageBefore,
  messageLimit, contentLimit or messageAround was sent; then messageStart,
  messageEnd (integers) and hasMoreBefore, hasMoreAfter (booleans) are due.
  An unwindowed read must not carry navigationParent.
* session.rename: the title is trimmed (Unicode whitespace, as
  ``str.strip``) and counted in code points; 1..80 is valid. An invalid
  title must be refused with INVALID_PARAMS; a valid one answered {ok}.
* session.endTurn inserts a notification exactly when the turn was running,
  the status is completed or error, and createNotification is not ``false``
  (missing or non-boolean counts as true).
* notification.list: newest first is judged on ``createdAt`` (equal times
  pass); the bound is min(limit, 200) when a positive integer limit is sent.
* todos.get: ``updatedAt`` may be null for a checklist never written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from . import rpc_limits
from .describe import Path, kind
from .members import (
    enum_member,
    excerpt,
    expected_object,
    integer_member,
    is_integer,
    name,
    nullable_string_member,
    string_member,
)
from .rpc_errors import error_code_of
from .rpc_shapes import array_member, non_objects, number_member, objects, parse_time, timestamp_member
from .violations import Finding, Violation, rule

WINDOW_OPTIONS = ("messageBefore", "messageLimit", "contentLimit", "messageAround")


def _summaries(result: object, requirement: str) -> Iterator[Violation]:
    summaries, path = (result.get("sessions"), ("sessions",)) if isinstance(result, dict) else (result, ())
    if not isinstance(summaries, list):
        yield Violation(
            requirement, f"{name('result', path)} is {kind(summaries)}; expected an array of sessions", path
        )


def _summary_items(result: object) -> list[tuple[Path, dict[str, object]]]:
    summaries, path = (result.get("sessions"), ("sessions",)) if isinstance(result, dict) else (result, ())
    return [((*path, i), s) for i, s in objects(summaries)]


@rule("RPC-4-session.list")
def session_list_shape(result: object) -> Iterator[Violation]:
    yield from _summaries(result, "RPC-4-session.list")
    summaries = result.get("sessions") if isinstance(result, dict) else result
    yield from non_objects(summaries, "RPC-4-session.list", "result", ("sessions",) if isinstance(result, dict) else ())
    for path, summary in _summary_items(result):
        yield from integer_member(
            summary, "messageCount", "RPC-4-session.list", "result", path, required=True, minimum=0
        )


def thinking_level_problems(details: Mapping[str, object], root: str, path: Path) -> Iterator[Violation]:
    levels = rpc_limits.CONFIGURE_THINKING_LEVELS
    yield from enum_member(details, "thinkingLevel", levels, "RPC-4-thinking-levels", root, path, required=True)


@rule("RPC-4-thinking-levels")
def session_thinking_levels(result: object) -> Iterator[Violation]:
    for path, summary in _summary_items(result):
        yield from thinking_level_problems(summary, "result", path)


def session_list_result(result: object) -> Iterator[Finding]:
    yield from session_list_shape(result)
    yield from session_thinking_levels(result)


def session_id(result: object) -> str | None:
    """The id of the session a session.create result names, if any."""
    if not isinstance(result, dict):
        return result if isinstance(result, str) else None
    for holder in (result, result.get("session")):
        if isinstance(holder, dict):
            for key in ("sessionId", "id"):
                if isinstance(holder.get(key), str):
                    return str(holder[key])
    return None


@rule("RPC-4-session.create")
def session_create_result(result: object, *, params: Mapping[str, Any] | None = None) -> Iterator[Violation]:
    if session_id(result) is None:
        yield Violation("RPC-4-session.create", f"result is {kind(result)} naming no session (id or sessionId string)")
        return
    sent = params or {}
    details = result.get("session") if isinstance(result, dict) and isinstance(result.get("session"), dict) else result
    if not isinstance(details, dict):
        return
    path: Path = ("session",) if details is not result else ()
    defaults = (("thinkingLevel", "off"), ("fastMode", False))
    for key, default in defaults:
        if sent.get(key) is None and key in details and details[key] != default:
            where = (*path, key)
            message = f"{name('result', where)} is {excerpt(details[key])}; {key} was not sent, so it is {default!r}"
            yield Violation("RPC-4-session.create", message, where)


@rule("RPC-4-session.get")
def session_get_result(result: object, *, params: Mapping[str, Any] | None = None) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-session.get", "result")
        return
    sent = params or {}
    if any(sent.get(key) is not None for key in WINDOW_OPTIONS):
        for key in ("messageStart", "messageEnd"):
            yield from integer_member(result, key, "RPC-4-session.get", "result", required=True, minimum=0)
        for key in ("hasMoreBefore", "hasMoreAfter"):
            if not isinstance(result.get(key), bool):
                shown = "absent" if key not in result else kind(result[key])
                yield Violation(
                    "RPC-4-session.get", f"result.{key} is {shown}; a windowed read returns a boolean", (key,)
                )
    elif "navigationParent" in result:
        yield Violation(
            "RPC-4-session.get", "result has navigationParent; an unwindowed read omits it", ("navigationParent",)
        )


def title_is_valid(title: object) -> bool:
    """Whether session.rename must accept ``title`` (trimmed, 1..80 code points)."""
    if not isinstance(title, str):
        return False
    length = len(title.strip())  # Python strings index code points
    return rpc_limits.SESSION_TITLE_MIN_CODE_POINTS <= length <= rpc_limits.SESSION_TITLE_MAX_CODE_POINTS


@rule("RPC-4-session.rename")
def rename_result(response: object, *, title: object) -> Iterator[Violation]:
    """A whole session.rename response to a call that sent ``title``."""
    if not isinstance(response, dict):
        return
    length = len(title.strip()) if isinstance(title, str) else None
    if not title_is_valid(title):
        what = f"{length} code points after trimming" if length is not None else kind(title)
        if "error" not in response:
            yield Violation("RPC-4-session.rename", f"a title of {what} was accepted; expected INVALID_PARAMS")
        elif error_code_of(response["error"]) != "INVALID_PARAMS":
            got = excerpt(error_code_of(response["error"]))
            yield Violation(
                "RPC-4-session.rename", f"a title of {what} was refused with {got}; expected INVALID_PARAMS"
            )
        return
    if "error" in response:
        got = excerpt(error_code_of(response["error"]))
        yield Violation("RPC-4-session.rename", f"a valid title of {length} code points was refused with {got}")
    elif not isinstance(response.get("result"), dict) or not isinstance(response["result"].get("ok"), bool):
        yield Violation("RPC-4-session.rename", "session.rename answered without a boolean ok", ("result",))


@rule("RPC-4-session.beginTurn")
def begin_turn_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-session.beginTurn", "result")
        return
    yield from string_member(result, "turnId", "RPC-4-session.beginTurn", "result", required=False)


def notification_problems(value: object, root: str, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "RPC-4-notification-shape", root, path)
        return
    for key in ("id", "sessionId", "sessionTitle", "turnId"):
        yield from string_member(value, key, "RPC-4-notification-shape", root, path, required=True)
    yield from enum_member(
        value, "kind", rpc_limits.NOTIFICATION_KINDS, "RPC-4-notification-shape", root, path, required=True
    )
    yield from timestamp_member(value, "createdAt", "RPC-4-notification-shape", root, path, required=True)
    yield from string_member(value, "errorCode", "RPC-4-notification-shape", root, path, required=False)
    yield from nullable_string_member(value, "readAt", "RPC-4-notification-shape", root, path)


@rule("RPC-4-notification-shape")
def notification_shape(notification: object) -> Iterator[Violation]:
    yield from notification_problems(notification, "notification", ())


@rule("RPC-4-session.endTurn")
def end_turn_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-session.endTurn", "result")
        return
    if not isinstance(result.get("ok"), bool):
        shown = "absent" if "ok" not in result else kind(result["ok"])
        yield Violation("RPC-4-session.endTurn", f"result.ok is {shown}; expected a boolean", ("ok",))
    if result.get("notification") is not None:
        yield from notification_problems(result["notification"], "result", ("notification",))


def notification_due(*, was_running: bool, status: object, create_notification: object) -> bool:
    """Whether session.endTurn must insert (and return) a notification."""
    return was_running and status in rpc_limits.NOTIFYING_STATUSES and create_notification is not False


@rule("RPC-4-session.endTurn-notification-rule")
def end_turn_notification(
    result: object, *, was_running: bool, status: object, create_notification: object = None
) -> Iterator[Violation]:
    """Whether an endTurn result carries a notification exactly when due."""
    if not isinstance(result, dict):
        return
    due = notification_due(was_running=was_running, status=status, create_notification=create_notification)
    has = result.get("notification") is not None
    if due and not has:
        yield Violation(
            "RPC-4-session.endTurn-notification-rule",
            f"no notification returned for a running turn ending {excerpt(status)}",
        )
    elif has and not due:
        why = "the turn was not running" if not was_running else f"status {excerpt(status)}"
        if create_notification is False:
            why = "createNotification was false"
        yield Violation(
            "RPC-4-session.endTurn-notification-rule", f"a notification was returned although {why}", ("notification",)
        )


@rule("RPC-4-notification.list")
def notification_list_result(result: object, *, limit: object = None, unread_only: bool = False) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-notification.list", "result")
        return
    yield from array_member(result, "notifications", "RPC-4-notification.list", "result", required=True)
    yield from integer_member(result, "unreadCount", "RPC-4-notification.list", "result", required=True, minimum=0)
    rows = result.get("notifications")
    if not isinstance(rows, list):
        return
    bound = rpc_limits.MAX_NOTIFICATIONS
    if is_integer(limit) and isinstance(limit, int | float) and limit > 0:
        bound = min(bound, int(limit))
    if len(rows) > bound:
        yield Violation(
            "RPC-4-notification.list", f"result.notifications has {len(rows):,} rows; limit {bound}", ("notifications",)
        )
    for index, row in enumerate(rows):
        yield from notification_problems(row, "result", ("notifications", index))
        if unread_only and isinstance(row, dict) and row.get("readAt") is not None:
            where = ("notifications", index, "readAt")
            yield Violation(
                "RPC-4-notification.list", f"{name('result', where)} is set although unreadOnly was asked", where
            )
    yield from _newest_first(rows)


def _newest_first(rows: list[object]) -> Iterator[Violation]:
    stamps = [(i, row.get("createdAt")) for i, row in objects(rows)]
    times = [(i, parse_time(s)) for i, s in stamps if isinstance(s, str)]
    known = [(i, t) for i, t in times if t is not None]
    for (i, newer), (j, older) in zip(known, known[1:], strict=False):
        try:
            wrong = older > newer
        except TypeError:  # offset-aware next to naive: not comparable, not judged
            continue
        if wrong:
            message = f"result.notifications[{j}] is newer than result.notifications[{i}]; expected newest first"
            yield Violation("RPC-4-notification.list", message, ("notifications", j, "createdAt"))


def _ok(result: object, requirement: str, *, must_be_true: bool) -> Iterator[Violation]:
    ok = result.get("ok") if isinstance(result, dict) else None
    if not isinstance(ok, bool) or (must_be_true and ok is not True):
        shown = kind(result) if not isinstance(result, dict) else ("absent" if "ok" not in result else excerpt(ok))
        wanted = "true" if must_be_true else "a boolean"
        yield Violation(requirement, f"result.ok is {shown}; expected {wanted}", ("ok",))


@rule("RPC-4-notification.markRead")
def mark_read_result(result: object, *, known_id: bool | None = None) -> Iterator[Violation]:
    """``known_id``: whether the id exists (ok must then be true; unknown: false)."""
    yield from _ok(result, "RPC-4-notification.markRead", must_be_true=False)
    ok = result.get("ok") if isinstance(result, dict) else None
    if known_id is not None and isinstance(ok, bool) and ok is not known_id:
        why = "the notification exists (read or not)" if known_id else "no notification has that id"
        yield Violation("RPC-4-notification.markRead", f"result.ok is {str(ok).lower()} although {why}", ("ok",))


@rule("RPC-4-notification.markAllRead")
def mark_all_read_result(result: object) -> Iterator[Violation]:
    yield from _ok(result, "RPC-4-notification.markAllRead", must_be_true=True)


@rule("RPC-4-notification.clear")
def clear_result(result: object) -> Iterator[Violation]:
    yield from _ok(result, "RPC-4-notification.clear", must_be_true=True)


@rule("RPC-4-todos.get")
def todos_result(result: object, *, session_id: str | None = None) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-todos.get", "result")
        return
    yield from string_member(result, "sessionId", "RPC-4-todos.get", "result", required=True)
    if session_id is not None and isinstance(result.get("sessionId"), str) and result["sessionId"] != session_id:
        message = f"result.sessionId is {excerpt(result['sessionId'])}; the call named {session_id!r}"
        yield Violation("RPC-4-todos.get", message, ("sessionId",))
    yield from array_member(result, "todos", "RPC-4-todos.get", "result", required=True)
    yield from number_member(result, "revision", "RPC-4-todos.get", "result", required=True)
    if "updatedAt" not in result:
        yield Violation("RPC-4-todos.get", "result has no updatedAt; expected a time or null")
    else:
        yield from timestamp_member(result, "updatedAt", "RPC-4-todos.get", "result", required=False)
