"""A target process, treated as hostile.

* its own process group (``start_new_session``), killed as a group on every
  exit path, including when the harness itself fails;
* a sanitized environment (see :func:`sanitized_env`);
* stdout is read by one thread through the shared sans-IO framing, so no
  frame is ever buffered past the frame bound; stderr is drained by another
  thread into a bounded tail, so a target that floods stderr cannot stall
  on a full pipe nor exhaust our memory;
* writes are non-blocking with a deadline: a target that stops reading
  cannot hang the harness.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.protocol.framing import Frame, FrameDecoder, FrameEvent

READ_CHUNK = 64 * 1024
STDERR_TAIL_BYTES = 64 * 1024
# Bytes of frames queued between the stdout reader and the harness. Past it,
# the reader stops reading and the pipe pushes back on a flooding target, so
# the harness's memory stays bounded whatever the target writes (a budget in
# frames would allow thousands of 1 MiB frames).
EVENT_QUEUE_BYTES = 8 * 1024 * 1024
# Address-space cap for a target, so one that allocates until killed cannot
# take the machine down first.
TARGET_ADDRESS_SPACE_BYTES = 4 * 1024**3

# Variables a target may see; everything else of the harness's environment is
# withheld (credentials, tokens, the harness's own configuration).
_PASSED_THROUGH = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT")


def sanitized_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a target starts with.

    PATH starts with the directory of the running interpreter, so a manifest
    saying ``python3`` means the Python the suite runs on (the one with the
    suite installed, e.g. a virtual environment that was never activated).
    """
    env = {k: os.environ[k] for k in _PASSED_THROUGH if k in os.environ}
    interpreter_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([interpreter_dir, os.environ.get("PATH", os.defpath)])
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


def _limit_target(pid: int) -> None:
    # prlimit after spawn rather than preexec_fn, which is unsafe while the
    # harness runs reader threads; children inherit the limit from here on.
    with contextlib.suppress(ValueError, OSError, AttributeError):
        resource.prlimit(pid, resource.RLIMIT_AS, (TARGET_ADDRESS_SPACE_BYTES, TARGET_ADDRESS_SPACE_BYTES))


