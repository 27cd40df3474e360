"""TargetProcess plumbing: stdout read on the harness thread, within bounds.

Each test starts a tiny Python child, waits only with timeouts, and kills
the child's group on the way out. Nothing here asserts a duration: where
time matters, only the order of timestamps is checked.
"""

from __future__ import annotations

import select
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conformance.protocol.framing import Frame, OversizedFrame
from conformance.transport.process import (
    EVENT_OVERHEAD_BYTES,
    EVENT_QUEUE_BYTES,
    READ_CHUNK,
    Received,
    StdoutClosed,
    TargetProcess,
)

LIMIT = 1024 * 1024
WAIT_S = 30.0  # a hang guard only

ECHO = "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()\n"


@contextmanager
def target(tmp_path: Path, code: str, max_frame_bytes: int = LIMIT) -> Iterator[TargetProcess]:
    with TargetProcess([sys.executable, "-c", code], cwd=tmp_path, max_frame_bytes=max_frame_bytes) as proc:
        yield proc


def next_frame(proc: TargetProcess) -> Frame:
    item = proc.next_event(WAIT_S)
    assert isinstance(item, Received) and isinstance(item.event, Frame), item
    return item.event


def drain_all(proc: TargetProcess) -> list[Received]:
    """Every event up to end of stdout (each wait bounded)."""
    seen: list[Received] = []
    while True:
        item = proc.next_event(WAIT_S)
        assert item is not None, "stdout neither delivered nor closed within the hang guard"
        if isinstance(item, StdoutClosed):
            return seen
        seen.append(item)


def test_frames_round_trip_then_stdout_closes(tmp_path: Path) -> None:
    with target(tmp_path, ECHO) as proc:
        proc.write(b'{"a":1}\n{"b":2}\r\n', timeout=WAIT_S)
        assert next_frame(proc).payload == b'{"a":1}'
        second = next_frame(proc)
        assert (second.payload, second.terminator) == (b'{"b":2}', "crlf")
        proc.close_stdin()
        assert isinstance(proc.next_event(WAIT_S), StdoutClosed)
        assert proc.next_event(0) is None  # nothing after the end, and no error
        assert proc.wait_exit(WAIT_S) == 0


def test_closing_stdout_makes_the_next_write_fail(tmp_path: Path) -> None:
    # The echo child dies of BrokenPipeError (exit 1) once its stdout has no reader.
    with target(tmp_path, ECHO) as proc:
        proc.close_stdout()
        proc.write(b'{"a":1}\n', timeout=WAIT_S)
        assert proc.next_event(0) is None  # nothing is read any more, and no error
        assert proc.wait_exit(WAIT_S) == 1


def test_a_final_unterminated_frame_is_delivered(tmp_path: Path) -> None:
    with target(tmp_path, "import sys; sys.stdout.write('{\"tail\":true}')") as proc:
        events = drain_all(proc)
        assert [(e.event.payload, e.event.terminator) for e in events if isinstance(e.event, Frame)] == [
            (b'{"tail":true}', "eof")
        ]


def test_nothing_pending_means_none_after_the_timeout(tmp_path: Path) -> None:
    with target(tmp_path, ECHO) as proc:
        assert proc.next_event(0.05) is None


def test_wait_exit_reads_stdout_so_a_writing_target_can_exit(tmp_path: Path) -> None:
    # 4 MiB is far more than a pipe holds: unread, the child would block in
    # write() and never exit.
    code = "import sys\nfor _ in range(4096):\n    sys.stdout.write('x' * 1023 + '\\n')\nsys.stdout.flush()\n"
    with target(tmp_path, code) as proc:
        assert proc.wait_exit(WAIT_S) == 0
        events = drain_all(proc)
        assert len(events) == 4096 and all(len(e.event.payload) == 1023 for e in events if isinstance(e.event, Frame))


def test_write_reads_stdout_so_an_echoing_target_keeps_reading(tmp_path: Path) -> None:
    # The child answers every line before reading the next: with nobody
    # reading its stdout it would stop reading stdin, and this write would
    # time out.
    line = b'{"pad":"' + b"y" * 4000 + b'"}\n'
    with target(tmp_path, ECHO) as proc:
        proc.write(line * 1000, timeout=WAIT_S)
        proc.close_stdin()
        events = drain_all(proc)
        assert len(events) == 1000


