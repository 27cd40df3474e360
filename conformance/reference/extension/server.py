"""The I/O loop: stdin frames in, handler threads, one writer out.

The reader (the calling thread) owns stdin and all routing; each admitted
request runs on its own worker thread behind the admission gate, so slow work
never blocks cancellation or other requests.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any, BinaryIO, Protocol, TypeAlias

from conformance.protocol.framing import FrameDecoder, FrameEvent, OversizedFrame
from conformance.protocol.limits import MAX_FRAME_BYTES

from .calls import AdmissionGate, Call, CallContext
from .children import ChildRequests, PendingChild
from .extension import Handler, ReferenceExtension
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    SERVER_STATE_ERROR,
    Ignored,
    JsonObject,
    Notification,
    Rejected,
    Request,
    RequestCancelled,
    RequestId,
    Response,
    RpcError,
    error_message,
    is_valid_id,
    notification_message,
    parse_frame,
)
from .negotiation import Session
from .runtime import Runtime, Threads
from .runtime import WorkerPool as WorkerPool  # fixtures subclass it from here
from .writer import BinarySink, FrameWriter

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 64 * 1024
# How long cancelled work may take to settle before we answer shutdown or
# exit on EOF. Well inside the host's 2 s shutdown stage (§1.8).
SETTLE_TIMEOUT_S = 0.5


class ChunkSource(Protocol):
    """A readable stream that returns what is available (like ``read1``)."""

    def read1(self, size: int = -1, /) -> bytes: ...


Source: TypeAlias = "int | BinaryIO | ChunkSource"


def run(extension: ReferenceExtension, stdin: Source, stdout: BinarySink, runtime: Runtime | None = None) -> int:
    """Serve until shutdown or stdin EOF; returns the process exit code."""
    return Server(extension, FrameWriter(stdout), runtime).serve(stdin)


def read_chunks(source: Source) -> Iterator[bytes]:
    """Raw chunks as they arrive (no line buffering: framing.py splits)."""
    while True:
        try:
            chunk = _read_some(source)
        except OSError as exc:
            log.warning("stdin read failed (%s); treating it as EOF", exc)
            return
        if not chunk:
            return
        yield chunk


def _read_some(source: Source) -> bytes:
    if isinstance(source, int):
        return os.read(source, READ_CHUNK_BYTES)
    # read1 returns what is available instead of waiting for a full chunk.
    read1 = getattr(source, "read1", None)
    return bytes(read1(READ_CHUNK_BYTES) if read1 is not None else source.read(READ_CHUNK_BYTES))  # type: ignore[union-attr]


def _params_object(params: Any) -> JsonObject:
    # All methods of this protocol take named parameters.
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    return params


class Server:
    def __init__(self, extension: ReferenceExtension, writer: FrameWriter, runtime: Runtime | None = None) -> None:
        self._ext = extension
        self._writer = writer
        self._runtime: Runtime = runtime if runtime is not None else Threads()
        self._workers: Any = self._runtime  # anything with submit(job); a fixture may hold jobs back
        self._children = ChildRequests(writer, events=self._runtime.event)
        self._session: Session | None = None
        self._gate: AdmissionGate | None = None
        self._calls: dict[RequestId, Call] = {}
        self._calls_changed = self._runtime.condition()
        # §2.20: shortcut id -> its registration, answered or not yet.
        self._shortcuts: dict[str, PendingChild] = {}

    # -- reading ---------------------------------------------------------------

    def serve(self, source: Source) -> int:
        decoder = FrameDecoder(max_frame_bytes=MAX_FRAME_BYTES)
        for chunk in read_chunks(source):
            if not self._handle_events(decoder.feed(chunk)):
                return 0
        if self._handle_events(decoder.close()):
            self._stdin_ended()
        return 0

    def _stdin_ended(self) -> None:
        """§0: stdin EOF without a shutdown means the transport is gone: stop
        work and return, so the process exits 0. (A seam: fixtures that exit
        late, or never, after EOF replace it.)"""
        log.info("stdin closed; cancelling in-flight work and exiting")
        self._drain()

    def _handle_events(self, events: list[FrameEvent]) -> bool:
        """False once shutdown has been answered."""
        return all(self._on_event(event) for event in events)

    def _on_event(self, event: FrameEvent) -> bool:
        if isinstance(event, OversizedFrame):
            # The id is unreadable: the frame was never buffered (§0 bound).
            message = f"invalid request: frame of {event.size} bytes exceeds the {event.limit}-byte limit"
            self._send_error(None, INVALID_REQUEST, message)
            return True
        match parse_frame(event.payload):
            case Request() as request:
                return self._on_request(request)
            case Notification() as notification:
                self._on_notification(notification)
            case Response() as response:
                self._children.resolve(response)
            case Rejected(request_id, code, message):
                self._send_error(request_id, code, message)
            case Ignored(reason):
                log.warning("ignoring frame %d: %s", event.index, reason)
        return True

    # -- requests --------------------------------------------------------------

    def _on_request(self, request: Request) -> bool:
        if request.method == "shutdown":
            self._shutdown(request)
            return False
        try:
            self._route(request)
        except RpcError as exc:
            self._send_error(request.id, exc.code, exc.message, exc.data)
        return True

    def _route(self, request: Request) -> None:
        if request.method == "initialize":
            return self._initialize(request)
        if self._session is None or self._gate is None:
            raise RpcError(SERVER_STATE_ERROR, "not initialized: initialize must be the first request (§1.1)")
        handler = self._ext.handler_for(request.method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {request.method!r}")
        self._check_unique(request.id)
        self._start(request, handler, _params_object(request.params), self._session, self._gate)

    def _check_unique(self, request_id: RequestId) -> None:
        with self._calls_changed:
            existing = self._calls.get(request_id)
        if existing is not None and not existing.settled:
            raise RpcError(INVALID_REQUEST, f"invalid request: id {request_id!r} is already in flight")

    def _initialize(self, request: Request) -> None:
        if self._session is not None:
            raise RpcError(SERVER_STATE_ERROR, "already initialized")
        call = self._call(request)
        params = _params_object(request.params)
        self._register_shortcuts(request.id, params)
        result = self._invoke(call, lambda: self._ext.initialize(params))
        # Initialized only once the host has actually been sent our result.
        if result is not None and call.answer(result):
            session = Session.from_initialize_result(self._ext.api_version, result)
            gate = AdmissionGate(session.max_concurrent_requests, self._runtime.condition())
            self._session, self._gate = session, gate

    def _register_shortcuts(self, initialize_id: RequestId, params: JsonObject) -> None:
        """§2.20: registrations are written inside the initialize request,
        parented on it, and not waited for here (this thread reads their
        answers); a trigger later runs only an admitted one."""
        if not isinstance(initialize_id, int):
            return
        for registration in self._ext.shortcut_registrations(params):
            child = self._children.open("shortcut")
            self._shortcuts[str(registration["id"])] = child
            self._children.send(child, "shortcut/register", {"parent_request_id": initialize_id, **registration})

    def _on_shortcut_trigger(self, params: Any) -> None:
        """§1.11: fail closed unless the id names a registration the host
        admitted and shortcuts was negotiated."""
        shortcut_id = params.get("id") if isinstance(params, dict) else None
        child = self._shortcuts.get(shortcut_id) if isinstance(shortcut_id, str) else None
        admitted = child is not None and child.outcome is not None and child.outcome.error is None
        if not admitted or self._session is None or "shortcuts" not in self._session.features:
            log.warning("ignoring shortcut/trigger for %r: no admitted registration", shortcut_id)
            return
        assert isinstance(shortcut_id, str)
        self._writer.send(notification_message("notification", self._ext.shortcut_triggered(shortcut_id)))

    def _shutdown(self, request: Request) -> None:
        # §1.8 (API 0.2 draining): admit nothing new, cancel what remains,
        # then acknowledge; the caller stops reading and we exit.
        self._drain()
        call = self._call(request)
        result = self._invoke(call, lambda: self._ext.shutdown(_params_object(request.params)))
        if result is not None:
            call.answer(result)

    def _call(self, request: Request) -> Call:
        return Call(request.id, request.method, self._writer, token=self._runtime.event())

    def _invoke(self, call: Call, action: Any) -> Any:
        """Run an inline handler; on failure answer the error, return None."""
        try:
            return action()
        except RpcError as exc:
            call.fail(exc.code, exc.message, exc.data)
        except Exception as exc:
            log.exception("%s failed", call.method)
            call.fail(INTERNAL_ERROR, f"internal error: {exc}")
        return None

    # -- workers ---------------------------------------------------------------

    def _start(
        self, request: Request, handler: Handler, params: JsonObject, session: Session, gate: AdmissionGate
    ) -> None:
        call = self._call(request)
        with self._calls_changed:
            self._calls[request.id] = call
        context = CallContext(call, session, self._children, self._writer)
        self._workers.submit(lambda: self._work(call, handler, params, context, gate))

    def _work(
        self, call: Call, handler: Handler, params: JsonObject, context: CallContext, gate: AdmissionGate
    ) -> None:
        try:
            if gate.enter(call.token):
                try:
                    self._execute(call, handler, params, context)
                finally:
                    gate.leave()
            else:
                call.fail(REQUEST_CANCELLED, "request cancelled before it started")
        finally:
            with self._calls_changed:
                if self._calls.get(call.request_id) is call:
                    del self._calls[call.request_id]
                self._calls_changed.notify_all()

    def _execute(self, call: Call, handler: Handler, params: JsonObject, context: CallContext) -> None:
        try:
            result = handler(params, context)
        except RequestCancelled:
            call.fail(REQUEST_CANCELLED, "request cancelled")
        except RpcError as exc:
            call.fail(exc.code, exc.message, exc.data)
        except Exception as exc:
            log.exception("%s handler failed", call.method)
            call.fail(INTERNAL_ERROR, f"internal error: {exc}")
        else:
            # A normal result may win the race against cancellation (§1.9).
            call.answer(result)

    # -- notifications and cancellation ------------------------------------------

    def _on_notification(self, notification: Notification) -> None:
        # JSON-RPC: notifications are never answered. Lifecycle events (§1.10)
        # and unknown notifications are observations we do not need.
        if notification.method == "$/cancelRequest":
            self._on_cancel_request(notification.params)
        elif notification.method == "shortcut/trigger":
            self._on_shortcut_trigger(notification.params)

    def _on_cancel_request(self, params: Any) -> None:
        if self._session is None or not self._session.cancellation:
            log.info("ignoring $/cancelRequest: request_cancellation was not negotiated")
            return
        request_id = params.get("id") if isinstance(params, dict) else None
        if not is_valid_id(request_id):
            log.warning("ignoring $/cancelRequest without a usable id: %r", params)
            return
        with self._calls_changed:
            call = self._calls.get(request_id) if isinstance(request_id, (int, str)) else None
        if call is not None:  # unknown ids: already answered, nothing to do
            self._cancel(call)

    def _cancel(self, call: Call) -> None:
        call.cancel()
        if self._gate is not None:
            self._gate.wake()

    def _drain(self) -> None:
        """Cancel every in-flight call and give them a moment to settle."""
        with self._calls_changed:
            calls = list(self._calls.values())
        for call in calls:
            self._cancel(call)
        with self._calls_changed:
            if not self._calls_changed.wait_for(lambda: not self._calls, SETTLE_TIMEOUT_S):
                log.warning("%d request(s) did not settle in time", len(self._calls))

    def _send_error(self, request_id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        self._writer.send(error_message(request_id, code, message, data))
