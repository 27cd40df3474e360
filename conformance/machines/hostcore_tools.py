"""Rules of :class:`~conformance.machines.hostcore.HostcoreMachine` that drive
tools.execute, permissions, plans, workspace, projects, forks and todos (host
RPC §4, §5, §5.1, §5.2, §6 and the §10 acceptance items 3-5 and 8-13).

Every rule builds what it needs from the wire alone, in a per-example
*world*: two project folders A and B and an outside folder under the run's
work root, a symlink from A to the outside folder, and sessions created with
``projectPath``. Sessions start in Agent mode with the product default
permission mode, ask (§5.1). Plan/Goal mode is entered with plans.enter from
a running turn; other permission modes only through an approval's
``targetPermissionMode`` -- both documented paths, so no undocumented
session.create parameter is relied on.

Rules never assert: answers are judged by the ``rpc_*`` validators and by
the comparisons written out here, each under its requirement id.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import rule

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreGone, HostcorePeer
from conformance.protocol import rpc_errors, rpc_limits, rpc_plans, rpc_results, rpc_session, rpc_tools
from conformance.protocol.violations import Violation

MARK_A, MARK_B, MARK_OUT = "marker-of-project-A", "marker-of-project-B", "marker-of-outside-folder"
NOTE = "note.txt"
SECRET = "secret.txt"
KINDS = st.sampled_from(rpc_limits.PROPOSAL_KINDS)
ESCAPES = st.sampled_from(("absolute", "dotdot", "symlink"))
ANSWERS = st.sampled_from(("deny", "allow-once", "abort"))
# Markdown whose bytes are easy to get wrong: CRLF, a trailing space, non-ASCII.
MARKDOWN = "# Plan\r\n\r\n- step one \n- étape deux ✓\n"
# How long a call waiting on a permission prompt is watched for an early
# answer (the prompt has no deadline, §6): a short, fixed look.
PENDING_LOOK_S = 0.3
POLL_S = 0.05
# How long after its answer a killed command's processes may still be seen:
# the host ends them first, so this only absorbs the time a kill takes to land.
REAP_GRACE_S = 3.0


@dataclass(frozen=True)
class World:
    a: Path
    b: Path
    outside: Path


@dataclass(frozen=True)
class Executed:
    """One tools.execute: its response (None: none in time) and the
    permissions.request it raised, if any. ``refused``: why the host-core's
    answer judges nothing -- it refused the argument shape the suite chose
    (then ``result`` is None, as for a call that got no result)."""

    response: dict[str, Any] | None
    request: dict[str, Any] | None
    refused: str | None = None

    @property
    def result(self) -> dict[str, Any] | None:
        value = self.response.get("result") if self.response is not None and self.refused is None else None
        return value if isinstance(value, dict) else None


def survives(step: Callable[..., None]) -> Callable[..., None]:
    """A step during which the host-core may end: that is recorded as an
    unanswered call (RPC-2-jsonrpc-2.0) and the generation stops."""

    @functools.wraps(step)
    def guarded(self: ToolRules, *args: Any, **kwargs: Any) -> None:
        try:
            step(self, *args, **kwargs)
        except HostcoreGone as exc:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"the host-core ended during {step.__name__}: {exc}"))
            self.ready = False

    return guarded


def _outside(world: World, escape: str, name: str) -> tuple[str, str]:
    """A path, as a session of project A writes it, to ``name`` in the
    outside folder, and the requirement that classifies that escape."""
    path = {
        "absolute": str(world.outside / name),
        "dotdot": f"../{world.outside.name}/{name}",
        "symlink": f"escape/{name}",
    }[escape]
    return path, "RPC-5-outside-path-permission" if escape == "absolute" else "RPC-5-escape-classification"


def _succeeded(done: Executed) -> bool:
    return done.result is not None and done.result.get("ok") is True


def _mentions(value: object, text: str) -> bool:
    return text in json.dumps(value, ensure_ascii=False)


def _code(result: dict[str, Any] | None) -> object:
    return result.get("errorCode") if result is not None else None


class ToolRules:
    """Mixed into HostcoreMachine, which provides the helpers named here."""

    recorder: ClassVar[Recorder]
    response_s: ClassVar[float]
    work_root: ClassVar[Path]
    peer: HostcorePeer
    ready: bool

    def _guard(self) -> bool:
        raise NotImplementedError

    def _call(self, method: str, params: object = None) -> dict[str, Any] | None:
        raise NotImplementedError

    def _result(self, method: str, params: object = None) -> Any:
        raise NotImplementedError

    def _restart(self) -> None:
        raise NotImplementedError

    # -- the world ----------------------------------------------------------------------
    _world: World | None = None
    _calls = 0
    _missed: frozenset[str] = frozenset()  # notification methods once waited for in vain

    def world(self) -> World:
        if self._world is None:
            base = Path(os.path.realpath(tempfile.mkdtemp(prefix="world-", dir=self.work_root)))
            a, b, outside = base / "project-a", base / "project-b", base / "outside"
            for folder, mark in ((a, MARK_A), (b, MARK_B), (outside, MARK_OUT)):
                folder.mkdir()
                (folder / NOTE).write_text(mark, encoding="utf-8")
            (outside / SECRET).write_text(MARK_OUT, encoding="utf-8")
            (a / "escape").symlink_to(outside, target_is_directory=True)
            self._world = World(a, b, outside)
        return self._world

    def _call_id(self) -> str:
        self._calls += 1
        return f"call-{self._calls}"

    def _session_in(self, folder: Path | None) -> str | None:
        params: dict[str, Any] = {} if folder is None else {"projectPath": str(folder)}
        response = self._call("session.create", params)
        if response is None or "result" not in response:
            if response is not None:
                self.peer.violate(Violation("RPC-4-session.create", f"session.create with {params} was refused"))
            return None
        return rpc_session.session_id(response["result"])

    def _session_in_a(self) -> tuple[World, str] | None:
        """The world and a new session of its project A (None: the generation
        is not ready, or session.create failed, which is reported)."""
        if not self._guard():
            return None
        world = self.world()
        sid = self._session_in(world.a)
        return None if sid is None else (world, sid)

    def _begin(self, sid: str) -> str | None:
        begun = self._result("session.beginTurn", {"sessionId": sid})
        turn = begun.get("turnId") if isinstance(begun, dict) else None
        return turn if isinstance(turn, str) else None

    def _end(self, sid: str, turn: str) -> None:
        # No inbox row (createNotification false): the notification rules of
        # the machine keep their own model of the inbox.
        params = {"turnId": turn, "status": "completed", "createNotification": False}  # §4a SessionEndTurnParams
        self._result("session.endTurn", params)

    def _notes(self, start: int, method: str) -> list[dict[str, Any]]:
        return [n for n in self.peer.notifications[start:] if n.get("method") == method]

    def _await_notes(self, start: int, method: str, session_id: str) -> list[dict[str, Any]]:
        """The ``method`` notifications for ``session_id`` since ``start``,
        waiting up to the response deadline for a first one (the document
        does not order a notification before or after the answer it goes
        with)."""
        # After one went missing (already a violation) later ones are not
        # waited for: a run would spend the whole deadline on each.
        patience = 0.0 if method in self._missed else self.response_s
        deadline = self.peer.target.now() + patience
        while True:
            found = [n.get("params") for n in self._notes(start, method)]
            mine = [p for p in found if isinstance(p, dict) and p.get("sessionId") == session_id]
            if not mine and self.peer.target.now() >= deadline:
                self._missed = self._missed | {method}
            if mine or not self.peer.alive or self.peer.target.now() >= deadline:
                return mine
            self.peer.pump(min(POLL_S, max(deadline - self.peer.target.now(), 0.0)))

    # -- tools.execute with its prompt -----------------------------------------------
    def _execute(
        self,
        sid: str,
        tool: str,
        args: object,
        *,
        answer: str | None = "allow-once",
        judges: tuple[str, ...] = (),
        **extra: Any,
    ) -> Executed:
        """Send one tools.execute; answer a permissions.request it raises with
        ``answer`` (None: leave it open and return without the response).
        Every response is judged by RPC-5-execute-result and §7's
        RPC-7-tool-outcomes-are-results. ``judges``: the requirements the
        call is made for, untested with the reason when the host-core
        refuses the suite's argument shape."""
        call_id = extra.pop("toolCallId", None) or self._call_id()
        params = {"sessionId": sid, "toolCallId": call_id, "toolName": tool, "args": args, **extra}
        start = len(self.peer.notifications)
        rid = self.peer.send("tools.execute", params)
        deadline = self.peer.target.now() + self.response_s
        request: dict[str, Any] | None = None
        while self.peer.target.now() < deadline:
            response = self.peer.await_answer(rid, timeout=POLL_S)
            if response is not None:
                return self._judged(Executed(response, request), call_id, tool, judges)
            if request is None:
                request = self._prompt(start, sid, call_id)
                if request is not None:
                    if answer is None:
                        return Executed(None, request | {"_rid": rid, "_judges": judges})
                    self._answer(request, answer, sid, call_id)
                    deadline = self.peer.target.now() + self.response_s
        self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"tools.execute {tool} got no response in time"))
        return Executed(None, request)

    def _judged(self, done: Executed, call_id: str, tool: str, judges: tuple[str, ...] = ()) -> Executed:
        assert done.response is not None
        self.peer.add(rpc_tools.tool_outcome_not_error(done.response))
        if "result" in done.response:
            self.peer.add(rpc_tools.execute_result(done.response["result"], tool_call_id=call_id))
        reason = rpc_errors.shape_refusal("tools.execute", {"toolName": tool}, done.response)
        if reason is None:
            return done
        # A side effect is judged only after the call it depends on succeeded.
        self.recorder.untestable(reason, *judges)
        return replace(done, refused=reason)

    def _prompt(self, start: int, sid: str, call_id: str) -> dict[str, Any] | None:
        for note in self._notes(start, "permissions.request"):
            params = note.get("params")
            if isinstance(params, dict) and (params.get("sessionId"), params.get("toolCallId")) == (sid, call_id):
                self.peer.add(rpc_results.permission_request_params(params))
                return params
        return None

    def _answer(self, request: dict[str, Any], answer: str, sid: str, call_id: str) -> None:
        if answer == "abort":
            self._result("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": request.get("toolName")})
        else:
            self._result("permissions.resolve", {"requestId": request.get("requestId"), "decision": answer})

    def _finish(self, open_: Executed, answer: str) -> Executed:
        """Answer the prompt a call left open and wait for its response."""
        request = open_.request or {}
        sid, call_id = str(request.get("sessionId")), str(request.get("toolCallId"))
        self._answer(request, answer, sid, call_id)
        response = self.peer.await_answer(request.get("_rid"))
        if response is None:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", "tools.execute got no response after its prompt"))
            return Executed(None, request)
        return self._judged(Executed(response, request), call_id, str(request.get("toolName")), request["_judges"])

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

    # -- §10 item 10: the durable mode decides ---------------------------------------
    def _shell_pin(self) -> tuple[str, str] | None:
        """The effective shell's (id, dialect) from commandShells.list, judged
        by RPC-5.2-catalog-shape (and RPC-4-commandShells.list)."""
        response = self._call("commandShells.list", {})
        if response is None:
            return None
        self.recorder.exercise("RPC-4-commandShells.list")
        if "result" not in response:
            self.peer.violate(Violation("RPC-4-commandShells.list", "commandShells.list was refused"))
            return None
        catalog = response["result"]
        self.peer.add(rpc_results.shell_catalog(catalog))
        effective = catalog.get("effective") if isinstance(catalog, dict) else None
        if not isinstance(effective, dict):
            return None
        shell, dialect = effective.get("id"), effective.get("dialect")
        return (shell, dialect) if isinstance(shell, str) and isinstance(dialect, str) else None

    def _bash(self, sid: str, command: str, *, answer: str | None = "allow-once", **extra: Any) -> Executed | None:
        pin = self._shell_pin()
        if pin is None:
            return None
        pinned: dict[str, Any] = {"expectedCommandShellId": pin[0], "expectedCommandShellDialect": pin[1]}
        return self._execute(sid, "Bash", {"command": command}, answer=answer, **pinned, **extra)

    def _enter(self, sid: str, turn: str, kind: str | None) -> bool:
        """plans.enter from the running turn (RPC-4-plans.enter); with kind
        None the call omits it (RPC-4-plans-kind-default). Judges the
        plans.changed it must emit and the planning state after it."""
        start = len(self.peer.notifications)
        params: dict[str, Any] = {"sessionId": sid, "turnId": turn, "toolCallId": self._call_id()}
        if kind is not None:
            params["kind"] = kind
        response = self._call("plans.enter", params)
        if response is None:
            return False
        self.recorder.exercise("RPC-4-plans.enter")
        if "result" not in response:
            code = rpc_errors.error_code_of(response.get("error"))
            self.peer.violate(Violation("RPC-4-plans.enter", f"plans.enter from the running turn was refused: {code}"))
            return False
        self._changed(start, sid, "entering planning")
        pending = self._pending(sid)
        wanted = kind or "plan"
        requirement = "RPC-4-plans.enter" if kind is not None else "RPC-4-plans-kind-default"
        self.recorder.exercise(requirement)
        if isinstance(pending, dict) and (pending.get("state"), pending.get("kind")) != ("planning", wanted):
            got = (pending.get("state"), pending.get("kind"))
            message = f"after plans.enter ({kind or 'no kind'}) plans.pending shows state/kind {got}"
            message += f"; expected planning/{wanted}"
            self.peer.violate(Violation(requirement, message))
        return True

    def _changed(self, start: int, sid: str, what: str, *, from_resolve: bool = False) -> dict[str, Any] | None:
        """RPC-5.1-plans-changed-emitted: a plans.changed for ``sid`` since
        ``start``; each one judged by RPC-5.1-plans-changed-shape."""
        mine = self._await_notes(start, "plans.changed", sid)
        for params in mine:
            self.peer.add(rpc_plans.plans_changed_params(params, from_resolve=from_resolve))
        self.recorder.exercise("RPC-5.1-plans-changed-emitted")
        if not mine:
            self.peer.violate(Violation("RPC-5.1-plans-changed-emitted", f"no plans.changed was emitted for {what}"))
            return None
        return mine[-1]

    def _pending(self, sid: str) -> Any:
        response = self._call("plans.pending", {"sessionId": sid})
        if response is None:
            return None  # unanswered (reported) or its params refused (untested)
        pending = response.get("result")
        self.peer.add(rpc_plans.plans_pending_result(pending))
        return pending

    @rule(kind=KINDS)
    @survives
    def plan_mode(self, kind: str) -> None:
        """RPC-10-10-forged-mode: in Plan/Goal mode a Write, an Edit and an
        unknown tool sent with requestedMode agent are refused and change
        nothing (RPC-5-plan-goal-denied, RPC-5-requested-mode-ignored); a
        Read still runs (RPC-5-plan-goal-allowed); Bash in ask mode prompts
        (RPC-5-plan-goal-bash-permission).
        The session enters the kind's mode with plans.enter (RPC-4-plans.enter;
        plan without a kind: RPC-4-plans-kind-default), which must emit
        plans.changed (RPC-5.1-plans-changed-emitted)."""
        if not self._guard():
            return
        world = self.world()
        sid = self._session_in(world.a)
        turn = self._begin(sid) if sid is not None else None
        if sid is None or turn is None or not self._enter(sid, turn, None if kind == "plan" else kind):
            return
        forged: dict[str, Any] = {"turnId": turn, "requestedMode": "agent"}
        judges = ("RPC-10-10-forged-mode", "RPC-5-plan-goal-denied", "RPC-5-requested-mode-ignored")
        target = f"written-in-{kind}-{self._call_id()}.txt"
        for tool, args in (
            ("Write", {"path": target, "content": "x"}),
            ("Edit", {"path": NOTE, "old_string": MARK_A, "new_string": "y"}),
        ):
            done = self._execute(sid, tool, args, judges=judges, **forged)
            self._judge_denied(done, tool, kind, in_plan_code=True)
        done = self._execute(sid, "NoSuchTool", {}, answer="allow-once", **forged)
        self._judge_denied(done, "an unknown tool", kind, in_plan_code=False)
        changed = (world.a / target).exists() or (world.a / NOTE).read_text(encoding="utf-8") != MARK_A
        if changed:
            message = f"a Write or Edit in {kind} mode changed project A's files"
            for requirement in ("RPC-10-10-forged-mode", "RPC-5-plan-goal-denied"):
                self.peer.violate(Violation(requirement, message))
        read = self._execute(sid, "Read", {"path": NOTE}, judges=("RPC-5-plan-goal-allowed",), **forged)
        if read.result is not None:
            self.recorder.exercise("RPC-5-plan-goal-allowed")
            if read.result.get("ok") is not True:
                message = f"a Read inside the root in {kind} mode answered errorCode {_code(read.result)!r}"
                self.peer.violate(Violation("RPC-5-plan-goal-allowed", message))
        self._todo_write_refused(sid, turn, kind)
        bash = self._bash(sid, "echo planning", answer="deny", turnId=turn, judges=("RPC-5-plan-goal-bash-permission",))
        if bash is not None and bash.result is not None:
            self.recorder.exercise("RPC-5-plan-goal-bash-permission")
            if bash.request is None:
                message = f"Bash in {kind} mode under the ask permission mode ran without a permissions.request"
                self.peer.violate(Violation("RPC-5-plan-goal-bash-permission", message))
                self.peer.violate(Violation("RPC-10-10-forged-mode", message))
        self._end(sid, turn)

    def _todo_write_refused(self, sid: str, turn: str, kind: str) -> None:
        """RPC-4-todowrite-scope: TodoWrite from a Plan/Goal turn is an error
        result and leaves the checklist as it was."""
        before = self._result("todos.get", {"sessionId": sid})
        items = [{"content": "planned", "status": "pending"}]
        done = self._execute(sid, "TodoWrite", {"todos": items}, turnId=turn)
        after = self._result("todos.get", {"sessionId": sid})
        if done.result is None:
            return
        self.recorder.exercise("RPC-4-todowrite-scope")
        if done.result.get("ok") is not False or (before is not None and after != before):
            message = f"TodoWrite from a {kind}-mode turn answered ok {done.result.get('ok')!r} or changed the list"
            self.peer.violate(Violation("RPC-4-todowrite-scope", message))

    def _judge_denied(self, done: Executed, tool: str, kind: str, *, in_plan_code: bool) -> None:
        result = done.result
        if result is None:
            return
        for requirement in ("RPC-10-10-forged-mode", "RPC-5-plan-goal-denied", "RPC-5-requested-mode-ignored"):
            self.recorder.exercise(requirement)
        code = _code(result)
        refused = result.get("ok") is False and done.request is None
        if refused and in_plan_code and not (isinstance(code, str) and code.endswith("_IN_PLAN")):
            message = f"{tool} in {kind} mode was refused with errorCode {code!r}; expected a *_IN_PLAN code"
            self.peer.violate(Violation("RPC-5-plan-goal-denied", message))
        elif not refused:
            how = "raised a permission prompt" if done.request is not None else f"answered ok {result.get('ok')!r}"
            message = f"{tool} sent with requestedMode agent to a {kind}-mode session {how}; the mode policy refuses it"
            for requirement in ("RPC-10-10-forged-mode", "RPC-5-plan-goal-denied", "RPC-5-requested-mode-ignored"):
                self.peer.violate(Violation(requirement, message))

    # -- §10 items 11 and 12: submissions, resolution, interruption -----------------------
    def _submit(self, sid: str, turn: str, kind: str, *, method: bool = False) -> tuple[str, dict[str, Any]] | None:
        """Run the kind's submit tool (or, with ``method``, call plans.submit
        with the same fields); the pending proposal it created (found
        through plans.pending, judged by RPC-5.1-pending-result and
        RPC-5.1-proposal-shape) with its tool-call id. RPC-4-plans.submit:
        the submission succeeds from the running turn in the kind's mode."""
        args = {"title": f"A {kind} title", "markdown": MARKDOWN, "question": f"Approve this {kind}?"}
        call_id = self._call_id()
        if method:
            ids = {"sessionId": sid, "turnId": turn, "toolCallId": call_id, "kind": kind}
            response = self._call("plans.submit", ids | args)
            result = response.get("result") if response is not None else None
            failed = None if isinstance(result, dict) and result.get("ok") is not False else "plans.submit"
            code: object = rpc_errors.error_code_of(response.get("error")) if response is not None else None
        else:
            done = self._execute(sid, rpc_limits.SUBMIT_TOOLS[kind], args, turnId=turn, toolCallId=call_id)
            response, code = done.response, _code(done.result)
            failed = (
                None if done.result is not None and done.result.get("ok") is True else rpc_limits.SUBMIT_TOOLS[kind]
            )
        if response is None:
            return None
        self.recorder.exercise("RPC-4-plans.submit")
        if failed is not None:
            message = f"{failed} in {kind} mode from the running turn failed: {code!r}"
            self.peer.violate(Violation("RPC-4-plans.submit", message))
            return None
        return self._pending_proposal(sid, call_id, kind, args)

    def _pending_proposal(
        self, sid: str, call_id: str, kind: str, args: dict[str, str]
    ) -> tuple[str, dict[str, Any]] | None:
        pending = self._pending(sid)
        if pending is None:
            return None  # unanswered (reported) or its params refused (untested)
        plans = pending.get("plans") if isinstance(pending, dict) else None
        found = [p for p in plans or [] if isinstance(p, dict) and p.get("toolCallId") == call_id]
        self.recorder.exercise("RPC-4-plans.pending")
        if not found:
            message = "plans.pending does not list the proposal just submitted"
            self.peer.violate(Violation("RPC-4-plans.pending", message))
            return None
        proposal = found[0]
        self.peer.add(rpc_plans.proposal_shape(proposal))
        self.recorder.exercise("RPC-10-11-submit-artifacts")
        carried = (proposal.get("kind"), proposal.get("title"), proposal.get("question"))
        if carried != (kind, args["title"], args["question"]):
            message = f"the pending {kind} proposal does not carry the submitted kind, title and question"
            self.peer.violate(Violation("RPC-10-11-submit-artifacts", message))
        return call_id, proposal

    def _artifact_bytes(self, root: Path, proposal: dict[str, Any]) -> bytes | None:
        artifact = proposal.get("artifact")
        path = artifact.get("relativePath") if isinstance(artifact, dict) else None
        if not isinstance(path, str) or os.path.isabs(path) or ".." in Path(path).parts:
            return None
        try:
            return (root / path).read_bytes()
        except OSError:
            return None

    def _judge_artifact(self, root: Path, proposal: dict[str, Any], kind: str) -> None:
        """RPC-5.1-artifact-exact-bytes and RPC-10-11-submit-artifacts."""
        found = self._artifact_bytes(root, proposal)
        artifact = proposal.get("artifact")
        findings = list(rpc_plans.artifact_matches(artifact, kind_=kind, markdown=MARKDOWN, file_bytes=found))
        self.peer.add(findings)
        self.recorder.exercise("RPC-10-11-submit-artifacts")
        if found is None:
            message = f"the {kind} artifact {artifact!r} is not a readable file under the session root"
            self.peer.violate(Violation("RPC-5.1-artifact-exact-bytes", message))
        if found is None or any(isinstance(f, Violation) for f in findings):
            self.peer.violate(
                Violation("RPC-10-11-submit-artifacts", f"the {kind} artifact does not hold the exact bytes")
            )

    def _resolve(self, proposal: dict[str, Any], call_id: str, action: str, **changes: Any) -> dict[str, Any] | None:
        params: dict[str, Any] = {
            "proposalId": proposal.get("id"),
            "sessionId": proposal.get("sessionId"),
            "turnId": proposal.get("turnId"),
            "toolCallId": call_id,
            "version": proposal.get("version"),
            "action": action,
        }
        if action == "approve":
            params["targetPermissionMode"] = "auto"
        return self._call("plans.resolve", params | changes)

    def _refused(self, response: dict[str, Any] | None, requirement: str, what: str) -> None:
        if response is None:
            return
        result = response.get("result")
        self.recorder.exercise(requirement)
        if "error" not in response and not (isinstance(result, dict) and result.get("ok") is False):
            self.peer.violate(Violation(requirement, f"{what} was accepted"))

    @rule(kind=KINDS)
    @survives
    def submit_and_resolve(self, kind: str) -> None:
        """RPC-10-11-submit-artifacts: the other kind's submit tool fails with
        PLAN_KIND_MISMATCH and writes nothing (RPC-5.1-kind-mismatch); the
        artifact holds the exact bytes (RPC-5.1-artifact-exact-bytes), each
        submission its own file (RPC-5.1-artifact-unique); only a matching
        answer resolves (RPC-5.1-resolve-matching-only); rejection keeps the
        contract mode (RPC-5.1-reject-effects), approval queues an execution
        and stores the chosen permission mode (RPC-5.1-approve-effects,
        RPC-4-plans.resolve, RPC-5.1-resolution-result); the execution is
        listed, claimed and finished (RPC-4-plans.queuedExecutions,
        RPC-4-plans.claimExecution, RPC-4-plans.finishExecution,
        RPC-5.1-execution-shape); auto mode then runs an outside Read and a
        Plan-mode Bash without prompting (RPC-5-outside-path-permission,
        RPC-5-plan-goal-bash-permission).
        Submissions (RPC-4-plans.submit) are found through plans.pending
        (RPC-4-plans.pending, RPC-5.1-pending-result, RPC-5.1-proposal-shape);
        every plans.changed is judged by RPC-5.1-plans-changed-shape."""
        if not self._guard():
            return
        world = self.world()
        sid = self._session_in(world.a)
        turn = self._begin(sid) if sid is not None else None
        if sid is None or turn is None or not self._enter(sid, turn, kind):
            return
        self._kind_mismatch(sid, turn, kind, world.a)
        first = self._submit(sid, turn, kind)
        if first is None:
            return
        call_id, proposal = first
        self._judge_artifact(world.a, proposal, kind)
        first_bytes = self._artifact_bytes(world.a, proposal)
        for changes, what in (
            ({"version": _bumped(proposal.get("version"))}, "a resolution naming another version"),
            ({"turnId": "turn-that-never-ran"}, "a resolution naming another turn"),
            ({"toolCallId": "call-that-never-was"}, "a resolution naming another tool call"),
        ):
            self._refused(self._resolve(proposal, call_id, "reject", **changes), "RPC-5.1-resolve-matching-only", what)
        if not self._still_listed(sid, proposal):
            return
        start = len(self.peer.notifications)
        rejected = self._resolution(self._resolve(proposal, call_id, "reject"), "rejected")
        if rejected is None:
            return
        self._changed(start, sid, "a rejection", from_resolve=True)
        if not self._contract_mode_kept(sid, kind, "RPC-5.1-reject-effects", "a rejection"):
            return  # the next submission needs the contract mode
        second = self._submit(sid, turn, kind)
        if second is None:
            return
        self._unique(world.a, proposal, second[1], first_bytes)
        self._artifacts_listed(sid, proposal, second[1])
        self._approve(sid, turn, kind, second, world)

    def _kind_mismatch(self, sid: str, turn: str, kind: str, root: Path) -> None:
        other = "goal" if kind == "plan" else "plan"
        folder = root / rpc_limits.ARTIFACT_DIRS[other]
        before = sorted(folder.iterdir()) if folder.is_dir() else []
        args = {"title": "wrong kind", "markdown": MARKDOWN, "question": "?"}
        done = self._execute(sid, rpc_limits.SUBMIT_TOOLS[other], args, turnId=turn)
        response = done.response
        if response is None:
            return
        refused: dict[str, Any] = done.result or {}
        if done.result is None:  # PLAN_* has a §7 error slot too (1015): an error answer passes
            refused = {"ok": False, "errorCode": rpc_errors.error_code_of(response.get("error"))}
        for requirement in ("RPC-5.1-kind-mismatch", "RPC-10-11-submit-artifacts"):
            self.recorder.exercise(requirement)
        after = sorted(folder.iterdir()) if folder.is_dir() else []
        if refused.get("ok") is not False or refused.get("errorCode") != "PLAN_KIND_MISMATCH" or after != before:
            wrote = "; it wrote an artifact" if after != before else ""
            message = (
                f"{rpc_limits.SUBMIT_TOOLS[other]} in {kind} mode answered ok {refused.get('ok')!r}, "
                f"errorCode {refused.get('errorCode')!r}{wrote}; expected PLAN_KIND_MISMATCH and no artifact"
            )
            for requirement in ("RPC-5.1-kind-mismatch", "RPC-10-11-submit-artifacts"):
                self.peer.violate(Violation(requirement, message))

    def _still_listed(self, sid: str, proposal: dict[str, Any]) -> bool:
        pending = self._pending(sid)
        listed = [p for p in (pending.get("plans") or []) if isinstance(p, dict)] if isinstance(pending, dict) else []
        same = [p for p in listed if p.get("id") == proposal.get("id")]
        if not same or same[0].get("status") != "pending":
            message = "after refused resolutions the proposal is no longer pending"
            self.peer.violate(Violation("RPC-5.1-resolve-matching-only", message))
            return False
        return True

    def _resolution(self, response: dict[str, Any] | None, status: str) -> dict[str, Any] | None:
        """A matching resolution's result (RPC-4-plans.resolve,
        RPC-5.1-resolution-result) whose proposal is now ``status``."""
        if response is None:
            return None
        self.recorder.exercise("RPC-4-plans.resolve")
        result = response.get("result")
        if not isinstance(result, dict):
            code = rpc_errors.error_code_of(response.get("error"))
            self.peer.violate(Violation("RPC-4-plans.resolve", f"a matching {status} resolution was refused: {code}"))
            return None
        self.peer.add(rpc_plans.resolution_result(result))
        proposal = result.get("proposal")
        if result.get("ok") is not True or not isinstance(proposal, dict) or proposal.get("status") != status:
            got = proposal.get("status") if isinstance(proposal, dict) else None
            message = f"a matching resolution answered ok {result.get('ok')!r}, status {got!r}; expected {status}"
            self.peer.violate(Violation("RPC-4-plans.resolve", message))
            return None
        return result

    def _contract_mode_kept(self, sid: str, kind: str, requirement: str, after: str) -> bool:
        pending = self._pending(sid)
        self.recorder.exercise(requirement)
        if isinstance(pending, dict) and (pending.get("state"), pending.get("kind")) != ("planning", kind):
            got = (pending.get("state"), pending.get("kind"))
            message = f"after {after} plans.pending shows state/kind {got}; the session stays in {kind} (planning)"
            self.peer.violate(Violation(requirement, message))
            return False
        return True

    def _unique(self, root: Path, first: dict[str, Any], second: dict[str, Any], first_bytes: bytes | None) -> None:
        """RPC-5.1-artifact-unique: a new file; the first one unchanged."""
        paths = [
            p.get("artifact", {}).get("relativePath") if isinstance(p.get("artifact"), dict) else None
            for p in (first, second)
        ]
        self.recorder.exercise("RPC-5.1-artifact-unique")
        if paths[0] == paths[1] or self._artifact_bytes(root, first) != first_bytes:
            message = f"a second submission reused or changed the first artifact ({paths[0]!r})"
            self.peer.violate(Violation("RPC-5.1-artifact-unique", message))

    def _artifacts_listed(self, sid: str, *proposals: dict[str, Any]) -> None:
        """RPC-4-artifacts.list: both submissions' artifacts are listed."""
        response = self._call("artifacts.list", {"sessionId": sid})
        if response is None:
            return  # unanswered (reported) or its params refused (untested)
        listed = response.get("result")
        self.recorder.exercise("RPC-4-artifacts.list")
        for proposal in proposals:
            artifact = proposal.get("artifact")
            path = artifact.get("relativePath") if isinstance(artifact, dict) else None
            if isinstance(path, str) and not _mentions(listed, path):
                self.peer.violate(Violation("RPC-4-artifacts.list", f"artifacts.list lacks the artifact {path}"))

    def _approve(self, sid: str, turn: str, kind: str, submitted: tuple[str, dict[str, Any]], world: World) -> None:
        call_id, proposal = submitted
        start = len(self.peer.notifications)
        approved = self._resolution(self._resolve(proposal, call_id, "approve"), "approved")
        if approved is None:
            return
        self._changed(start, sid, "an approval", from_resolve=True)
        execution = approved.get("execution")
        self.recorder.exercise("RPC-5.1-approve-effects")
        state = execution.get("state") if isinstance(execution, dict) else None
        if state != "queued" or approved.get("proposal", {}).get("executionId") in (None, ""):
            message = f"an approval answered execution state {state!r} without an execution id; expected queued"
            self.peer.violate(Violation("RPC-5.1-approve-effects", message))
        pending = self._pending(sid)
        if isinstance(pending, dict) and pending.get("state") in ("planning", "awaiting_approval"):
            message = (
                f"after an approval plans.pending shows state {pending.get('state')!r}; the session is Agent again"
            )
            self.peer.violate(Violation("RPC-5.1-approve-effects", message))
        stale = self._resolve(proposal, call_id, "reject")
        self._refused(stale, "RPC-5.1-resolve-matching-only", "a second answer to a settled proposal")
        if isinstance(execution, dict):
            self._execution_flow(sid, proposal, execution)
        self._auto_mode(sid, turn, kind, world)

    def _execution_flow(self, sid: str, proposal: dict[str, Any], execution: dict[str, Any]) -> None:
        """The params and result shapes of these three are not documented:
        an INVALID_PARAMS-class refusal is not judged (the guess was wrong)."""
        listed = self._call("plans.queuedExecutions", {"sessionId": sid})
        if listed is not None and not _guessed_wrong(listed):
            self.recorder.exercise("RPC-4-plans.queuedExecutions")
            if not _mentions(listed.get("result"), str(execution.get("id"))):
                message = "plans.queuedExecutions does not list the execution an approval just queued"
                self.peer.violate(Violation("RPC-4-plans.queuedExecutions", message))
        ids = {"executionId": execution.get("id"), "proposalId": proposal.get("id"), "sessionId": sid}
        for method, requirement, state in (
            ("plans.claimExecution", "RPC-4-plans.claimExecution", "running"),
            ("plans.finishExecution", "RPC-4-plans.finishExecution", "completed"),
        ):
            response = self._call(method, ids)
            if response is None or _guessed_wrong(response):
                return
            self.recorder.exercise(requirement)
            result = response.get("result")
            moved = result.get("execution", result) if isinstance(result, dict) else None
            if isinstance(moved, dict) and "state" in moved:
                self.peer.add(rpc_plans.execution_shape(moved))
            elif "result" in response and requirement == "RPC-4-plans.finishExecution":
                continue  # the claim reports the execution (§4); a finish need not
            if not isinstance(moved, dict) or moved.get("state") != state or moved.get("kind") != execution.get("kind"):
                got = moved.get("state") if isinstance(moved, dict) else response.get("error")
                message = f"{method} answered {got!r}; expected the execution, now {state}, of its kind"
                self.peer.violate(Violation(requirement, message))

    def _auto_mode(self, sid: str, turn: str, kind: str, world: World) -> None:
        """The approval chose auto (stored on the session): an outside Read
        runs unprompted, and so does Bash once the session plans again."""
        done = self._execute(sid, "Read", {"path": str(world.outside / SECRET)}, answer="deny")
        if done.result is not None:
            self.recorder.exercise("RPC-5-outside-path-permission")
            if done.request is not None or done.result.get("ok") is not True:
                message = "after an approval choosing auto, an outside Read was prompted or refused"
                for requirement in ("RPC-5-outside-path-permission", "RPC-5.1-approve-effects"):
                    self.peer.violate(Violation(requirement, message))
        self._end(sid, turn)
        again = self._begin(sid)
        if again is None or not self._enter(sid, again, kind):
            return
        bash = self._bash(sid, "echo auto", answer="deny", turnId=again)
        if bash is not None and bash.result is not None:
            self.recorder.exercise("RPC-5-plan-goal-bash-permission")
            if bash.request is not None or bash.result.get("ok") is not True:
                message = f"Bash in {kind} mode under auto was prompted or refused ({_code(bash.result)!r})"
                self.peer.violate(Violation("RPC-5-plan-goal-bash-permission", message))
        self._end(sid, again)

    @rule(kind=KINDS, how=st.sampled_from(("abort", "restart-pending", "restart-queued")))
    @survives
    def plan_interrupted(self, kind: str, how: str) -> None:
        """RPC-10-12-plan-statuses: plans.abort (RPC-4-plans.abort) and a host
        restart (RPC-5.1-startup-interrupts) interrupt a pending proposal or
        a queued execution (RPC-5.1-interrupted): no longer pending or
        queued, a late answer fails closed, a pending session keeps its
        contract mode and an approved one stays Agent; abort emits
        plans.changed (RPC-5.1-plans-changed-emitted)."""
        if not self._guard():
            return
        world = self.world()
        sid = self._session_in(world.a)
        turn = self._begin(sid) if sid is not None else None
        if sid is None or turn is None or not self._enter(sid, turn, kind):
            return
        # The abort case submits through plans.submit, the others with the tool.
        submitted = self._submit(sid, turn, kind, method=how == "abort")
        if submitted is None:
            return
        call_id, proposal = submitted
        execution = None
        if how == "restart-queued":
            approved = self._resolution(self._resolve(proposal, call_id, "approve"), "approved")
            execution = approved.get("execution") if approved is not None else None
        requirements = ["RPC-10-12-plan-statuses", "RPC-5.1-interrupted"]
        if how == "abort":
            start = len(self.peer.notifications)
            response = self._call("plans.abort", {"sessionId": sid})
            requirements.append("RPC-4-plans.abort")
            if response is None:
                return
            if "result" not in response:
                self.peer.violate(Violation("RPC-4-plans.abort", "plans.abort of a pending proposal was refused"))
            self._changed(start, sid, "an abort")
        else:
            self._restart()
            requirements.append("RPC-5.1-startup-interrupts")
            if not self._guard():
                return
        self._interrupted(sid, kind, proposal, call_id, execution, requirements, how)
        self._end(sid, turn)

    def _interrupted(
        self,
        sid: str,
        kind: str,
        proposal: dict[str, Any],
        call_id: str,
        execution: object,
        requirements: list[str],
        how: str,
    ) -> None:
        self.recorder.exercise(*requirements)
        problems: list[str] = []
        pending = self._pending(sid)
        if _mentions(pending.get("plans") if isinstance(pending, dict) else None, str(proposal.get("id"))):
            problems.append("the proposal is still pending")
        if how == "restart-queued":
            queued = self._result("plans.queuedExecutions", {"sessionId": sid})
            if isinstance(execution, dict) and _mentions(queued, str(execution.get("id"))):
                problems.append("the execution is still queued")
            if isinstance(pending, dict) and pending.get("state") in ("planning", "awaiting_approval"):
                problems.append(f"the approved session is back in state {pending.get('state')!r}")
        elif isinstance(pending, dict) and "RPC-5.1-startup-interrupts" in requirements:
            if (pending.get("state"), pending.get("kind")) != ("planning", kind):
                problems.append(f"the session left its {kind} contract mode (state {pending.get('state')!r})")
        late = self._resolve(proposal, call_id, "approve")
        if (
            late is not None
            and "result" in late
            and isinstance(late["result"], dict)
            and late["result"].get("ok") is not False
        ):
            problems.append("a late approval was accepted")
        for problem in problems:
            for requirement in requirements:
                self.peer.violate(Violation(requirement, f"after {how} of a {kind}: {problem}"))


