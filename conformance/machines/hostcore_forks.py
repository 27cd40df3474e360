"""Tool rules about forks (§10 items 8 and 9) and the session Todo checklist (§4)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis.stateful import rule

from conformance.machines.hostcore_proposals import ProposalRules
from conformance.machines.hostcore_world import survives
from conformance.protocol import rpc_errors, rpc_limits, rpc_session
from conformance.protocol.violations import Violation


class ForkTodoRules(ProposalRules):
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
