"""The world the tool rules of :class:`~conformance.machines.hostcore.HostcoreMachine`
work in, and the base of their mixins: tools.execute, permissions, plans,
workspace, projects, forks and todos (host RPC §4, §5, §5.1, §5.2, §6 and the
§10 acceptance items 3-5 and 8-13).

Every rule builds what it needs from the wire alone, in a per-example
*world*: two project folders A and B and an outside folder under the run's
work root, a symlink from A to the outside folder, and sessions created with
``projectPath``. Sessions start in Agent mode with the product default
permission mode, ask (§5.1). Plan/Goal mode is entered with plans.enter from
a running turn; other permission modes only through an approval's
``targetPermissionMode`` -- both documented paths, so no undocumented
session.create parameter is relied on.

The mixins form one chain, by subject: ToolRules (here) -> PathRules
(hostcore_paths.py) -> ModeRules (hostcore_modes.py) -> ProposalRules
(hostcore_proposals.py) -> ForkTodoRules (hostcore_forks.py) -> BashScenario
(hostcore_bash.py), which HostcoreMachine extends. Rules never assert:
answers are judged by the ``rpc_*`` validators and by the comparisons
written out in the mixins, each under its requirement id.
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

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreGone, HostcorePeer
from conformance.protocol import rpc_errors, rpc_limits, rpc_results, rpc_session, rpc_tools
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
