"""Tool rules about paths: the session's root rather than the selected
workspace (§10 item 5), outside paths, their prompts and denial (§10
items 3 and 4)."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from conformance.machines.hostcore_world import (
    ANSWERS,
    ESCAPES,
    MARK_A,
    MARK_B,
    MARK_OUT,
    NOTE,
    PENDING_LOOK_S,
    POLL_S,
    SECRET,
    Executed,
    ToolRules,
    World,
    _code,
    _mentions,
    _outside,
    _succeeded,
    survives,
)
from conformance.protocol import rpc_errors, rpc_results
from conformance.protocol.violations import Violation


class PathRules(ToolRules):
    """§10 items 3-5: where a session's tools may reach."""

    # -- §10 item 5: the session's root, not the selected workspace --------------------
    @rule()
    @survives
    def workspace_switch(self) -> None:
        """RPC-10-05-workspace-switch-isolated, RPC-5-session-root and
        RPC-5-workspace-not-consulted: a Read by session A finds A's file
        while the selection moves from A to B; RPC-5-missing-session,
        RPC-5-pathless-session; the workspace.* and projects.* results
        (RPC-4-workspace.get/set/clear, RPC-4-projects.create,
        RPC-4-projects.create-keeps-workspace, RPC-4-projects.list-order).
        Spelled out: RPC-4-workspace.get, RPC-4-workspace.set,
        RPC-4-workspace.clear; a Grep over the root stays inside it
        (RPC-5-bash-no-outside-exception)."""
        if not self._guard():
            return
        world = self.world()
        for method, folder, judge in (
            ("workspace.set", world.a, rpc_results.workspace_set_result),
            ("workspace.get", None, rpc_results.workspace_get_result),
        ):
            response = self._call(method, {"path": str(folder)} if folder else {})
            if response is not None:  # None: unanswered (reported) or its params refused (untested)
                self.peer.add(judge(response.get("result")))
        before = self._result("workspace.get", {})
        created = self._result("projects.create", {"path": str(world.b)})
        self.peer.add(rpc_results.projects_create_result(created))
        after = self._result("workspace.get", {})
        self.recorder.exercise("RPC-4-projects.create-keeps-workspace")
        if before != after:
            message = f"workspace.get answered {before!r} before projects.create and {after!r} after it"
            self.peer.violate(Violation("RPC-4-projects.create-keeps-workspace", message))
        listed = self._result("projects.list", {})
        self.peer.add(rpc_results.projects_list_result(listed))
        if not _mentions(listed, str(world.b)):
            self.peer.violate(Violation("RPC-4-projects.list-order", "projects.list lacks the project just created"))
        sid = self._session_in(world.a)
        if sid is None:
            return
        self._read_root(sid, MARK_A, "RPC-10-05-workspace-switch-isolated", "with A selected")
        selected = self._call("workspace.set", {"path": str(world.b)})
        if selected is not None:
            self.peer.add(rpc_results.workspace_set_result(selected.get("result")))
        self._read_root(sid, MARK_A, "RPC-10-05-workspace-switch-isolated", "after selecting B")
        self._read_root(sid, MARK_A, "RPC-5-workspace-not-consulted", "after selecting B")
        self._read_root(sid, MARK_A, "RPC-5-session-root", "")
        self._walk_stays_inside(sid, world)
        self._missing_session()
        self._pathless_session()
        self.peer.add(rpc_results.workspace_clear_result(self._result("workspace.clear", {})))

    def _read_root(self, sid: str, mark: str, requirement: str, when: str) -> None:
        done = self._execute(sid, "Read", {"path": NOTE}, judges=(requirement,))
        if done.result is None:
            return
        self.recorder.exercise(requirement)
        if done.result.get("ok") is not True or not _mentions(done.result.get("content"), mark):
            got = "the other project's file" if _mentions(done.result, MARK_B if mark == MARK_A else MARK_A) else None
            shown = got or f"ok {done.result.get('ok')!r}, errorCode {_code(done.result)!r}"
            message = f"a relative Read by the session of project A {when} did not read A's file ({shown})".strip()
            self.peer.violate(Violation(requirement, message.replace("  ", " ")))

    def _walk_stays_inside(self, sid: str, world: World) -> None:
        """RPC-5-bash-no-outside-exception: a Grep over the root (an implicit
        recursive walk) does not follow project A's symlink out of it."""
        judges = ("RPC-5-bash-no-outside-exception",)
        done = self._execute(sid, "Grep", {"pattern": "marker-of-outside"}, answer="deny", judges=judges)
        if done.result is None or done.result.get("ok") is not True:
            return
        self.recorder.exercise("RPC-5-bash-no-outside-exception")
        content = done.result.get("content")
        if _mentions(content, f"escape{os.sep}") or _mentions(content, str(world.outside)):
            message = "a Grep over the session root walked through a symlink into a folder outside it"
            self.peer.violate(Violation("RPC-5-bash-no-outside-exception", message))

    def _missing_session(self) -> None:
        """RPC-5-missing-session: refused, or run under the *selected*
        workspace (B) -- never under another session's root (A)."""
        done = self._execute("ses-that-does-not-exist", "Read", {"path": NOTE}, judges=("RPC-5-missing-session",))
        response = done.response
        if response is None or done.refused is not None:
            return
        self.recorder.exercise("RPC-5-missing-session")
        if "error" in response:
            code = rpc_errors.error_code_of(response["error"])
            if code not in ("SESSION_NOT_FOUND", "NOT_FOUND"):
                message = f"a tool call for a missing session was refused with {code!r}; expected SESSION_NOT_FOUND"
                self.peer.violate(Violation("RPC-5-missing-session", message))
        elif done.result is not None and done.result.get("ok") is True and not _mentions(done.result, MARK_B):
            self.peer.violate(Violation("RPC-5-missing-session", "a missing session's Read ran outside the selection"))

    def _pathless_session(self) -> None:
        """RPC-5-pathless-session: no root, no inherited selection."""
        sid = self._session_in(None)
        if sid is None:
            return
        done = self._execute(sid, "Read", {"path": NOTE}, judges=("RPC-5-pathless-session",))
        if done.result is None:
            return
        self.recorder.exercise("RPC-5-pathless-session")
        if done.result.get("ok") is not False or _code(done.result) != "WORKSPACE_REQUIRED":
            message = (
                f"a Read by a session without a project answered ok {done.result.get('ok')!r}, "
                f"errorCode {_code(done.result)!r}; expected WORKSPACE_REQUIRED"
            )
            self.peer.violate(Violation("RPC-5-pathless-session", message))

    @rule()
    @survives
    def file_tools(self) -> None:
        """RPC-5-session-root for Write, Edit and Glob: with project B
        selected, a relative Write by session A lands in A (answered at its
        prompt), an Edit changes it there and a Glob finds it there;
        RPC-4-tools.list names the built-in tools; RPC-4-session.delete: a
        deleted session is no longer listed."""
        if not self._guard():
            return
        world = self.world()
        self._result("workspace.set", {"path": str(world.b)})
        sid = self._session_in(world.a)
        if sid is None:
            return
        name = f"written-{self._call_id()}.txt"
        judges = ("RPC-5-session-root",)
        wrote = self._execute(sid, "Write", {"path": name, "content": "first"}, judges=judges)
        edit = {"path": name, "old_string": "first", "new_string": "second"}
        edited = self._execute(sid, "Edit", edit, judges=judges) if _succeeded(wrote) else None
        found = self._execute(sid, "Glob", {"pattern": "written-*.txt"}, judges=judges)
        landed = (world.a / name).read_text(encoding="utf-8") if (world.a / name).exists() else None
        if _succeeded(wrote):  # a side effect is judged only after its call succeeded
            self.recorder.exercise("RPC-5-session-root")
            wanted = "second" if edited is not None and _succeeded(edited) else "first"
            if landed != wanted:
                elsewhere = " (it went to the selected project B)" if (world.b / name).exists() else ""
                did = "Write then Edit" if wanted == "second" else "Write"
                message = f"a relative {did} by the session of project A left A's file {landed!r}{elsewhere}"
                self.peer.violate(Violation("RPC-5-session-root", message))
        if _succeeded(wrote) and _succeeded(found) and not _mentions(found.result, name):
            self.recorder.exercise("RPC-5-session-root")
            message = "a Glob over the session root misses the file just written"
            self.peer.violate(Violation("RPC-5-session-root", message))
        self._tools_list()
        self._delete(sid)

    def _tools_list(self) -> None:
        listed = self._result("tools.list", {})
        self.recorder.exercise("RPC-4-tools.list")
        if not all(_mentions(listed, f'"{tool}"') for tool in ("Read", "Bash")):
            message = f"tools.list does not name Read and Bash: {listed!r}"[:300]
            self.peer.violate(Violation("RPC-4-tools.list", message))

    def _delete(self, sid: str) -> None:
        response = self._call("session.delete", {"sessionId": sid})
        if response is None:
            return
        self.recorder.exercise("RPC-4-session.delete")
        listed = self._result("session.list", {})
        if "error" in response or _mentions(listed, sid):
            how = "was refused" if "error" in response else "left it listed"
            self.peer.violate(Violation("RPC-4-session.delete", f"session.delete of an idle session {how}"))

    # -- §10 items 3 and 4: outside paths, prompts, denial ------------------------------
    @rule(escape=ESCAPES, answer=ANSWERS)
    @survives
    def outside_path(self, escape: str, answer: str) -> None:
        """RPC-5-outside-path-permission and RPC-5-escape-classification: a
        Read outside the root (absolute, ``..`` or through a symlink) in ask
        mode prompts; RPC-10-04-permission-pending, RPC-6-pending-until-decided
        and RPC-6-pending-list / RPC-4-permissions.pending: the prompt stays
        open and listed; RPC-4-tools.abort: an abort naming another tool
        stops nothing; then RPC-10-03-denied-tool-denied (deny or abort gives
        TOOL_DENIED), RPC-4-permissions.resolve, RPC-5-outside-result-path
        (allow: the canonical absolute path) and RPC-4-permissions.evaluate.
        Each prompt is judged by RPC-6-request-shape."""
        ready = self._session_in_a()
        if ready is None:
            return
        world, sid = ready
        path, requirement = _outside(world, escape, SECRET)
        # The params are not documented; these are tools.execute's. Judged
        # only when a result comes: an object holding the decision.
        asked = self._call("permissions.evaluate", {"sessionId": sid, "toolName": "Read", "args": {"path": path}})
        evaluated = asked.get("result") if asked is not None else None
        if asked is not None:
            self.recorder.exercise("RPC-4-permissions.evaluate")
        if asked is not None and "result" in asked and not isinstance(evaluated, dict):
            message = f"permissions.evaluate answered {type(evaluated).__name__}; expected a decision object"
            self.peer.violate(Violation("RPC-4-permissions.evaluate", message))
        judges = (
            requirement,
            "RPC-10-04-permission-pending",
            "RPC-6-pending-until-decided",
            "RPC-10-03-denied-tool-denied",
        )
        open_ = self._execute(sid, "Read", {"path": path}, answer=None, judges=judges)
        if open_.refused is not None:
            return
        self.recorder.exercise(requirement)
        if open_.request is None:
            message = f"a Read of {path!r} outside the session root in ask mode raised no permissions.request"
            self.peer.violate(Violation(requirement, message))
            return
        early = self._still_pending(open_, sid)
        if early is None:
            self._judge_decided(self._finish(open_, answer), answer, world)
        elif answer != "allow-once":  # answered already: judge what came
            call_id = str((open_.request or {}).get("toolCallId"))
            done = self._judged(Executed(early, open_.request), call_id, "Read", (requirement,))
            self._judge_decided(done, answer, world)

    @rule(escape=ESCAPES, answer=st.sampled_from(("deny", "abort")))
    @survives
    def denied_write(self, escape: str, answer: str) -> None:
        """RPC-5-outside-path-permission and RPC-5-escape-classification: a
        Write outside the root in ask mode prompts, and denied or cancelled at
        its prompt writes nothing (§5: nothing is executed; a Read could not
        show that, it changes nothing either way); RPC-10-03-denied-tool-denied:
        it answers TOOL_DENIED."""
        ready = self._session_in_a()
        if ready is None:
            return
        world, sid = ready
        name = f"denied-{self._call_id()}.txt"
        path, requirement = _outside(world, escape, name)
        judges = (requirement, "RPC-10-03-denied-tool-denied")
        done = self._execute(sid, "Write", {"path": path, "content": "denied"}, answer=answer, judges=judges)
        if done.result is None:
            return
        self.recorder.exercise(requirement)
        how = "denied" if answer == "deny" else "cancelled by tools.abort"
        if done.request is None:
            message = f"a Write of {path!r} outside the session root in ask mode raised no permissions.request"
            self.peer.violate(Violation(requirement, message))
            return
        if (world.outside / name).exists():
            self.peer.violate(Violation(requirement, f"a Write outside the root {how} at its prompt wrote the file"))
        self.recorder.exercise("RPC-10-03-denied-tool-denied")
        if done.result.get("ok") is not False or _code(done.result) != "TOOL_DENIED":
            got = f"ok {done.result.get('ok')!r}, errorCode {_code(done.result)!r}"
            message = f"a Write {how} at its prompt answered {got}; expected TOOL_DENIED"
            self.peer.violate(Violation("RPC-10-03-denied-tool-denied", message))

    def _still_pending(self, open_: Executed, sid: str) -> dict[str, Any] | None:
        """The response, if one came while the prompt was open (a violation)."""
        request = open_.request or {}
        early = self.peer.await_answer(request.get("_rid"), timeout=PENDING_LOOK_S)
        self.recorder.exercise("RPC-10-04-permission-pending", "RPC-6-pending-until-decided")
        if early is not None:
            message = "tools.execute answered while its permission request was still unanswered"
            self.peer.violate(Violation("RPC-10-04-permission-pending", message))
            self.peer.violate(Violation("RPC-6-pending-until-decided", message))
            return early
        listed = self._result("permissions.pending", {"sessionId": sid})
        self.peer.add(rpc_results.permissions_pending_result(listed, session_id=sid))
        self.recorder.exercise("RPC-4-permissions.pending")
        if not _mentions(listed, str(request.get("requestId"))):
            message = "permissions.pending does not list an unanswered permission request"
            self.peer.violate(Violation("RPC-4-permissions.pending", message))
        other = {"sessionId": sid, "toolCallId": request.get("toolCallId"), "toolName": "Write"}
        self._result("tools.abort", other)
        self.recorder.exercise("RPC-4-tools.abort")
        early = self.peer.await_answer(request.get("_rid"), timeout=POLL_S)
        if early is not None:
            message = "tools.abort naming Write ended a Read call waiting on its permission prompt"
            self.peer.violate(Violation("RPC-4-tools.abort", message))
        return early

    def _judge_decided(self, done: Executed, answer: str, world: World) -> None:
        result = done.result
        if result is None:
            return
        self.recorder.exercise("RPC-4-permissions.resolve")
        if answer in ("deny", "abort"):
            self.recorder.exercise("RPC-10-03-denied-tool-denied")
            if result.get("ok") is not False or _code(result) != "TOOL_DENIED":
                how = "denied" if answer == "deny" else "cancelled by tools.abort"
                message = f"a Read {how} at its prompt answered ok {result.get('ok')!r}, errorCode {_code(result)!r}"
                self.peer.violate(Violation("RPC-10-03-denied-tool-denied", message + "; expected TOOL_DENIED"))
            if _mentions(result, MARK_OUT):
                self.peer.violate(Violation("RPC-10-03-denied-tool-denied", "a denied Read returned the file"))
            return
        if _code(result) == "TOOL_DENIED" or result.get("denied") is True:
            message = f"a Read allowed at its prompt answered ok {result.get('ok')!r}, errorCode {_code(result)!r}"
            self.peer.violate(Violation("RPC-4-permissions.resolve", message))
            return
        if result.get("ok") is not True or not _mentions(result.get("content"), MARK_OUT):
            return  # the tool failed for a reason of its own: nothing about the answer
        self.recorder.exercise("RPC-5-outside-result-path")
        canonical = str(world.outside / SECRET)
        if not _mentions(result.get("content"), canonical):
            message = f"a successful outside Read does not report the absolute canonical path {canonical}"
            self.peer.violate(Violation("RPC-5-outside-result-path", message))
