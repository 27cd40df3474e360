"""Draining a child's stderr into bounded diagnostics (§0).

The drain reads for as long as the child lives, whatever it writes, so the
child never blocks on a full stderr pipe. Each line becomes one diagnostic of
at most ``line_bytes``; a line longer than that (or a flood with no newline
at all) is cut: its first ``line_bytes`` are kept, the rest is counted and
dropped up to the next newline. Memory per child is one line buffer plus the
diagnostics ring.
"""

from __future__ import annotations

from collections.abc import Callable


class StderrLines:
    """Sans-IO: ``feed(chunk)`` -> finished lines (each at most ``line_bytes``)."""

    def __init__(self, line_bytes: int) -> None:
        self.line_bytes = line_bytes
        self._buffer = bytearray()
        self._skipping = False
        self.total_bytes = 0
        self.dropped_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        self.total_bytes += len(chunk)
        lines: list[str] = []
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            self._take(chunk[start:end], lines)
            if newline < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                lines.append(self._flush())
            start = newline + 1
        return lines

    def close(self) -> list[str]:
        return [self._flush()] if self._buffer and not self._skipping else []

    def _take(self, piece: bytes, lines: list[str]) -> None:
        if self._skipping:
            self.dropped_bytes += len(piece)
            return
        room = self.line_bytes - len(self._buffer)
        self._buffer += piece[:room]
        if len(piece) > room:
            self.dropped_bytes += len(piece) - room
            lines.append(self._flush() + " …[line cut]")
            self._skipping = True

    def _flush(self) -> str:
        text = bytes(self._buffer).decode("utf-8", "replace").rstrip("\r")
        self._buffer.clear()
        return text


def drain(read: Callable[[], bytes], lines: StderrLines, emit: Callable[[str], None]) -> None:
    """Read until end of file, emitting every finished line."""
    while True:
        chunk = read()
        if not chunk:
            for line in lines.close():
                emit(line)
            return
        for line in lines.feed(chunk):
            emit(line)
