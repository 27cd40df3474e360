"""One process generation of one extension: its pipes, writer, calls and state.

A :class:`Connection` owns three workers -- the stdout reader (all routing
happens there), the stderr drain and the one serialized writer -- and the
tables of calls and child requests. Every public method is safe from any
thread; the lock (``self._cond``) is only held for bookkeeping, never across
a pipe operation or a frontend call.

Lifecycle (§5), as a table in :data:`LIFECYCLE`::

    starting -> initializing -> ready -> draining -> stopped
                     |            |         |
                     +------------+---------+--> degraded / crashed
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from conformance.protocol.framing import Frame, FrameDecoder, FrameEvent, OversizedFrame
from conformance.protocol.id_peek import peek_id

from . import calls as cs
from . import jsonrpc as rpc
from .calls import Call, CallBook, CallOutcome, PendingCall
from .channel import Channel
from .children import ChildRequests
from .config import HostConfig
from .diagnostics import Diagnostic, DiagnosticRing, truncate_utf8
from .frontend import Frontend, HostEvents
from .initialize import InitializeRejected, Negotiated, Offer, accept, initialize_params
from .lifecycle import lifecycle_params
from .manifest import Manifest
from .results import result_problem
from .runtime import EventLike, HostRuntime
from .stderr import StderrLines, drain
from .writer import SerialWriter

STARTING, INITIALIZING, READY, DRAINING, STOPPED, DEGRADED, CRASHED = (
    "starting",
    "initializing",
    "ready",
    "draining",
    "stopped",
    "degraded",
    "crashed",
)
LIFECYCLE: dict[str, frozenset[str]] = {
    STARTING: frozenset({INITIALIZING, CRASHED, STOPPED}),
    INITIALIZING: frozenset({READY, STOPPED, CRASHED}),
    READY: frozenset({DRAINING, DEGRADED, CRASHED}),
    DRAINING: frozenset({STOPPED, DEGRADED, CRASHED}),
    DEGRADED: frozenset({STOPPED, CRASHED}),
    STOPPED: frozenset(),
    CRASHED: frozenset(),
}
ENDED = (STOPPED, DEGRADED, CRASHED)
# Notifications are best effort (§1.10): past this many frames waiting in the
# writer's queue, a lifecycle/Wave-1 notification is dropped with a
# diagnostic instead of growing the queue (requests are bounded by admission).
MAX_QUEUED_NOTIFICATIONS = 1024
# §2.5: snapshots one generation shows per window (the excess is coalesced).
PRESENTATION_PER_WINDOW = 32
PRESENTATION_WINDOW_S = 1.0
# How much of an oversized frame is kept to read its id (a reply to one of our calls fails).
PEEK_BYTES = 1024


@dataclass
class Handshake:
    """What :meth:`Connection.start` offered and learnt besides the negotiated
    result: the offer (§1.1), the initialize request's id (a parent for the
    §2.20 registrations sent during it), and since when the generation is
    ready (§5: the restart budget resets after a continuous ready interval)."""

    offer: Offer | None = None
    initialize_id: int | None = None
    ready_since: float | None = None


@dataclass
class GenerationLog:
    """What the generation said and what went wrong, each bounded: recent
    diagnostics, the stderr line splitter (§0), the last error (§5)."""

    diagnostics: DiagnosticRing
    stderr: StderrLines
    last_error: str | None = None


@dataclass
class Ending:
    """How the generation ends: set once when it ends (the reason, the
    leader's exit status), what the workers wait on, and whether a §1.8
    shutdown sequence is already under way (a second caller joins it)."""

    ended: EventLike
    stdout_eof: EventLike
    reason: str | None = None
    exit_code: int | None = None
    shutting_down: bool = False


@dataclass
class StateEvents:
    """Lifecycle states not yet told to the embedder, oldest first, and
    whether a worker is telling them (one at a time, in order)."""

    queue: collections.deque[str] = field(default_factory=collections.deque)
    pumping: bool = False


@dataclass
class PresentationThrottle:
    """§2.5 for one generation: the window snapshots are being shown in, how
    many were shown in it, the newest held back (last wins), and the window
    last diagnosed as throttled."""

    window: int = -1
    shown: int = 0
    held: dict[str, Any] | None = None
    held_diagnosed: int = -1


class Connection:
    """One generation. Besides what the host wires into it (manifest,
    channel, config, runtime, events, frontend) and its lifecycle state and
    negotiated result, it keeps its bookkeeping in small records, each read
    by one part of it: :class:`~.calls.CallBook` (calls, admission,
    tombstones, progress), :class:`Handshake`, :class:`GenerationLog`,
    :class:`Ending`, :class:`StateEvents` and :class:`PresentationThrottle`."""

    def __init__(
        self,
        manifest: Manifest,
        generation: int,
        channel: Channel,
        *,
        config: HostConfig,
        runtime: HostRuntime,
        events: HostEvents,
        frontend: Frontend,
        on_end: Callable[[Connection, str], None] | None = None,
    ) -> None:
        self.manifest = manifest
        self.generation = generation
        self.channel = channel
        self.config = config
        self.runtime = runtime
        self.events = events
        self.frontend = frontend
        self._on_end = on_end
        self._cond = runtime.condition()
        self.state = STARTING
        self.negotiated: Negotiated | None = None
        self.handshake = Handshake()
        self.log = GenerationLog(
            DiagnosticRing(config.memory.diagnostics_kept), StderrLines(config.memory.stderr_line_bytes)
        )
        self._book = CallBook()
        self.writer = SerialWriter(
            channel, self._cond, on_written=self._written, on_failed=self._write_failed, now=runtime.now
        )
        self._throttle = PresentationThrottle()
        self.children = ChildRequests(self)
        self.ending = Ending(runtime.event(), runtime.event())
        self._state_events = StateEvents()
        self._settled_messages: set[str] = set()  # §1.11: message ids whose message/settled was sent

    @property
    def name(self) -> str:
        return self.manifest.name

    # -- lifecycle ---------------------------------------------------------------

    def _move(self, state: str) -> None:
        """Under the lock. Unknown transitions are ignored only towards an
        ended state that was already reached (a crash racing a shutdown)."""
        if state == self.state:
            return
        if state not in LIFECYCLE[self.state]:
            if self.state in ENDED:
                return
            raise cs.LocalError(f"lifecycle: no transition {self.state} -> {state}")
        self.state = state
        self._announce(state)

    def _announce(self, state: str) -> None:
        """Under the lock: queue ``state`` for the embedder. Delivered in
        order by one worker, never under our lock (the embedder's callback
        may call back into the host)."""
        self._state_events.queue.append(state)
        if not self._state_events.pumping:
            self._state_events.pumping = True
            self.runtime.submit(self._pump_state_events, f"{self.name}-events")

    def _pump_state_events(self) -> None:
        while True:
            with self._cond:
                if not self._state_events.queue:
                    self._state_events.pumping = False
                    return
                state = self._state_events.queue.popleft()
            self.events.state_changed(self.name, self.generation, state)

    def start(self, *, source: str | None = None, timeout: float | None = 30.0) -> None:
        """Start the workers and negotiate; raises InitializeRejected (child killed)."""
        with self._cond:
            self._move(INITIALIZING)
        self.runtime.submit(self._read_stdout, f"{self.name}-stdout")
        self.runtime.submit(self._drain_stderr, f"{self.name}-stderr")
        self.runtime.submit(self._watch_exit, f"{self.name}-exit")
        self.runtime.submit(self.writer.run, f"{self.name}-writer")
        params, offer = initialize_params(self.manifest, self.config, source=source)
        self.handshake.offer = offer
        pending = self._issue("initialize", params, counts=False)
        self.handshake.initialize_id = pending.id
        outcome = pending.wait(timeout)
        try:
            if outcome.status == "error" and outcome.error is not None:
                raise InitializeRejected(f"initialize failed: {outcome.error.get('message', '')!s:.200}")
            if not outcome.ok:
                raise InitializeRejected(f"initialize did not complete ({outcome.status}: {outcome.message})")
            negotiated = accept(outcome.result, offer, self.manifest)
        except InitializeRejected as exc:
            # §1.1: a rejected child gets nothing routed to it; it is killed.
            self.diagnose("initialize-rejected", str(exc))
            self.terminate(STOPPED, f"initialize rejected: {exc}")
            raise
        with self._cond:
            if self.state != INITIALIZING:
                raise InitializeRejected(f"the child ended during initialize ({self.ending.reason})")
            self.negotiated = negotiated
            self.children.settle_shortcuts(negotiated.has("shortcuts"))
            self.handshake.ready_since = self.runtime.now()
            self._move(READY)

    # -- diagnostics ---------------------------------------------------------------

    def diagnose(self, kind: str, message: str) -> None:
        text = truncate_utf8(message, self.config.memory.last_error_bytes)
        diagnostic = Diagnostic(self.name, self.generation, kind, text)
        with self._cond:
            self.log.diagnostics.add(diagnostic)
            if kind != "stderr":
                self.log.last_error = text
        self.events.diagnostic(diagnostic)

    # -- calls -----------------------------------------------------------------------

    def request(self, method: str, params: Any, *, issued: Callable[[int], None] | None = None) -> PendingCall:
        """Send a host request through admission (§0, §1.1 concurrency);
        refused unless the generation is ready. ``issued(id)`` runs once the
        request has its id and before its frame can be written: whatever the
        extension may do at once in answer (progress, a confirmation under it)
        then finds it registered."""
        return self._issue(method, params, counts=True, issued=issued)

    def _new_call(self, method: str, params: Any, *, counts: bool) -> Call:
        call_id = self._book.next_id
        self._book.next_id += 1
        frame = rpc.frame(rpc.request(call_id, method, params))
        return Call(call_id, method, frame, self.runtime.event(), self.runtime.event(), counts, params)

    def _issue(
        self, method: str, params: Any, *, counts: bool, issued: Callable[[int], None] | None = None
    ) -> PendingCall:
        with self._cond:
            call = self._new_call(method, params, counts=counts)
            if self.state in ENDED:
                call.finish(CallOutcome("lost", message=f"extension is {self.state}"))
                return PendingCall(call, self.cancel)
            if counts and self.state != READY:  # draining admits no new work (§1.8)
                call.finish(CallOutcome("refused", message=f"extension is {self.state}, not ready"))
                return PendingCall(call, self.cancel)
            if self._oversized(call.frame):
                call.finish(CallOutcome("refused", message=f"the {method} frame exceeds the frame bound"))
                return PendingCall(call, self.cancel)
            self._book.calls[call.id] = call
            if issued is not None:
                issued(call.id)
            if counts:
                self._book.admission.append(call)
                self._admit()
            else:
                call.move("admit")
                self._enqueue(call.frame, call)
        self.writer.pump()
        return PendingCall(call, self.cancel)

    @property
    def limit(self) -> int | None:
        """The negotiated concurrency (§1.1); API 0.1 negotiates none, and the
        host's own cap keeps its writer queue bounded there too."""
        if self.negotiated is None:
            return None
        return self.negotiated.max_concurrent_requests or self.config.max_concurrent_requests

    def _admit(self) -> None:
        """Under the lock: move queued calls to the writer while slots are free."""
        while self._book.admission and (self.limit is None or self._book.active < self.limit):
            call = self._book.admission.popleft()
            if call.state != cs.QUEUED:
                continue
            call.move("admit")
            call.admitted = True
            self._book.active += 1
            self._enqueue(call.frame, call)

    def _release(self, call: Call) -> None:
        """Under the lock: the child no longer runs ``call``; free its slot."""
        if call.admitted:
            call.admitted = False
            self._book.active -= 1
            self._admit()

    def pending_count(self) -> int:
        with self._cond:
            return sum(1 for c in self._book.calls.values() if c.state not in (cs.TOMBSTONED, cs.SKIPPED, cs.SETTLED))

    # -- §1.9 cancellation -----------------------------------------------------------

    def cancel(self, call: Call, reason: str = "user") -> None:
        with self._cond:
            if call.outcome is not None and call.state != cs.WRITING:
                return
            status = "timeout" if reason == "timeout" else "cancelled"
            call.finish(CallOutcome(status, message=f"cancelled ({reason})"))  # the waiter is dropped
            if call.state in (cs.QUEUED, cs.WRITE_PENDING):
                call.move("cancel")  # never started: skipped, nothing is sent
                self._book.calls.pop(call.id, None)
                self._release(call)
                call.settled.set()
            elif call.state == cs.WRITING:
                call.cancel_requested = True  # the frame completes; the writer follows up
                call.cancel_reason = reason
            elif call.state == cs.WRITTEN:
                self._tombstone(call, reason)
            self.children.cancel_owned_by(call)
            self._book.progress.pop(call.id, None)

    def _tombstone(self, call: Call, reason: str) -> None:
        """Under the lock: the frame is on the wire; at most one $/cancelRequest."""
        call.move("cancel")
        call.cancel_requested = True
        self._book.tombstones.append(call.id)
        while len(self._book.tombstones) > self.config.memory.tombstones_kept:
            old = self._book.tombstones.popleft()
            stale = self._book.calls.get(old)
            if stale is not None and stale.state == cs.TOMBSTONED:
                del self._book.calls[old]
                self._release(stale)
        if self.negotiated is not None and self.negotiated.cancellation:
            self._enqueue(rpc.frame(rpc.notification("$/cancelRequest", {"id": call.id, "reason": reason})), None)
            self.runtime.submit(lambda: self._grace(call), f"{self.name}-grace")

    def _grace(self, call: Call) -> None:
        if call.settled.wait(self.config.waits.cancel_grace_s):
            return
        with self._cond:
            alive = self.state not in ENDED
        if alive:
            grace = self.config.waits.cancel_grace_s
            self.diagnose(
                "cancel-grace", f"request {call.id} ({call.method}) did not settle within {grace:g} s of cancellation"
            )
            self.terminate(DEGRADED, f"request {call.id} ignored cancellation")

    # -- the writer (§0 "Transport defaults") ------------------------------------------

    def _enqueue(self, data: bytes, call: Call | None) -> None:
        """Under the lock."""
        self.writer.enqueue(data, call)

    @property
    def _writer_closed(self) -> bool:
        return self.writer.closed

    def _send(self, message: rpc.JsonObject, *, best_effort: bool = False, within: float | None = None) -> bool:
        """Queue one frame; ``within`` seconds bounds how long it may wait unstarted."""
        with self._cond:
            if self.writer.closed or self.state in ENDED:
                return False
            data = rpc.frame(message)
            oversized = self._oversized(data)
            dropped = oversized or (best_effort and len(self.writer.queue) >= MAX_QUEUED_NOTIFICATIONS)
            if not dropped:
                expires = None if within is None else self.runtime.now() + within
                self.writer.enqueue(data, None, expires_at=expires)
        if dropped:
            why = "it exceeds the frame bound" if oversized else "the writer queue is full"
            self.diagnose("notification-refused", f"{message.get('method', 'a response')} not sent: {why}")
        else:
            self.writer.pump()
        return not dropped

    def _oversized(self, frame: bytes) -> bool:
        """§0: no frame the host writes exceeds the bound (the newline is not counted)."""
        return len(frame) - 1 > self.config.max_frame_bytes

    def _written(self, call: Call) -> None:
        """Under the lock: the writer finished ``call``'s frame."""
        if call.state == cs.WRITING:
            call.move("written")
            if call.cancel_requested:
                self._tombstone(call, call.cancel_reason)

    def _write_failed(self, exc: Exception) -> None:
        self.diagnose("exit", f"stdin is no longer writable: {exc}")

    # -- the reader: everything the child says -------------------------------------

    def _read_stdout(self) -> None:
        decoder = FrameDecoder(max_frame_bytes=self.config.max_frame_bytes, prefix_bytes=PEEK_BYTES)
        while True:
            chunk = self.channel.read_stdout()
            for event in decoder.feed(chunk) if chunk else decoder.close():
                self._on_frame(event)
            if not chunk:
                break
        self.ending.stdout_eof.set()
        self._stdout_closed()

    def _on_frame(self, event: FrameEvent) -> None:
        if not isinstance(event, Frame):
            self.diagnose(
                "oversized-frame", f"frame {event.index} of {event.size} bytes exceeds {event.limit}; dropped"
            )
            self._oversized_reply(event)
            return
        message = rpc.parse(event.payload)
        if isinstance(message, rpc.Junk):
            self.diagnose("bad-frame", f"frame {event.index} ignored: {message.reason}")
        elif isinstance(message, rpc.Reply):
            self._on_reply(message)
        elif message.has_id:
            self.children.on_request(message)
        else:
            self._on_notification(message)

    def _oversized_reply(self, event: OversizedFrame) -> None:
        """An answer over the frame bound is never cut to fit: when its start
        shows the id of a live call (and no method: it is not a request of
        the child), that call fails instead of waiting for ever (§0, §1.4b)."""
        peeked = peek_id(event.prefix)
        if peeked is None or not _is_int(peeked.value) or b'"method"' in event.prefix:
            return
        failed = CallOutcome("invalid", None, message=f"its answer of {event.size} bytes exceeds the frame bound")
        with self._cond:
            call = self._book.calls.get(peeked.value)
            if call is None or call.state not in (cs.WRITING, cs.WRITTEN):
                return
            self._settle(call, None, failed)

    def _on_reply(self, reply: rpc.Reply) -> None:
        key = reply.id if isinstance(reply.id, int) and not isinstance(reply.id, bool) else None
        with self._cond:
            call = self._book.calls.get(key) if key is not None else None
            if call is not None and call.state in (cs.WRITING, cs.WRITTEN):
                kind, why = self._settle(call, reply)
            elif call is not None and call.state == cs.TOMBSTONED:
                del self._book.calls[call.id]
                self._release(call)
                call.settled.set()
                kind, why = "stale-response", f"late response to cancelled request {call.id} ({call.method}) ignored"
            elif key is not None and 0 < key < self._book.next_id:
                kind, why = "stale-response", f"response to request {key}, which is no longer pending, ignored"
            else:
                kind, why = "stale-response", f"response to never-issued id {str(reply.id)[:80]!r} ignored"
        if kind:
            self.diagnose(kind, why)

    def _settle(self, call: Call, reply: rpc.Reply | None, outcome: CallOutcome | None = None) -> tuple[str, str]:
        """Under the lock: the answer to a live call (or ``outcome`` when its
        answer could not be read); ("", "") unless it is refused."""
        call.move("response")
        del self._book.calls[call.id]
        self._release(call)
        self._book.progress.pop(call.id, None)
        self.children.cancel_owned_by(call)
        if outcome is None:
            assert reply is not None
            outcome = self._outcome(call, reply)
        call.finish(outcome)
        call.settled.set()
        if outcome.status == "invalid" and call.outcome is outcome:
            return "invalid-result", outcome.message
        return "", ""

    def _outcome(self, call: Call, reply: rpc.Reply) -> CallOutcome:
        """A result is used only if it is valid for its method (§1.2-§1.7)."""
        if reply.error is not None:
            return CallOutcome("error", None, reply.error)
        if self.negotiated is not None and call.counts:
            problem = result_problem(call.method, call.params or {}, reply.result, self.negotiated)
            if problem is not None:
                return CallOutcome("invalid", reply.result, message=f"{call.method} result refused: {problem}")
        return CallOutcome("ok", reply.result)

    def _on_notification(self, message: rpc.Incoming) -> None:
        if message.method == "$/progress":
            self._on_progress(message.params)
            return
        if self.state not in (READY, DRAINING):
            self.diagnose("bad-frame", f"{message.method} before initialize completed; ignored")
            return
        if message.method in ("notification", "context/contribution", "status/contribution") or (
            message.method == "presentation/update" and self._presentation_allowed()
        ):
            if isinstance(message.params, dict) and message.method == "presentation/update":
                self._present(message.params)
                return
            if isinstance(message.params, dict):
                self.events.contribution(self.name, self.generation, message.method, message.params)
                return
            self.diagnose("bad-frame", f"{message.method} params must be an object; ignored")
            return
        self.diagnose("bad-frame", f"notification {message.method[:80]!r} is not routed; ignored")

    def _present(self, params: dict[str, Any]) -> None:
        """§2.5: at most 32 snapshots of a generation are shown per one-second
        window; the excess is held, last wins, and the newest is shown when the
        next window opens; one diagnostic per throttled window."""
        with self._cond:
            window = int(self.runtime.now() // PRESENTATION_WINDOW_S)
            if window != self._throttle.window:
                self._throttle.window, self._throttle.shown = window, 0
            show = self._throttle.held is None and self._throttle.shown < PRESENTATION_PER_WINDOW
            flush = not show and self._throttle.held is None
            diagnose = not show and self._throttle.held_diagnosed != window
            if show:
                self._throttle.shown += 1
            else:
                self._throttle.held = params
                self._throttle.held_diagnosed = window
        if show:
            self.events.contribution(self.name, self.generation, "presentation/update", params)
        if diagnose:
            self.diagnose("presentation-throttled", f"over {PRESENTATION_PER_WINDOW} snapshots in a second: coalesced")
        if flush:
            self.runtime.submit(lambda: self._show_held(window + 1), f"{self.name}-presentation")

    def _show_held(self, window: int) -> None:
        """Show the newest held snapshot once ``window`` opens."""
        self.runtime.sleep(window * PRESENTATION_WINDOW_S - self.runtime.now())
        with self._cond:
            held, self._throttle.held = self._throttle.held, None
            if self._throttle.window != window:
                self._throttle.window, self._throttle.shown = window, 0
            self._throttle.shown += 1
            live = self.state in (READY, DRAINING)
        if held is not None and live:
            self.events.contribution(self.name, self.generation, "presentation/update", held)

    def _presentation_allowed(self) -> bool:
        return self.manifest.api_version != "0.1" and bool(self.manifest.contributes.get("presentation"))

    # -- §2.6 progress ------------------------------------------------------------------

    def _on_progress(self, params: Any) -> None:
        problem = self._accept_progress(params)
        if problem is not None:
            self.diagnose("progress-ignored", problem)
            return
        self.events.progress(self.name, self.generation, params["request_id"], params["sequence"], params.get("event"))

    def _accept_progress(self, params: Any) -> str | None:
        if self.negotiated is None or not self.negotiated.has("request_progress"):
            return "$/progress without negotiated request_progress"
        if not isinstance(params, dict) or not isinstance(params.get("event"), dict):
            return "$/progress params must be an object with an event object"
        request_id, sequence = params.get("request_id"), params.get("sequence")
        if not _is_int(request_id) or not _is_int(sequence):
            return "$/progress needs integer request_id and sequence"
        with self._cond:
            call = self._book.calls.get(request_id)
            if call is None or not call.active or not call.counts:
                return f"$/progress for inactive request {request_id}"
            last = self._book.progress.get(request_id)
            if last is not None and sequence <= last:
                return f"$/progress sequence {sequence} for request {request_id} does not increase (last {last})"
            self._book.progress[request_id] = sequence
        return None

    def active_parent(self, request_id: Any, methods: tuple[str, ...]) -> Call | None:
        """Under the lock: the call named by ``request_id`` if it is an active parent."""
        if not _is_int(request_id):
            return None
        call = self._book.calls.get(request_id)
        return call if call is not None and call.active and call.method in methods else None

    # -- notifications the host sends (§1.10, §1.11) ---------------------------------------

    def notify_lifecycle(self, method: str, params: dict[str, Any]) -> bool:
        """§1.10: only when lifecycle_events and this method are subscribed, and
        only well-formed (a malformed event is the embedder's bug: refused and
        diagnosed). Session/turn events give up after 250 ms unsent; tool
        events wait in the bounded writer queue."""
        negotiated = self.negotiated
        if negotiated is None or not negotiated.has("lifecycle_events") or method not in negotiated.subscriptions:
            return False
        checked = lifecycle_params(method, params)
        if isinstance(checked, str):
            self.diagnose("notification-refused", f"{method} not sent: {checked}")
            return False
        within = None if method.startswith("tool/") else self.config.waits.lifecycle_delivery_s
        return self._send(rpc.notification(method, checked), best_effort=True, within=within)

    def notify_wave1(self, method: str, params: Any) -> bool:
        """§1.11: only after its gate feature was negotiated; object payloads, bounded."""
        gate = self.config.wave1_gates.get(method)
        negotiated = self.negotiated
        problem = None
        if gate is None or negotiated is None or not negotiated.has(gate):
            problem = f"{method} is not negotiated for this extension"
        elif not isinstance(params, dict):
            problem = f"{method} payload must be an object"
        elif len(rpc.frame(params)) > self.config.wave1_payload_bytes:
            problem = f"{method} payload exceeds {self.config.wave1_payload_bytes} bytes"
        elif method == "shortcut/trigger" and params.get("id") not in self.children.shortcuts:
            problem = f"shortcut/trigger for unknown shortcut {str(params.get('id'))[:80]!r}"
        elif method == "message/updated":
            problem = batch_problem(params) or self._settled_message(params)
        if problem is not None:
            self.diagnose("notification-refused", problem)
            return False
        if method == "message/settled" and isinstance(params.get("message_id"), str):
            with self._cond:
                self._settled_messages.add(params["message_id"])
        return self._send(rpc.notification(method, params), best_effort=True)

    def _settled_message(self, params: dict[str, Any]) -> str | None:
        """§1.11: every batch of a message goes out before its message/settled."""
        with self._cond:
            settled = params.get("message_id") in self._settled_messages
        return "message/updated after the message settled" if settled else None

    def send_frame(self, message: rpc.JsonObject) -> bool:
        return self._send(message)

    # -- ending ---------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        drain(self.channel.read_stderr, self.log.stderr, lambda line: self.diagnose("stderr", line))

    def _watch_exit(self) -> None:
        """The leader exited. Its output normally ends with it; when a
        descendant keeps stdout open, the exit alone ends the generation."""
        code = self.channel.wait_exit(None)
        if self.ending.stdout_eof.wait(self.config.waits.exit_eof_grace_s):
            return  # the reader saw end of file and handled it
        with self._cond:
            expected = self.state in (DRAINING, *ENDED)
        if not expected:
            self.terminate(CRASHED, f"exited with status {code} while a descendant kept its output open")

    def _stdout_closed(self) -> None:
        with self._cond:
            expected = self.state in (DRAINING, *ENDED)
        if not expected:
            self.terminate(CRASHED, "stdout closed unexpectedly (the child exited or closed its output)")
        else:
            self._fail_all("the generation ended")

    def terminate(self, state: str, reason: str) -> None:
        """Kill the process group now and fail whatever is pending."""
        with self._cond:
            first = self.ending.reason is None
            if first:
                self.ending.reason = reason
                self.log.last_error = truncate_utf8(reason, self.config.memory.last_error_bytes)
            if state == STOPPED and self.state == READY:
                self._move(DRAINING)  # ready -> draining -> stopped, even when cut short
            self._move(state)
        self.channel.kill_group()
        self.channel.close_stdin()  # final teardown only: the process is gone
        self._fail_all(reason)
        if first:
            self.ending.exit_code = self.channel.wait_exit(0.0)
            self.ending.ended.set()
            if self._on_end is not None:
                self._on_end(self, state)

    def _fail_all(self, reason: str) -> None:
        with self._cond:
            self.writer.close()
            for call in list(self._book.calls.values()):
                if call.state != cs.TOMBSTONED:
                    call.move("lost")
                call.finish(CallOutcome("lost", message=reason))
                call.settled.set()
            self._book.calls.clear()
            self._book.admission.clear()
            self.children.clear()

    def shutdown(self, deadline: float, *, drain_s: float = 0.0) -> None:
        """§1.8: drain (API 0.2+), shutdown request, ack wait, exit wait, kill.
        A second caller (a shutdown racing a reload's) waits for the first
        sequence instead of writing a second shutdown request."""
        with self._cond:
            if self.state in ENDED:
                return
            joining = self.ending.shutting_down
            self.ending.shutting_down = True
            was_ready = self.state == READY
            if not joining:
                self._move(DRAINING)
        if joining:
            self.ending.ended.wait(max(0.0, deadline - self.runtime.now()))
            return
        if was_ready and drain_s > 0:
            with self._cond:
                self._cond.wait_for(lambda: self._book.active == 0, self._remaining(deadline, drain_s))
        for call in self._open_calls():
            self.cancel(call, "shutdown")
        stage = self.config.shutdown.stage_s
        ack = self._issue("shutdown", {}, counts=False)
        # A shutdown that times out is not cancelled: the next stage follows.
        outcome = ack.poll(self._remaining(deadline, stage))
        if outcome is None or not (outcome.ok or outcome.status == "lost"):
            self.diagnose("shutdown", f"no shutdown acknowledgement ({outcome.status if outcome else 'timeout'})")
        code = self.channel.wait_exit(self._remaining(deadline, stage))
        if code is None:
            self.diagnose("shutdown", "the child did not exit after shutdown; killing its process group")
        self.terminate(STOPPED, "shut down")

    def _remaining(self, deadline: float, stage: float) -> float:
        return max(0.0, min(stage, deadline - self.runtime.now()))

    def _open_calls(self) -> list[Call]:
        with self._cond:
            return [c for c in self._book.calls.values() if c.counts and c.outcome is None]

    def wait_ended(self, timeout: float | None = None) -> bool:
        return self.ending.ended.wait(timeout)


# §1.11: one coalesced batch carries at most 64 deltas; an SDK-shaped array
# under deltas is refused past 1024.
MAX_BATCH_DELTAS = 64
MAX_BATCH_ARRAY = 1024


def batch_problem(params: dict[str, Any]) -> str | None:
    """Why a message/updated payload is not one well-formed host batch, or None."""
    deltas = params.get("deltas")
    if isinstance(deltas, list):
        return None if len(deltas) <= MAX_BATCH_ARRAY else f"more than {MAX_BATCH_ARRAY} deltas"
    if not isinstance(params.get("message_id"), str) or not isinstance(params.get("delta"), str):
        return "message/updated needs string message_id and delta"
    if not _is_int(deltas) or not 1 <= deltas <= MAX_BATCH_DELTAS:
        return f"message/updated deltas must be 1..{MAX_BATCH_DELTAS}"
    return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
