"""tools.execute and tools.abort (§5, §2.1, §8; §10 items 3, 5, 10, 13).

One call goes through these steps, in this order:

1. the session is loaded; its durable project path is the tool root and its
   durable mode decides the mode policy -- never ``requestedMode`` (only
   logged) and never the selected workspace (§5 steps 1-4);
2. the Plan/Goal mode policy (§5): Write/Edit, plugin and unknown tools are
   refused under every permission mode;
3. Bash: the pinned shell id and dialect must match the effective shell,
   before any permission prompt (§5.2);
4. an explicit path is canonicalized and classified inside/outside;
5. the permission policy; a prompt waits for its decision with no deadline
   and holds no execution slot (§2.1, §6);
6. admission (:mod:`.admission`), then the tool runs and its slot is
   released.

Outcomes of the tool itself are results with ``ok: false`` and an
``errorCode``, never JSON-RPC errors (§7, last paragraph).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from subprocess import Popen
from typing import TYPE_CHECKING, Any

from . import bash, fs_tools, limits, plans, shells, todos
from .admission import Cancelled, Overloaded, ToolClass
from .errors import HostError, invalid_params
from .outcome import Outcome, ToolFailure, failure
from .params import one_of, optional_int, optional_str, required_str
from .paths import resolve
from .permissions import Verdict, evaluate, new_prompt
from .sessions import MODES, load_session, running_turn

if TYPE_CHECKING:
    import sqlite3

    from .host import HostCore

log = logging.getLogger(__name__)

FILE_TOOLS: dict[str, tuple[ToolClass, Callable[[str, dict[str, Any]], dict[str, Any]]]] = {
    "Read": ("reads", fs_tools.read),
    "Glob": ("reads", fs_tools.glob),
    "Grep": ("reads", fs_tools.grep),
    "Write": ("mutations", fs_tools.write),
    "Edit": ("mutations", fs_tools.edit),
}
PATH_REQUIRED = ("Read", "Write", "Edit")
SUBMIT_TOOLS = plans.TOOL_KINDS
KNOWN_TOOLS = (*FILE_TOOLS, "Bash", "TodoWrite")
# §5: what Plan and Goal allow (BrowserPreview is not offered by this host).
PLAN_ALLOWED = ("Read", "Glob", "Grep", "BrowserPreview", "Bash", "SubmitPlan", "SubmitGoal")
DIALECTS = ("powershell", "cmd", "posix")


@dataclass(frozen=True)
class ToolCall:
    session_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    turn_id: str | None
    requested_mode: str | None
    shell_id: str | None
    shell_dialect: str | None
    timeout_ms: int


@dataclass(eq=False)
class InFlight:
    call: ToolCall
    cancel: threading.Event = field(default_factory=threading.Event)
    proc: Popen[bytes] | None = None

    def cancelled(self) -> bool:
        return self.cancel.is_set()


class ToolCalls:
    """In-flight tools.execute calls by (sessionId, toolCallId)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], InFlight] = {}

    def register(self, call: ToolCall) -> InFlight:
        key = (call.session_id, call.tool_call_id)
        with self._lock:
            if key in self._calls:
                raise HostError("CONFLICT", f"tool call {call.tool_call_id!r} is already running in this session")
            entry = self._calls[key] = InFlight(call)
            return entry

    def unregister(self, entry: InFlight) -> None:
        with self._lock:
            key = (entry.call.session_id, entry.call.tool_call_id)
            if self._calls.get(key) is entry:
                del self._calls[key]

    def get(self, session_id: str, tool_call_id: str) -> InFlight | None:
        with self._lock:
            return self._calls.get((session_id, tool_call_id))

    def all(self) -> list[InFlight]:
        with self._lock:
            return list(self._calls.values())


def parse_call(params: dict[str, Any]) -> ToolCall:
    args = params.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise invalid_params("args must be an object")
    timeout = optional_int(params, "timeoutMs", minimum=limits.BASH_MIN_TIMEOUT_MS)
    if timeout is not None and timeout > limits.BASH_MAX_TIMEOUT_MS:
        raise invalid_params(f"timeoutMs must be <= {limits.BASH_MAX_TIMEOUT_MS}, got {timeout}")
    return ToolCall(
        session_id=required_str(params, "sessionId"),
        tool_call_id=required_str(params, "toolCallId"),
        tool_name=required_str(params, "toolName"),
        args=args,
        turn_id=optional_str(params, "turnId"),
        requested_mode=one_of(params, "requestedMode", MODES, None),
        shell_id=optional_str(params, "expectedCommandShellId"),
        shell_dialect=one_of(params, "expectedCommandShellDialect", DIALECTS, None),
        timeout_ms=timeout if timeout is not None else limits.BASH_DEFAULT_TIMEOUT_MS,
    )


