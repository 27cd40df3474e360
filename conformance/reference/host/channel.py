"""A child's three pipes and its process group, behind a small interface.

:class:`ProcessLauncher` starts a real process: its own session and process
group (so killing the group reaches grandchildren), cwd = the manifest's
folder, the sanitized environment, stdin/stdout/stderr pipes. The host's
workers block on :meth:`Channel.read_stdout` / :meth:`Channel.read_stderr` /
:meth:`Channel.write`; killing the group ends every one of those waits.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Protocol

READ_CHUNK = 64 * 1024
POLL_MS = 100  # longest single wait for a full stdin pipe to drain


class LaunchError(RuntimeError):
    """The process could not be started (missing program, permissions...)."""


class Channel(Protocol):
    pid: int | None

    def write(self, data: bytes) -> None:
        """Write every byte (waiting as long as it takes) or raise OSError."""

    def try_write(self, data: bytes) -> int:
        """Write what the pipe takes now, without waiting; the count written."""

    def read_stdout(self) -> bytes:
        """Some bytes, or b"" at end of file."""

    def read_stderr(self) -> bytes: ...

    def close_stdin(self) -> None: ...

    def wait_exit(self, timeout: float | None) -> int | None:
        """The exit status, or None if the child still runs after ``timeout`` (None: no limit)."""

    def kill_group(self) -> None:
        """SIGKILL the whole process group and reap the leader."""

    def running(self) -> bool: ...


class Launcher(Protocol):
    def launch(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> Channel: ...


class ProcessChannel:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid: int | None = proc.pid
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._stdin = proc.stdin
        self._stdin_fd = proc.stdin.fileno()
        self._stdin_lock = threading.Lock()  # writes vs the final close (descriptor numbers get reused)
        self._stdin_closed = False
        os.set_blocking(self._stdin_fd, False)  # try_write never blocks; write() polls
        self._stdout_fd = proc.stdout.fileno()
        self._stderr_fd = proc.stderr.fileno()
        self._killed = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a pipe may take part of a frame; finish it
            view = view[self.try_write(view) :]
            if view:
                poller = select.poll()
                poller.register(self._stdin_fd, select.POLLOUT)
                # Bounded waits: try_write re-checks that stdin is still ours,
                # so a descriptor closed (and its number reused) meanwhile is
                # never written to.
                poller.poll(POLL_MS)

    def try_write(self, data: bytes | memoryview) -> int:
        with self._stdin_lock:
            if self._stdin_closed:
                raise BrokenPipeError("the child's stdin is closed")
            try:
                return os.write(self._stdin_fd, data)
            except BlockingIOError:
                return 0

    def read_stdout(self) -> bytes:
        return self._read(self._stdout_fd, self.proc.stdout)

    def read_stderr(self) -> bytes:
        return self._read(self._stderr_fd, self.proc.stderr)

    def _read(self, fd: int, stream: IO[bytes] | None) -> bytes:
        # Each stream has one reader, which stops at the first b"": the
        # stream is closed right there, so no descriptor outlives the child
        # and none is closed while its reader may still use it.
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk and stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
        return chunk

    def close_stdin(self) -> None:
        with self._stdin_lock:
            if not self._stdin_closed:
                self._stdin_closed = True
                with contextlib.suppress(OSError):
                    self._stdin.close()

    def wait_exit(self, timeout: float | None) -> int | None:
        try:
            return self.proc.wait(timeout=None if timeout is None else max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self) -> None:
        if self._killed:
            return
        self._killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        # Readers blocked on stdout/stderr see EOF now that every writer of
        # the group is dead, and close their stream (see _read).

    def running(self) -> bool:
        return self.proc.poll() is None


class ProcessLauncher:
    """Starts real child processes. ``spawned`` lists every process group it
    started (the leader's pid is the group id), so an embedder or a test can
    prove that none outlived the host."""

    def __init__(self) -> None:
        self.spawned: list[int] = []

    def launch(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> Channel:
        program = argv[0]
        if os.sep in program:
            # Relative to the manifest folder; absolute but not resolved, so a
            # virtual environment's python link keeps its environment.
            resolved = os.path.abspath(cwd / program)
        else:
            resolved = shutil.which(program, path=env.get("PATH")) or program
        try:
            proc = subprocess.Popen(
                [resolved, *argv[1:]],
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group
                bufsize=0,
            )
        except OSError as exc:
            raise LaunchError(f"cannot start {program!r}: {exc.strerror or exc}") from None
        self.spawned.append(proc.pid)
        return ProcessChannel(proc)
