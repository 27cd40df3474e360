"""Deliberate faults for the faulty host-core fixtures (``--fault NAME``).

Each fault breaks exactly one rule of the document, so the certification
can be shown to catch it (fixtures/hostcores/<name>/expect.toml). They live
here, as a wrapper around :meth:`HostCore.call`, so the normal code paths
carry no trace of them; with no ``--fault`` none of this runs.
"""

from __future__ import annotations

import json
import logging
import os
import select
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from conformance.protocol.framing import Frame, FrameEvent
from conformance.reference.extension.jsonrpc import Request
from conformance.reference.extension.writer import FrameWriter

from . import limits, plans
from .admission import Admission, Budget
from .errors import METHOD_NOT_FOUND, PARSE_ERROR, HostError
from .host import HostCore
from .server import Server

log = logging.getLogger(__name__)

Call = Callable[[str, Any], Any]  # the reference's own HostCore.call
Fault = Callable[[Call, str, Any], Any]


class BareError(HostError):
    """An error answered with a chosen numeric code and data (or none)."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None) -> None:
        super().__init__("INTERNAL", message)
        self.code = code
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _result(outcome: Any, change: Callable[[dict[str, Any]], object]) -> Any:
    if isinstance(outcome, dict):
        change(outcome)
    return outcome


def accepts_any_version(call: Call, name: str, params: Any) -> Any:
    if name == "app.handshake" and isinstance(params, dict):
        params = {**params, "protocolVersion": limits.PROTOCOL_VERSION}
    return call(name, params)


def a2a_capability(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "app.handshake":
        return _result(outcome, lambda r: r.update(capabilities=["a2a"]))
    return outcome


def handshake_says_v10(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "app.handshake":
        return _result(outcome, lambda r: r.update(protocolVersion=limits.PROTOCOL_VERSION - 1))
    return outcome


def busy_without_errorcode(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if isinstance(outcome, HostError) and outcome.error_code == "AGENT_BUSY":
        return BareError(1008, outcome.message, None)
    return outcome


def busy_wrong_code(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if isinstance(outcome, HostError) and outcome.error_code == "AGENT_BUSY":
        return BareError(1002, outcome.message, {"errorCode": "AGENT_BUSY"})
    return outcome


def unknown_method_not_found(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if isinstance(outcome, HostError) and type(outcome).__name__ == "UnknownMethod":
        return HostError("NOT_FOUND", outcome.message)
    return outcome


def health_not_ok(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "app.health":
        return _result(outcome, lambda r: r.update(ok=False))
    return outcome


def health_without_budget(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "app.health":
        return _result(outcome, lambda r: r.pop("toolBudget", None))
    return outcome


def array_params_accepted(call: Call, name: str, params: Any) -> Any:
    return call(name, {} if isinstance(params, list) else params)


def rename_takes_any_title(call: Call, name: str, params: Any) -> Any:
    if name == "session.rename" and isinstance(params, dict) and not str(params.get("title", "")).strip():
        params = {**params, "title": "untitled"}
    return call(name, params)


def append_not_idempotent(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.appendMessage":
        return _result(outcome, lambda r: r.update(appended=True))
    return outcome


def end_turn_hides_notification(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.endTurn":
        return _result(outcome, lambda r: r.pop("notification", None))
    return outcome


def notifications_oldest_first(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "notification.list":
        return _result(outcome, lambda r: r.get("notifications", []).reverse())
    return outcome


def unread_count_off_by_one(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "notification.list":
        return _result(outcome, lambda r: r.update(unreadCount=int(r.get("unreadCount", 0)) + 1))
    return outcome


def mark_read_once(call: Call, name: str, params: Any) -> Any:
    """markRead of a row already read answers ok false."""
    if name == "notification.markRead":
        listing = call("notification.list", {})
        rows = listing.get("notifications", []) if isinstance(listing, dict) else []
        target = params.get("id") if isinstance(params, dict) else None
        if any(row.get("id") == target and row.get("readAt") is not None for row in rows):
            return {"ok": False}
    return call(name, params)


def repeats_notification(call: Call, name: str, params: Any) -> Any:
    """A repeated endTurn of an ended turn returns the turn's notification again."""
    outcome = call(name, params)
    if name == "session.endTurn" and isinstance(outcome, dict) and "notification" not in outcome:
        listing = call("notification.list", {})
        rows = listing.get("notifications", []) if isinstance(listing, dict) else []
        turn = params.get("turnId") if isinstance(params, dict) else None
        outcome["notification"] = next((row for row in rows if row.get("turnId") == turn), None)
    return outcome


