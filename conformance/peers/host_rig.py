"""A host under test with its probe: the harness playing extension.

How to use::

    rig = HostRig(driver, listener, recorder, pace=RigPace(patience_s=10.0))
    outcome = rig.load("0.2", contributes, answer=lambda params: initialize_result(...))
    req = rig.call("tool/call", {"name": "probe", "arguments": {}})   # -> the frame the host wrote
    rig.respond(req.wire_id, {"content": [...], "is_error": False})
    settled = rig.settled(req.call)
    rig.shutdown(ack=True)
    rig.close()

One rig is one loaded extension. It follows the current probe generation and,
during a §5 reload, the other one too (:meth:`HostRig.candidate` accepts
generation N+1 while N still runs; :meth:`HostRig.acting` scripts either;
:meth:`HostRig.switch_to` makes N+1 the current one). It pumps the
driver and the probe together (every wait bounded), records the probe's
side of the exchange in a :class:`Trace` (same format as the extension side:
``host->target`` entries are what the harness wrote, here to the host through
the probe; ``target->host`` entries what the host wrote), and keeps what the
host wrote, split by kind, for the scenarios to script and judge.

Judging of what the host writes belongs to the sans-IO core: every host
frame, every answer and request of the probe and every end of the probe's
input goes through :class:`conformance.protocol.host_session.ProbeSession`;
what needs a clock or the driver's view (settlements, diagnostics, timing)
is judged by the scenarios.
"""

from __future__ import annotations

import collections
import contextlib
import select
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.evidence import Recorder
from conformance.peers.host_driver import DriverEvent, HostDriver, OperationError
from conformance.peers.probe import PROBE_NAME, ProbeLink, ProbeListener
from conformance.protocol import jsonrpc
from conformance.protocol.ext_types import ManifestInfo
from conformance.protocol.framing import Frame
from conformance.protocol.host_answers import ChildWait, child_answered, child_id_legal
from conformance.protocol.host_session import ProbeSession, host_key
from conformance.protocol.host_tables import LifeInput
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Finding, Violation
from conformance.transport.process import WriteTimeout
from conformance.transport.target import Received, StdoutClosed
from conformance.transport.trace import TRACE_FORMAT, Trace

POLL_SLICE_S = 0.01


class ProbeGone(RuntimeError):
    """The probe's channel closed (the host killed it or it exited)."""


@dataclass(frozen=True)
class ErrorAnswer:
    """What a scripted answer returns to answer with a JSON-RPC error instead of a result."""

    code: int
    message: str


@dataclass(frozen=True)
class HostRequest:
    """A request the host wrote to the probe (``call`` is the driver's call id when known)."""

    wire_id: Any
    method: str
    params: Any
    call: str | None = None


# What belongs to one probe generation (the rest of a rig is per extension).
GENERATION_FIELDS = (
    "link", "session", "requests", "notifications", "answers", "stdin_closed", "eof_while_running", "ending_ordered",
)  # fmt: skip


@dataclass
class Followed:
    """Another probe generation of the rig's extension, followed beside the
    current one (a reload's candidate, or the generation it replaces)."""

    link: ProbeLink | None
    session: ProbeSession | None
    requests: collections.deque[HostRequest] = field(default_factory=collections.deque)
    notifications: list[jsonrpc.Notification] = field(default_factory=list)
    answers: dict[Any, jsonrpc.Response | jsonrpc.ErrorResponse] = field(default_factory=dict)
    stdin_closed: bool = False
    eof_while_running: bool = False
    ending_ordered: bool = False


@dataclass
class RigPace:
    """How long the rig waits, on which clock, and the timing and frontend
    options sent with every load (a scenario may change them before its load)."""

    patience_s: float = 10.0
    stage_s: float = 2.0  # the host's §1.8 shutdown stage (scaled when the driver offers ``timing``)
    timing: dict[str, Any] = field(default_factory=dict)  # sent with every load (capability ``timing``)
    frontend: dict[str, Any] = field(default_factory=dict)  # sent with every load when set (capability ``frontend``)
    # A simulated run (conformance.peers.host_simulated) waits on the virtual
    # clock instead of polling file descriptors.
    clock: Callable[[], float] = time.monotonic
    idle_wait: Callable[[float], None] | None = None


