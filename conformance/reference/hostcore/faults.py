"""Deliberate faults for the faulty host-core fixtures (``--fault NAME``).

Each fault breaks exactly one rule of the document, so the certification
can be shown to catch it (fixtures/hostcores/<name>/expect.toml). They live
here, as a wrapper around :meth:`HostCore.call`, so the normal code paths
carry no trace of them; with no ``--fault`` none of this runs.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.protocol.framing import Frame, FrameEvent
from conformance.reference.extension.writer import FrameWriter

from . import limits
from .errors import METHOD_NOT_FOUND, PARSE_ERROR, HostError
from .host import HostCore
from .server import Server

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
STARTUP_FAULTS = ("no-handshake-gate", "forgets-state")
NAMES = tuple(sorted((*FAULTS, *WRITER_FAULTS, *SERVER_FAULTS, *STARTUP_FAULTS, *PATCH_FAULTS)))


class FaultyHostCore(HostCore):
    """The reference with one fault switched on."""

    fault: str = ""

    def __init__(self, data_dir: Path, **kwargs: Any) -> None:
        if self.fault in PATCH_FAULTS:
            PATCH_FAULTS[self.fault]()  # before anything runs, start-up included
        super().__init__(data_dir, **kwargs)
        _HOST.append(self)
        if self.fault == "no-handshake-gate":
            self.handshake_succeeded()  # every call is served as if a handshake had succeeded

    def call(self, name: str, params: Any) -> Any:
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
