"""A target process, treated as hostile.

* its own process group (``start_new_session``), killed as a group on every
  exit path, including when the harness itself fails;
* a sanitized environment (see :func:`sanitized_env`);
* stdout is read by the harness thread itself, when it waits for an event
  (no reader thread: a hand-off between threads per frame used to cost more
  than the frame's whole processing), through the shared sans-IO framing,
  so no frame is ever buffered past the frame bound, and what is read ahead
  while waiting for something else stays within a byte budget; stderr is
  drained by a thread of its own into a bounded tail, so a target that floods
  stderr cannot stall on a full pipe nor exhaust our memory;
* writes are non-blocking with a deadline: a target that stops reading
  cannot hang the harness; while a write or an exit is awaited, stdout is
  still read, so a target blocked on a full stdout pipe is not mistaken for
  one that stopped reading or will not exit.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.protocol.framing import Frame, FrameDecoder

from . import budget
from .startup import start_failure
from .target import Received, StdoutClosed

READ_CHUNK = 64 * 1024
STDERR_TAIL_BYTES = 64 * 1024
STDERR_SETTLE_S = 0.2  # after an exit, how long the last stderr bytes may take to be read
# Bytes of frames read ahead of the harness (while it waits on a write or an
# exit). Past it, stdout is left unread and the pipe pushes back on a
# flooding target, so the harness's memory stays bounded whatever the target
# writes (a budget in frames would allow thousands of 1 MiB frames). Waiting
# for the next event reads one chunk at a time, only when nothing is pending.
EVENT_QUEUE_BYTES = 8 * 1024 * 1024
# What a pending event costs besides its payload (the event objects): a flood
# of empty lines must count against the budget too.
EVENT_OVERHEAD_BYTES = 256
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
        # Made absolute, never resolved: following the link of a virtual
        # environment's python would run the base interpreter without the
        # environment's packages.
        return [os.path.abspath(cwd / program), *argv[1:]]
    found = shutil.which(program, path=env.get("PATH"))
    return [found or program, *argv[1:]]


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
    yet ended by kill_group(), and every descendant of those leaders that left
    its group. Only those groups: their leader is not reaped yet, so the group
    id cannot have been reused by an unrelated process."""
    table = proc_table()
    for pgid in list(LIVE_GROUPS):
        for pid in descendants(pgid, table):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


class Stopping(KeyboardInterrupt):
    """The harness was told to stop (a signal): no target may start any more.
    A KeyboardInterrupt, because Hypothesis re-raises those instead of taking
    them for a failing example and replaying it (which would spawn targets)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_STOP_SIGNAL: list[int] = []  # the signal that ended spawning, once one did


def stop_spawning(signum: int) -> None:
    """From now on every attempt to start a target raises :class:`Stopping`."""
    if not _STOP_SIGNAL:
        _STOP_SIGNAL.append(signum)


def spawning_stopped() -> int | None:
    """The signal that stopped spawning, or None."""
    return _STOP_SIGNAL[0] if _STOP_SIGNAL else None


def raise_if_stopping() -> None:
    """Raise :class:`Stopping` when a stop signal came. For the points where a
    run would make its results count (committing a report, printing a replay's
    outcome): the signal handler's own raise can be swallowed (Python drops
    exceptions raised in a gc callback or a ``__del__``), this check cannot."""
    if _STOP_SIGNAL:
        raise Stopping(_STOP_SIGNAL[0])


# -- process trees ---------------------------------------------------------------
# A descendant that calls setsid() or setpgid() leaves the target's group, so
# killpg misses it. While its parent lives it is still found by walking parent
# links from the leader; once the parent is gone it is re-parented, to us when
# we are a child subreaper (enable_subreaper), otherwise to init and out of reach.

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: list[bool] = []


@dataclass(frozen=True)
class ProcInfo:
    ppid: int
    pgid: int
    state: str
    comm: str


def enable_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux only), so a
    double-forked, setsid() grandchild can still be found and killed. Only the
    command line turns this on: it owns every child it has."""
    if _SUBREAPER:
        return True
    try:
        import ctypes  # noqa: PLC0415 -- Linux-only; imported where it is used

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    _SUBREAPER.append(True)
    return True


