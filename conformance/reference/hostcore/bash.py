"""Running one Bash command (§5, §8.4, §8.5; §10 item 13).

The command gets its own process group, so killing the group on timeout,
abort or completion reaches every process it started (a process that calls
``setsid`` itself leaves the group and is out of reach -- see the module
notes in the README of this package). stdout and stderr are read by one
thread each and streamed as they arrive, decoded incrementally so a UTF-8
character split across reads is never broken; each stream keeps its order.
The final result keeps a bounded tail of each stream.
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from . import limits

# Spawn retries on transient exhaustion (EAGAIN), never after a start (§4 Shells).
SPAWN_ATTEMPTS = 3
SPAWN_BACKOFF_S = 0.05
POLL_S = 0.02
# After the command exits or is killed, how long its pipes may take to close.
PIPE_CLOSE_S = 2.0

Emit = Callable[[str, str], None]  # (stream, chunk)


@dataclass(frozen=True)
class BashRun:
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    aborted: bool


class _Tail:
    """The last ``limit`` characters of one stream, plus whether more came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.dropped = False

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        while self.size > self.limit and self.parts:
            excess = self.size - self.limit
            head = self.parts[0]
            if len(head) <= excess:
                self.parts.pop(0)
                self.size -= len(head)
            else:
                self.parts[0] = head[excess:]
                self.size -= excess
            self.dropped = True

    def text(self) -> str:
        return "".join(self.parts)


def spawn(shell: str, command: str, cwd: str) -> subprocess.Popen[bytes]:
    for attempt in range(SPAWN_ATTEMPTS):
        try:
            return subprocess.Popen(
                [shell, "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group (§8.5)
            )
        except BlockingIOError:
            if attempt == SPAWN_ATTEMPTS - 1:
                raise
            time.sleep(SPAWN_BACKOFF_S * (2**attempt))
    raise AssertionError("unreachable")


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(proc: subprocess.Popen[bytes], timeout_s: float, cancelled: Callable[[], bool], emit: Emit) -> BashRun:
    tails = {"stdout": _Tail(limits.MAX_STREAM_RESULT_BYTES), "stderr": _Tail(limits.MAX_STREAM_RESULT_BYTES)}
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, "stdout", tails["stdout"], emit), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, "stderr", tails["stderr"], emit), daemon=True),
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout_s
    timed_out = aborted = False
    while proc.poll() is None:
        if cancelled():
            aborted = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        time.sleep(POLL_S)
    # tools.abort may have killed the group itself: the exit is then an abort.
    aborted = aborted or cancelled()
    # Whatever happened, nothing the command started outlives the call; the
    # child is reaped before the execution slot is released (§4 Shells).
    kill_tree(proc)
    proc.wait()
    for reader in readers:
        reader.join(PIPE_CLOSE_S)
    exit_code = None if (timed_out or aborted) else proc.returncode
    truncated = tails["stdout"].dropped or tails["stderr"].dropped
    return BashRun(exit_code, tails["stdout"].text(), tails["stderr"].text(), truncated, timed_out, aborted)


def _pump(stream: IO[bytes], name: str, tail: _Tail, emit: Emit) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = stream.fileno()
    try:
        while chunk := os.read(fd, limits.OUTPUT_CHUNK_BYTES):
            text = decoder.decode(chunk)
            if text:
                tail.add(text)
                emit(name, text)
        text = decoder.decode(b"", final=True)
        if text:
            tail.add(text)
            emit(name, text)
    except OSError:
        pass
    finally:
        stream.close()
