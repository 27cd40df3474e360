"""The reference host, its probes and the harness in one process, on the virtual clock.

How to use::

    sim = SimulatedHost()                       # a SimWorld, the reference driver, a probe listener
    result = sim.run(lambda: body(sim.driver, sim.listener, sim.rig_options()))

``sim.driver`` is a :class:`HostDriver` whose process is the reference
host's driver (:mod:`conformance.reference.host.driver`) served in-process:
its operations go through the same contract lines and the same client
checks as a subprocess driver. ``sim.listener`` hands out
:class:`SimProbeLink` s: the probe as a program of the simulated launcher,
so every frame the host writes and every byte the harness scripts go
through the shared framing exactly as with a real probe. All waits are on
the :class:`SimWorld` scheduler, so a 2 s grace or a 30 s backoff cap costs
no wall time and a seed gives the same interleaving every run.

What a single process cannot show is left to subprocess runs: signals,
process groups and grandchildren, and pipe back-pressure (a simulated pipe
never fills, so a stderr flood always drains). The scenarios that test those
are listed in :data:`NEEDS_PROCESSES`; a simulated run does not play them.
"""

from __future__ import annotations

import collections
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conformance.peers.host_driver import HostDriver
from conformance.peers.probe import PROBE_NAME, manifest_text, probe_command, write_probe_script
from conformance.probe import channel
from conformance.protocol import limits
from conformance.protocol.framing import FrameDecoder
from conformance.reference.host.config import HostConfig, grouped
from conformance.reference.host.driver import Driver, timing_overrides
from conformance.reference.host.host import ReferenceHost
from conformance.reference.host.simulated import Program, SimChannel, SimChildIO, SimWorld
from conformance.transport.target import Received, StdoutClosed

# Scenarios that need real processes (signals, process groups, pipe back-pressure).
NEEDS_PROCESSES = ("stderr-flood", "shutdown-no-ack", "shutdown-ack-no-exit")
POLL_S = 0.01  # the harness's idle wait, in virtual seconds
FIRST_PID = 100_000  # simulated pids: never confused with the harness's own
REPLAY_DRIVER = ("python3", "-m", "conformance.reference.host.driver")


class NeedsProcesses(RuntimeError):
    """A scenario asked the simulated probe for something only a process can
    do; the runner leaves the rest of that scenario to subprocess runs."""


class _SimWire:
    """The driver's stdout: whole lines into the harness's decoder."""

    def __init__(self, out: SimDriverProcess) -> None:
        self._out = out

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False) + "\n"
        self._out.take(line.encode("utf-8"))

    def event(self, method: str, **params: Any) -> None:
        self.send({"method": method, "params": params})

    def answer(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"id": rid, "error": {"code": code, "message": message}})


class _SimDriver(Driver):
    """The reference driver with its threads and hosts on the world's runtime."""

    def __init__(self, world: SimWorld, out: SimDriverProcess) -> None:
        super().__init__()
        self.world = world
        self.wire = _SimWire(out)  # type: ignore[assignment]
        self.reporter.wire = self.wire

    def host_for(self, timing: dict[str, Any], *, brokered: bool = False) -> ReferenceHost:
        """As the driver's: one host per distinct timing (and broker), here on the world."""
        overrides = timing_overrides(timing)
        options: dict[str, Any] = grouped(overrides)
        if brokered:
            options["secret_broker"] = self.brokered
        key = (*sorted(overrides.items()), (("driver", "brokered"), float(brokered)))
        if key not in self.hosts:
            self.hosts[key] = self.host_class(
                config=HostConfig(**options),
                events=self.reporter,
                frontend=self.reporter,
                runtime=self.world.runtime,
                launcher=self.world.launcher,
            )
        return self.hosts[key]

    def background(self, job: Any, *args: Any) -> None:
        self.world.runtime.submit(lambda: job(*args), "driver-op")

    def _shutdown(self, rid: Any, hosts: list[ReferenceHost], name: str | None, coordinated: bool = False) -> None:
        done: list[ReferenceHost] = []
        finished = self.world.runtime.condition()

        def one(host: ReferenceHost) -> None:
            host.shutdown(name, coordinated=coordinated)
            with finished:
                done.append(host)
                finished.notify_all()

        for host in hosts:
            self.world.runtime.submit(lambda h=host: one(h), "driver-shutdown")  # type: ignore[misc]
        with finished:
            finished.wait_for(lambda: len(done) == len(hosts))
        self.wire.answer(rid, {})


