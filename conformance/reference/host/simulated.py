"""The reference host and its children in one process, on a virtual clock.

:class:`SimWorld` owns a deterministic scheduler (from
:mod:`conformance.transport.simulated`): the host's workers and every child's
workers are greenlets on it, and time only moves when nothing can run. So a
2 s cancellation grace or a 30 s backoff cap costs microseconds, and the same
program gives the same interleaving every run::

    world = SimWorld()
    host = ReferenceHost(runtime=world.runtime, launcher=world.launcher)
    status = world.run(lambda: host.load(manifest_path))

A child is a *program* ``(SimChildIO) -> exit code``; the launcher maps a
manifest's argv to one (by default it knows the reference extension's argv).
Killing a child closes its pipes and makes each of its workers end at its
next wait, as SIGKILL ends a process's threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import greenlet

from conformance.transport.simulated import Scheduler, SimStdin, VirtualClock

from .channel import LaunchError
from .runtime import ConditionLike, EventLike


class SimDeadlock(RuntimeError):
    """The job waits for something no worker or timer will ever bring."""


class SimRuntime:
    """:class:`~.runtime.HostRuntime` on the scheduler and its virtual clock."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def event(self) -> EventLike:
        return self.scheduler.event()

    def condition(self) -> ConditionLike:
        return self.scheduler.condition()

    def submit(self, job: Callable[[], None], name: str = "host-worker") -> None:
        self.scheduler.submit(job)

    def now(self) -> float:
        return self.scheduler.clock.now

    def sleep(self, seconds: float) -> None:
        self.scheduler.event().wait(max(seconds, 0.0))


class SimPipe(SimStdin):
    """A one-way byte pipe between greenlets (unbounded: writers never block);
    the simulated target's stdin with a file's write side."""

    def write(self, data: bytes, /) -> int:
        if self.closed:
            raise BrokenPipeError("pipe closed")
        if data:
            self.feed(data)
        return len(data)

    def flush(self) -> None:
        return None


class _Killed(greenlet.GreenletExit):
    """Raised in a child's worker that wakes after its process was killed."""


class _ChildEvent:
    def __init__(self, inner: EventLike, child: SimChannel) -> None:
        self._inner, self._child = inner, child

    def is_set(self) -> bool:
        return self._inner.is_set()

    def set(self) -> None:
        self._inner.set()

    def wait(self, timeout: float | None = None) -> bool:
        result = self._inner.wait(timeout)
        self._child.check_alive()
        return result


class _ChildCondition:
    def __init__(self, inner: ConditionLike, child: SimChannel) -> None:
        self._inner, self._child = inner, child

    def __enter__(self) -> _ChildCondition:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def notify_all(self) -> None:
        self._inner.notify_all()

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        result = self._inner.wait_for(predicate, timeout)
        self._child.check_alive()
        return result


class ChildRuntime:
    """What a child program runs on: the reference extension's Runtime
    interface (event / condition / submit), plus ``sleep`` and ``now``."""

    def __init__(self, scheduler: Scheduler, child: SimChannel) -> None:
        self._scheduler, self._child = scheduler, child

    def event(self) -> _ChildEvent:
        return _ChildEvent(self._scheduler.event(), self._child)

    def condition(self) -> _ChildCondition:
        return _ChildCondition(self._scheduler.condition(), self._child)

    def submit(self, job: Callable[[], None]) -> None:
        def guarded() -> None:
            self._child.check_alive()
            job()

        self._scheduler.submit(guarded)

    def sleep(self, seconds: float) -> None:
        self.event().wait(max(seconds, 0.0))

    def now(self) -> float:
        return self._scheduler.clock.now


@dataclass
class SimChildIO:
    """A child program's view: its stdin (``read1``), stdout, stderr, runtime, argv."""

    stdin: SimPipe
    stdout: SimPipe
    stderr: SimPipe
    runtime: ChildRuntime
    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]


Program = Callable[[SimChildIO], int]


