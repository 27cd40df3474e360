"""The one serialized writer that owns stdout.

§0 "Transport defaults": one writer has sole ownership of extension stdout and
never abandons a partially written frame. Every frame -- responses, progress,
notifications, child requests -- goes through ``FrameWriter.send``, which
writes the complete frame with a single ``write`` + ``flush`` under a lock, so
frames from concurrent handlers can never interleave.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Protocol

from conformance.protocol.framing import encode_frame
from conformance.protocol.limits import MAX_FRAME_BYTES

from .jsonrpc import JsonObject

log = logging.getLogger(__name__)


class BinarySink(Protocol):
    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class FrameEncodingError(ValueError):
    """The message cannot become one valid frame (not JSON, or too large)."""


def encode_message(message: JsonObject, max_frame_bytes: int = MAX_FRAME_BYTES) -> bytes:
    """One message -> the bytes of one frame, terminator included."""
    payload = _dumps(message)
    if len(payload) > max_frame_bytes:
        # §0 frame bound: the host would discard an oversized line, so refuse
        # to send one rather than lose the message silently.
        raise FrameEncodingError(f"encoded message is {len(payload)} bytes; the frame bound is {max_frame_bytes}")
    return encode_frame(payload)


# Compact, non-ASCII kept as UTF-8, and never NaN/Infinity (not JSON). Built
# once: json.dumps with options builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _dumps(message: JsonObject) -> bytes:
    try:
        text = _ENCODER.encode(message)
    except (TypeError, ValueError, RecursionError) as exc:
        raise FrameEncodingError(f"message is not JSON-serialisable: {exc}") from exc
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (e.g. echoed from a "\ud800" escape) has no UTF-8
        # form; the \uXXXX escape is still valid JSON, so escape this frame.
        return _ASCII_ENCODER.encode(message).encode("ascii")


class FrameWriter:
    """Thread-safe, frame-atomic writer over a binary stream."""

    def __init__(self, sink: BinarySink, *, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._sink = sink
        self._max_frame_bytes = max_frame_bytes
        self._lock = threading.Lock()
        self._broken = False

    def send(self, message: JsonObject) -> None:
        """Encode (outside the lock) then write; raises FrameEncodingError."""
        frame = encode_message(message, self._max_frame_bytes)
        with self._lock:
            self._write_locked(frame)

    def send_all(self, messages: list[JsonObject]) -> None:
        """Several frames in one write (a batch the host reads at once)."""
        data = b"".join(encode_message(m, self._max_frame_bytes) for m in messages)
        with self._lock:
            self._write_locked(data)

    def _write_locked(self, frame: bytes) -> None:
        if self._broken:
            return
        try:
            self._sink.write(frame)
            self._sink.flush()
        except (OSError, ValueError) as exc:  # ValueError: stream already closed
            # The host stopped reading: the transport is gone. Drop further
            # frames quietly; stdin EOF will end the process (§0).
            self._broken = True
            log.warning("stdout is no longer writable (%s); dropping further frames", exc)
