"""The rig of the fixed host-core scenarios: one generation plus a project
folder, and Bash *blockers*.

Each scenario starts its own host-core generation (a fresh data directory and
a scratch project folder), plays the client, and judges what it sees. Nothing
asserts: answers go through the judges of protocol/rpc_admission.py,
violations are recorded and the scenario goes on.

Concurrency is driven with Bash blockers: a command that first creates a
marker file named after its call, then waits for a gate file the harness
creates. Markers are what really runs, whatever the host-core reports; the
app.health ``toolBudget`` counters are what it says. Judging is tolerant of
scheduling: the spec's budgets are the only strict bounds (more markers than
a budget is a violation the moment it is seen); "this call should have been
admitted by now" is only concluded after the harness patience has passed
with the call still waiting. Runnable is judged by the spec's numbers.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors, rpc_tools
from conformance.protocol.rpc_admission import Call, answered_meanwhile

POLL_S = 0.02  # how long one wait for frames lasts between two looks at the markers
SPLIT_TITLE = "Zürich 東京 \U0001f389"  # multi-byte characters, written one byte per write
SEPARATORS = "a\u2028b\u2029c"
STDERR_BYTES = 64 * 1024
A2A_METHODS = ("a2a.task.send", "a2a.tasks.list")
# Methods versions 4, 5 and 9 introduced that this release drives (§3 rules 4-7);
# session.appendCompaction (version 6) is not among them (docs/reference-hostcore.md).
OTHER_TEXT = "gamma-of-the-other-project"
CUMULATIVE_METHODS = ("notification.list", "session.fork", "commandShells.list")


# -- the rig: one generation plus a project folder ---------------------------------------


class Unresponsive(Exception):
    """app.health went unanswered: the scenario stops (the rig releases what it started)."""


class ShapeRefused(Exception):
    """The host-core refused a tool call's arguments, which the document
    leaves to the suite (rpc_limits.UNSPECIFIED_ARGS_TOOLS): the scenario
    stops, and what it was for is untested with this reason."""


@dataclass
class Rig:
    peer: HostcorePeer
    project: Path
    data_dir: Path
    pin: dict[str, str] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)
    leave_open: set[str] = field(default_factory=set)  # calls whose permission prompts stay unanswered
    unresponsive: bool = False  # app.health went unanswered once: waits are shortened
    counters_ok: bool = True  # False once app.health failed to account for a call: stop waiting on it
    fifos: dict[str, Path] = field(default_factory=dict)  # Read calls blocked on a named pipe
    held: dict[str, int] = field(default_factory=dict)  # write ends the harness holds open: reads running
    freed: set[str] = field(default_factory=set)
    sinks: dict[str, Path] = field(default_factory=dict)  # Write calls blocked on a named pipe
    _order: Iterator[int] = field(default_factory=itertools.count)
    _resolved: int = 0

    @property
    def started_dir(self) -> Path:
        return self.project / ".octet-started"

    @property
    def gate_dir(self) -> Path:
        return self.project / ".octet-gates"

    def session(self, project: Path | None = None) -> str | None:
        """A session in ``project``: only the documented projectPath is sent,
        so it has the default modes (Agent, and ask: §5.1 calls ask the
        product default); prompts are answered by :meth:`collect`."""
        folder = str(project or self.project)
        response = self.peer.call("session.create", {"projectPath": folder})
        result = response.get("result") if response else None
        session = result.get("session") if isinstance(result, dict) else None
        sid = session.get("id") if isinstance(session, dict) else None
        return sid if isinstance(sid, str) else None

    def execute(self, sid: str, name: str, tool: str, args: dict[str, Any], **extra: Any) -> Call:
        params = {"sessionId": sid, "toolCallId": name, "toolName": tool, "args": args, **extra}
        call = Call(name, sid, self.peer.send("tools.execute", params), next(self._order), tool)
        self.calls[name] = call
        return call

    def blocker(self, sid: str, name: str) -> Call:
        """A Bash call that marks its start, then waits for its gate."""
        started, gate = shlex.quote(str(self.started_dir / name)), shlex.quote(str(self.gate_dir / name))
        command = f"touch {started}; while [ ! -e {gate} ]; do sleep 0.02; done"
        return self.execute(sid, name, "Bash", {"command": command}, **self.pin)

    def reader(self, sid: str, name: str) -> Call:
        """A Read of a named pipe: it runs from the moment it opens the pipe
        (the harness sees that, and holds the write end) until released."""
        fifo = self.project / f"{name}.fifo"
        os.mkfifo(fifo)
        self.fifos[name] = fifo
        return self.execute(sid, name, "Read", {"path": fifo.name})

    def writer(self, sid: str, name: str) -> Call:
        """A Write to a named pipe: it blocks until the harness releases it."""
        fifo = self.project / f"{name}.fifo"
        os.mkfifo(fifo)
        self.sinks[name] = fifo
        return self.execute(sid, name, "Write", {"path": fifo.name, "content": name})

    def _unblock_sinks(self) -> None:
        """Unblock released Writes, whichever end they wait on: a reader
        (an open for reading, say to take a digest first) gets EOF, a writer
        gets a reader that reads what is there and goes away."""
        for name in self.freed & set(self.sinks):
            if self.calls[name].answer is not None:
                continue
            with contextlib.suppress(OSError):
                os.close(os.open(self.sinks[name], os.O_WRONLY | os.O_NONBLOCK))
            with contextlib.suppress(OSError):
                fd = os.open(self.sinks[name], os.O_RDONLY | os.O_NONBLOCK)
                with contextlib.suppress(OSError):
                    os.read(fd, 1 << 16)
                os.close(fd)

    def probe(self) -> None:
        self._unblock_sinks()
        """Hold the write end of every pipe a Read has opened; a released
        pipe's write end is closed at once (its Read then reads EOF)."""
        for name, fifo in self.fifos.items():
            if name in self.held:
                continue
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # no reader yet (ENXIO)
            if name in self.freed:
                os.close(fd)
            else:
                self.held[name] = fd

    def reading(self, session: str | None = None) -> set[str]:
        """Reads that surely run: their pipe is open and held, no answer yet."""
        return {
            n
            for n in self.held
            if self.calls[n].answer is None and (session is None or self.calls[n].session == session)
        }

    def started(self) -> set[str]:
        return set(os.listdir(self.started_dir)) if self.started_dir.is_dir() else set()

    def running(self) -> set[str]:
        """Blockers that surely still run: started, gate closed, unanswered. (One
        whose gate is open may have ended before its answer was written.)"""
        return {
            n
            for n in self.started()
            if n in self.calls and self.calls[n].answer is None and not (self.gate_dir / n).exists()
        }

    def release(self, *names: str) -> None:
        for name in names or tuple(self.calls):
            (self.gate_dir / name).touch()
            if name in self.sinks:
                self.freed.add(name)
            if name in self.fifos:
                self.freed.add(name)
                fd = self.held.pop(name, None)
                if fd is not None:
                    os.close(fd)

    def collect(self) -> None:
        """Move answers that arrived into their calls; answer new prompts."""
        self.probe()
        for call in self.calls.values():
            if call.answer is None:
                call.answer = self.peer.await_answer(call.rid, timeout=0)
                if call.answer is not None:
                    self.peer.add(rpc_tools.tool_outcome_not_error(call.answer))
                    _shape_accepted(call)
        prompts = [n for n in self.peer.notifications if n.get("method") == "permissions.request"]
        for note in prompts[self._resolved :]:
            params = note.get("params")
            if not isinstance(params, dict) or params.get("toolCallId") in self.leave_open:
                continue
            self.peer.send("permissions.resolve", {"requestId": params.get("requestId"), "decision": "allow-session"})
        self._resolved = len(prompts)

    def pending(self) -> list[Call]:
        return [c for c in self.calls.values() if c.answer is None]

    def health(self) -> dict[str, Any] | None:
        """app.health's toolBudget (None: no usable answer; an overloaded refusal is no verdict).
        Raises Unresponsive when no answer came at all (§8.1 says so while a tool runs)."""
        response = self.peer.call("app.health")
        if response is None:
            if self.pending():
                self.peer.add(answered_meanwhile(None))
            self.unresponsive = True
            raise Unresponsive()
        result = response.get("result") if response else None
        budget = result.get("toolBudget") if isinstance(result, dict) else None
        return budget if isinstance(budget, dict) else None

    def wait_for(self, done: Callable[[], bool], *, timeout: float | None = None) -> bool:
        deadline = self.peer.target.now() + (self.peer.response_s if timeout is None else timeout)
        while True:
            self.collect()
            if done():
                return True
            if self.peer.target.now() >= deadline:
                return False
            self.peer.pump(POLL_S)

    def finish(self) -> None:
        """Open every gate and wait (bounded) for every call's answer."""
        self.gate_dir.mkdir(exist_ok=True)
        self.release()
        patience = self.peer.response_s * (1 if self.unresponsive else 4)
        try:
            self.wait_for(lambda: not self.pending(), timeout=patience)
        finally:
            for fd in self.held.values():
                os.close(fd)
            self.held.clear()