def _guessed_wrong(response: dict[str, Any]) -> bool:
    """An error saying the params were invalid, to a call whose params the
    document does not spell out."""
    return rpc_errors.error_code_of(response.get("error")) in rpc_errors.INVALID_INPUT_CODES


def _bumped(version: object) -> object:
    return version + 1 if isinstance(version, int | float) and not isinstance(version, bool) else 99


class ForkTodoRules(ToolRules):
    """Forks (§10 items 8 and 9) and the session Todo checklist (§4)."""

    _messages = 0

    def _transcript(self, sid: str) -> list[tuple[object, str]] | None:
        """(role, content) of each message session.get returns (judged by
        RPC-4-session.get); None when the answer holds no message list."""
        result = self._result("session.get", {"sessionId": sid})
        if result is None:
            return None
        self.peer.add(rpc_session.session_get_result(result, params={"sessionId": sid}))
        messages = result.get("messages") if isinstance(result, dict) else None
        if not isinstance(messages, list):
            return None
        return [(m.get("role"), json.dumps(m.get("content"), sort_keys=True)) for m in messages if isinstance(m, dict)]

    def _ids(self, sid: str) -> set[str]:
        result = self._result("session.get", {"sessionId": sid})
        messages = result.get("messages") if isinstance(result, dict) else None
        return {m["id"] for m in messages or [] if isinstance(m, dict) and isinstance(m.get("id"), str)}

    def _append(self, sid: str, role: str) -> str:
        self._messages += 1
        sent = f"fork-msg-{self._messages}"
        message = {"id": sent, "role": role, "content": [{"type": "text", "text": f"{role} says {self._messages}"}]}
        result = self._result("session.appendMessage", {"sessionId": sid, "message": message})
        stored = result.get("messageId") if isinstance(result, dict) else None
        return stored if isinstance(stored, str) else sent

    def _fork(self, params: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        response = self._call("session.fork", params)
        result = response.get("result") if response is not None else None
        return response, rpc_session.session_id(result) if result is not None else None

    @rule()
    @survives
    def fork(self) -> None:
        """RPC-10-08-fork-idle and RPC-4-session.fork: the child has the
        source's transcript under new message ids and its configuration, and
        changes to it leave the source alone; RPC-10-09-fork-through-message:
        a fork through a message ends there, an unknown anchor or source is
        NOT_FOUND and creates nothing (RPC-4-session.fork-missing); a running
        source refuses a whole-session fork (RPC-4-session.fork-running).
        Every transcript read is judged by RPC-4-session.get."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        if sid is None:
            return
        anchors = [self._append(sid, role) for role in ("user", "assistant", "user", "assistant")]
        source = self._transcript(sid)
        response, child = self._fork({"sessionId": sid})
        self.recorder.exercise("RPC-10-08-fork-idle", "RPC-4-session.fork")
        if child is None or source is None:
            if response is not None and child is None:
                self.peer.violate(Violation("RPC-10-08-fork-idle", "session.fork of an idle session made no child"))
            return
        self._judge_child(sid, child, source)
        self._through(sid, anchors[1], source[:2])
        self._missing(sid)
        self._running(sid)

    def _judge_child(self, sid: str, child: str, source: list[tuple[object, str]]) -> None:
        copied = self._transcript(child)
        if copied is not None and copied != source:
            message = f"the fork holds {len(copied)} messages unlike the source's {len(source)}"
            self.peer.violate(Violation("RPC-10-08-fork-idle", message))
        shared = self._ids(sid) & self._ids(child)
        if shared:
            message = f"the fork reuses the source's message id {sorted(shared)[0]!r}; a fork gets new ids"
            self.peer.violate(Violation("RPC-4-session.fork", message))
        self._same_configuration(sid, child)
        self._append(child, "user")
        self.peer.add(
            rpc_session.rename_result(
                self._call("session.rename", {"id": child, "title": "child"}) or {}, title="child"
            )
        )
        if self._transcript(sid) != source:
            self.peer.violate(Violation("RPC-10-08-fork-idle", "appending to the fork changed the source's transcript"))

    def _same_configuration(self, sid: str, child: str) -> None:
        listed = self._result("session.list", {})
        summaries = listed.get("sessions") if isinstance(listed, dict) else listed
        by_id = {rpc_session.session_id(s): s for s in summaries or [] if isinstance(s, dict)}
        parent, copy = by_id.get(sid), by_id.get(child)
        if not isinstance(parent, dict) or not isinstance(copy, dict):
            return
        for key in ("projectPath", "projectId", "mode", "permissionMode", "providerId", "modelId", "thinkingLevel"):
            if key in parent and key in copy and parent[key] != copy[key]:
                message = f"the fork's {key} is {copy[key]!r}; the source's is {parent[key]!r}"
                self.peer.violate(Violation("RPC-10-08-fork-idle", message))

    def _through(self, sid: str, anchor: str, prefix: list[tuple[object, str]]) -> None:
        _, child = self._fork({"sessionId": sid, "throughMessageId": anchor})
        self.recorder.exercise("RPC-10-09-fork-through-message")
        if child is None:
            self.peer.violate(Violation("RPC-10-09-fork-through-message", "a fork through a source message failed"))
            return
        copied = self._transcript(child)
        if copied is not None and copied != prefix:
            message = f"a fork through message 2 of 4 holds {len(copied)} messages; expected the first 2"
            self.peer.violate(Violation("RPC-10-09-fork-through-message", message))

    def _count(self) -> int | None:
        listed = self._result("session.list", {})
        summaries = listed.get("sessions") if isinstance(listed, dict) else listed
        return len(summaries) if isinstance(summaries, list) else None

    def _missing(self, sid: str) -> None:
        before = self._count()
        for params, requirements in (
            (
                {"sessionId": sid, "throughMessageId": "no-such-message"},
                ("RPC-10-09-fork-through-message", "RPC-4-session.fork-missing"),
            ),
            ({"sessionId": "ses-that-does-not-exist"}, ("RPC-4-session.fork-missing",)),
        ):
            response, _ = self._fork(params)
            if response is None:
                return
            self.recorder.exercise(*requirements)
            code = rpc_errors.error_code_of(response.get("error"))
            if code not in ("NOT_FOUND", "SESSION_NOT_FOUND"):
                what = "an unknown anchor" if "throughMessageId" in params else "an unknown source"
                message = f"session.fork of {what} answered {code or 'a result'!r}; expected NOT_FOUND"
                for requirement in requirements:
                    self.peer.violate(Violation(requirement, message))
        after = self._count()
        if before is not None and after is not None and after != before:
            for requirement in ("RPC-10-09-fork-through-message", "RPC-4-session.fork-missing"):
                self.peer.violate(Violation(requirement, "a refused fork still created a session"))

    def _running(self, sid: str) -> None:
        turn = self._begin(sid)
        if turn is None:
            return
        response, _ = self._fork({"sessionId": sid})
        if response is not None:
            self.recorder.exercise("RPC-4-session.fork-running")
            code = rpc_errors.error_code_of(response.get("error"))
            if code not in ("CONFLICT", "AGENT_BUSY"):
                message = f"a whole-session fork of a running source answered {code or 'a result'!r}; expected CONFLICT"
                self.peer.violate(Violation("RPC-4-session.fork-running", message))
        self._end(sid, turn)

    # -- the Todo checklist ----------------------------------------------------------------
    def _todos(self, sid: str) -> dict[str, Any] | None:
        result = self._result("todos.get", {"sessionId": sid})
        self.peer.add(rpc_session.todos_result(result, session_id=sid))
        return result if isinstance(result, dict) else None

    @rule()
    @survives
    def todos(self) -> None:
        """RPC-4-todos.get: the snapshot, NOT_FOUND for an unknown session and
        INVALID_ARGUMENT for a blank id; RPC-4-todowrite-scope: no write
        without the session's running turn, a write advances the revision
        and emits todos.changed; RPC-4-todowrite-rules: trimmed content,
        priority medium by default, a second in_progress demoted, more than
        50 items refused."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        if sid is None:
            return
        first = self._todos(sid)
        self._todo_errors()
        items = [{"content": "  first  ", "status": "in_progress"}, {"content": "second", "status": "in_progress"}]
        outside = self._execute(sid, "TodoWrite", {"todos": items})
        self.recorder.exercise("RPC-4-todowrite-scope")
        if outside.result is not None and outside.result.get("ok") is not False:
            self.peer.violate(Violation("RPC-4-todowrite-scope", "TodoWrite without a running turn succeeded"))
        turn = self._begin(sid)
        if turn is None or first is None:
            return
        start = len(self.peer.notifications)
        self._execute(sid, "TodoWrite", {"todos": items}, turnId=turn)
        written = self._todos(sid)
        self._judge_written(first, written, start)
        too_many = [{"content": f"item {i}", "status": "pending"} for i in range(rpc_limits.MAX_TODO_ITEMS + 1)]
        refused = self._execute(sid, "TodoWrite", {"todos": too_many}, turnId=turn)
        self.recorder.exercise("RPC-4-todowrite-rules")
        if refused.result is not None and refused.result.get("ok") is not False:
            self.peer.violate(Violation("RPC-4-todowrite-rules", f"TodoWrite of {len(too_many)} items succeeded"))
        self._end(sid, turn)

    def _todo_errors(self) -> None:
        for sid, wanted, requirement in (
            ("ses-that-does-not-exist", ("NOT_FOUND", "SESSION_NOT_FOUND"), "RPC-4-todos.get"),
            ("", rpc_errors.INVALID_INPUT_CODES, "RPC-4-todos.get"),
        ):
            response = self._call("todos.get", {"sessionId": sid})
            if response is None:
                return
            self.recorder.exercise(requirement)
            code = rpc_errors.error_code_of(response.get("error"))
            if code not in wanted:
                message = f"todos.get for session {sid!r} answered {code or 'a result'!r}; expected {wanted[0]}"
                self.peer.violate(Violation(requirement, message))

    def _judge_written(self, first: dict[str, Any], written: dict[str, Any] | None, start: int) -> None:
        if written is None:
            return
        self.recorder.exercise("RPC-4-todowrite-rules", "RPC-4-todowrite-scope")
        revision, before = written.get("revision"), first.get("revision")
        if isinstance(revision, int | float) and isinstance(before, int | float) and not revision > before:
            self.peer.violate(Violation("RPC-4-todowrite-scope", f"a TodoWrite left the revision at {revision!r}"))
        if not self._await_notes(start, "todos.changed", str(first.get("sessionId"))):
            self.peer.violate(Violation("RPC-4-todowrite-scope", "a TodoWrite emitted no todos.changed"))
        todos = written.get("todos")
        if not isinstance(todos, list) or len(todos) != 2 or not all(isinstance(t, dict) for t in todos):
            self.peer.violate(Violation("RPC-4-todowrite-rules", f"todos.get after writing 2 items shows {todos!r}"))
            return
        wanted = (("first", "in_progress", "medium"), ("second", "pending", "medium"))
        got = tuple((t.get("content"), t.get("status"), t.get("priority")) for t in todos)
        if got != wanted:
            message = f"todos.get shows {got}; expected {wanted} (trimmed, medium by default, one in progress)"
            self.peer.violate(Violation("RPC-4-todowrite-rules", message))


def _pid_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie counts as ended: the
    harness is a child subreaper, so orphans wait on it to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"])


class BashScenario(ForkTodoRules):
    """§10 item 13, run once per certification (scripted): it waits on real
    processes and timeouts, so the generated examples leave it out."""

    def _pids(self, start: int, sid: str, call_id: str, count: int, *, wait: bool = True) -> list[int]:
        """The first ``count`` whole numbers the call printed on stdout."""
        deadline = self.peer.target.now() + (self.response_s if wait else 0.0)
        while True:
            text = self._stream(start, sid, call_id, "stdout")
            numbers = [int(w) for w in text.split() if w.isdigit()]
            if len(numbers) >= count or not self.peer.alive or self.peer.target.now() >= deadline:
                return numbers[:count]
            self.peer.pump(min(POLL_S, max(deadline - self.peer.target.now(), 0.0)))

    def _stream(self, start: int, sid: str, call_id: str, stream: str) -> str:
        chunks = []
        for note in self._notes(start, "tools.output"):
            params = note.get("params")
            if isinstance(params, dict) and (params.get("sessionId"), params.get("toolCallId")) == (sid, call_id):
                if params.get("stream") == stream and isinstance(params.get("chunk"), str):
                    chunks.append(params["chunk"])
        return "".join(chunks)

    def _ended(self, pids: list[int], requirements: tuple[str, ...], what: str) -> None:
        """The processes are gone (their zombies aside) soon after the answer:
        the host ends them before it answers (§8.5) or releases the slot (§4)."""
        deadline = self.peer.target.now() + REAP_GRACE_S
        alive = [p for p in pids if not _pid_gone(p)]
        while alive and self.peer.target.now() < deadline:
            self.peer.pump(POLL_S)  # frames keep flowing while the host reaps
            alive = [p for p in alive if not _pid_gone(p)]
        self.recorder.exercise(*requirements)
        if alive:
            message = f"{what}: process {alive[0]} of the command's tree still runs"
            for requirement in requirements:
                self.peer.violate(Violation(requirement, message))

    @survives
    def bash_scenario(self) -> None:
        """RPC-10-13-bash-shell: the pin (RPC-5.2-shell-pin), separate
        streamed output (RPC-5-bash-streams-separate, RPC-4-tools.output,
        RPC-5.1-tools-output-shape) and a failing command's result
        (RPC-5-bash-failure-result); standing grants
        (RPC-4-permissions.listSessionGrants, RPC-4-permissions.clearSessionGrants).
        The pin comes from commandShells.list (RPC-4-commandShells.list,
        RPC-5.2-catalog-shape); every result is judged by RPC-5-execute-result."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        pin = self._shell_pin()
        if sid is None or pin is None:
            return
        self._wrong_pins(sid, pin)
        self._grants(sid)
        self._streams(sid)

    @survives
    def bash_timeouts_scenario(self) -> None:
        """RPC-10-13-bash-shell: the default (RPC-5-bash-default-timeout: not
        cut short) and an override (RPC-5-bash-timeout-override, the child
        reaped: RPC-4-timed-out-child-reaped), and an abort ending the whole
        tree (RPC-4-tools.abort)."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        if sid is None:
            return
        self._timeouts(sid)
        self._abort_tree(sid)

    def _allow_until_printed(self, start: int, sid: str, call_id: str, rid: object) -> dict[str, Any] | None | bool:
        """Allow the call's prompt (if one comes) until it has printed two
        pids; False when it was answered first."""
        request: dict[str, Any] | None = None
        deadline = self.peer.target.now() + self.response_s
        while self.peer.target.now() < deadline:
            if self.peer.await_answer(rid, timeout=POLL_S) is not None:
                return False
            if request is None:
                request = self._prompt(start, sid, call_id)
                if request is not None:
                    self._answer(request, "allow-once", sid, call_id)
            if len(self._pids(start, sid, call_id, 2, wait=False)) == 2:
                break
        return request

    def _wrong_pins(self, sid: str, pin: tuple[str, str]) -> None:
        other_id = next(i for i in rpc_limits.COMMAND_SHELL_IDS if i != pin[0])
        other_dialect = next(d for d in rpc_limits.SHELL_DIALECTS if d != pin[1])
        for shell, dialect in ((other_id, pin[1]), (pin[0], other_dialect)):
            marker = self.world().a / f"spawned-{self._call_id()}"
            pinned: dict[str, Any] = {"expectedCommandShellId": shell, "expectedCommandShellDialect": dialect}
            judges = ("RPC-5.2-shell-pin", "RPC-10-13-bash-shell")
            done = self._execute(sid, "Bash", {"command": f"touch {marker}"}, judges=judges, **pinned)
            if done.result is None:
                continue
            self.recorder.exercise("RPC-5.2-shell-pin", "RPC-10-13-bash-shell")
            if done.result.get("ok") is not False or _code(done.result) != "COMMAND_SHELL_CHANGED" or marker.exists():
                message = f"Bash pinned to {shell}/{dialect} (not the effective {pin[0]}/{pin[1]}) answered "
                message += f"errorCode {_code(done.result)!r}; expected COMMAND_SHELL_CHANGED and nothing spawned"
                for requirement in ("RPC-5.2-shell-pin", "RPC-10-13-bash-shell"):
                    self.peer.violate(Violation(requirement, message))
            elif done.request is not None:
                message = "a Bash call with a stale pin raised a permission prompt; the pin is checked before it"
                self.peer.violate(Violation("RPC-5.2-shell-pin", message))

    def _grants(self, sid: str) -> None:
        """RPC-4-permissions.listSessionGrants: an allow-session answer is a
        standing grant, listed; RPC-4-permissions.clearSessionGrants: after
        clearing, it is gone and the next Bash call asks again."""
        first = self._bash(sid, "echo granted", answer="allow-session")
        if first is None or first.request is None:
            return  # no prompt, no grant to look at
        response = self._call("permissions.listSessionGrants", {"sessionId": sid})
        if response is None or _guessed_wrong(response):
            return  # the params are not documented: a refusal of them is not judged
        listed = response.get("result")
        self.recorder.exercise("RPC-4-permissions.listSessionGrants")
        if not _mentions(listed, '"Bash"'):
            message = f"permissions.listSessionGrants lacks the Bash grant just given: {listed!r}"[:300]
            self.peer.violate(Violation("RPC-4-permissions.listSessionGrants", message))
        cleared = self._call("permissions.clearSessionGrants", {"sessionId": sid})
        if cleared is None or _guessed_wrong(cleared):
            return
        after = self._result("permissions.listSessionGrants", {"sessionId": sid})
        again = self._bash(sid, "echo asked again", answer="allow-once")
        self.recorder.exercise("RPC-4-permissions.clearSessionGrants")
        if _mentions(after, '"Bash"') or (again is not None and again.result is not None and again.request is None):
            message = "after permissions.clearSessionGrants the Bash grant still stands"
            self.peer.violate(Violation("RPC-4-permissions.clearSessionGrants", message))

    def _streams(self, sid: str) -> None:
        start = len(self.peer.notifications)
        call_id = self._call_id()
        done = self._bash(sid, "printf out-one; printf err-one >&2; printf out-two; exit 3", toolCallId=call_id)
        if done is None or done.result is None:
            return
        self.peer.add(rpc_tools.bash_failure_result(done.result))
        for note in self._notes(start, "tools.output"):
            self.peer.add(rpc_tools.tools_output_params(note.get("params")))
        out, err = self._stream(start, sid, call_id, "stdout"), self._stream(start, sid, call_id, "stderr")
        self.recorder.exercise("RPC-5-bash-streams-separate", "RPC-4-tools.output", "RPC-10-13-bash-shell")
        if (out, err) != ("out-oneout-two", "err-one"):
            message = f"tools.output carried stdout {out!r} and stderr {err!r}; expected 'out-oneout-two' and 'err-one'"
            for requirement in ("RPC-5-bash-streams-separate", "RPC-4-tools.output", "RPC-10-13-bash-shell"):
                self.peer.violate(Violation(requirement, message))

    def _timeouts(self, sid: str) -> None:
        slow = self._bash(sid, "sleep 1.2; echo finished")
        if slow is not None and slow.result is not None:
            self.recorder.exercise("RPC-5-bash-default-timeout")
            if slow.result.get("ok") is not True:
                message = (
                    f"Bash without timeoutMs was cut short after 1.2 s ({_code(slow.result)!r}); the default is 60 s"
                )
                self.peer.violate(Violation("RPC-5-bash-default-timeout", message))
        start = len(self.peer.notifications)
        call_id = self._call_id()
        minimum = rpc_limits.BASH_TIMEOUT_MIN_MS
        began = self.peer.target.now()
        timed = self._bash(sid, "echo $$; exec sleep 15", toolCallId=call_id, timeoutMs=minimum)
        if timed is None or timed.result is None:
            return
        took = self.peer.target.now() - began
        self.recorder.exercise("RPC-5-bash-timeout-override", "RPC-10-13-bash-shell")
        if timed.result.get("ok") is not False:
            message = f"Bash with timeoutMs {minimum} running `sleep 15` answered ok after {took:.1f} s"
            for requirement in ("RPC-5-bash-timeout-override", "RPC-10-13-bash-shell"):
                self.peer.violate(Violation(requirement, message))
        self._ended(self._pids(start, sid, call_id, 1), ("RPC-4-timed-out-child-reaped",), "after the timeout")

    def _abort_tree(self, sid: str) -> None:
        start = len(self.peer.notifications)
        call_id = self._call_id()
        pin = self._shell_pin()
        if pin is None:
            return
        pinned = {"expectedCommandShellId": pin[0], "expectedCommandShellDialect": pin[1]}
        params = {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash", "args": {}, **pinned}
        params["args"] = {"command": "sleep 12 & echo $!; echo $$; wait"}
        rid = self.peer.send("tools.execute", params)
        request = self._allow_until_printed(start, sid, call_id, rid)
        if request is False:
            return  # answered before any abort: nothing to judge
        pids = self._pids(start, sid, call_id, 2)
        aborted = self._result("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash"})
        self.recorder.exercise("RPC-4-tools.abort")
        if not isinstance(aborted, dict):
            self.peer.violate(Violation("RPC-4-tools.abort", "tools.abort of a running Bash call was not answered"))
        response = self.peer.await_answer(rid)
        if response is not None:
            self._judged(Executed(response, request if isinstance(request, dict) else None), call_id, "Bash")
        self._ended(pids, ("RPC-10-13-bash-shell", "RPC-4-tools.abort"), "after tools.abort")
        again = self._call("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash"})
        if again is not None and "error" in again:
            self.peer.violate(Violation("RPC-4-tools.abort", "a second tools.abort of the same call was refused"))