def proc_table() -> dict[int, ProcInfo]:
    """Every visible process (from /proc): parent, group, state, name."""
    table: dict[int, ProcInfo] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The name is in parentheses and may hold spaces and ')'.
        comm = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode("utf-8", "replace")
        fields = stat[stat.rfind(b")") + 2 :].split()
        with contextlib.suppress(IndexError, ValueError):
            table[int(entry)] = ProcInfo(int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"), comm)
    return table


def descendants(root: int, table: dict[int, ProcInfo]) -> set[int]:
    """Every process below ``root`` by parent links (``root`` excluded)."""
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info.ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def _orphans(table: dict[int, ProcInfo]) -> set[int]:
    """Processes re-parented to us (only when we are a subreaper): not one of
    the leaders we spawned, so a target's descendant whose parent died."""
    if not _SUBREAPER:
        return set()
    me = os.getpid()
    helpers = _own_helpers()
    orphans = {pid for pid, info in table.items() if info.ppid == me and pid not in LIVE_GROUPS | helpers}
    return orphans | {d for pid in orphans for d in descendants(pid, table)}


def _own_helpers() -> set[int]:
    """Children of ours that no target started: the resource tracker a
    ``--jobs`` pool starts. Killed, it is relaunched with a warning at exit
    (semaphores are unregistered with it), so it is left to end on its own
    when we do."""
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    pid = getattr(tracker, "_pid", None)
    return {pid} if isinstance(pid, int) else set()


def _reap(pids: Iterable[int], timeout: float) -> None:
    """Collect the exit status of killed orphans re-parented to us, so they do
    not stay zombies (never waitpid(-1): Popen reaps its own children)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break  # not our child, or already reaped
            if done:
                break
            time.sleep(0.005)


def kill_orphans() -> None:
    """The command line's final sweep: SIGKILL and reap whatever was re-parented
    to us (descendants of targets that outlived their parent)."""
    table = proc_table()
    orphans = _orphans(table)
    for pid in orphans:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    me = os.getpid()
    _reap([p for p in orphans if table[p].ppid == me], timeout=2.0)


# Kill passes over a target's tree: a process may fork between one walk of
# /proc and the kill, so walk again until a walk finds nothing alive.
KILL_PASSES = 5


def _event_bytes(item: Received | StdoutClosed) -> int:
    # What one pending event costs us: its payload plus the objects around
    # it, so a flood of empty lines is bounded too, not only large frames.
    event = item.event if isinstance(item, Received) else None
    return EVENT_OVERHEAD_BYTES + (len(event.payload) if isinstance(event, Frame) else 0)


class WriteTimeout(RuntimeError):
    pass


def _poll_ms(seconds: float) -> int:
    return max(0, math.ceil(seconds * 1000))


class StderrTail:
    """The last STDERR_TAIL_BYTES a target wrote to stderr, and how much it
    wrote in all. The reader thread keeps; the harness reads excerpts: both
    under one lock."""

    def __init__(self) -> None:
        self._chunks: collections.deque[bytes] = collections.deque()
        self._kept = 0
        self._total = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        with self._lock:
            return self._total

    def keep(self, chunk: bytes) -> None:
        with self._lock:
            self._total += len(chunk)
            self._chunks.append(chunk)
            self._kept += len(chunk)
            while self._kept - len(self._chunks[0]) >= STDERR_TAIL_BYTES:
                self._kept -= len(self._chunks.popleft())

    def excerpt(self, limit: int) -> str:
        with self._lock:
            tail = b"".join(self._chunks)[-limit:]
        return tail.decode("utf-8", "replace")


class TargetProcess:
    """One running target. Use as a context manager; exiting kills the group.

    Not thread-safe: one harness thread writes, reads and waits. Only stderr
    is drained by a thread of its own.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        max_frame_bytes: int,
    ) -> None:
        raise_if_stopping()  # the harness is stopping: no target starts after the signal
        budget.check()  # nor once the run's budget is spent
        self.env = env if env is not None else sanitized_env()
        self.argv = resolve_argv(argv, cwd, self.env)
        self.strays: tuple[str, ...] = ()  # set by kill_group(): descendants that had left the group
        try:
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
        except OSError as exc:  # exec failed: nothing runs, so there is nothing to kill
            raise start_failure(argv, cwd, self.env, exc) from None
        self.pgid = self.proc.pid
        SPAWNED_GROUPS.append(self.pgid)
        LIVE_GROUPS.add(self.pgid)
        _limit_target(self.proc.pid)
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self._stdout_fd = self.proc.stdout.fileno()
        os.set_blocking(self._stdout_fd, False)
        # Waits for stdout alone (the common wait, once per frame) reuse one poller.
        self._stdout_poller = select.poll()
        self._stdout_poller.register(self._stdout_fd, select.POLLIN)
        self._pending: collections.deque[Received | StdoutClosed] = collections.deque()
        self._pending_bytes = 0
        self._stdout_ended = False  # end of file read (StdoutClosed is pending or was returned)
        self._closed = False  # kill_group() ran: the descriptors are gone
        # Every stdout byte not read yet arrived at or after this instant (see
        # _read_stdout): the arrival time of what we read, never later than
        # the truth, so a harness busy elsewhere cannot make a target late.
        self._quiet_since = time.monotonic()
        self._drained = False  # the last read left stdout empty
        # Early: an endless line fails the bound as soon as it passes it.
        self._decoder = FrameDecoder(max_frame_bytes=max_frame_bytes, report_early=True)
        self._stderr = StderrTail()
        self.bytes_written = 0
        # The stderr reader owns a duplicate of its descriptor and closes it
        # itself: descriptor numbers are reused, so it must never be left
        # reading a number that kill_group() closed and a later target got.
        stderr_fd = os.dup(self.proc.stderr.fileno())
        self._stderr_reader = threading.Thread(
            target=self._pump_stderr, args=(stderr_fd,), name="target-stderr", daemon=True
        )
        self._stderr_reader.start()

    # -- reading ---------------------------------------------------------------
    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        """The next frame event from stdout, or None after ``timeout``.
        Raises budget.BudgetSpent instead of waiting past the run's budget."""
        if not self._pending:
            self._await_stdout(time.monotonic() + max(budget.cap(timeout), 0.0))
        if not self._pending:
            budget.check()  # a wait the budget cut short is no timeout
            return None
        item = self._pending.popleft()
        self._pending_bytes -= _event_bytes(item)
        return item

    def _await_stdout(self, deadline: float) -> None:
        """Read stdout until an event is pending or ``deadline`` passes."""
        while not self._read_stdout():
            if self._stdout_ended or self._closed:
                # Nothing more can arrive: wait out the timeout like an idle
                # stream would, so a polling caller never spins.
                time.sleep(max(deadline - time.monotonic(), 0.0))
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._stdout_poller.poll(_poll_ms(remaining)):
                self._woke()

    def _woke(self) -> None:
        """A wait on stdout ended with something to read. If the pipe was
        empty when the wait began, whatever is there arrived just now."""
        if self._drained:
            self._quiet_since = time.monotonic()

    def _read_stdout(self) -> bool:
        """Read one chunk of stdout if there is one; True once an event is
        pending (a chunk may hold only part of a frame).

        Events are stamped with ``_quiet_since``, a lower bound of when their
        bytes arrived (up to the microseconds between a check and a wait): it
        moves to the start of every read that found the pipe empty or emptied
        it (anything unread came later) and to the moment a wait on an empty
        pipe woke up. A read that filled the whole chunk proves nothing about
        what is left, so it leaves the bound alone. Stamps are exact while
        the harness waits, and early, never late, when it looks late: a
        harness busy elsewhere cannot make a target look slow.
        """
        if self._stdout_ended or self._closed:
            return bool(self._pending)
        before = time.monotonic()
        try:
            chunk = os.read(self._stdout_fd, READ_CHUNK)
        except BlockingIOError:
            self._quiet_since, self._drained = before, True
            return bool(self._pending)
        except OSError:
            chunk = b""
        at = self._quiet_since
        self._drained = len(chunk) < READ_CHUNK
        if self._drained:
            self._quiet_since = before
        if chunk:
            self._keep(Received(event, at) for event in self._decoder.feed(chunk))
        else:
            self._stdout_ended = True
            self._keep(Received(event, at) for event in self._decoder.close())
            self._keep([StdoutClosed(before)])
        return bool(self._pending)

    def _keep(self, items: Iterable[Received | StdoutClosed]) -> None:
        for item in items:
            self._pending.append(item)
            self._pending_bytes += _event_bytes(item)

    def _stdout_wanted(self) -> bool:
        """Read stdout while waiting for something else? Only within the byte
        budget: past it the pipe pushes back on a flooding target."""
        return not (self._stdout_ended or self._closed) and self._pending_bytes < EVENT_QUEUE_BYTES

    def _wait(self, seconds: float, fd: int | None, mask: int) -> None:
        """Wait up to ``seconds`` for ``fd`` (stdin writable, or the target's
        exit), meanwhile reading stdout within the byte budget, so a target
        blocked on a full stdout pipe can still read its stdin and exit."""
        if self._stdout_wanted():
            self._read_stdout()  # what is there already, before waiting on more
        poller = select.poll()
        if fd is not None:
            poller.register(fd, mask)
        watch_stdout = self._stdout_wanted()
        if watch_stdout:
            poller.register(self._stdout_fd, select.POLLIN)
        ready = poller.poll(_poll_ms(seconds))
        if watch_stdout and any(r == self._stdout_fd for r, _ in ready):
            self._woke()
            self._read_stdout()

    def _pump_stderr(self, fd: int) -> None:
        try:
            while not self._closed:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    return
                if not chunk:
                    return
                self._stderr.keep(chunk)
        finally:
            os.close(fd)

    @property
    def stderr_total(self) -> int:
        """Bytes the target wrote to stderr so far (kept or not)."""
        return self._stderr.total

    def stderr_excerpt(self, limit: int = 2048) -> str:
        return self._stderr.excerpt(limit)

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
                remaining = budget.cap(deadline - time.monotonic())
                if remaining <= 0:
                    budget.check()
                    raise WriteTimeout(f"target did not read {len(view):,} pending bytes within {timeout:.1f}s")
                self._wait(min(remaining, 0.5), self._stdin_fd, select.POLLOUT)

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def close_stdout(self) -> None:
        """Close the harness's read end of the target's stdout, so its next
        write fails (EPIPE); nothing more is read. Waits go on as after end
        of file."""
        self._stdout_ended = True
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()

    # -- ending ------------------------------------------------------------------
    def wait_exit(self, timeout: float) -> int | None:
        """The exit status, or None if the leader still runs after ``timeout``.
        Stdout is read meanwhile (within the byte budget): a target may have
        to finish writing before it can exit."""
        deadline = time.monotonic() + max(timeout, 0.0)
        pidfd = self._open_pidfd()
        delay = 0.0005
        try:
            while (code := self.proc.poll()) is None:
                remaining = budget.cap(deadline - time.monotonic())
                if remaining <= 0:
                    budget.check()
                    return None
                if pidfd is not None:
                    self._wait(min(remaining, 0.5), pidfd, select.POLLIN)
                else:  # no pidfd: poll the leader with a growing interval, as Popen.wait does
                    self._wait(min(remaining, delay), None, 0)
                    delay = min(delay * 2, 0.05)
            if self._stdout_ended:
                # It exited and its stdout is closed: let the stderr reader
                # take in the last words (why it exited) before anyone quotes
                # them. Bounded: a grandchild may hold stderr open forever.
                self._stderr_reader.join(STDERR_SETTLE_S)
            return code
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def last_words(self, timeout: float) -> tuple[int | None, str]:
        """The exit status (None: still running after ``timeout``) and stderr
        tail of a target that is going away. Its stdout is read to the end
        first (discarded: nothing more is judged), so the stderr reader is
        given its moment to take in why it went (see :meth:`wait_exit`)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        code = self.wait_exit(timeout)
        while code is not None and not (self._stdout_ended or self._closed) and time.monotonic() < deadline:
            self._await_stdout(deadline)
            self._pending.clear()
            self._pending_bytes = 0
        if code is not None and not self._closed:
            code = self.wait_exit(0)  # stdout ended now: joins the stderr reader (bounded)
        return code, self.stderr_excerpt(4096)

    def _open_pidfd(self) -> int | None:
        if self._closed or self.proc.returncode is not None:
            return None
        try:
            return os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):  # not Linux >= 5.3, or already reaped
            return None

    def kill_group(self) -> None:
        """SIGKILL the whole process group, then reap the leader. The stderr
        reader sees end of file (every writer is dead) and ends; frames
        already read stay pending, nothing more is read."""
        self._closed = True
        self.strays = self._kill_tree()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
            LIVE_GROUPS.discard(self.pgid)
        self.close_stdin()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _kill_tree(self) -> tuple[str, ...]:
        """SIGKILL the group and every descendant, including those that left
        the group (setsid, setpgid, a double fork when we are a subreaper).
        Returns a line for each process found outside the group: a stray."""
        strays: dict[int, str] = {}
        me = os.getpid()
        orphans: set[int] = set()
        for _ in range(KILL_PASSES):
            table = proc_table()
            found = _orphans(table)
            orphans |= {p for p in found if table[p].ppid == me}
            tree = set(found)
            if self.proc.returncode is None:  # not reaped: the pid is still the leader's
                tree |= descendants(self.proc.pid, table) | {self.proc.pid}
            live = {p for p in tree if p in table and table[p].state not in ("Z", "X")}
            for pid in sorted(live):
                if table[pid].pgid != self.pgid:
                    strays.setdefault(pid, f"pid {pid} ({table[pid].comm}) had left the target's process group")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
            if not live:
                break
        _reap(sorted(orphans), timeout=2.0)
        return tuple(strays[p] for p in sorted(strays))

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