def test_read_ahead_stays_within_the_byte_budget(tmp_path: Path) -> None:
    # Floods empty lines (the cheapest frames) and never exits: waiting for
    # its exit reads ahead, but only up to the budget plus one chunk.
    code = "import os\nwhile True:\n    os.write(1, b'\\n' * 65536)\n"
    with target(tmp_path, code) as proc:
        assert proc.wait_exit(1.0) is None
        ceiling = EVENT_QUEUE_BYTES + READ_CHUNK * EVENT_OVERHEAD_BYTES
        assert EVENT_QUEUE_BYTES <= proc._pending_bytes <= ceiling
        assert proc._pending_bytes == sum(EVENT_OVERHEAD_BYTES for _ in proc._pending)


def test_waiting_for_the_next_event_reads_one_chunk_at_a_time(tmp_path: Path) -> None:
    code = "import os\nwhile True:\n    os.write(1, b'\\n' * 65536)\n"
    with target(tmp_path, code) as proc:
        for _ in range(3 * READ_CHUNK):
            next_frame(proc)
            assert len(proc._pending) < READ_CHUNK


def test_a_busy_harness_does_not_make_the_target_late(tmp_path: Path) -> None:
    with target(tmp_path, ECHO) as proc:
        assert proc.next_event(0) is None  # stdout seen empty
        sent = proc.now()
        proc.write(b"{}\n", timeout=WAIT_S)
        # Busy elsewhere while the answer arrives: wait, without reading,
        # until the answer is on the pipe (a fixed sleep is too short for a
        # loaded machine's child and would make the test flaky).
        poller = select.poll()
        poller.register(proc._stdout_fd, select.POLLIN)
        assert poller.poll(int(WAIT_S * 1000)), "the echo child never answered"
        time.sleep(0.05)
        item = proc.next_event(WAIT_S)
        assert isinstance(item, Received)
        # Stamped no later than the truth: at most when we last saw stdout empty.
        assert item.at <= sent


def test_a_waiting_harness_stamps_the_arrival(tmp_path: Path) -> None:
    code = "import sys, time\nsys.stdin.readline()\ntime.sleep(0.2)\nprint('{}', flush=True)\nsys.stdin.read()\n"
    with target(tmp_path, code) as proc:
        proc.write(b"go\n", timeout=WAIT_S)
        waiting = proc.now()
        item = proc.next_event(WAIT_S)
        assert isinstance(item, Received)
        assert waiting <= item.at <= proc.now()


def test_after_kill_nothing_is_read_and_nothing_raises(tmp_path: Path) -> None:
    with target(tmp_path, ECHO) as proc:
        proc.write(b"{}\n", timeout=WAIT_S)
        assert next_frame(proc).payload == b"{}"
        proc.kill_group()
        assert not proc.running()
        assert proc.next_event(0.01) is None
        assert proc.wait_exit(0.01) is not None


def test_oversized_frames_are_never_buffered(tmp_path: Path) -> None:
    code = "import os\nos.write(1, b'z' * (3 * 65536) + b'\\n{}\\n')\n"
    with target(tmp_path, code, max_frame_bytes=1000) as proc:
        events = drain_all(proc)
        assert [type(e.event).__name__ for e in events] == ["OversizedFrame", "Frame"]
        assert proc._decoder.buffered == 0


def test_an_endless_line_is_reported_once_it_passes_the_bound(tmp_path: Path) -> None:
    """The line never ends and the target never exits: the oversized frame
    must still be reported, as soon as the bound is passed (EXT-0-frame-bound
    is then judged without waiting for a terminator that never comes)."""
    code = "import os, time\nos.write(1, b'y' * (3 * 65536))\ntime.sleep(3600)\n"
    with target(tmp_path, code, max_frame_bytes=65536) as proc:
        item = proc.next_event(WAIT_S)
        assert isinstance(item, Received) and isinstance(item.event, OversizedFrame), item
        assert item.event.index == 0 and item.event.size > 65536 and not item.event.complete
        assert proc.running()  # reported while the line was still going on


def test_argv0_links_are_not_followed(tmp_path: Path) -> None:
    """A virtual environment's python is a link to the base interpreter;
    running the link's target would lose the environment's packages."""
    from conformance.transport.process import resolve_argv

    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "python"
    link.symlink_to(sys.executable)
    assert resolve_argv(["bin/python", "main.py"], tmp_path, {}) == [str(link), "main.py"]
    assert resolve_argv(["./bin/../bin/python"], tmp_path, {}) == [str(link)]
