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
import tempfile
from collections.abc import Callable
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


def _result(outcome: Any, change: Callable[[dict[str, Any]], None]) -> Any:
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


SERVER_FAULTS: dict[str, type[Server]] = {"deaf-after-bad-line": DeafAfterBadLine, "drops-crlf-lines": DropsCrlfLines}
# Faults that are not a wrapper around one call.
STARTUP_FAULTS = ("no-handshake-gate", "forgets-state", "late-approval-accepted")
NAMES = tuple(sorted((*FAULTS, *WRITER_FAULTS, *SERVER_FAULTS, *STARTUP_FAULTS)))


class FaultyHostCore(HostCore):
    """The reference with one fault switched on."""

    fault: str = ""

    def __init__(self, data_dir: Path, **kwargs: Any) -> None:
        if self.fault == "late-approval-accepted":
            plans.interrupt_at_startup = _keep_pending  # this process only: pending approvals survive a restart
        super().__init__(data_dir, **kwargs)
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