def bogus_thinking_level(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.list" and isinstance(outcome, dict):
        for summary in outcome.get("sessions", []):
            summary["thinkingLevel"] = "extreme"
    return outcome


def numeric_turn_id(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.beginTurn":
        return _result(outcome, lambda r: r.update(turnId=7))
    return outcome


def end_turn_ok_string(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.endTurn":
        return _result(outcome, lambda r: r.update(ok="yes"))
    return outcome


def create_thinks_high(call: Call, name: str, params: Any) -> Any:
    """session.create answers thinkingLevel "high" although none was sent (the default is off)."""
    outcome = call(name, params)
    if name == "session.create" and isinstance(outcome, dict) and isinstance(outcome.get("session"), dict):
        outcome["session"]["thinkingLevel"] = "high"
    return outcome


def dies_on_session_create(call: Call, name: str, params: Any) -> Any:
    if name == "session.create":
        os._exit(3)  # mid-call: the request is never answered
    return call(name, params)


FAULTS: dict[str, Fault] = {
    "repeats-notification": repeats_notification,
    "bogus-thinking-level": bogus_thinking_level,
    "numeric-turn-id": numeric_turn_id,
    "end-turn-ok-string": end_turn_ok_string,
    "create-thinks-high": create_thinks_high,
    "dies-on-session-create": dies_on_session_create,
    "accepts-any-version": accepts_any_version,
    "a2a-capability": a2a_capability,
    "handshake-says-v10": handshake_says_v10,
    "busy-without-errorcode": busy_without_errorcode,
    "busy-wrong-code": busy_wrong_code,
    "unknown-method-not-found": unknown_method_not_found,
    "health-not-ok": health_not_ok,
    "health-without-budget": health_without_budget,
    "array-params-accepted": array_params_accepted,
    "rename-takes-any-title": rename_takes_any_title,
    "append-not-idempotent": append_not_idempotent,
    "end-turn-hides-notification": end_turn_hides_notification,
    "notifications-oldest-first": notifications_oldest_first,
    "unread-count-off-by-one": unread_count_off_by_one,
    "mark-read-once": mark_read_once,
}
# -- faults of tools, permissions, plans, forks and todos (§4-§6, §10 items 3-13) ----------


def _rewrite_result(method: str, change: Callable[[dict[str, Any]], object]) -> Fault:
    """A fault that edits one method's result (an object) in place."""

    def fault(call: Call, name: str, params: Any) -> Any:
        outcome = call(name, params)
        return _result(outcome, change) if name == method else outcome

    return fault


def _replace_result(method: str, value: Any) -> Fault:
    def fault(call: Call, name: str, params: Any) -> Any:
        outcome = call(name, params)
        return value if name == method and not isinstance(outcome, HostError) else outcome

    return fault


def _tool_result(tool: str, change: Callable[[dict[str, Any]], object]) -> Fault:
    """A fault that edits the tools.execute results of one tool."""

    def fault(call: Call, name: str, params: Any) -> Any:
        outcome = call(name, params)
        if name == "tools.execute" and isinstance(params, dict) and params.get("toolName") == tool:
            return _result(outcome, change)
        return outcome

    return fault


def _session_root(call: Call, session_id: object) -> str | None:
    listing = call("session.list", {})
    for summary in listing.get("sessions", []) if isinstance(listing, dict) else []:
        if summary.get("id") == session_id:
            return summary.get("projectPath")
    return None


def workspace_root(call: Call, name: str, params: Any) -> Any:
    """Relative tool paths resolve against the selected workspace."""
    if name == "tools.execute" and isinstance(params, dict) and isinstance(params.get("args"), dict):
        path = params["args"].get("path")
        selected = call("workspace.get", {})
        folder = selected.get("path") if isinstance(selected, dict) else None
        if isinstance(path, str) and not os.path.isabs(path) and folder:
            params = {**params, "args": {**params["args"], "path": os.path.join(folder, path)}}
    return call(name, params)


def projects_create_selects(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "projects.create" and isinstance(outcome, dict):
        call("workspace.set", {"path": outcome.get("project", {}).get("path")})
    return outcome


def missing_session_runs(call: Call, name: str, params: Any) -> Any:
    """A tool call for an unknown session runs under the newest session's root."""
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, HostError) and outcome.error_code == "SESSION_NOT_FOUND":
        listing = call("session.list", {})
        rooted = [s for s in listing.get("sessions", []) if s.get("projectPath")] if isinstance(listing, dict) else []
        if rooted:
            return call(name, {**params, "sessionId": rooted[0]["id"]})
    return outcome


def pathless_inherits(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "WORKSPACE_REQUIRED":
        return {"toolCallId": outcome["toolCallId"], "ok": True, "content": {"text": "inherited"}, "durationMs": 0}
    return outcome


def abort_any_tool(call: Call, name: str, params: Any) -> Any:
    if name == "tools.abort" and isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "toolName"}
    return call(name, params)


def denied_wrong_code(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "TOOL_DENIED":
        outcome["errorCode"] = "PERMISSION_DENIED"
    return outcome


def outside_result_relative(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("ok") is True:
        content = outcome.get("content")
        root = _session_root(call, params.get("sessionId"))
        if isinstance(content, dict) and isinstance(content.get("path"), str) and root:
            content["path"] = os.path.relpath(content["path"], root)
    return outcome


def requested_mode_honoured(call: Call, name: str, params: Any) -> Any:
    """requestedMode agent authorizes Write/Edit in a Plan/Goal session."""
    if (
        name == "tools.execute"
        and isinstance(params, dict)
        and params.get("requestedMode") == "agent"
        and params.get("toolName") in ("Write", "Edit")
    ):
        with _mode_policy_off():
            return call(name, params)
    return call(name, params)


class _mode_policy_off:
    """Within this block the Plan/Goal mode policy allows everything."""

    def __enter__(self) -> None:
        from . import tools

        self.saved = tools.mode_denial
        tools.mode_denial = lambda mode, tool: None

    def __exit__(self, *exc: object) -> None:
        from . import tools

        tools.mode_denial = self.saved


def kind_mismatch_writes(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "PLAN_KIND_MISMATCH":
        root = _session_root(call, params.get("sessionId"))
        kind = "goal" if params.get("toolName") == "SubmitGoal" else "plan"
        if root:
            from .plans import write_artifact

            write_artifact(root, kind, str((params.get("args") or {}).get("markdown", "")))
    return outcome


def reject_leaves_planning(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "plans.resolve" and isinstance(params, dict) and params.get("action") == "reject":
        if isinstance(outcome, dict):
            _set_mode(params.get("sessionId"), "agent")
    return outcome


_HOST: list[HostCore] = []


def _set_mode(session_id: object, mode: str) -> None:
    with _HOST[0].store.transaction() as db:
        db.execute("UPDATE sessions SET mode = ? WHERE id = ?", (mode, session_id))


def approve_no_execution(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "plans.resolve" and isinstance(outcome, dict) and outcome.get("execution"):
        with _HOST[0].store.transaction() as db:
            db.execute("UPDATE plan_approvals SET execution_id = NULL, execution_state = NULL WHERE id = ?",
                       (outcome["proposal"]["id"],))  # fmt: skip
        outcome.pop("execution")
        outcome["proposal"].pop("executionId", None)
        outcome["proposal"].pop("executionState", None)
    return outcome


def reject_refused(call: Call, name: str, params: Any) -> Any:
    if name == "plans.resolve" and isinstance(params, dict) and params.get("action") == "reject":
        return HostError("INTERNAL", "rejections are not supported")
    return call(name, params)


def submit_fails(call: Call, name: str, params: Any) -> Any:
    """A SubmitPlan that would succeed answers a failure instead."""
    outcome = call(name, params)
    if name == "tools.execute" and params.get("toolName") == "SubmitPlan" and isinstance(outcome, dict):
        if outcome.get("ok") is True:
            broken = {"ok": False, "isError": True, "errorCode": "PLAN_BROKEN", "content": {"message": "broken"}}
            return outcome | broken
    return outcome


def abort_keeps_pending(call: Call, name: str, params: Any) -> Any:
    if name == "plans.abort" and isinstance(params, dict):
        _HOST[0].emit("plans.changed", {"sessionId": params.get("sessionId"), "state": "awaiting_approval"})
        return {"ok": True, "interrupted": 0}
    return call(name, params)


def fork_drops_last(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.fork" and isinstance(outcome, dict) and not params.get("throughMessageId"):
        with _HOST[0].store.transaction() as db:
            child = outcome["session"]["id"]
            last = "SELECT MAX(seq) FROM messages WHERE session_id = ?"
            db.execute(f"DELETE FROM messages WHERE session_id = ? AND seq = ({last})", (child, child))
    return outcome


_FORKS: dict[str, str] = {}  # child -> source


def fork_shares_transcript(call: Call, name: str, params: Any) -> Any:
    """An append to a fork lands in its source."""
    if name == "session.appendMessage" and isinstance(params, dict) and params.get("sessionId") in _FORKS:
        params = {**params, "sessionId": _FORKS[params["sessionId"]]}
    outcome = call(name, params)
    if name == "session.fork" and isinstance(outcome, dict):
        _FORKS[outcome["session"]["id"]] = params["sessionId"]
    return outcome


def fork_same_ids(call: Call, name: str, params: Any) -> Any:
    """session.get of a fork shows the source's message ids."""
    outcome = call(name, params)
    if name == "session.fork" and isinstance(outcome, dict):
        _FORKS[outcome["session"]["id"]] = params["sessionId"]
    if name == "session.get" and isinstance(outcome, dict) and params.get("sessionId") in _FORKS:
        source = call("session.get", {"sessionId": _FORKS[params["sessionId"]]})
        for mine, theirs in zip(outcome.get("messages", []), source.get("messages", []), strict=False):
            mine["id"] = theirs["id"]
    return outcome


def fork_through_ignored(call: Call, name: str, params: Any) -> Any:
    if name == "session.fork" and isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "throughMessageId"}
    return call(name, params)


def fork_unknown_internal(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    unknown = isinstance(outcome, HostError) and outcome.error_code == "NOT_FOUND"
    if name == "session.fork" and unknown and not params.get("throughMessageId"):
        return HostError("INTERNAL", "fork failed")
    return outcome


def todo_without_turn(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if isinstance(outcome, dict) and outcome.get("errorCode") == "TODO_REQUIRES_RUNNING_TURN":
        return {**outcome, "ok": True, "errorCode": None, "isError": False}
    return outcome


def emits_notification_created(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "session.endTurn" and isinstance(outcome, dict) and outcome.get("notification"):
        _HOST[0].emit("notification.created", {"notification": outcome["notification"]})
    return outcome


def bash_failure_ok(call: Call, name: str, params: Any) -> Any:
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "TOOL_FAILED":
        outcome.update(ok=True, isError=False)
        outcome.pop("errorCode")
    return outcome


FAULTS.update(
    {
        "workspace-root": workspace_root,
        "workspace-get-bare": _replace_result("workspace.get", "/"),
        "workspace-set-bare": _replace_result("workspace.set", True),
        "workspace-clear-bare": _replace_result("workspace.clear", True),
        "projects-create-selects": projects_create_selects,
        "projects-create-no-id": _rewrite_result("projects.create", lambda r: (r.pop("id"), r["project"].pop("id"))),
        "projects-list-empty": _replace_result("projects.list", {"projects": []}),
        "missing-session-runs": missing_session_runs,
        "pathless-inherits": pathless_inherits,
        "pending-not-listed": _replace_result("permissions.pending", {"requests": []}),
        "pending-without-created-at": _rewrite_result(
            "permissions.pending", lambda r: [q.pop("createdAt") for q in r["requests"]]
        ),
        "denied-wrong-code": denied_wrong_code,
        "abort-any-tool": abort_any_tool,
        "outside-result-relative": outside_result_relative,
        "evaluate-bare": _replace_result("permissions.evaluate", "allow"),
        "requested-mode-honoured": requested_mode_honoured,
        "plan-denial-code": _tool_result("Write", lambda r: r.update(errorCode="TOOL_DENIED")),
        "kind-mismatch-writes": kind_mismatch_writes,
        "reject-leaves-planning": reject_leaves_planning,
        "approve-no-execution": approve_no_execution,
        "reject-refused": reject_refused,
        "resolution-no-state": _rewrite_result("plans.resolve", lambda r: r.pop("state")),
        "execution-without-artifact": _rewrite_result(
            "plans.resolve", lambda r: r["execution"].pop("artifact") if r.get("execution") else None
        ),
        "queued-executions-empty": _replace_result("plans.queuedExecutions", {"executions": []}),
        "claim-says-queued": _rewrite_result("plans.claimExecution", lambda r: r["execution"].update(state="queued")),
        "finish-refused": lambda call, name, params: (
            HostError("INTERNAL", "cannot finish") if name == "plans.finishExecution" else call(name, params)
        ),
        "submit-fails": submit_fails,
        "pending-misses-new": _rewrite_result("plans.pending", lambda r: r.update(plans=[])),
        "pending-without-plans": _rewrite_result("plans.pending", lambda r: r.pop("plans") if not r["plans"] else None),
        "proposal-without-created-at": _rewrite_result(
            "plans.pending", lambda r: [p.pop("createdAt") for p in r["plans"]]
        ),
        "enter-defaults-to-goal": lambda call, name, params: call(
            name, {"kind": "goal", **params} if name == "plans.enter" and isinstance(params, dict) else params
        ),
        "enter-refuses-goal": lambda call, name, params: (
            HostError("PLAN_MODE_CONFLICT", "goal is not offered")
            if name == "plans.enter" and isinstance(params, dict) and params.get("kind") == "goal"
            else call(name, params)
        ),
        "abort-keeps-pending": abort_keeps_pending,
        "fork-drops-last": fork_drops_last,
        "fork-shares-transcript": fork_shares_transcript,
        "fork-same-ids": fork_same_ids,
        "fork-through-ignored": fork_through_ignored,
        "fork-unknown-internal": fork_unknown_internal,
        "get-navigation-parent": _rewrite_result("session.get", lambda r: r.update(navigationParent=None)),
        "todos-without-revision": _rewrite_result("todos.get", lambda r: r.pop("revision")),
        "todo-without-turn": todo_without_turn,
        "bash-failure-ok": bash_failure_ok,
        "catalog-without-fallback": _rewrite_result("commandShells.list", lambda r: r.pop("fallback")),
        "command-shells-refused": lambda call, name, params: (
            HostError("INTERNAL", "no catalog") if name == "commandShells.list" else call(name, params)
        ),
        "execute-without-duration": lambda call, name, params: _result(
            call(name, params), lambda r: r.pop("durationMs", None) if name == "tools.execute" else None
        ),
        "mark-all-read-not-ok": _replace_result("notification.markAllRead", {"ok": False}),
        "clear-ok-string": _replace_result("notification.clear", {"ok": "true"}),
        "notification-bad-kind": _rewrite_result(
            "session.endTurn", lambda r: r["notification"].update(kind="task.done") if r.get("notification") else None
        ),
        "get-version-number": _replace_result("app.getVersion", 11),
        "plans-submit-refused": lambda call, name, params: (
            HostError("INTERNAL", "plans.submit is broken") if name == "plans.submit" else call(name, params)
        ),
        "tools-list-empty": _replace_result("tools.list", {"tools": []}),
        "delete-noop": lambda call, name, params: (
            {"ok": True, "deleted": True} if name == "session.delete" else call(name, params)
        ),
        "artifacts-list-empty": _replace_result("artifacts.list", {"artifacts": []}),
        "grants-list-empty": _replace_result("permissions.listSessionGrants", {"grants": []}),
        "clear-keeps-grants": lambda call, name, params: (
            {"ok": True, "cleared": 0} if name == "permissions.clearSessionGrants" else call(name, params)
        ),
        "emits-notification-created": emits_notification_created,
    }
)


# Faults that change one function of the reference for the whole process.
def _patch(module: str, attribute: str, value: Callable[..., Any]) -> Callable[[], None]:
    """Replace ``module.attribute`` (``Class.method`` allowed) by ``value(original)``."""

    def apply() -> None:
        import importlib

        target: Any = importlib.import_module(f"conformance.reference.hostcore.{module}")
        *owners, leaf = attribute.split(".")
        for owner in owners:
            target = getattr(target, owner)
        setattr(target, leaf, value(getattr(target, leaf)))

    return apply


def _prompt_expires(original: Callable[..., str]) -> Callable[..., str]:
    """A Read's permission prompt settles itself as denied after 0.2 s."""

    def ask(self: Any, prompt: Any, cancelled: Callable[[], bool]) -> str:
        if prompt.tool_name == "Read":
            threading.Timer(0.2, lambda: self.settle(prompt, "deny")).start()
        return original(self, prompt, cancelled)

    return ask


def _allow_read_denied(original: Callable[..., bool]) -> Callable[..., bool]:
    def settle(self: Any, prompt: Any, decision: str) -> bool:
        return original(self, prompt, "deny" if prompt.tool_name == "Read" and decision == "allow-once" else decision)

    return settle


def _plan_allows_write(original: Callable[[str, str], Any]) -> Callable[[str, str], Any]:
    return lambda mode, tool: None if tool == "Write" else original(mode, tool)


def _plan_denies_read(original: Callable[[str, str], Any]) -> Callable[[str, str], Any]:
    def denial(mode: str, tool: str) -> Any:
        if mode in ("plan", "goal") and tool == "Read":
            return original(mode, "Write")
        return original(mode, tool)

    return denial


def _plan_bash_unprompted(original: Callable[..., Any]) -> Callable[..., Any]:
    from . import permissions

    def evaluate(permission_mode: str, tool: str, outside: bool) -> Any:
        return (
            permissions.Verdict("allow", "low", "fault") if tool == "Bash" else original(permission_mode, tool, outside)
        )

    return evaluate


def _symlink_not_classified(original: Callable[..., Any]) -> Callable[..., Any]:
    from .paths import Resolved, _within

    def resolve(raw: str, root: str, scratch: str | None = None) -> Any:
        real = original(raw, root, scratch)
        spelled = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(root, raw))
        return Resolved(real.path, not _within(spelled, root))

    return resolve


def _artifact_normalized(original: Callable[[str, str, str], Any]) -> Callable[[str, str, str], Any]:
    return lambda root, kind, markdown: original(root, kind, markdown.replace("\r\n", "\n"))


def _artifact_reused(original: Callable[[str, str, str], Any]) -> Callable[[str, str, str], Any]:
    import hashlib

    def write(root: str, kind: str, markdown: str) -> dict[str, Any]:
        data = markdown.encode("utf-8")
        os.makedirs(os.path.join(root, ".pi", kind), exist_ok=True)
        Path(root, ".pi", kind, "current.md").write_bytes(data)
        return {
            "relativePath": f".pi/{kind}/current.md",
            "sha256": hashlib.sha256(data).hexdigest(),
            "sizeBytes": len(data),
        }

    return write


def _todo_two_in_progress(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def normalize(args: Any) -> Any:
        items, warnings = original(args)
        for item, sent in zip(items, args["todos"], strict=False):
            if sent.get("status") == "in_progress":
                item["status"] = "in_progress"  # no demotion
        return items, warnings

    return normalize


def _kill_nothing() -> None:
    """No command is ever killed or waited for: a timed-out or aborted call
    answers while its processes run on."""
    from . import bash

    run = bash.run

    def unkilled(proc: Any, timeout_s: float, cancelled: Callable[[], bool], emit: Any) -> Any:
        proc.wait = lambda *args, **kwargs: proc.returncode
        return run(proc, timeout_s, cancelled, emit)

    bash.kill_tree = lambda proc: None
    bash.run = unkilled


PATCH_FAULTS: dict[str, Callable[[], None]] = {
    "outside-not-asked": _patch("tools", "evaluate", lambda f: lambda mode, tool, outside: f(mode, tool, False)),
    "symlink-not-classified": _patch("tools", "resolve", _symlink_not_classified),
    "grep-follows-links": _patch(
        "fs_tools",
        "_walk",
        lambda f: lambda base: [os.path.join(d, n) for d, _, ns in os.walk(base, followlinks=True) for n in ns],
    ),
    "prompt-expires": _patch("permissions", "Permissions.ask", _prompt_expires),
    "allow-read-denied": _patch("permissions", "Permissions.settle", _allow_read_denied),
    "plan-allows-write": _patch("tools", "mode_denial", _plan_allows_write),
    "plan-denies-read": _patch("tools", "mode_denial", _plan_denies_read),
    "todo-in-plan": _patch(
        "tools", "mode_denial", lambda f: lambda mode, tool: None if tool == "TodoWrite" else f(mode, tool)
    ),
    "plan-bash-unprompted": _patch("tools", "evaluate", _plan_bash_unprompted),
    "artifact-normalized": _patch("plans", "write_artifact", _artifact_normalized),
    "artifact-reused": _patch("plans", "write_artifact", _artifact_reused),
    "resolve-ignores-version": _patch(
        "plans", "_live_row", lambda f: lambda db, pid, ident, version: f(db, pid, ident, None)
    ),
    "startup-keeps-pending": _patch("plans", "interrupt_at_startup", lambda f: lambda db, now: None),
    "fork-while-running": _patch("fork", "_check_live_turn", lambda f: lambda *args: None),
    "todo-two-in-progress": _patch("todos", "normalize", _todo_two_in_progress),
    "short-default-timeout": _patch("limits", "BASH_DEFAULT_TIMEOUT_MS", lambda v: 1000),
    "shell-pin-ignored": _patch("tools", "_pin_mismatch", lambda f: lambda call: None),
    "kill-leaves-tree": _patch("bash", "kill_tree", lambda f: lambda proc: proc.kill()),
    "kill-nothing": _kill_nothing,
    "timeout-ignored": _patch(
        "tools", "parse_call", lambda f: lambda params: f({k: v for k, v in params.items() if k != "timeoutMs"})
    ),
}


# -- faults of the transport: outgoing frames, and the line reader ----------------------


def _limit_error(message: dict[str, Any]) -> dict[str, Any] | None:
    error = message.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    return error if isinstance(data, dict) and data.get("errorCode") == "LIMIT_EXCEEDED" else None


class RewritingWriter(FrameWriter):
    """Rewrites each outgoing message with :meth:`rewrite` (a fault's)."""

    def send(self, message: dict[str, Any]) -> None:
        for out in self.rewrite(message):
            super().send(out)

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [message]


class LimitNullId(RewritingWriter):
    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**message, "id": None} if _limit_error(message) else message]


class LimitAsInvalidParams(RewritingWriter):
    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = _limit_error(message)
        if error is not None:
            error["data"] = {"errorCode": "INVALID_PARAMS"}
        return [message]


class LimitThenExit(RewritingWriter):
    """The reader "dies" with the oversized line: exit right after answering it."""

    def send(self, message: dict[str, Any]) -> None:
        super().send(message)
        if _limit_error(message):
            os._exit(4)


class LimitRemainderParsed(RewritingWriter):
    """Behaves as if the rest of the oversized line were read as a new line:
    a parse error for it follows the LIMIT_EXCEEDED answer."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if not _limit_error(message):
            return [message]
        bogus = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "unparseable request line"}}
        return [message, bogus]


class ParseErrorCode(RewritingWriter):
    """Answers an unparseable line with -32601 instead of -32700."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = message.get("error")
        if isinstance(error, dict) and error.get("code") == PARSE_ERROR:
            return [{**message, "error": {**error, "code": METHOD_NOT_FOUND}}]
        return [message]


WRITER_FAULTS: dict[str, type[FrameWriter]] = {
    "limit-null-id": LimitNullId,
    "limit-as-invalid-params": LimitAsInvalidParams,
    "limit-then-exit": LimitThenExit,
    "limit-remainder-parsed": LimitRemainderParsed,
    "parse-error-code": ParseErrorCode,
}


class DeafAfterBadLine(Server):
    """Stops handling lines once one was not JSON."""

    deaf = False

    def _line(self, payload: bytes) -> None:
        if self.deaf:
            return
        try:
            json.loads(payload)
        except ValueError:
            self.deaf = bool(payload.strip())
        super()._line(payload)


class DropsCrlfLines(Server):
    """Ignores every line that ends in CR LF."""

    def _handle(self, events: list[FrameEvent]) -> None:
        super()._handle([e for e in events if not (isinstance(e, Frame) and e.terminator == "crlf")])


def _note_rewriter(method: str, change: Callable[[dict[str, Any]], bool]) -> type[FrameWriter]:
    """A writer dropping (``change`` answers False) or editing the params of
    one server notification."""

    class Rewriter(RewritingWriter):
        def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
            if message.get("method") == method and "id" not in message and isinstance(message.get("params"), dict):
                return [message] if change(message["params"]) else []
            return [message]

    return Rewriter


def _merge_stderr(params: dict[str, Any]) -> bool:
    params["stream"] = "stdout"
    return True


WRITER_FAULTS.update(
    {
        "request-bad-risk": _note_rewriter("permissions.request", lambda p: bool(p.update(risk="severe")) or True),
        "stderr-merged": _note_rewriter("tools.output", _merge_stderr),
        "output-without-shell": _note_rewriter("tools.output", lambda p: bool(p.pop("commandShellId", None)) or True),
        "changed-extra-field": _note_rewriter("plans.changed", lambda p: bool(p.update(at="now")) or True),
        "enter-no-changed": _note_rewriter("plans.changed", lambda p: "proposalId" in p),
    }
)


SERVER_FAULTS: dict[str, type[Server]] = {"deaf-after-bad-line": DeafAfterBadLine, "drops-crlf-lines": DropsCrlfLines}
# Faults that are not a wrapper around one call.
STARTUP_FAULTS = ("no-handshake-gate", "forgets-state", "late-approval-accepted")
NAMES = tuple(sorted((*FAULTS, *WRITER_FAULTS, *SERVER_FAULTS, *STARTUP_FAULTS, *PATCH_FAULTS)))


class FaultyHostCore(HostCore):
    """The reference with one fault switched on."""

    fault: str = ""

    def __init__(self, data_dir: Path, **kwargs: Any) -> None:
        if self.fault in PATCH_FAULTS:
            PATCH_FAULTS[self.fault]()  # before anything runs, start-up included
        if self.fault == "late-approval-accepted":
            plans.interrupt_at_startup = _keep_pending  # this process only: pending approvals survive a restart
        super().__init__(data_dir, **kwargs)
        _HOST.append(self)
        if self.fault == "no-handshake-gate":
            self.handshake_succeeded()  # every call is served as if a handshake had succeeded
        self.admission = admission_for(self.fault, self.admission)

    def call(self, name: str, params: Any) -> Any:
        host_fault = HOST_FAULTS.get(self.fault)
        if host_fault is not None:
            return host_fault(self, super().call, name, params)
        fault = FAULTS.get(self.fault)
        if fault is None:
            return super().call(name, params)
        return fault(super().call, name, params)


def host_class(fault: str | None) -> type[HostCore]:
    if fault is None:
        return HostCore
    return type(f"FaultyHostCore[{fault}]", (FaultyHostCore,), {"fault": fault})


def writer_class(fault: str | None) -> type[FrameWriter]:
    return WRITER_FAULTS.get(fault or "", FrameWriter)


def server_class(fault: str | None) -> type[Server]:
    return SERVER_FAULTS.get(fault or "", Server)


def data_dir_for(fault: str | None, data_dir: Path) -> Path:
    """forgets-state: every start uses a fresh directory, so nothing survives a restart."""
    if fault == "forgets-state":
        data_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="forgotten-", dir=data_dir))
    return data_dir


# -- faults of §2 transport, §2.1 admission, §3 history, §7 and §8 (the rpc-a scenarios) --------
# Each breaks one requirement judged by conformance/machines/hostcore_admission.py.

HostFault = Callable[[HostCore, Call, str, Any], Any]


def a2a_methods_answer(call: Call, name: str, params: Any) -> Any:
    """The withdrawn a2a.* domain still answers (§3 rule 9)."""
    outcome = call(name, params)
    if name.startswith("a2a.") and isinstance(outcome, HostError) and type(outcome).__name__ == "UnknownMethod":
        return {"tasks": []}
    return outcome


def fork_unknown(call: Call, name: str, params: Any) -> Any:
    """session.fork (required since version 5) is an unknown method."""
    if name == "session.fork":
        return BareError(METHOD_NOT_FOUND, "unknown method 'session.fork'", None)
    return call(name, params)


def missing_session_internal(call: Call, name: str, params: Any) -> Any:
    """A session.get for a session that does not exist is an INTERNAL failure."""
    outcome = call(name, params)
    if name == "session.get" and isinstance(outcome, HostError) and outcome.error_code.endswith("NOT_FOUND"):
        return HostError("INTERNAL", "lookup failed")
    return outcome


def shell_change_as_error(call: Call, name: str, params: Any) -> Any:
    """COMMAND_SHELL_CHANGED travels as a JSON-RPC error, not a tool result (§7)."""
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "COMMAND_SHELL_CHANGED":
        return HostError("COMMAND_SHELL_CHANGED", "the pinned shell changed")
    return outcome


def a2a_push_notification(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """Emits a withdrawn a2a.push notification whenever sessions are listed."""
    outcome = call(name, params)
    if name == "session.list":
        host.emit("a2a.push", {"taskId": "task-1"})
    return outcome


def notifies_before_handshake(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """Sends a notification in answer to a call made before the handshake (§8.3)."""
    if name != "app.handshake" and not host._handshaken.is_set():
        host.emit("app.ready", {"ok": True})
    return call(name, params)


class _AbortTwiceErrors:
    """tools.abort of a call already aborted is an error (§8.5: abort is idempotent)."""

    def __init__(self) -> None:
        self.aborted: set[tuple[object, object]] = set()

    def __call__(self, host: HostCore, call: Call, name: str, params: Any) -> Any:
        if name == "tools.abort" and isinstance(params, dict):
            key = (params.get("sessionId"), params.get("toolCallId"))
            if key in self.aborted:
                return HostError("NOT_FOUND", "that tool call was aborted already")
            self.aborted.add(key)
        return call(name, params)


def output_streams_swapped(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """tools.output labels stderr chunks as stdout (§8.4)."""
    emit = host.emit
    if not getattr(host, "_swapping", False):
        host._swapping = True  # type: ignore[attr-defined]

        def swapped(method: str, note: dict[str, Any]) -> None:
            if method == "tools.output" and note.get("stream") == "stderr":
                note = {**note, "stream": "stdout"}
            emit(method, note)

        host.emit = swapped  # type: ignore[method-assign,assignment]
    return call(name, params)


def prompt_holds_slot(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """A call waiting on a permission prompt holds an execution slot (§2.1)."""
    ask = host.permissions.ask
    if not getattr(host, "_holding", False):
        host._holding = True  # type: ignore[attr-defined]

        def holding(prompt: Any, cancelled: Callable[[], bool]) -> str:
            permit = host.admission.acquire(prompt.session_id, "other", cancelled)
            try:
                return ask(prompt, cancelled)
            finally:
                permit.release()

        host.permissions.ask = holding  # type: ignore[method-assign]
    return call(name, params)


def grants_global(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """An allow-session grant of one session counts for every session (§8.2)."""
    permissions = host.permissions
    if not getattr(host, "_global_grants", False):
        host._global_grants = True  # type: ignore[attr-defined]

        def granted(session_id: str, tool: str) -> bool:
            with permissions._lock:
                return any(t == tool for _, t in permissions._grants)

        permissions.granted = granted  # type: ignore[method-assign]
    return call(name, params)


def fork_rewrites_source(call: Call, name: str, params: Any) -> Any:
    """session.fork appends a note to the source transcript (§8.8)."""
    outcome = call(name, params)
    if name == "session.fork" and isinstance(outcome, dict) and isinstance(params, dict):
        note = {"id": "forked-note", "role": "user", "content": [{"type": "text", "text": "forked"}]}
        call("session.appendMessage", {"sessionId": params.get("sessionId"), "message": note})
    return outcome


class _ForkKeepsIds:
    """A message-scoped fork shows the source's message ids (§8.9: remapped)."""

    def __init__(self) -> None:
        self.sources: dict[str, object] = {}

    def __call__(self, host: HostCore, call: Call, name: str, params: Any) -> Any:
        outcome = call(name, params)
        if not isinstance(params, dict) or not isinstance(outcome, dict):
            return outcome
        if name == "session.fork" and params.get("throughMessageId") is not None:
            child = outcome.get("session", {}).get("id")
            self.sources[str(child)] = params.get("sessionId")
        if name == "session.get" and params.get("sessionId") in self.sources:
            source = call("session.get", {"sessionId": self.sources[params["sessionId"]]})
            for mine, theirs in zip(outcome.get("messages", []), source.get("messages", []), strict=False):
                mine["id"] = theirs.get("id")
        return outcome


def second_pending_plan(host: HostCore, call: Call, name: str, params: Any) -> Any:
    """A submit refused as PLAN_ALREADY_PENDING still leaves a second pending approval (§8.6)."""
    outcome = call(name, params)
    if name == "tools.execute" and isinstance(outcome, dict) and outcome.get("errorCode") == "PLAN_ALREADY_PENDING":
        with host.store.transaction() as db:
            row = db.execute(
                "SELECT * FROM plan_approvals WHERE session_id = ? AND status = 'pending'", (params["sessionId"],)
            ).fetchone()
            if row is not None:
                values = dict(row) | {"id": f"plan_{os.urandom(8).hex()}", "seq": row["seq"] + 1000}
                columns = ", ".join(values)
                marks = ", ".join("?" for _ in values)
                db.execute(f"INSERT INTO plan_approvals ({columns}) VALUES ({marks})", list(values.values()))
    return outcome


def _keep_pending(db: Any, now: str) -> None:
    """late-approval-accepted: start-up interrupts nothing (§8.7)."""


HOST_FAULTS: dict[str, HostFault] = {
    "grants-global": grants_global,
    "second-pending-plan": second_pending_plan,
    "fork-keeps-ids": _ForkKeepsIds(),
    "a2a-push-notification": a2a_push_notification,
    "notifies-before-handshake": notifies_before_handshake,
    "abort-twice-errors": _AbortTwiceErrors(),
    "output-streams-swapped": output_streams_swapped,
    "prompt-holds-slot": prompt_holds_slot,
}
FAULTS.update(
    {
        "a2a-methods-answer": a2a_methods_answer,
        "fork-rewrites-source": fork_rewrites_source,
        "fork-unknown": fork_unknown,
        "missing-session-internal": missing_session_internal,
        "shell-change-as-error": shell_change_as_error,
    }
)


class SplitsAtLineSeparator(Server):
    """Ends a frame at U+2028 / U+2029 as if they were line breaks (§2)."""

    def _line(self, payload: bytes) -> None:
        for part in payload.replace("\u2029".encode(), "\u2028".encode()).split("\u2028".encode()):
            super()._line(part)


class ReadsBytewiseMangled(Server):
    """Reads one byte at a time and decodes each read on its own, so a
    character split across reads is replaced (§2)."""

    def _read(self, fd: int) -> bytes:
        chunk = os.read(fd, 1)
        return chunk.decode("utf-8", "replace").encode("utf-8")


class DropsFinalFrame(Server):
    """Ignores a last line that has no LF before EOF (§2)."""

    ended = False

    def _read(self, fd: int) -> bytes:
        chunk = super()._read(fd)
        self.ended = not chunk
        return chunk

    def _handle(self, events: list[FrameEvent]) -> None:
        if not self.ended:
            super()._handle(events)


class LogsInvalidLine(Server):
    """The diagnostic of an invalid JSON line quotes the line (§2)."""

    def _line(self, payload: bytes) -> None:
        try:
            json.loads(payload)
        except ValueError:
            log.warning("invalid JSON line: %s", payload[:200].decode("utf-8", "replace"))
        super()._line(payload)


class UnboundedDispatcher(Server):
    """No dispatcher cap: every blocking call is taken on and waits for a worker (§2.1)."""

    def _request(self, request: Request) -> None:
        method = self._host.method(request.method)
        if method is None or not method.blocking:
            super()._request(request)
            return
        with self._active_changed:
            self._active += 1
        self._workers.submit(self._work, request)


class SerialRequests(Server):
    """Runs every request on the stdin reader, one at a time (§8.1)."""

    def _request(self, request: Request) -> None:
        self._answer(request, self._host.call(request.method, request.params))


SERVER_FAULTS.update(
    {
        "serial-requests": SerialRequests,
        "splits-at-line-separator": SplitsAtLineSeparator,
        "reads-bytewise-mangled": ReadsBytewiseMangled,
        "drops-final-frame": DropsFinalFrame,
        "logs-invalid-line": LogsInvalidLine,
        "unbounded-dispatcher": UnboundedDispatcher,
    }
)


def _overloaded(message: dict[str, Any]) -> dict[str, Any] | None:
    error = message.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    return error if isinstance(data, dict) and data.get("errorCode") == "HOST_OVERLOADED" else None


class OverloadAsConflictResult(RewritingWriter):
    """The dispatcher's refusal is a tool result naming CONFLICT, not HOST_OVERLOADED."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if _overloaded(message) is None:
            return [message]
        result = {"ok": False, "errorCode": "CONFLICT", "content": {"message": "busy"}}
        return [{"jsonrpc": "2.0", "id": message.get("id"), "result": result}]


class OverloadCode1000(RewritingWriter):
    """The dispatcher's HOST_OVERLOADED refusal carries code 1000 instead of -32029."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = _overloaded(message)
        if error is not None:
            error["code"] = 1000
        return [message]


WRITER_FAULTS.update({"overload-as-conflict-result": OverloadAsConflictResult, "overload-code-1000": OverloadCode1000})


class LifoAdmission(Admission):
    """Admits the youngest runnable waiting Bash call first (§2.1: oldest
    runnable first). Other classes keep their order, so the one fault shows
    at one requirement."""

    reversed_class = "shell"

    def _pump(self) -> None:
        arrival = self._queue
        self._queue = [t for t in arrival if t.tool_class != self.reversed_class]
        self._queue += [t for t in reversed(arrival) if t.tool_class == self.reversed_class]
        super()._pump()
        self._queue = [t for t in arrival if t in self._queue]  # arrival order again


class MutationsLifo(LifoAdmission):
    """Admits a session's waiting Write/Edit calls newest first (§8.1: FIFO)."""

    reversed_class = "mutations"


class StrictFifoAdmission(Admission):
    """A waiter that does not fit holds back every later one (§2.1 head-of-line)."""

    def _pump(self) -> None:
        admitted = False
        for ticket in self._queue:
            if not self._fits(ticket):
                break
            ticket.admitted = True
            self._held.append(ticket)
            admitted = True
        if admitted:
            self._queue = [t for t in self._queue if not t.admitted]
            self._changed.notify_all()


class QueuedHoldsCapacity(Admission):
    """Waiting calls count against their session's budget of 4 (§2.1)."""

    def _fits(self, ticket: Any) -> bool:
        waiting = sum(1 for t in self._queue if t.session == ticket.session and t is not ticket and not t.admitted)
        held = sum(1 for t in self._held if t.session == ticket.session)
        return held + waiting < self.budget.per_session and super()._fits(ticket)


class AbortKeepsWaiter(Admission):
    """tools.abort does not reach a call waiting for admission (§2.1)."""

    def acquire(self, session: str, tool_class: Any, cancelled: Callable[[], bool]) -> Any:
        return super().acquire(session, tool_class, lambda: False)


class HealthQueuedZero(Admission):
    """app.health's toolBudget.queued always says 0 (§2.1 health counters)."""

    def health(self) -> dict[str, int]:
        return super().health() | {"queued": 0}


def _budget(tool_class: str, limit: tuple[int, int | None], per_session: int = limits.TOOLS_PER_SESSION) -> Any:
    def make(old: Admission) -> Budget:
        classes = {**old.budget.classes, tool_class: limit}
        return Budget(per_session=per_session, queue_limit=old.budget.queue_limit, classes=classes)

    return make


ADMISSION_FAULTS: dict[str, type[Admission]] = {
    "lifo-admission": LifoAdmission,
    "strict-fifo-admission": StrictFifoAdmission,
    "mutations-lifo": MutationsLifo,
    "queued-holds-capacity": QueuedHoldsCapacity,
    "abort-keeps-waiter": AbortKeepsWaiter,
    "health-queued-zero": HealthQueuedZero,
}
BUDGET_FAULTS: dict[str, Callable[[Admission], Budget]] = {
    "bash-session-budget-3": _budget("shell", (limits.SHELL_GLOBAL, limits.SHELL_PER_SESSION + 1)),
    "bash-global-budget-5": _budget("shell", (limits.SHELL_GLOBAL + 1, limits.SHELL_PER_SESSION)),
    "read-budget-9": _budget("reads", (limits.READS_GLOBAL + 1, None)),
    "mutation-session-budget-2": _budget("mutations", (limits.MUTATIONS_GLOBAL, limits.MUTATIONS_PER_SESSION + 1)),
    "mutation-global-budget-3": _budget("mutations", (limits.MUTATIONS_GLOBAL + 1, limits.MUTATIONS_PER_SESSION)),
    "session-budget-5": _budget("reads", (limits.READS_GLOBAL, None), limits.TOOLS_PER_SESSION + 1),
}
NAMES = tuple(
    sorted({*NAMES, *FAULTS, *HOST_FAULTS, *ADMISSION_FAULTS, *BUDGET_FAULTS, *SERVER_FAULTS, *WRITER_FAULTS})
)


def admission_for(fault: str, admission: Admission) -> Admission:
    """The admission a fault of this block runs with (``admission`` unchanged otherwise)."""
    if fault in BUDGET_FAULTS:
        return Admission(BUDGET_FAULTS[fault](admission), wait_s=admission.wait_s)
    if fault in ADMISSION_FAULTS:
        return ADMISSION_FAULTS[fault](admission.budget, wait_s=admission.wait_s)
    return admission


# -- faults of §7 draining and §2 pipe errors (the rpc-rest scenarios) ---------------------------
# Each breaks one requirement judged by conformance/machines/hostcore_ending.py.


class DrainRefusesInternal(Server):
    """Calls that arrive together with stdin EOF are refused as INTERNAL,
    not HOST_SHUTTING_DOWN (§7). It looks a moment past each read for EOF."""

    draining = False
    _ahead: bytes | None = None

    def _read(self, fd: int) -> bytes:
        if self._ahead is not None:
            chunk, self._ahead = self._ahead, None
        else:
            chunk = super()._read(fd)
        if chunk and select.select([fd], [], [], 0.05)[0]:
            self._ahead = super()._read(fd)
            self.draining = not self._ahead
        return chunk

    def _request(self, request: Request) -> None:
        if self.draining:
            self._send_error(request.id, HostError("INTERNAL", "the host is shutting down").to_error())
            return
        super()._request(request)


SERVER_FAULTS["drain-refuses-internal"] = DrainRefusesInternal
NAMES = tuple(sorted({*NAMES, *SERVER_FAULTS}))


class IgnoresPipeError(FrameWriter):
    """Goes on running when stdout breaks, dropping every frame (§2): it
    writes to the stream itself, not through the exiting sink of stdio.py."""

    def __init__(self, sink: Any, *, max_frame_bytes: int) -> None:
        super().__init__(getattr(sink, "inner", sink), max_frame_bytes=max_frame_bytes)


WRITER_FAULTS["ignores-pipe-error"] = IgnoresPipeError
NAMES = tuple(sorted({*NAMES, *WRITER_FAULTS}))


class WaitsForever(Admission):
    """A call waiting for admission waits until capacity frees, however long (§2.1: 30 s)."""

    def __init__(self, budget: Budget | None = None, *, wait_s: float = limits.ADMISSION_WAIT_S) -> None:
        super().__init__(budget, wait_s=1e9)


ADMISSION_FAULTS["admission-waits-forever"] = WaitsForever
NAMES = tuple(sorted({*NAMES, *ADMISSION_FAULTS}))


# -- faults of JSON-RPC 2.0 §5 and §5.1 (judged by conformance/protocol/rpc_answers.py) ----------


class AnswersTwice(RewritingWriter):
    """Writes every successful answer twice (JSON-RPC §5: one response per request)."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        return [message, message] if "result" in message and "method" not in message else [message]


class StringIds(RewritingWriter):
    """Echoes every request id as a string: "4" for 4 (JSON-RPC §5: the same id)."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if "method" in message or message.get("id") is None:
            return [message]
        return [{**message, "id": str(message["id"])}]


class UnknownMethodWithResult(RewritingWriter):
    """Its -32601 answers also carry "result": null (JSON-RPC §5: result or error, not both)."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = message.get("error")
        if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
            return [{**message, "result": None}]
        return [message]


class ErrorWithoutMessage(RewritingWriter):
    """Its error objects have no message member (JSON-RPC §5.1: a string message)."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = message.get("error")
        if isinstance(error, dict):
            return [{**message, "error": {k: v for k, v in error.items() if k != "message"}}]
        return [message]


class ReservedErrorCode(RewritingWriter):
    """Files INVALID_ARGUMENT (a string §7's table gives no slot) under -32100,
    a code of JSON-RPC's reserved block that is neither predefined nor in the
    server range (§5.1)."""

    def rewrite(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        error = message.get("error")
        data = error.get("data") if isinstance(error, dict) else None
        if isinstance(data, dict) and data.get("errorCode") == "INVALID_ARGUMENT":
            return [{**message, "error": {**error, "code": -32100}}]  # type: ignore[dict-item]
        return [message]


WRITER_FAULTS.update(
    {
        "answers-twice": AnswersTwice,
        "string-ids": StringIds,
        "unknown-method-with-result": UnknownMethodWithResult,
        "error-without-message": ErrorWithoutMessage,
        "reserved-error-code": ReservedErrorCode,
    }
)
NAMES = tuple(sorted({*NAMES, *WRITER_FAULTS}))


# -- faults of §2.1 the dispatcher and the health counters (machines/hostcore_admission.py) -----


class HealthActiveCountsQueued(Admission):
    """app.health's toolBudget.active counts queued calls as well as admitted
    ones (§2.1: the counters report only admitted reservations)."""

    def health(self) -> dict[str, int]:
        counters = super().health()
        return counters | {"active": counters["active"] + counters["queued"]}


class NoDispatcherCap(UnboundedDispatcher):
    """No dispatcher cap, and a thread for every long-running request (§2.1:
    the dispatcher caps active requests at 32). Unlike unbounded-dispatcher,
    no call waits for a worker: the tool queue still holds 64, so a flood of
    runnable calls is refused by the queue all the same."""

    def __init__(self, host: HostCore, writer: FrameWriter) -> None:
        super().__init__(host, writer)
        self._workers = ThreadPoolExecutor(max_workers=1024, thread_name_prefix="rpc")


ADMISSION_FAULTS["health-active-counts-queued"] = HealthActiveCountsQueued
SERVER_FAULTS["no-dispatcher-cap"] = NoDispatcherCap
NAMES = tuple(sorted({*NAMES, *ADMISSION_FAULTS, *SERVER_FAULTS}))


# -- faults of §5 and §6 permission outcomes (machines/hostcore_tools.py, runner/hostcore.py) ---


def _denied_write_runs(original: Callable[..., Any]) -> Callable[..., Any]:
    """A Write denied at its prompt answers TOOL_DENIED but writes all the
    same (§5: denial returns TOOL_DENIED without executing the operation)."""

    def gated(host: Any, call: Any, session: Any, entry: Any, tool_class: Any, outside: Any, action: Any) -> Any:
        outcome = original(host, call, session, entry, tool_class, outside, action)
        if call.tool_name == "Write" and outcome.content == {"message": "permission deny"}:  # denied, not cancelled
            action()  # the fault
        return outcome

    return gated


PATCH_FAULTS["denied-write-runs"] = _patch("tools", "_gated", _denied_write_runs)
NAMES = tuple(sorted({*NAMES, *PATCH_FAULTS}))


def _prompt_times_out(original: Callable[..., str]) -> Callable[..., str]:
    """Every permission prompt denies itself after 1.5 s: longer than the
    machine's short look at an open prompt, shorter than any hold of the
    held-prompt scenario (§6: no deadline)."""

    def ask(self: Any, prompt: Any, cancelled: Callable[[], bool]) -> str:
        timer = threading.Timer(1.5, lambda: self.settle(prompt, "deny"))
        timer.daemon = True
        timer.start()
        return original(self, prompt, cancelled)

    return ask


PATCH_FAULTS["prompt-times-out"] = _patch("permissions", "Permissions.ask", _prompt_times_out)
NAMES = tuple(sorted({*NAMES, *PATCH_FAULTS}))