def _shape_accepted(call: Call) -> None:
    """Raise ShapeRefused when ``call`` was refused for the arguments the suite chose."""
    reason = rpc_errors.shape_refusal("tools.execute", {"toolName": call.tool}, call.answer)
    if reason is not None:
        raise ShapeRefused(reason)


@contextlib.contextmanager
def rig(
    command: HostcoreCommand,
    recorder: Recorder,
    response_s: float,
    work: Path,
    name: str,
    judges: tuple[str, ...] = (),
) -> Iterator[Rig | None]:
    """A handshaken generation (None when the handshake failed: other
    scenarios report that). ``judges``: the requirements the scenario is
    for, untested with the reason when it stops on a refused tool shape."""
    recorder.context = StepContext(scenario=name)
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    project = Path(tempfile.mkdtemp(prefix="project-", dir=work))
    (project / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        made = Rig(peer, project, data_dir)
        made.started_dir.mkdir()
        made.gate_dir.mkdir()
        try:
            response = peer.call("app.handshake", handshake_params())
            if response is None or "result" not in response:
                yield None
                return
            made.pin = shell_pin(peer)
            yield made
        except ShapeRefused as exc:
            recorder.untestable(str(exc), *judges)
        except (HostcoreGone, Unresponsive):
            return
        finally:
            with contextlib.suppress(HostcoreGone, Unresponsive, ShapeRefused):
                if peer.alive:
                    made.finish()


def shell_pin(peer: HostcorePeer) -> dict[str, str]:
    """The effective shell's id and dialect from commandShells.list (§5.2)."""
    response = peer.call("commandShells.list", {})
    result = response.get("result") if response else None
    effective = result.get("effective") if isinstance(result, dict) else None
    if isinstance(effective, dict) and isinstance(effective.get("id"), str):
        return {"expectedCommandShellId": effective["id"], "expectedCommandShellDialect": str(effective.get("dialect"))}
    return {"expectedCommandShellId": "bash", "expectedCommandShellDialect": "posix"}