class SimDriverProcess:
    """What :class:`HostDriver` needs of a TargetProcess, for the in-process driver."""

    def __init__(self, world: SimWorld) -> None:
        self.world = world
        self._decoder = FrameDecoder(max_frame_bytes=4 * 1024 * 1024)
        self._out: collections.deque[Received | StdoutClosed] = collections.deque()
        self._inbox: collections.deque[bytes] = collections.deque()
        self._wake = world.runtime.event()
        self._exited = False
        self.driver = _SimDriver(world, self)
        world.runtime.submit(self._serve, "driver-main")

    def take(self, data: bytes) -> None:
        for event in self._decoder.feed(data):
            self._out.append(Received(event, self.world.now))

    def _serve(self) -> None:
        """The driver's stdin loop (as in ``driver.main``), one line at a time."""
        while True:
            while not self._inbox:
                self._wake.wait()
                self._wake = self.world.runtime.event()
            message = json.loads(self._inbox.popleft())
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if not self.driver.dispatch(message.get("id"), message["method"], params):
                self._exited = True
                self._out.append(StdoutClosed(self.world.now))
                return

    # -- the TargetProcess interface the client uses -----------------------------------
    def write(self, data: bytes, timeout: float | None = None) -> None:
        if self._exited:
            raise BrokenPipeError("the simulated driver exited")
        self._inbox.extend(line for line in data.splitlines() if line.strip())
        self._wake.set()

    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        deadline = self.world.now + max(timeout, 0.0)
        while not self._out:
            if self.world.now >= deadline:
                return None
            self.world.runtime.sleep(min(POLL_S, deadline - self.world.now))
        return self._out.popleft()

    def running(self) -> bool:
        return not self._exited

    def wait_exit(self, timeout: float | None) -> int | None:
        return 0 if self._exited else None

    def kill_group(self) -> None:
        self._exited = True

    def stderr_excerpt(self, limit: int = 2048) -> str:
        return ""


class SimProbeLink:
    """The harness's end of a simulated probe; the interface of :class:`ProbeLink`."""

    def __init__(self, world: SimWorld, token: str, io: SimChildIO, pid: int) -> None:
        self.world, self.io = world, io
        self.hello: dict[str, Any] = {
            "t": "hello",
            "token": token,
            "pid": pid,
            "pgid": pid,
            "cwd": str(io.cwd),
            "argv": list(io.argv),
            "env": sorted(io.env),
        }
        self.reports: list[dict[str, Any]] = []
        self.bytes_written = 0
        self.stderr_total = 0
        self.connected = True
        self.exit_code: int | None = None  # set when the program is told to end
        self.ended = world.runtime.event()  # the program returns when set
        self.channel: SimChannel | None = None
        self._decoder = FrameDecoder(max_frame_bytes=limits.MAX_FRAME_BYTES)
        self._pending: collections.deque[Received | StdoutClosed] = collections.deque()
        self._stdin_ended = False

    @property
    def pid(self) -> int:
        return int(self.hello["pid"])

    @property
    def pgid(self) -> int:
        return self.pid

    def now(self) -> float:
        return self.world.now

    # -- reading ----------------------------------------------------------------------
    def read_available(self) -> bool:
        if not self.connected:
            return False
        pipe, got = self.io.stdin, False
        while pipe._chunks:  # the host's writes, as the probe's stdin relay reads them
            for event in self._decoder.feed(pipe._chunks.popleft()):
                self._pending.append(Received(event, self.world.now))
            got = True
        if self.channel is not None and self.channel.exit_code is not None:
            self._lost()
            return True
        if pipe.closed and not self._stdin_ended:
            self._end_of_input()
            return True
        return got

    def _end_of_input(self) -> None:
        if self._stdin_ended:
            return
        self._stdin_ended = True
        for event in self._decoder.close():
            self._pending.append(Received(event, self.world.now))
        self._pending.append(StdoutClosed(self.world.now))

    def _lost(self) -> None:
        self.connected = False
        self._end_of_input()

    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        deadline = self.world.now + max(timeout, 0.0)
        while not self._pending:
            if not self.read_available():
                if self.world.now >= deadline or not self.connected:
                    return None
                self.world.runtime.sleep(min(POLL_S, deadline - self.world.now))
        return self._pending.popleft()

    def report(self, kind: str) -> dict[str, Any] | None:
        return next((r for r in self.reports if r["t"] == kind), None)

    def await_report(self, kind: str, timeout: float) -> dict[str, Any] | None:
        return self.report(kind)  # reports are made synchronously by command()

    # -- writing ----------------------------------------------------------------------
    def command(self, message: dict[str, Any], *, timeout: float = 5.0) -> None:
        if not self.running():
            raise BrokenPipeError("the probe is gone")
        kind = message["t"]
        if kind == "out":
            self._out(channel.payload(message))
        elif kind == "err":
            self.io.stderr.write(channel.payload(message))
        elif kind in ("exit", "crash"):
            self.exit_code = int(message.get("code", -9)) if kind == "exit" else -9
            if kind == "crash" and self.channel is not None:
                self.channel.kill_group()
            self.ended.set()
        elif kind == "close_stdout":
            self.io.stdout.close()
        else:  # flood, ignore_term, grandchild: see NEEDS_PROCESSES
            raise NeedsProcesses(f"a simulated probe cannot {kind!r}")

    def _out(self, data: bytes) -> None:
        try:
            self.io.stdout.write(data)
        except BrokenPipeError:
            self.reports.append({"t": "stdout_broken", "errno": 32, "at": self.world.now})

    def write(self, data: bytes, *, timeout: float) -> None:
        if not self.running():
            raise BrokenPipeError("the probe is gone")
        self._out(data)
        self.bytes_written += len(data)

    def close_stdin(self) -> None:
        if self.running():
            self.io.stdout.close()

    # -- ending ------------------------------------------------------------------------
    def wait_exit(self, timeout: float) -> int | None:
        deadline = self.world.now + max(timeout, 0.0)
        while self.running():
            if self.world.now >= deadline:
                return None
            self.world.runtime.sleep(min(POLL_S, deadline - self.world.now))
        return 0

    def running(self) -> bool:
        self.read_available()
        return self.connected

    def group_alive(self) -> bool:
        return self.channel is not None and self.channel.running()

    def kill_group(self) -> None:
        if self.channel is not None:
            self.channel.kill_group()
        self.ended.set()
        self._lost()

    def pids(self) -> list[int]:
        return [self.pid]

    def stderr_excerpt(self, limit: int = 2048) -> str:
        return ""


