"""Tool rules about the durable permission mode (§10 item 10): the shell pin,
plan mode entered from a running turn, and what a mode denies."""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import rule

from conformance.machines.hostcore_paths import PathRules
from conformance.machines.hostcore_world import KINDS, MARK_A, NOTE, Executed, _code, survives
from conformance.protocol import rpc_errors, rpc_plans, rpc_results
from conformance.protocol.violations import Violation


class ModeRules(PathRules):
    """§10 item 10: the durable mode decides."""

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