class SimChannel:
    """The host's side of one simulated child."""

    def __init__(
        self, scheduler: Scheduler, program: Program, argv: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> None:
        self._scheduler = scheduler
        self.pid: int | None = None
        self.stdin = SimPipe(scheduler)
        self.stdout = SimPipe(scheduler)
        self.stderr = SimPipe(scheduler)
        self.exit_code: int | None = None
        self.killed = False
        self._exited = scheduler.event()
        self.io = SimChildIO(self.stdin, self.stdout, self.stderr, ChildRuntime(scheduler, self), tuple(argv), cwd, env)
        scheduler.submit(lambda: self._main(program))

    def _main(self, program: Program) -> None:
        try:
            code = program(self.io)
        except greenlet.GreenletExit:
            return
        except Exception:
            code = 1
        self._exit(code)

    def _exit(self, code: int) -> None:
        if self.exit_code is None:
            self.exit_code = code
            self.stdout.close()
            self.stderr.close()
            self._exited.set()

    def check_alive(self) -> None:
        if self.killed:
            raise _Killed()

    # -- the Channel interface ---------------------------------------------------
    def write(self, data: bytes) -> None:
        if self.exit_code is not None or self.stdin.closed:
            raise BrokenPipeError("the child's stdin is closed")
        self.stdin.write(data)

    def try_write(self, data: bytes) -> int:
        self.write(data)  # a simulated pipe never fills
        return len(data)

    def read_stdout(self) -> bytes:
        return self.stdout.read1(64 * 1024)

    def read_stderr(self) -> bytes:
        return self.stderr.read1(64 * 1024)

    def close_stdin(self) -> None:
        self.stdin.close()

    def wait_exit(self, timeout: float | None) -> int | None:
        self._exited.wait(None if timeout is None else max(timeout, 0.0))
        return self.exit_code

    def kill_group(self) -> None:
        if self.exit_code is None:
            self.killed = True
            self.stdin.close()
            self._exit(-9)

    def running(self) -> bool:
        return self.exit_code is None


def reference_extension_program(api_version: str) -> Program:
    """The reference extension, served in-process on the child's runtime."""

    def program(io: SimChildIO) -> int:
        from conformance.reference.extension import ReferenceExtension, run

        return run(ReferenceExtension(api_version), io.stdin, io.stdout, io.runtime)

    return program


def reference_resolver(argv: Sequence[str]) -> Program | None:
    """``... -m conformance.reference.extension --api-version V`` -> the program."""
    args = list(argv)
    if "conformance.reference.extension" in args and "--api-version" in args:
        index = args.index("--api-version")
        if index + 1 < len(args):
            return reference_extension_program(args[index + 1])
    return None


class SimLauncher:
    def __init__(
        self, scheduler: Scheduler, resolvers: list[Callable[[Sequence[str]], Program | None]] | None = None
    ) -> None:
        self._scheduler = scheduler
        self.resolvers = list(resolvers or []) + [reference_resolver]
        self.launched: list[SimChannel] = []

    def launch(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> SimChannel:
        for resolve in self.resolvers:
            program = resolve(argv)
            if program is not None:
                channel = SimChannel(self._scheduler, program, argv, cwd, env)
                channel.pid = len(self.launched) + 1
                self.launched.append(channel)
                return channel
        raise LaunchError(f"no simulated program for argv {list(argv)!r}")


class SimWorld:
    """A clock, a scheduler, and ``run(job)`` to drive the host from a test."""

    def __init__(self, resolvers: list[Callable[[Sequence[str]], Program | None]] | None = None) -> None:
        self.clock = VirtualClock()
        self.crashes: list[BaseException] = []
        self.scheduler = Scheduler(self.clock, self.crashes.append)
        self.runtime = SimRuntime(self.scheduler)
        self.launcher = SimLauncher(self.scheduler, resolvers)

    @property
    def now(self) -> float:
        return self.clock.now

    def run(self, job: Callable[[], Any], *, limit_s: float = 3600.0) -> Any:
        """Run ``job`` as a worker until it returns (virtual time jumps as needed)."""
        box: dict[str, Any] = {}

        def wrapper() -> None:
            try:
                box["value"] = job()
            except Exception as exc:
                box["error"] = exc

        self.scheduler.submit(wrapper)
        deadline = self.clock.now + limit_s
        while not box:
            self.scheduler.run_until_idle()
            if box:
                break
            due = self.scheduler.next_timer()
            if due is None:
                raise SimDeadlock("the job waits for something that never comes")
            if due > deadline:
                raise SimDeadlock(f"the job did not finish within {limit_s} virtual seconds")
            self.clock.now = max(self.clock.now, due)
        if "error" in box:
            raise box["error"]
        return box["value"]

    def settle(self, seconds: float = 0.0) -> None:
        """Let every worker run (and time pass by ``seconds``)."""
        self.run(lambda: self.runtime.sleep(seconds))
