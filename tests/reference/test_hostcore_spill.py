"""The reference host-core's disk-spilling frame buffer, under the shared decoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol.framing import Frame, FrameDecoder, OversizedFrame
from conformance.reference.hostcore.spill import SpillBuffer

LIMIT = 64


@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1, 1000])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_spilling_buffer_frames_like_memory(tmp_path: Path, size: int, chunk: int) -> None:
    buffer = SpillBuffer(tmp_path, spill_after=8)  # spills after 8 bytes
    decoder = FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=10, buffer=buffer)
    line = b'{"id":42,' + b"z" * (size - 9)
    data = line + b"\r\n" + b"{}\n" + b"tail"
    events = []
    for start in range(0, len(data), chunk):
        events += decoder.feed(data[start : start + chunk])
    events += decoder.close()
    first = Frame(0, line, "crlf") if size <= LIMIT else OversizedFrame(0, size + 1, LIMIT, True, line[:10])
    assert events == [first, Frame(1, b"{}", "lf"), Frame(2, b"tail", "eof")]
    assert len(buffer) == 0


def test_spilled_bytes_leave_no_file_behind(tmp_path: Path) -> None:
    buffer = SpillBuffer(tmp_path, spill_after=4)
    buffer.extend(b"0123456789")
    assert len(buffer) == 10 and buffer.head(3) == b"012"
    buffer.extend(b"ab")
    assert buffer.take() == b"0123456789ab" and len(buffer) == 0
    buffer.extend(b"x" * 100)
    buffer.clear()
    assert list(tmp_path.iterdir()) == []  # the spill file was never linked