def execute(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    call = parse_call(params)
    started = host.clock.monotonic()
    session = _session(host, call.session_id)
    if call.requested_mode is not None and call.requested_mode != session["mode"]:
        # §5 step 2: diagnostic only, never authorization.
        log.info(
            "%s: requestedMode %s ignored; durable mode is %s", call.tool_call_id, call.requested_mode, session["mode"]
        )
    entry = host.tool_calls.register(call)
    try:
        try:
            outcome = _run(host, call, session, entry)
        except ToolFailure as exc:
            outcome = failure(exc.error_code, exc.message)
    finally:
        host.tool_calls.unregister(entry)
    return outcome.result(call.tool_call_id, round((host.clock.monotonic() - started) * 1000))


def _session(host: HostCore, session_id: str) -> sqlite3.Row:
    with host.store.transaction() as db:
        session = load_session(db, session_id)
    if session is None:
        # §5 step 6 lets a legacy call fall back to the selected workspace;
        # §7 says SESSION_NOT_FOUND never falls back. This host takes §7.
        raise HostError("SESSION_NOT_FOUND", f"session {session_id!r} does not exist")
    return session


def mode_denial(mode: str, tool: str) -> Outcome | None:
    if mode not in ("plan", "goal") or tool in PLAN_ALLOWED:
        return None
    code = "WRITE_DISABLED_IN_PLAN" if tool in ("Write", "Edit") else "TOOL_DISABLED_IN_PLAN"
    return Outcome(False, {"message": f"{tool} is not allowed in {mode} mode"}, code, denied=True)


def _run(host: HostCore, call: ToolCall, session: sqlite3.Row, entry: InFlight) -> Outcome:
    denial = mode_denial(session["mode"], call.tool_name)
    if denial is not None:
        return denial
    if call.tool_name == "TodoWrite":
        return _todo_write(host, call, session)
    if call.tool_name in SUBMIT_TOOLS:
        return _submit(host, call)
    if call.tool_name not in KNOWN_TOOLS:
        return failure("TOOL_NOT_FOUND", f"unknown tool {call.tool_name!r}")
    root = session["project_path"]
    if root is None:
        return failure("WORKSPACE_REQUIRED", "this session has no project folder")  # §5 step 5
    if call.tool_name == "Bash":
        pin = _pin_mismatch(call)
        if pin is not None:
            return pin
        return _gated(host, call, session, entry, "shell", None, lambda: _bash(host, call, root, entry))
    tool_class, action = FILE_TOOLS[call.tool_name]
    target = _target(call, root, host.scratch_dir(call.session_id))
    return _gated(
        host, call, session, entry, tool_class, target.outside, lambda: Outcome(True, action(target.path, call.args))
    )


def _target(call: ToolCall, root: str, scratch: str) -> Any:
    raw = fs_tools.arg_str(call.args, "path", "file_path", required=call.tool_name in PATH_REQUIRED)
    return resolve(raw if raw is not None else root, root, scratch)


def _pin_mismatch(call: ToolCall) -> Outcome | None:
    """§5.2: the exact pinned id and dialect, checked before any prompt."""
    current = shells.effective()
    if current is None:
        return failure("SHELL_NOT_FOUND", "no shell is available on this host")
    if (call.shell_id, call.shell_dialect) != current:
        return failure(
            "COMMAND_SHELL_CHANGED",
            f"the turn pinned {call.shell_id}/{call.shell_dialect}; the effective shell is {current[0]}/{current[1]}",
        )
    return None


def _gated(
    host: HostCore,
    call: ToolCall,
    session: sqlite3.Row,
    entry: InFlight,
    tool_class: ToolClass,
    outside: bool | None,
    action: Callable[[], Outcome],
) -> Outcome:
    verdict = evaluate(session["permission_mode"], call.tool_name, bool(outside))
    if verdict.decision == "ask" and not host.permissions.granted(call.session_id, call.tool_name):
        prompt = new_prompt(host, call.session_id, call.tool_call_id, call.tool_name, verdict, _preview(call))
        decision = host.permissions.ask(prompt, entry.cancelled)
        if decision not in ("allow-once", "allow-session"):
            # §5: denial or cancellation -> TOOL_DENIED, nothing executed.
            return Outcome(False, {"message": f"permission {decision}"}, "TOOL_DENIED", denied=True)
    try:
        permit = host.admission.acquire(call.session_id, tool_class, entry.cancelled)
    except Overloaded as exc:
        # §2.1: a full queue is a retryable tool result (see errors.py for §7).
        return failure("HOST_OVERLOADED", exc.reason, retryable=True)
    except Cancelled:
        return failure("TOOL_ABORTED", "aborted while waiting for capacity")
    try:
        if entry.cancelled():
            return failure("TOOL_ABORTED", "aborted before it started")
        return action()
    finally:
        permit.release()


def _preview(call: ToolCall) -> Any:
    # Args may be redacted in previews (§9); long strings are shortened.
    return {k: (v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v) for k, v in call.args.items()}


def _bash(host: HostCore, call: ToolCall, root: str, entry: InFlight) -> Outcome:
    command = fs_tools.arg_str(call.args, "command")
    assert command is not None
    pin = _pin_mismatch(call)  # again right before spawn (§5)
    if pin is not None:
        return pin
    shell_path = shells.bash_path()
    assert shell_path is not None

    def emit(stream: str, chunk: str) -> None:
        host.emit(
            "tools.output",
            {
                "sessionId": call.session_id,
                "toolCallId": call.tool_call_id,
                "commandShellId": shells.BASH_ID,
                "stream": stream,
                "chunk": chunk,
            },
        )

    entry.proc = bash.spawn(shell_path, command, root)
    run = bash.run(entry.proc, call.timeout_ms / 1000, entry.cancelled, emit)
    content = {"exitCode": run.exit_code, "stdout": run.stdout, "stderr": run.stderr, "truncated": run.truncated}
    if run.timed_out:
        return Outcome(False, content | {"timeoutMs": call.timeout_ms}, "TOOL_TIMEOUT")
    if run.aborted:
        return Outcome(False, content, "TOOL_ABORTED")
    if run.exit_code != 0:
        return Outcome(False, content, "TOOL_FAILED")  # §5: output kept, ok=false
    return Outcome(True, content)


def _submit(host: HostCore, call: ToolCall) -> Outcome:
    """§5.1: a host transition, not a file tool -- no prompt, no admission."""
    try:
        wire = plans.submit(
            host, call.session_id, call.turn_id, call.tool_call_id, SUBMIT_TOOLS[call.tool_name], call.args
        )
    except HostError as exc:
        return failure(exc.error_code, exc.message)
    return Outcome(True, {"proposal": wire, "artifact": wire["artifact"]})


def _todo_write(host: HostCore, call: ToolCall, session: sqlite3.Row) -> Outcome:
    items, warnings = todos.normalize(call.args)
    with host.store.transaction() as db:
        live = running_turn(db, call.session_id)
    # Only the session's own running turn may write (the trusted turnId).
    if live is None or call.turn_id != live["id"]:
        return failure("TODO_REQUIRES_RUNNING_TURN", "TodoWrite needs the session's own running turn")
    return Outcome(True, todos.write(host, call.session_id, items) | {"warnings": warnings})


def abort(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    session_id = required_str(params, "sessionId")
    call_id = required_str(params, "toolCallId")
    tool_name = optional_str(params, "toolName")
    entry = host.tool_calls.get(session_id, call_id)
    if entry is None or (tool_name is not None and tool_name != entry.call.tool_name):
        return {"ok": True, "aborted": False}  # idempotent: nothing (left) to stop
    entry.cancel.set()
    host.permissions.cancel_call(session_id, call_id)
    host.admission.wake()
    if entry.proc is not None:
        bash.kill_tree(entry.proc)  # §8.5: the whole process tree
    return {"ok": True, "aborted": True}


def preview_policy(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """permissions.evaluate: the decision a call would get, asking nothing."""
    call = parse_call(params | {"toolCallId": params.get("toolCallId") or "evaluate"})
    session = _session(host, call.session_id)
    denial = mode_denial(session["mode"], call.tool_name)
    if denial is not None:
        return {"decision": "deny", "errorCode": denial.error_code, "risk": "low", "reason": "mode policy"}
    outside = False
    if call.tool_name in FILE_TOOLS and session["project_path"] is not None:
        outside = _target(call, session["project_path"], host.scratch_dir(call.session_id)).outside
    verdict: Verdict = evaluate(session["permission_mode"], call.tool_name, outside)
    decision = "allow" if host.permissions.granted(call.session_id, call.tool_name) else verdict.decision
    return {"decision": decision, "risk": verdict.risk, "reason": verdict.reason, "outside": outside}


def list_(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """The host's built-in tools; with a sessionId, those its durable mode
    allows. Presentation only: authorization happens in tools.execute (§5)."""
    tools = [*KNOWN_TOOLS, *SUBMIT_TOOLS]
    session_id = optional_str(params, "sessionId")
    if session_id is not None:
        mode = _session(host, session_id)["mode"]
        tools = [t for t in tools if mode_denial(mode, t) is None]
    return {"tools": [{"name": name} for name in tools]}


METHODS = {
    "tools.list": (list_, False),
    "tools.execute": (execute, True),
    "tools.abort": (abort, False),
}