class SimProbeListener:
    """Probe manifests on disk (the host reads them), probes in the world."""

    def __init__(self, world: SimWorld) -> None:
        self.world = world
        self.folder = Path(tempfile.mkdtemp(prefix="octet-host-sim-"))
        self.socket_path = self.folder / "s"  # never bound: the argv only names the probe
        self.script = write_probe_script(self.folder)
        self._tokens = 0
        self._waiting: dict[str, list[SimProbeLink]] = {}
        self.links: list[SimProbeLink] = []
        world.launcher.resolvers.insert(0, self._resolve)

    def new_token(self) -> str:
        self._tokens += 1
        return f"p{self._tokens}"

    def write_manifest(
        self, token: str, *, api_version: str, contributes: dict[str, Any], capabilities: dict[str, Any] | None = None
    ) -> Path:
        folder = self.folder / token
        folder.mkdir(exist_ok=True)
        path = folder / "extension.toml"
        text = manifest_text(
            name=f"{PROBE_NAME}-{token}",
            command=probe_command(self.script, self.socket_path, token),
            api_version=api_version,
            contributes=contributes,
            capabilities=capabilities if capabilities is not None else {"filesystem": "none"},
        )
        path.write_text(text, encoding="utf-8")
        return path

    def _resolve(self, argv: Sequence[str]) -> Program | None:
        args = list(argv)
        if len(args) < 5 or args[1:3] != ["--connect", str(self.socket_path)] or args[3] != "--token":
            return None
        token = args[4]

        def program(io: SimChildIO) -> int:
            link = SimProbeLink(self.world, token, io, FIRST_PID + len(self.links))
            link.channel = next((c for c in self.world.launcher.launched if c.io is io), None)
            self.links.append(link)
            self._waiting.setdefault(token, []).append(link)
            link.ended.wait()
            return link.exit_code if link.exit_code is not None else 0

        return program

    def accept(self, token: str, timeout: float) -> SimProbeLink | None:
        deadline = self.world.now + max(timeout, 0.0)
        while not self._waiting.get(token):
            if self.world.now >= deadline:
                return None
            self.world.runtime.sleep(min(POLL_S, deadline - self.world.now))
        return self._waiting[token].pop(0)

    def close(self) -> None:
        for link in self.links:
            link.kill_group()
        shutil.rmtree(self.folder, ignore_errors=True)


class SimulatedHost:
    """A world with the reference driver and a probe listener in it."""

    def __init__(self) -> None:
        self.world = SimWorld()
        self.process = SimDriverProcess(self.world)
        # Traces name the subprocess driver: a replay runs the real reference host.
        self.driver = HostDriver(self.process, REPLAY_DRIVER, Path.cwd())  # type: ignore[arg-type]
        self.driver.clock = lambda: self.world.now
        self.listener = SimProbeListener(self.world)

    def idle(self, seconds: float) -> None:
        self.world.runtime.sleep(min(seconds, POLL_S))

    def rig_options(self, patience_s: float) -> dict[str, Any]:
        """The spec's timing (HostConfig defaults): on the virtual clock it costs nothing."""
        stage = HostConfig().shutdown.stage_s
        return {
            "patience_s": patience_s,
            "stage_s": stage,
            "timing": {},
            "clock": lambda: self.world.now,
            "idle_wait": self.idle,
        }

    def run(self, job: Callable[[], Any]) -> Any:
        return self.world.run(job, limit_s=10_000_000.0)
