"""permissions.evaluate/resolve/pending and the prompts tools.execute raises (§6).

A prompt is host state: it stays pending until an explicit decision, the
call's cancellation (tools.abort) or host shutdown -- there is no deadline
(§6, D636). ``permissions.pending`` lists open prompts oldest first, so a
client that attached late can still answer them.

The policy (:func:`evaluate`) runs after the Plan/Goal mode policy and before
admission, so a prompt never holds an execution slot (§2.1).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .clock import iso
from .errors import invalid_params
from .params import one_of, optional_str, required_str

if TYPE_CHECKING:
    from .host import HostCore

Decision = Literal["allow", "ask"]
DECISIONS = ("allow-once", "allow-session", "deny")
READ_TOOLS = ("Read", "Glob", "Grep")
EDIT_TOOLS = ("Write", "Edit")
# Waiting has no deadline (§6); the loop only wakes to re-check cancellation.
_POLL_S = 0.5


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    risk: Literal["low", "medium", "high"]
    reason: str


def evaluate(permission_mode: str, tool: str, outside: bool) -> Verdict:
    """The generic permission policy for one call (grants checked apart)."""
    if permission_mode == "auto":
        return Verdict("allow", "low", "auto mode")
    if tool in READ_TOOLS:
        if outside:  # §5: an outside path is classified before the low-risk auto-allow
            return Verdict("ask", "medium", "reads a path outside the session workspace")
        return Verdict("allow", "low", "read inside the session workspace")
    if tool in EDIT_TOOLS:
        if outside:
            return Verdict("ask", "high", "writes a path outside the session workspace")
        if permission_mode == "accept-edits":
            return Verdict("allow", "medium", "accept-edits allows workspace edits")
        return Verdict("ask", "medium", "writes inside the session workspace")
    if tool == "Bash":
        return Verdict("ask", "high", "runs a shell command")
    return Verdict("allow", "low", "host-state tool")


@dataclass(eq=False)
class Prompt:
    request_id: str
    session_id: str
    tool_call_id: str
    tool_name: str
    risk: str
    args_preview: Any
    reason: str
    created_at: str
    decision: str | None = None
    settled: threading.Event = field(default_factory=threading.Event)

    def wire(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "sessionId": self.session_id,
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "risk": self.risk,
            "argsPreview": self.args_preview,
            "reason": self.reason,
        }


class Permissions:
    def __init__(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        self._emit = emit
        self._lock = threading.Lock()
        self._open: list[Prompt] = []  # oldest first
        self._grants: set[tuple[str, str]] = set()  # (session, tool) allowed for the session

    def granted(self, session_id: str, tool: str) -> bool:
        with self._lock:
            return (session_id, tool) in self._grants

    def ask(self, prompt: Prompt, cancelled: Callable[[], bool]) -> str:
        """Emit the request and wait for its decision ("cancelled" if the
        call was aborted or the host shut down)."""
        with self._lock:
            self._open.append(prompt)
        self._emit("permissions.request", prompt.wire())
        while not prompt.settled.wait(_POLL_S):
            if cancelled():
                self.settle(prompt, "cancelled")
        assert prompt.decision is not None
        if prompt.decision == "allow-session":
            with self._lock:
                self._grants.add((prompt.session_id, prompt.tool_name))
        return prompt.decision

    def settle(self, prompt: Prompt, decision: str) -> bool:
        with self._lock:
            if prompt not in self._open:
                return False  # already settled: a late answer fails closed
            self._open.remove(prompt)
            prompt.decision = decision
        prompt.settled.set()
        return True

    def find(self, request_id: str) -> Prompt | None:
        with self._lock:
            return next((p for p in self._open if p.request_id == request_id), None)

    def cancel_call(self, session_id: str, tool_call_id: str) -> bool:
        with self._lock:
            prompts = [p for p in self._open if (p.session_id, p.tool_call_id) == (session_id, tool_call_id)]
        return any([self.settle(p, "cancelled") for p in prompts])

    def cancel_all(self) -> None:
        with self._lock:
            prompts = list(self._open)
        for prompt in prompts:
            self.settle(prompt, "cancelled")

    def grants(self, session_id: str) -> list[str]:
        with self._lock:
            return sorted(tool for session, tool in self._grants if session == session_id)

    def clear_grants(self, session_id: str) -> int:
        with self._lock:
            mine = {grant for grant in self._grants if grant[0] == session_id}
            self._grants -= mine
        return len(mine)

    def pending(self, session_id: str | None) -> list[dict[str, Any]]:
        with self._lock:
            prompts = [p for p in self._open if session_id is None or p.session_id == session_id]
        return [p.wire() | {"createdAt": p.created_at} for p in prompts]


def new_prompt(host: HostCore, session_id: str, call_id: str, tool: str, verdict: Verdict, preview: Any) -> Prompt:
    return Prompt(
        request_id=f"perm_{uuid.uuid4().hex}",
        session_id=session_id,
        tool_call_id=call_id,
        tool_name=tool,
        risk=verdict.risk,
        args_preview=preview,
        reason=verdict.reason,
        created_at=iso(host.clock.now()),
    )


def resolve(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    request_id = required_str(params, "requestId")
    decision = one_of(params, "decision", DECISIONS, None)
    if decision is None:
        raise invalid_params("decision is required")
    prompt = host.permissions.find(request_id)
    # Unknown or already settled: ok=false, nothing changes (fails closed).
    return {"ok": prompt is not None and host.permissions.settle(prompt, decision)}


def pending(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return {"requests": host.permissions.pending(optional_str(params, "sessionId"))}


def evaluate_method(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """A dry run of the policy for one prospective call; nothing is asked."""
    from .tools import preview_policy

    return preview_policy(host, params)


def list_session_grants(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    """Grants given with allow-session; they last for this host process."""
    session_id = required_str(params, "sessionId")
    return {"sessionId": session_id, "grants": [{"toolName": t} for t in host.permissions.grants(session_id)]}


def clear_session_grants(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "cleared": host.permissions.clear_grants(required_str(params, "sessionId"))}


METHODS = {
    "permissions.listSessionGrants": (list_session_grants, False),
    "permissions.clearSessionGrants": (clear_session_grants, False),
    "permissions.resolve": (resolve, False),
    "permissions.pending": (pending, False),
    "permissions.evaluate": (evaluate_method, False),
}
