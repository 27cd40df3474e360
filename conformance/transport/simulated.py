"""An in-process target under a deterministic scheduler with a virtual clock.

A program that would run as a process (stdin bytes in, stdout frames out,
concurrent workers, timed waits) runs here on greenlets, one at a time, in an
order fixed by the scheduler: ready workers run first-in first-out until each
blocks; only when nothing can run does virtual time jump to the next timer or
to the harness's own deadline. Nothing depends on the machine's load, so the
same exchange produces the same frames every time, and "sleep 100 ms" costs
nothing -- races are explored deterministically at high step rates.

:class:`SimulatedTarget` offers the methods of
:class:`~conformance.transport.process.TargetProcess` the peers use, so a peer
cannot tell the two apart except by speed. Greenlets, not threads: switching
is explicit, so a worker can only be interrupted where it waits.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import greenlet

from conformance.protocol.framing import FrameDecoder
from conformance.transport.target import Received, StdoutClosed

# Virtual time one frame costs its reader: a target that writes without end
# still moves the clock, so every deadline of the harness comes.
FRAME_COST_S = 1e-5
STDERR_TAIL_CHARS = 64 * 1024


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


@dataclass
class VirtualClock:
    now: float = 0.0


class _Dead(greenlet.GreenletExit):
    """Raised into a worker that tries to wait after its process ended."""


@dataclass(eq=False)
class _Waiter:
    task: greenlet.greenlet
    done: bool = False


class Scheduler:
    """Cooperative workers, events, conditions and timers on a virtual clock.
    It has the interface of the reference server's runtime
    (``event()``, ``condition()``, ``submit(job)``)."""

    def __init__(self, clock: VirtualClock, on_crash: Callable[[BaseException], None]) -> None:
        self.clock = clock
        self._hub = greenlet.getcurrent()
        self._ready: collections.deque[tuple[greenlet.greenlet, bool]] = collections.deque()
        self._timers: list[tuple[float, int, _Waiter]] = []
        self._order = itertools.count()
        self._tasks: set[greenlet.greenlet] = set()
        self._on_crash = on_crash
        self.dead = False

    # -- the runtime interface -------------------------------------------------
    def event(self) -> SimEvent:
        return SimEvent(self)

    def condition(self) -> SimCondition:
        return SimCondition(self)

    def submit(self, job: Callable[[], None]) -> None:
        def run(*_: object) -> None:
            try:
                job()
            except greenlet.GreenletExit:
                pass
            except Exception as exc:  # a worker thread dying prints and ends
                self._on_crash(exc)
            finally:
                self._tasks.discard(greenlet.getcurrent())

        task = greenlet.greenlet(run, parent=self._hub)
        self._tasks.add(task)
        self._ready.append((task, True))

    # -- blocking and waking -----------------------------------------------------
    def block(self, waiter: _Waiter, timeout: float | None) -> bool:
        """Suspend the calling worker until woken (True) or timed out (False)."""
        if self.dead:
            raise _Dead()
        if timeout is not None:
            heapq.heappush(self._timers, (self.clock.now + max(timeout, 0.0), next(self._order), waiter))
        return bool(self._hub.switch())

    def waiter(self) -> _Waiter:
        return _Waiter(greenlet.getcurrent())

    def wake(self, waiter: _Waiter, signalled: bool = True) -> None:
        if not waiter.done and not self.dead:
            waiter.done = True
            self._ready.append((waiter.task, signalled))

    # -- driving (from the harness's side) ---------------------------------------
    def run_until_idle(self) -> None:
        """Fire due timers and run ready workers until every one waits."""
        while not self.dead:
            while self._timers and self._timers[0][0] <= self.clock.now:
                self.wake(heapq.heappop(self._timers)[2], False)
            if not self._ready:
                return
            task, value = self._ready.popleft()
            if not task.dead:
                task.switch(value)

    def has_work(self) -> bool:
        """Would :meth:`run_until_idle` run anything now?"""
        return not self.dead and bool(self._ready or (self._timers and self._timers[0][0] <= self.clock.now))

    def next_timer(self) -> float | None:
        while self._timers and self._timers[0][2].done:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def stop(self) -> None:
        """End every worker, as process exit ends its threads."""
        self.dead = True
        self._ready.clear()
        self._timers.clear()
        for task in list(self._tasks):
            if not task.dead:
                task.throw(greenlet.GreenletExit)
        self._tasks.clear()


class SimEvent:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._flag = False
        self._waiters: list[_Waiter] = []

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            self._scheduler.wake(waiter)

    def wait(self, timeout: float | None = None) -> bool:
        if not self._flag:
            waiter = self._scheduler.waiter()
            self._waiters.append(waiter)
            self._scheduler.block(waiter, timeout)
        return self._flag


class SimCondition:
    """A condition variable; the lock is implicit (one worker runs at a time)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._waiters: list[_Waiter] = []

    def __enter__(self) -> SimCondition:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def notify_all(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            self._scheduler.wake(waiter)

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        clock = self._scheduler.clock
        deadline = None if timeout is None else clock.now + timeout
        result = predicate()
        while not result:
            remaining = None if deadline is None else deadline - clock.now
            if remaining is not None and remaining <= 0:
                break
            waiter = self._scheduler.waiter()
            self._waiters.append(waiter)
            self._scheduler.block(waiter, remaining)
            result = predicate()
        return result


class SimStdin:
    """The target's stdin: one chunk per harness write, end of file on close."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._chunks: collections.deque[bytes] = collections.deque()
        self._offset = 0  # bytes of the first chunk already read
        self._arrived = scheduler.event()
        self.closed = False

    def feed(self, data: bytes) -> None:
        self._chunks.append(bytes(data))
        self._signal()

    def close(self) -> None:
        self.closed = True
        self._signal()

    def _signal(self) -> None:
        arrived, self._arrived = self._arrived, self._scheduler.event()
        arrived.set()

    def read1(self, size: int = -1, /) -> bytes:
        while not self._chunks and not self.closed:
            self._arrived.wait()
        if not self._chunks:
            return b""
        # A large write is read in pieces: keep an offset into it rather than
        # copying what is left on every read (quadratic in the frame size).
        chunk, start = self._chunks[0], self._offset
        end = len(chunk) if size <= 0 else min(len(chunk), start + size)
        if end == len(chunk):
            self._chunks.popleft()
            self._offset = 0
        else:
            self._offset = end
        return chunk if start == 0 and end == len(chunk) else chunk[start:end]

    read = read1


Program = Callable[[SimStdin, Sink, Scheduler], int]


@dataclass
class _Stdout:
    """The target's stdout: frames go through the shared framing, as if read
    from a pipe."""

    target: SimulatedTarget
    closed: bool = False

    def write(self, data: bytes, /) -> int:
        if self.closed:
            raise ValueError("stdout is closed")
        self.target.receive(data)
        return len(data)

    def flush(self) -> None:
        return None


class _TailHandler(logging.Handler):
    def __init__(self, target: SimulatedTarget) -> None:
        super().__init__(logging.DEBUG)
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        self.target.keep_stderr(f"{record.levelname}:{record.name}:{record.getMessage()}\n")


@dataclass
class SimulatedTarget:
    """A target program running in-process (see the module docstring)."""

    program: Program
    max_frame_bytes: int
    log_names: tuple[str, ...] = ()  # loggers whose records are the target's stderr
    clock: VirtualClock = field(default_factory=VirtualClock)
    bytes_written: int = 0
    stderr_total: int = 0
    exit_code: int | None = None
    killed: bool = False

    def __post_init__(self) -> None:
        self.scheduler = Scheduler(self.clock, self._crashed)
        self._decoder = FrameDecoder(max_frame_bytes=self.max_frame_bytes, report_early=True)  # as TargetProcess
        self._events: collections.deque[Received | StdoutClosed] = collections.deque()
        self._stderr = ""
        self._closed_reported = False
        self.stdin = SimStdin(self.scheduler)
        self._stdout = _Stdout(self)
        self._log_handler = _TailHandler(self)
        self.scheduler.submit(self._main)

    def _main(self) -> None:
        try:
            code = self.program(self.stdin, self._stdout, self.scheduler)
        except greenlet.GreenletExit:
            raise
        except Exception as exc:
            self._crashed(exc)
            code = 1
        self._exit(code)

    def _exit(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
        self._stdout.closed = True
        for event in self._decoder.close():
            self._events.append(Received(event, self.clock.now))
        self.scheduler.dead = True  # no worker runs past the end of its process

    def _crashed(self, exc: BaseException) -> None:
        self.keep_stderr("".join(traceback.format_exception(exc)))

    # -- the target's side -------------------------------------------------------
    def receive(self, data: bytes) -> None:
        for event in self._decoder.feed(data):
            self._events.append(Received(event, self.clock.now))

    def keep_stderr(self, text: str) -> None:
        self.stderr_total += len(text.encode("utf-8", "replace"))
        self._stderr = (self._stderr + text)[-STDERR_TAIL_CHARS:]

    @contextmanager
    def _running(self) -> Iterator[None]:
        loggers = [logging.getLogger(name) for name in self.log_names]
        saved = [logger.propagate for logger in loggers]
        for logger in loggers:
            logger.addHandler(self._log_handler)
            logger.propagate = False
        try:
            yield
        finally:
            for logger, propagate in zip(loggers, saved, strict=True):
                logger.removeHandler(self._log_handler)
                logger.propagate = propagate

    def _run(self) -> None:
        if not self.scheduler.has_work():
            return  # nothing would run: no loggers to take over and give back
        with self._running():
            self.scheduler.run_until_idle()

    def _advance(self, deadline: float) -> bool:
        """Jump to the next timer at or before ``deadline``; False if none."""
        due = self.scheduler.next_timer()
        if due is None or due > deadline or self.scheduler.dead:
            self.clock.now = max(self.clock.now, deadline)
            return False
        self.clock.now = max(self.clock.now, due)
        return True

    # -- the interface of TargetProcess ---------------------------------------------
    def now(self) -> float:
        return self.clock.now

    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        deadline = self.clock.now + max(timeout, 0.0)
        while True:
            self._run()
            if self._events:
                self.clock.now += FRAME_COST_S
                return self._events.popleft()
            if self.exit_code is not None and not self._closed_reported:
                self._closed_reported = True
                return StdoutClosed(self.clock.now)
            if not self._advance(deadline):
                return None

    def write(self, data: bytes, *, timeout: float) -> None:
        if not self.running() or self.stdin.closed:
            raise BrokenPipeError("the simulated target's stdin is closed")
        self.stdin.feed(data)
        self.bytes_written += len(data)

    def close_stdin(self) -> None:
        self.stdin.close()

    def wait_exit(self, timeout: float) -> int | None:
        deadline = self.clock.now + max(timeout, 0.0)
        while True:
            self._run()
            if self.exit_code is not None:
                return self.exit_code
            if not self._advance(deadline):
                return None

    def kill_group(self) -> None:
        if self.exit_code is None:
            self.killed = True
            self._exit(-9)
        with self._running():
            self.scheduler.stop()

    def running(self) -> bool:
        return self.exit_code is None

    def group_alive(self) -> bool:
        return self.running()

    def stderr_excerpt(self, limit: int = 2048) -> str:
        return self._stderr[-limit:]

    def __enter__(self) -> SimulatedTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill_group()