def resolve_argv(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """argv[0] as the target will run it: relative paths resolve against the
    manifest's folder, bare names through the sanitized PATH."""
    program = argv[0]
    if os.sep in program:
        candidate = (cwd / program).resolve()
        return [str(candidate), *argv[1:]]
    found = shutil.which(program, path=env.get("PATH"))
    return [found or program, *argv[1:]]


@dataclass(frozen=True)
class Received:
    """One frame event from the target's stdout, with when it arrived."""

    event: FrameEvent
    at: float


@dataclass(frozen=True)
class StdoutClosed:
    at: float


# Every process group this interpreter started, so tests (and later the
# runner's final sweep) can prove none outlived its run.
SPAWNED_GROUPS: list[int] = []
LIVE_GROUPS: set[int] = set()  # started and not yet ended by kill_group()


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_spawned_groups() -> None:
    """Last line of defence (signal handler, atexit): SIGKILL every group not
    yet ended by kill_group(). Only those: their leader is not reaped yet, so
    the group id cannot have been reused by an unrelated process."""
    for pgid in list(LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _event_bytes(item: Received) -> int:
    event = item.event
    return len(event.payload) if isinstance(event, Frame) else 0


class WriteTimeout(RuntimeError):
    pass


class TargetProcess:
    """One running target. Use as a context manager; exiting kills the group."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        max_frame_bytes: int,
    ) -> None:
        self.env = env if env is not None else sanitized_env()
        self.argv = resolve_argv(argv, cwd, self.env)
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group: killpg reaches grandchildren
            bufsize=0,
        )
        self.pgid = self.proc.pid
        SPAWNED_GROUPS.append(self.pgid)
        LIVE_GROUPS.add(self.pgid)
        _limit_target(self.proc.pid)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self.events: queue.Queue[Received | StdoutClosed] = queue.Queue()
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._closed = False
        self._decoder = FrameDecoder(max_frame_bytes=max_frame_bytes)
        self._stderr_tail: collections.deque[bytes] = collections.deque()
        self._stderr_kept = 0
        self.stderr_total = 0
        self._lock = threading.Lock()
        self.bytes_written = 0
        # Each reader owns a duplicate of its descriptor and closes it itself:
        # descriptor numbers are reused, so a reader must never be left
        # reading a number that kill_group() closed and a later target got.
        stdout_fd, stderr_fd = os.dup(self.proc.stdout.fileno()), os.dup(self.proc.stderr.fileno())
        threading.Thread(target=self._pump_stdout, args=(stdout_fd,), name="target-stdout", daemon=True).start()
        threading.Thread(target=self._pump_stderr, args=(stderr_fd,), name="target-stderr", daemon=True).start()

    # -- reading ---------------------------------------------------------------
    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        """The next frame event from stdout, or None after ``timeout``."""
        try:
            item = self.events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None
        if isinstance(item, Received):
            with self._room:
                self._queued_bytes -= _event_bytes(item)
                self._room.notify()
        return item

    def _pump_stdout(self, fd: int) -> None:
        try:
            while not self._closed:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    chunk = b""
                now = time.monotonic()
                events = self._decoder.feed(chunk) if chunk else self._decoder.close()
                for event in events:
                    self._enqueue(Received(event, now))
                if not chunk:
                    self.events.put(StdoutClosed(now))
                    return
        finally:
            os.close(fd)

    def _enqueue(self, item: Received) -> None:
        size = _event_bytes(item)
        with self._room:
            while self._queued_bytes > 0 and self._queued_bytes + size > EVENT_QUEUE_BYTES and not self._closed:
                self._room.wait(0.5)
            if self._closed:
                return  # the run is over: nobody will read it
            self._queued_bytes += size
        self.events.put(item)

    def _pump_stderr(self, fd: int) -> None:
        try:
            while not self._closed:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    return
                if not chunk:
                    return
                self._keep_stderr(chunk)
        finally:
            os.close(fd)

    def _keep_stderr(self, chunk: bytes) -> None:
        with self._lock:
            self.stderr_total += len(chunk)
            self._stderr_tail.append(chunk)
            self._stderr_kept += len(chunk)
            while self._stderr_kept - len(self._stderr_tail[0]) >= STDERR_TAIL_BYTES:
                self._stderr_kept -= len(self._stderr_tail.popleft())

    def stderr_excerpt(self, limit: int = 2048) -> str:
        with self._lock:
            tail = b"".join(self._stderr_tail)[-limit:]
        return tail.decode("utf-8", "replace")

    # -- writing ---------------------------------------------------------------
    def write(self, data: bytes, *, timeout: float) -> None:
        """Write all of ``data`` or raise WriteTimeout / BrokenPipeError."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._stdin_fd, view)
            except BlockingIOError:
                n = 0
            view = view[n:]
            self.bytes_written += n
            if view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WriteTimeout(f"target did not read {len(view):,} pending bytes within {timeout:.1f}s")
                select.select([], [self._stdin_fd], [], min(remaining, 0.5))

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    # -- ending ------------------------------------------------------------------
    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self) -> None:
        """SIGKILL the whole process group, then reap the leader. Readers see
        end of file (every writer is dead) and end; a reader blocked on a full
        queue is released and drops what it holds."""
        with self._room:
            self._closed = True
            self._room.notify_all()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
            LIVE_GROUPS.discard(self.pgid)
        self.close_stdin()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def group_alive(self) -> bool:
        return group_exists(self.pgid)

    def running(self) -> bool:
        """The target's leader has not exited (it may still be reaped later)."""
        return self.proc.poll() is None

    @staticmethod
    def now() -> float:
        """The clock every timestamp of this transport is on."""
        return time.monotonic()

    def __enter__(self) -> TargetProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill_group()