@dataclass
class RigLedger:
    """What the rig counts across every generation, for lost calls and stray answers."""

    frames_seen: int = 0
    accepted: list[tuple[str, str]] = field(default_factory=list)  # (call id, method) the driver accepted
    written: dict[str, int] = field(default_factory=dict)  # method -> requests the host wrote, every generation
    child_ids: set[Any] = field(default_factory=set)  # host_key of every request id the probe sent
    stray_answers: int = 0  # answers the host wrote to ids the probe never used
    # (call id, method) of accepted calls a wait for their request ran out on (lost_call)
    unwritten: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class HostRig:
    driver: HostDriver
    listener: ProbeListener
    recorder: Recorder
    pace: RigPace = field(default_factory=lambda: RigPace())
    ledger: RigLedger = field(default_factory=lambda: RigLedger())
    initialize_params: Any = None  # what the host sent in its last initialize
    session: ProbeSession | None = None
    ending_ordered: bool = False  # the probe was told to exit or crash
    link: ProbeLink | None = None
    handle: str | None = None
    trace: Trace | None = None
    api_version: str = "0.2"
    requests: collections.deque[HostRequest] = field(default_factory=collections.deque)
    notifications: list[jsonrpc.Notification] = field(default_factory=list)
    answers: dict[Any, jsonrpc.Response | jsonrpc.ErrorResponse] = field(default_factory=dict)
    stdin_closed: bool = False
    eof_while_running: bool = False  # the host closed the probe's stdin (not: the probe ended)
    step: int = 0
    manifest_path: Path | None = None  # the probe manifest the last load used
    others: list[Followed] = field(default_factory=list)  # generations followed beside the current one

    # -- pumping -----------------------------------------------------------------
    def tick(self, wait_s: float = POLL_SLICE_S) -> None:
        """Take what the driver and the probe wrote; wait up to ``wait_s`` if nothing."""
        progressed = False
        while self.driver.pump(0.0):
            progressed = True
        if self.link is not None:
            while (item := self.link.next_event(0.0)) is not None:
                self._host_wrote(item)
                progressed = True
        for other in list(self.others):
            with self.acting(other):
                while self.link is not None and (item := self.link.next_event(0.0)) is not None:
                    self._host_wrote(item)
                    progressed = True
        if not progressed and wait_s > 0 and self.pace.idle_wait is not None:
            self.pace.idle_wait(wait_s)
        elif not progressed and wait_s > 0:
            poller = select.poll()
            poller.register(self.driver.process.proc.stdout.fileno(), select.POLLIN)  # type: ignore[union-attr]
            for link in [self.link, *(o.link for o in self.others)]:
                if link is not None and link.connected:
                    poller.register(link.fileno(), select.POLLIN)
            poller.poll(max(1, int(wait_s * 1000)))

    def until(self, done: Callable[[], Any], timeout: float | None = None) -> Any:
        """Pump until ``done()`` is truthy (returned) or the timeout passes (None)."""
        deadline = self.pace.clock() + (self.pace.patience_s if timeout is None else timeout)
        while not (value := done()):
            if self.pace.clock() >= deadline:
                return None
            self.tick(min(POLL_SLICE_S, max(deadline - self.pace.clock(), 0.0)))
        return value

    def _host_wrote(self, item: Received | StdoutClosed) -> None:
        if isinstance(item, StdoutClosed):
            self.stdin_closed = True
            self.eof_while_running = self.link is not None and self.link.connected
            self._judge(lambda s: s.lifecycle_event(self._how_input_ended()))
            return
        decoded = jsonrpc.decode_event(item.event)
        self.ledger.frames_seen += 1
        if isinstance(decoded.message, jsonrpc.Request):
            self.ledger.written[decoded.message.method] = self.ledger.written.get(decoded.message.method, 0) + 1
        if self.trace is not None:
            payload = item.event.payload if isinstance(item.event, Frame) else None
            self.trace.saw(decoded.frame_index, payload, decoded.size, step=self.step)
        self._judge(lambda s: s.received(decoded))
        message = decoded.message
        if isinstance(message, jsonrpc.Request):
            self.requests.append(HostRequest(message.id, message.method, message.params))
        elif isinstance(message, jsonrpc.Notification):
            self.notifications.append(message)
        elif isinstance(message, jsonrpc.Response | jsonrpc.ErrorResponse):
            self.answers[message.id] = message
            if message.id is not None and host_key(message.id) not in self.ledger.child_ids:
                self.ledger.stray_answers += 1  # an id the probe never used (JSONRPC-5-host-id-echo)

    # -- following two generations (§5 reload) -------------------------------------
    @contextlib.contextmanager
    def acting(self, other: Followed) -> Iterator[None]:
        """Within the block, ``other`` is the current generation (every method
        of the rig reads and scripts it); afterwards, what changed is kept in
        ``other`` and the current generation is back."""
        mine = {name: getattr(self, name) for name in GENERATION_FIELDS}
        for name in GENERATION_FIELDS:
            setattr(self, name, getattr(other, name))
        try:
            yield
        finally:
            for name in GENERATION_FIELDS:
                setattr(other, name, getattr(self, name))
                setattr(self, name, mine[name])

    def switch_to(self, other: Followed) -> Followed:
        """Make ``other`` the current generation; the current one becomes a
        followed one (returned), still pumped and judged."""
        mine = Followed(**{name: getattr(self, name) for name in GENERATION_FIELDS})
        for name in GENERATION_FIELDS:
            setattr(self, name, getattr(other, name))
        self.others = [o for o in self.others if o is not other] + [mine]
        return mine

    def candidate(self, timeout: float) -> Followed | None:
        """The host started this extension's next generation while the current
        one still runs (a reload): follow it beside the current one, judged as
        generation n + 1 with what generation n used so far (§5 boundary).
        None when none came within ``timeout``."""
        if self.link is None or self.session is None:
            return None
        token = str(self.link.hello.get("token"))
        link = self.until(lambda: self.listener.accept(token, 0.0), timeout)
        if link is None:
            return None
        old = self.session
        session = ProbeSession(manifest=old.manifest, generation=old.generation + 1, earlier=old.memory())
        followed = Followed(link, session)
        self.others.append(followed)
        return followed

    def _how_input_ended(self) -> LifeInput:
        """EOF on the probe's stdin while it runs, or the probe itself ended."""
        if self.link is not None and self.link.connected:
            return LifeInput.STDIN_CLOSED
        return LifeInput.PROBE_EXITED if self.ending_ordered else LifeInput.PROBE_KILLED

    def _judge(self, feed: Callable[[ProbeSession], Iterable[Finding]]) -> None:
        if self.session is not None:
            self.recorder.add(feed(self.session), trace=self.trace)

    # -- the probe's writes ----------------------------------------------------------
    def write(self, data: bytes, meta: dict[str, Any] | None = None) -> None:
        if self.link is None:
            raise ProbeGone("no probe is connected")
        if self.trace is not None:
            self.trace.wrote(data, step=self.step, meta=meta or {})
        try:
            self.link.write(data, timeout=self.pace.patience_s)
        except (BrokenPipeError, WriteTimeout) as exc:
            raise ProbeGone(str(exc)) from exc

    def send(self, message: dict[str, Any]) -> None:
        self.write(dumps(message) + b"\n")

    def respond(self, wire_id: Any, result: Any) -> None:
        self._judge(lambda s: s.answered(wire_id, result=result))  # before the bytes: the host may react at once
        self.send(jsonrpc.result(wire_id, result))

    def answering(self, wire_id: Any, result: Any) -> dict[str, Any]:
        """The answer frame for ``wire_id``, judged as sent; the caller writes
        its bytes (shaped: split, joined with others, CR LF)."""
        self._judge(lambda s: s.answered(wire_id, result=result))
        return jsonrpc.result(wire_id, result)

    def respond_error(self, wire_id: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self._judge(lambda s: s.answered(wire_id, error=error))
        self.send(jsonrpc.error(wire_id, code, message))

    def child_request(self, cid: Any, method: str, params: Any) -> None:
        """A request of the probe to the host (§2)."""
        self.child_requests([(cid, method, params)])

    def child_requests(self, requests: Iterable[tuple[Any, str, Any]]) -> None:
        """Requests of the probe to the host, (id, method, params) each, all in
        one write (pipelined): each is judged as sent before the bytes go."""
        data = []
        for cid, method, params in requests:
            self._judge(lambda s: s.sent_child(cid, method, params))  # noqa: B023 -- called at once
            self.ledger.child_ids.add(host_key(cid))
            data.append(dumps(jsonrpc.request(cid, method, params)) + b"\n")
        self.write(b"".join(data))

    def ask(self, cid: Any, method: str, params: Any, timeout: float | None = None) -> Any:
        """A request of the probe to the host, and its answer (None when none
        came): waits until the host answers it (on its id, or with id null
        when the id is one it cannot echo), names it in a ``$/cancelRequest``
        or ends the generation, and judges that it was answered
        (JSONRPC-5-host-answers-requests).

        A host that answers ids the probe never used (JSONRPC-5-host-id-echo)
        and let such a wait run out has shown that it mis-addresses its
        answers: from then on, the wait also ends as soon as another such
        answer arrives (this one's answer, mis-addressed), instead of after
        the full patience. A correct host never answers an unused id, so this
        never shortens a wait of one."""
        self.answers.pop(cid, None)
        echo_null = not child_id_legal(cid)
        if echo_null:
            self.answers.pop(None, None)
        link = self.link

        def cancels() -> int:
            return sum(isinstance(n.params, dict) and n.params.get("id") == cid for n in self.notes("$/cancelRequest"))

        earlier = cancels()  # of an earlier request under the same id
        mis_addressed = "JSONRPC-5-host-id-echo" in self.recorder.short_deadlines
        strays = self.ledger.stray_answers
        self.child_request(cid, method, params)

        def answer() -> Any:
            return self.answers.get(cid) or (self.answers.get(None) if echo_null else None)

        def cancelled() -> bool:
            return cancels() > earlier

        def ended() -> bool:
            return link is None or not link.connected or self.stdin_closed

        def stray() -> bool:
            return mis_addressed and self.ledger.stray_answers > strays

        self.until(lambda: answer() or cancelled() or ended() or stray(), timeout)
        got = answer()
        if got is None and self.ledger.stray_answers > strays:
            self.recorder.missed_deadline("JSONRPC-5-host-id-echo")
        wait = ChildWait(method, cid, got is not None, cancelled(), ended())
        self.recorder.add(child_answered(wait))
        return got

    def command(self, message: dict[str, Any]) -> None:
        """A probe control command (not a frame); recorded as a trace action."""
        if self.link is None:
            raise ProbeGone("no probe is connected")
        if message.get("t") in ("exit", "crash"):
            self.ending_ordered = True
        if self.trace is not None:
            self.trace.action("probe", step=self.step, command=message)
        try:
            self.link.command(message)
        except (BrokenPipeError, WriteTimeout) as exc:
            raise ProbeGone(str(exc)) from exc

    # -- reading what the host wrote ---------------------------------------------------
    def next_request(self, method: str | None = None, timeout: float | None = None) -> HostRequest | None:
        """The first request (of ``method``) the host wrote, removed from the queue.
        Waiting the full patience in vain for a call the driver accepted is
        noted (see :meth:`lost_call`)."""

        def found() -> HostRequest | None:
            for req in self.requests:
                if method is None or req.method == method:
                    self.requests.remove(req)
                    return req
            return None

        req = self.until(found, timeout)
        if req is None and timeout is None and method is not None:
            self._note_unwritten(method)
        return req

    def _note_unwritten(self, method: str) -> None:
        """A call of ``method`` the driver accepted may be neither written to
        the extension (fewer ``method`` requests came than calls were
        accepted) nor settled: noted, for :meth:`lost_call`."""
        accepted = [call for call, m in self.ledger.accepted if m == method]
        unsettled = [call for call in accepted if call not in self.driver.settled]
        if unsettled and self.ledger.written.get(method, 0) < len(accepted):
            self.ledger.unwritten.append((unsettled[0], method))

    def lost_call(self) -> str | None:
        """A call the driver accepted that the host neither wrote to the
        extension nor settled, even given the patience once more (what it
        says), or None. The driver contract says every accepted call settles
        once (docs/host-driver.md): a host that sits on one cannot be
        certified any further, and every later wait for a call would only run
        out (runner/host.py ends the run)."""
        for call, method in self.ledger.unwritten:
            if call not in self.driver.settled and self.settled(call) is None:
                return (
                    f"the host accepted call {call} ({method}) but neither wrote it to the extension nor "
                    f"settled it within {2 * self.pace.patience_s:g} s "
                    "(docs/host-driver.md: an accepted call settles once)"
                )
        return None

    def notes(self, method: str) -> list[jsonrpc.Notification]:
        return [n for n in self.notifications if n.method == method]

    # -- driver operations -------------------------------------------------------------
    def load(
        self,
        api_version: str,
        contributes: dict[str, Any],
        answer: Callable[[Any], Any],
        *,
        capabilities: dict[str, Any] | None = None,
        secrets: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Load a probe manifest; ``answer(initialize params)`` is the result the
        probe sends (a dict, an :class:`ErrorAnswer` to answer with an error, or
        None to send nothing). Returns the load result.
        ``capabilities``: the manifest's [capabilities] (default: filesystem none).
        ``secrets``: the §2.10 broker the host should hold for this load, sent
        as the ``secrets`` member only when the driver offers that capability."""
        self.api_version = api_version
        # A rig may load several generations one after another: none of the last one's state carries over.
        self.ending_ordered, self.stdin_closed, self.eof_while_running = False, False, False
        self.requests.clear()
        token = self.listener.new_token()
        capabilities = {"filesystem": "none"} if capabilities is None else dict(capabilities)
        manifest = self.listener.write_manifest(
            token, api_version=api_version, contributes=contributes, capabilities=capabilities
        )
        self.manifest_path = Path(manifest)
        info = ManifestInfo(f"{PROBE_NAME}-{token}", "0.1.0", api_version, dict(contributes), capabilities)
        self.session = ProbeSession(manifest=info, generation=0)
        self.trace = Trace(self._header(manifest, api_version))
        self.recorder.watch(self.trace)  # what is judged from now on is marked in this generation's trace
        load: dict[str, Any] = {"manifest": str(manifest)}
        if self.pace.timing and self.driver.has("timing"):
            load["timing"] = dict(self.pace.timing)
        if self.pace.frontend and self.driver.has("frontend"):
            load["frontend"] = dict(self.pace.frontend)
        if secrets is not None and self.driver.has("secrets"):
            load["secrets"] = secrets
        rid = self.driver.start("load", load)
        self.link = self.until(lambda: self.listener.accept(token, 0.0))
        if self.link is None:
            self.recorder.violate(Violation("EXT-1.1-host-initialize-first", "the host never started the extension"))
            return self._await(rid, self.pace.patience_s)
        # Short once a host has left a started extension without a first
        # request past the deadline (Recorder.deadline_s). Not the wait for
        # the start itself: a process may take longer than a short wait to
        # start on a loaded machine, and none is judged for being slow to.
        first = self.next_request(
            timeout=self.recorder.deadline_s("EXT-1.1-host-initialize-first", self.pace.patience_s)
        )
        self.recorder.exercise("EXT-1.1-host-initialize-first")
        if first is None:
            self.recorder.missed_deadline("EXT-1.1-host-initialize-first")
        if first is None or first.method != "initialize":
            what = "nothing" if first is None else f"{first.method!r}"
            self.recorder.violate(Violation("EXT-1.1-host-initialize-first", f"the host's first request was {what}"))
        if first is not None:
            self.initialize_params = first.params
            result = answer(first.params)
            if isinstance(result, ErrorAnswer):
                self.respond_error(first.wire_id, result.code, result.message)
            elif result is not None:
                self.respond(first.wire_id, result)
        loaded = self._await(rid, self.pace.patience_s + 5.0)
        if loaded.get("outcome") == "ready":
            self._judge(lambda s: s.host_reported_ready())
        handle = loaded.get("extension")
        self.handle = handle if isinstance(handle, str) else None
        return loaded

    def relaunched(self, timeout: float) -> ProbeLink | None:
        """The host started this extension again (a restart or a reload): the
        next probe of the same manifest, judged as generation n + 1 with what
        generation n used in memory (§5 boundary). None when none came within
        ``timeout``; the current link is kept then."""
        if self.link is None or self.session is None:
            return None
        token = str(self.link.hello.get("token"))
        link = self.until(lambda: self.listener.accept(token, 0.0), timeout)
        if link is None:
            return None
        while (item := self.link.next_event(0.0)) is not None:
            self._host_wrote(item)  # the end of generation n, judged before n + 1 begins
        old = self.session
        self.session = ProbeSession(manifest=old.manifest, generation=old.generation + 1, earlier=old.memory())
        self.link, self.ending_ordered, self.stdin_closed, self.eof_while_running = link, False, False, False
        self.requests.clear()
        return link

    def _await(self, rid: int, timeout: float) -> dict[str, Any]:
        answer = self.driver.wait_answer(rid, timeout, idle=lambda: self.tick(0.0))
        return answer if isinstance(answer, dict) else {"error": answer}

    def op(self, method: str, params: dict[str, Any], timeout: float = 5.0) -> dict[str, Any] | OperationError:
        return self.driver.wait_answer(self.driver.start(method, params), timeout, idle=lambda: self.tick(0.0))

    def call(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, Any] | OperationError]:
        """Start a call through the driver; returns (call id, the driver's answer)."""
        for session in [self.session, *(o.session for o in self.others)]:
            if session is not None:  # before the op: the host may write the request before answering it
                session.harness_called(method, params)
        call = self.driver.new_call_id()
        answer = self.op("call", {"extension": self.handle, "call": call, "method": method, "params": params})
        if not isinstance(answer, OperationError):
            self.ledger.accepted.append((call, method))
        return call, answer

    def settled(self, call: str, timeout: float | None = None) -> DriverEvent | None:
        return self.driver.wait_event(
            lambda e: e.method == "settled" and e.params.get("call") == call,
            self.pace.patience_s if timeout is None else timeout,
            idle=lambda: self.tick(0.0),
        )

    def events(self, method: str) -> list[DriverEvent]:
        """Driver events of ``method`` received so far (left in the queue)."""
        self.tick(0.0)
        return [e for e in self.driver.events if e.method == method]

    def close(self) -> None:
        for link in [self.link, *(o.link for o in self.others)]:
            if link is not None:
                link.kill_group()
        self.link = None
        self.others.clear()

    def _header(self, manifest: Any, api_version: str) -> dict[str, Any]:
        info = self.driver.hello_info
        return {
            "format": TRACE_FORMAT,
            "suite": {"version": __version__, **self.recorder.run_info},
            "target": {
                "role": "host",
                "driver": list(self.driver.argv),
                "cwd": str(self.driver.cwd),
                "host": {"name": info.host_name, "version": info.host_version} if info else None,
                "probe_manifest": str(manifest),
                "api_version": api_version,
            },
            "context": str(self.recorder.context),
            "scenario": self.recorder.context.scenario,
        }


def save_traces(rig: HostRig, before: frozenset[str]) -> None:
    """Keep this generation's trace for every requirement it was the first to
    violate (``before``: the requirements violated when it began)."""
    recorder = rig.recorder
    recorder.unwatch(rig.trace)
    if rig.trace is None or recorder.trace_dir is None:
        return
    for requirement in sorted(set(recorder.violations) - before):
        if requirement in recorder.traces:
            continue
        path = recorder.trace_dir / f"{requirement}.jsonl"
        rig.trace.dump(path, requirement=requirement, message=recorder.violations[requirement][0].violation.message)
        recorder.traces[requirement] = path
