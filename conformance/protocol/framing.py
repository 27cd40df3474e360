"""NDJSON framing, written once for every peer (h11 style: no I/O here).

What this module is responsible for:

* splitting a byte stream into frames at LF (a CR right before the LF is
  accepted and stripped, so CRLF peers work);
* treating everything else -- U+2028/U+2029 included -- as payload: only the
  byte 0x0A ends a frame, and because UTF-8 never uses 0x0A inside a
  multi-byte sequence, a character split across two chunks is reassembled
  untouched;
* enforcing the frame bound the moment it is crossed: the decoder never
  buffers more than ``max_frame_bytes`` + 1 bytes of one frame; the rest of an
  oversized frame is skipped up to its terminator and the frame is reported
  once -- with its exact size when its terminator arrives in the same
  ``feed`` that crossed the bound, otherwise at the end of that ``feed``
  with the bytes seen so far, so a line that never ends (an endless stream
  with no newline) is reported as soon as it passes the bound, not never;
* accepting a final unterminated frame when the stream ends.

What it is not responsible for: JSON, JSON-RPC, or what a frame means. Those
live in :mod:`.jsonrpc`. A bad frame never stops the decoder: the next frame is
decoded as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Terminator = Literal["lf", "crlf", "eof"]


@dataclass(frozen=True)
class Frame:
    """One complete frame; ``payload`` excludes its terminator."""

    index: int
    payload: bytes
    terminator: Terminator


@dataclass(frozen=True)
class OversizedFrame:
    """A frame that crossed the bound. ``size`` is the payload length seen
    when it was reported: exact when ``complete`` (its terminator had been
    seen), otherwise a lower bound (reported before its line ended, or the
    stream ended first)."""

    index: int
    size: int
    limit: int
    complete: bool


FrameEvent = Frame | OversizedFrame


class FrameDecoder:
    """Incremental NDJSON decoder: ``feed(bytes)`` / ``close()`` -> events."""

    def __init__(self, *, max_frame_bytes: int) -> None:
        if max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be >= 1, got {max_frame_bytes}")
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._skipping = False  # inside an oversized frame, dropping bytes
        self._skipped = 0
        self._reported = False  # the frame being skipped was already reported
        self._next_index = 0
        self._closed = False

    @property
    def buffered(self) -> int:
        """Bytes currently held for an incomplete frame (always bounded)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[FrameEvent]:
        if self._closed:
            raise RuntimeError("feed() after close()")
        events: list[FrameEvent] = []
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            self._take(data[start:end], events)
            if newline < 0:
                break
            self._finish("lf", events)
            start = newline + 1
        if self._skipping and not self._reported:
            # The bound was passed and the line goes on past this chunk:
            # report it now, not when (if ever) its terminator comes.
            self._reported = True
            events.append(self._oversized(self._skipped, complete=False))
        return events

    def close(self) -> list[FrameEvent]:
        """The stream ended: flush a final unterminated frame, if any."""
        events: list[FrameEvent] = []
        if not self._closed:
            self._closed = True
            if self._skipping or self._buffer:
                self._finish("eof", events)
        return events

    def _take(self, chunk: bytes, events: list[FrameEvent]) -> None:
        if self._skipping:
            self._skipped += len(chunk)
            return
        # One extra byte is kept so a lone CR at the bound can still turn
        # out to be the CR of a CRLF terminator.
        room = self.max_frame_bytes + 1 - len(self._buffer)
        if len(chunk) <= room:
            self._buffer += chunk
            return
        self._skipping = True
        self._skipped = len(self._buffer) + len(chunk)
        self._buffer.clear()

    def _oversized(self, size: int, *, complete: bool) -> OversizedFrame:
        index = self._next_index
        self._next_index += 1
        return OversizedFrame(index, size, self.max_frame_bytes, complete=complete)

    def _finish(self, terminator: Terminator, events: list[FrameEvent]) -> None:
        if self._skipping:
            size, reported = self._skipped, self._reported
            self._skipping, self._skipped, self._reported = False, 0, False
            if not reported:
                events.append(self._oversized(size, complete=terminator != "eof"))
            return
        index = self._next_index
        self._next_index += 1
        payload = bytes(self._buffer)
        self._buffer.clear()
        if terminator == "lf" and payload.endswith(b"\r"):
            payload, terminator = payload[:-1], "crlf"
        if len(payload) > self.max_frame_bytes:
            events.append(OversizedFrame(index, len(payload), self.max_frame_bytes, complete=terminator != "eof"))
            return
        events.append(Frame(index, payload, terminator))


def encode_frame(payload: bytes) -> bytes:
    """The bytes to write for one frame. The payload must not contain LF:
    JSON encoders escape newlines inside strings, so a raw LF means the
    caller tried to send two frames as one."""
    if b"\n" in payload:
        raise ValueError("a frame payload must not contain a raw LF byte")
    return payload + b"\n"
