"""The I/O loop: stdin lines in, one serialized writer out (§2).

The calling thread is the dedicated stdin reader. It frames bytes with the
shared NDJSON decoder (CRLF, U+2028/2029 as payload, UTF-8 split across reads,
a final unterminated line at EOF), answers transport faults itself, and
routes each request:

* state methods (SQLite work, short) run inline, in arrival order, so a
  client that pipelines appends sees them applied in the order it sent them;
* long-running methods (``Method.blocking``) get a worker thread each, under
  the dispatcher cap of §2.1 (32 active, else -32029 HOST_OVERLOADED).

Every frame leaves through one :class:`FrameWriter`, which writes whole lines
under a lock, so frames from concurrent workers never interleave.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance.protocol.framing import FrameDecoder, FrameEvent, OversizedFrame
from conformance.reference.extension.jsonrpc import (
    Ignored,
    Notification,
    Rejected,
    Request,
    RequestId,
    Response,
    classify,
    error_message,
    notification_message,
    result_message,
)
from conformance.reference.extension.writer import FrameEncodingError, FrameWriter

from . import limits
from .errors import PARSE_ERROR, HostError
from .host import HostCore
from .peek import peek_id
from .spill import SpillBuffer

log = logging.getLogger(__name__)


class Server:
    def __init__(self, host: HostCore, writer: FrameWriter) -> None:
        self._host = host
        self._writer = writer
        self._active = 0
        self._active_changed = threading.Condition()
        self._stopped = threading.Event()
        # Never more than DISPATCHER_CAP calls run, so the pool never queues;
        # reusing threads saves a thread start per call.
        self._workers = ThreadPoolExecutor(max_workers=limits.DISPATCHER_CAP, thread_name_prefix="rpc")
        host.set_emitter(self._notify)

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        self._writer.send(notification_message(method, params))

    def serve(self, fd: int) -> int:
        threading.Thread(target=self._sweep, daemon=True, name="plan-expiry").start()
        decoder = FrameDecoder(
            max_frame_bytes=limits.MAX_LINE_BYTES,
            prefix_bytes=limits.ID_PEEK_BYTES,
            buffer=SpillBuffer(self._host.data_dir / "spill"),
        )
        while chunk := self._read(fd):
            self._handle(decoder.feed(chunk))
        self._handle(decoder.close())
        self._stopped.set()
        self._drain()
        return 0

    def _sweep(self) -> None:
        """Expire Plan/Goal approvals at their deadline, calls or not (§5.1)."""
        while not self._stopped.wait(limits.PLAN_SWEEP_INTERVAL_S):
            try:
                self._host.sweep()
            except Exception:
                log.exception("plan expiry sweep failed")

    def _read(self, fd: int) -> bytes:
        while True:
            try:
                return os.read(fd, limits.READ_CHUNK_BYTES)
            except InterruptedError:
                continue  # §2: interrupted reads are retried
            except OSError as exc:
                log.warning("stdin read failed (%s); treating it as EOF", exc)
                return b""

    def _handle(self, events: list[FrameEvent]) -> None:
        for event in events:
            if isinstance(event, OversizedFrame):
                self._oversized(event)
            else:
                self._line(event.payload)

    def _oversized(self, event: OversizedFrame) -> None:
        # §7 LIMIT_EXCEEDED: the decoder already skipped the rest of the line
        # (holding only the first ID_PEEK_BYTES); the reader goes on.
        request_id = peek_id(event.prefix)
        log.warning("request line of %d bytes exceeds the %d-byte limit", event.size, event.limit)
        error = HostError(
            "LIMIT_EXCEEDED",
            f"request line of {event.size} bytes exceeds the {event.limit}-byte limit",
            {"lineBytes": event.size, "limitBytes": event.limit},
        )
        self._send_error(request_id, error.to_error())

    def _line(self, payload: bytes) -> None:
        if not payload.strip():
            return  # a blank line carries no frame; NDJSON readers skip it
        message = _parse(payload)
        match message:
            case Request() as request:
                self._request(request)
            case Notification(method):
                log.info("ignoring client notification %r", method)
            case Response():
                log.info("ignoring a response: this host sends no requests")
            case Rejected(request_id, code, text):
                self._send_error(request_id, {"code": code, "message": text})
            case Ignored(reason):
                log.warning("ignoring line: %s", reason)

    def _request(self, request: Request) -> None:
        method = self._host.method(request.method)
        if method is None or not method.blocking:
            self._answer(request, self._host.call(request.method, request.params))
            return
        with self._active_changed:
            if self._active >= limits.DISPATCHER_CAP:
                error = HostError("HOST_OVERLOADED", "the RPC dispatcher is at capacity", {"retryable": True})
                self._send_error(request.id, error.to_error())
                return
            self._active += 1
        self._workers.submit(self._work, request)

    def _work(self, request: Request) -> None:
        try:
            self._answer(request, self._host.call(request.method, request.params))
        finally:
            with self._active_changed:
                self._active -= 1
                self._active_changed.notify_all()

    def _answer(self, request: Request, outcome: Any) -> None:
        if isinstance(outcome, HostError):
            self._send_error(request.id, outcome.to_error())
            return
        try:
            self._writer.send(result_message(request.id, outcome))
        except FrameEncodingError as exc:
            log.error("%s result cannot be sent: %s", request.method, exc)
            self._send_error(request.id, HostError("INTERNAL", "result too large to send").to_error())

    def _send_error(self, request_id: RequestId | None, error: dict[str, Any]) -> None:
        message = error_message(request_id, error["code"], error["message"], error.get("data"))
        self._writer.send(message)

    def _drain(self) -> None:
        """stdin EOF: refuse new work, let in-flight calls finish (bounded)."""
        self._host.begin_shutdown()
        with self._active_changed:
            if not self._active_changed.wait_for(lambda: self._active == 0, limits.DRAIN_TIMEOUT_S):
                log.warning("%d call(s) still running at exit", self._active)


def _parse(payload: bytes) -> Any:
    """One line -> a classified message; an unparseable line -> -32700.

    §2 says an invalid JSON line gets a diagnostic holding only its byte
    length and is discarded; §7 lists -32700 for an unparseable request line.
    This host does both: a stderr diagnostic and a -32700 reply (id null),
    and neither carries any of the line's text.
    """
    try:
        value = _DECODER.decode(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        log.warning("discarding an invalid JSON line of %d bytes", len(payload))
        return Rejected(None, PARSE_ERROR, f"unparseable request line ({len(payload)} bytes)")
    if isinstance(value, dict) and isinstance(value.get("id"), float) and value["id"].is_integer():
        value["id"] = int(value["id"])  # ids judged by value: 5.0 is the id 5
    return classify(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads with options builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
