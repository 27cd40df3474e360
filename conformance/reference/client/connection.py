"""The pipe to one host-core process: spawn, write lines, read answers.

The host-core runs in its own process group (killed as a whole on close).
One reader thread frames its stdout with the shared NDJSON decoder and hands
each answer to the waiting call by id; server notifications go to a
callback. Writes are whole lines under a lock.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from conformance.protocol.framing import Frame, FrameDecoder

from . import limits
from .errors import CallTimedOut, OversizedRequest, TransportClosed

log = logging.getLogger(__name__)

Message = dict[str, Any]


def encode_request(request_id: int, method: str, params: Message, *, limit: int | None = None) -> bytes:
    """One request line; refuses (without writing anything) a line over the
    bound (``limit``, else the table's, read at call time)."""
    payload = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8", "surrogatepass")
    limit = limits.MAX_LINE_BYTES if limit is None else limit
    if len(payload) > limit:
        raise OversizedRequest(method, len(payload), limit)
    return payload + b"\n"


class _Slot:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.message: Message | None = None


class Connection:
    def __init__(self, command: list[str], *, on_notification: Callable[[Message], None] | None = None) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self._on_notification = on_notification or (lambda message: None)
        self._slots: dict[int, _Slot] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True, name="hostcore-reader")
        self._reader.start()

    def request(self, request_id: int, line: bytes, timeout_s: float) -> Message:
        slot = _Slot()
        with self._lock:
            if self._closed.is_set():
                raise TransportClosed("the host-core's stdout is closed")
            self._slots[request_id] = slot
        try:
            self._write(line)
            if not slot.done.wait(timeout_s):
                raise CallTimedOut(f"no answer within {timeout_s:g} s")
            if slot.message is None:
                raise TransportClosed("the host-core closed its stdout before answering")
            return slot.message
        finally:
            with self._lock:
                self._slots.pop(request_id, None)

    def _write(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise TransportClosed(f"the host-core's stdin is closed ({exc})") from exc

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        decoder = FrameDecoder(max_frame_bytes=limits.MAX_LINE_BYTES)
        try:
            while chunk := os.read(fd, 1 << 16):
                for event in decoder.feed(chunk):
                    self._deliver(event)
            for event in decoder.close():
                self._deliver(event)
        except OSError as exc:
            log.warning("reading the host-core failed: %s", exc)
        finally:
            self._closed.set()
            with self._lock:
                slots = list(self._slots.values())
            for slot in slots:
                slot.done.set()  # message None: the transport closed

    def _deliver(self, event: Any) -> None:
        if not isinstance(event, Frame):
            log.warning("the host-core wrote a line over the limit (%d bytes); ignored", event.size)
            return
        try:
            message = json.loads(event.payload)
        except ValueError:
            log.warning("the host-core wrote a line that is not JSON (%d bytes); ignored", len(event.payload))
            return
        if not isinstance(message, dict):
            return
        if "method" in message and "id" not in message:
            self._on_notification(message)
            return
        with self._lock:
            slot = self._slots.get(message.get("id"))  # type: ignore[arg-type]
        if slot is None:
            log.info("an answer for an unknown or abandoned id %r; ignored", message.get("id"))
            return
        slot.message = message
        slot.done.set()

    def close(self) -> int | None:
        """Close stdin, give the host-core time to exit, then kill its group."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            code: int | None = self.proc.wait(limits.CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers of its group, too
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self._reader.join(limits.CLOSE_TIMEOUT_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code
