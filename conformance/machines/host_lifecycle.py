"""§5 lifecycle scenarios: reload, supervision, parking, residency, and the
order of reported states.

How to use::

    for scenario in lifecycle_scenarios(api_version): scenario(rig)   # the runner does this
    Reload(rig, api_version).run(in_flight)       # a reload with calls in flight (HostMachine's rule too)
    driver.observers.append(state_judge(recorder))  # every ``state`` event judged (EXT-5-host-lifecycle-states)

A reload is followed on both generations at once: :meth:`HostRig.candidate`
accepts generation N+1 while N still runs, so the harness sees what crosses
the boundary and in which order -- N+1 negotiated while N still takes calls,
N drained, its remainder cancelled, N asked to shut down, and only then new
calls on N+1, with nothing of N replayed there.

Timing rules run on the virtual clock (``host --simulate``) or with the
driver's ``timing`` capability (durations scaled); without either, the
scenarios that would wait on the spec's 30 s cap return at once and their
entries stay untested.

No false positives (the readings are in docs/catalog.md's host decisions):

* "no restart" is waited for only a short window past the first restart's
  ceiling: a short window can miss a slow faulty host, never fail a good one;
* the length of a reload's drain is not judged (the text bounds it and gives
  no number); its order is: remaining calls settle, and N gets a shutdown
  request before it ends;
* a permanent error may be found by one restart attempt (the host has to try
  to learn that the manifest changed); more than one attempt fails.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.evidence import Recorder
from conformance.machines.host_scenarios import (
    CONTRIBUTES,
    SCALED_GRACE_MS,
    SLACK_S,
    TOOL,
    HostRejected,
    Scenario,
    initialize_result,
    ready,
    room,
    shutdown_with,
    start_call,
    tool_result,
)
from conformance.machines.host_storms import (
    Backoff,
    Storm,
    crash_quietly,
    reported_ready,
    storms_measurable,
    swapped,
)
from conformance.peers.host_driver import NOT_READY, DriverEvent, OperationError
from conformance.peers.host_rig import Followed, HostRequest, HostRig
from conformance.protocol.host_session import host_key
from conformance.protocol.host_states import ReportedStates
from conformance.protocol.host_supervision import DrainWatch, RestartWatch, drained, restarted
from conformance.protocol.violations import Violation

# The bounded drain of a reload, asked of a driver with ``timing`` (the text gives no number).
SCALED_DRAIN_MS = 300
DRAIN_S = 2.0  # the reference host's own default, assumed of a driver without ``timing``
# How long past the first restarts' ceiling a "no restart" is watched for (see the module text).
NO_RESTART_WINDOW_S = 0.5
# How long the idle scenario leaves a ready extension alone: on the virtual
# clock past the 30 s ready interval; on real time a second (a host that
# heartbeats less often is not caught, never is a good one failed).
IDLE_SIMULATED_S = 40.0
IDLE_S = 1.0
ENDS = ("stopped", "crashed", "degraded")


def state_judge(recorder: Recorder) -> Callable[[DriverEvent], None]:
    """A driver observer judging the order of every reported generation state."""
    states = ReportedStates()

    def observe(event: DriverEvent) -> None:
        params = event.params
        if event.method == "state" and isinstance(params.get("generation"), int):
            recorder.add(states.reported(str(params.get("extension")), params["generation"], str(params.get("state"))))

    return observe


# -- small readings -----------------------------------------------------------------------


def _text(req: HostRequest) -> Any:
    params = req.params if isinstance(req.params, dict) else {}
    arguments = params.get("arguments")
    return arguments.get("text") if isinstance(arguments, dict) else None


def _calls_with(requests: Any, texts: set[str]) -> list[HostRequest]:
    return [r for r in requests if r.method == "tool/call" and _text(r) in texts]


def _has_request(requests: Any, method: str) -> bool:
    return any(r.method == method for r in requests)


def _generation(rig: HostRig) -> Any:
    status = rig.op("inspect", {"extension": rig.handle})
    return status.get("generation") if isinstance(status, dict) else None


@dataclass
class Watch:
    """Driver events about this rig's extension from now on (a driver observer)."""

    rig: HostRig
    seen: list[DriverEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rig.driver.observers.append(self._take)

    def _take(self, event: DriverEvent) -> None:
        if event.params.get("extension") == self.rig.handle:
            self.seen.append(event)

    def close(self) -> None:
        if self._take in self.rig.driver.observers:
            self.rig.driver.observers.remove(self._take)

    def states(self, state: str, *, generation: Any = None, other_than: Any = None) -> list[DriverEvent]:
        return [
            e
            for e in self.seen
            if e.method == "state"
            and e.params.get("state") == state
            and (generation is None or e.params.get("generation") == generation)
            and (other_than is None or e.params.get("generation") != other_than)
        ]

    def ended(self, generation: Any) -> bool:
        return any(self.states(s, generation=generation) for s in ENDS)


def _answer_initialize(rig: HostRig, api_version: str, **changes: Any) -> bool:
    """Answer the current generation's initialize validly; False when none came."""
    init = rig.next_request("initialize")
    if init is None:
        return False
    rig.respond(init.wire_id, initialize_result(init.params, api_version, **changes))
    return True


def _crash(rig: HostRig) -> None:
    link = rig.link
    rig.command({"t": "crash"})
    if link is not None:
        rig.until(lambda: not link.connected)


def _rewrite_manifest(rig: HostRig, change: Callable[[str], str]) -> str | None:
    """Change the probe's manifest file; returns its old text (None: no manifest)."""
    if rig.manifest_path is None:
        return None
    text = rig.manifest_path.read_text(encoding="utf-8")
    rig.manifest_path.write_text(change(text), encoding="utf-8")
    return text


def _other_version(api_version: str) -> str:
    return "0.4" if api_version == "0.2" else "0.2"


# -- reload with calls in flight ------------------------------------------------------------


@dataclass
class Reload:
    """One reload of the rig's extension while ``in_flight`` calls are unanswered
    on generation N, followed on N and N+1 (see the module text)."""

    rig: HostRig
    api_version: str

    order_ids: tuple[str, ...] = ()  # set by run(): the reload-order requirements of this API version
    watch: Watch | None = None  # driver events about the extension during run()
    answered_at: float = 0.0  # when the probe answered N+1's initialize (the drain cannot start earlier)

    def _violate(self, ids: tuple[str, ...], message: str) -> None:
        for rid in ids:
            self.rig.recorder.violate(Violation(rid, message))

    def run(self, in_flight: list[tuple[str, HostRequest]]) -> bool:
        """True when N+1 is the current generation afterwards (N asked to shut
        down and gone); False when the reload did not go through."""
        self.watch = Watch(self.rig)
        try:
            return self._run(in_flight)
        finally:
            self.watch.close()

    def _run(self, in_flight: list[tuple[str, HostRequest]]) -> bool:
        rig = self.rig
        self.order_ids = ("EXT-5-host-reload-candidate-first",)
        if self.api_version == "0.1":
            self.order_ids += ("EXT-5-host-0.1-reload-order",)
        old = rig.link
        generation = _generation(rig)
        if old is None or isinstance(rig.op("reload", {"extension": rig.handle}), OperationError):
            return False  # no reload offered: nothing to judge
        drain_s = float(rig.timing.get("drain_ms", DRAIN_S * 1000)) / 1000
        candidate = rig.candidate(rig.patience_s + drain_s + 2 * rig.stage_s)
        if candidate is None:
            return False
        with rig.acting(candidate):
            init = rig.next_request("initialize")
        if init is None:
            return False  # the candidate's first-request rule is its session's
        rig.tick(0.0)
        rig.recorder.exercise(*self.order_ids)
        if _has_request(rig.requests, "shutdown") or rig.stdin_closed or not old.running():
            self._violate(self.order_ids, "generation N was stopped before its candidate N+1 was negotiated")
            with rig.acting(candidate):
                rig.respond(init.wire_id, initialize_result(init.params, self.api_version))
            rig.switch_to(candidate)
            return False
        limit = room(rig)
        if limit is None or len(in_flight) < limit:  # a full host would rightly hold the call back
            self._call_while_negotiating(candidate)
        with rig.acting(candidate):
            self.answered_at = rig.clock()  # before the bytes: the host reads them after
            rig.respond(init.wire_id, initialize_result(init.params, self.api_version))
        if not self._drain(candidate, in_flight, drain_s, generation):
            rig.switch_to(candidate)
            return False
        rig.switch_to(candidate)
        event = rig.driver.wait_event(
            lambda e: (
                e.method == "state"
                and e.params.get("extension") == rig.handle
                and e.params.get("state") == "ready"
                and e.params.get("generation") != generation
            ),
            rig.patience_s,
            idle=lambda: rig.tick(0.0),
        )
        rig._judge(lambda s: s.host_reported_ready())
        if event is not None:
            swapped(rig, event.params.get("generation"))
        self._no_replay(in_flight)
        return True

    def _call_while_negotiating(self, candidate: Followed) -> None:
        """N stays ready while N+1 negotiates: a call now is taken, and goes to N."""
        rig = self.rig
        call, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "while-negotiating"}})
        if isinstance(answer, OperationError):
            if answer.code == NOT_READY:
                self._violate(self.order_ids, "generation N refused a call while its candidate N+1 was negotiating")
            return
        texts = {"while-negotiating"}
        found = rig.until(lambda: _calls_with(rig.requests, texts) or _calls_with(candidate.requests, texts))
        if found and _calls_with(candidate.requests, texts):
            self._violate(self.order_ids, "a call made before the swap was routed to the candidate N+1")
            return
        if found:
            req = found[0]
            rig.requests.remove(req)
            rig.respond(req.wire_id, tool_result(self.api_version))
            rig.settled(call)

    def _drain(self, candidate: Followed, in_flight: list[tuple[str, HostRequest]], drain_s: float, gen: Any) -> bool:
        """N+1 is negotiated: N must be drained, its remainder cancelled and a
        shutdown request written (which the probe acknowledges, then exits)."""
        rig = self.rig
        old = rig.link
        assert old is not None
        drain_ids = ("EXT-5-host-reload-drain-sequence",) if self.api_version != "0.1" else ()
        bound = rig.patience_s + drain_s + 2 * rig.stage_s + SLACK_S
        ends = DrainEnds(rig, in_flight, self.answered_at)

        def shut_or_gone() -> bool:
            ends.look()
            return _has_request(rig.requests, "shutdown") or not old.running()

        rig.until(shut_or_gone, bound)
        if drain_ids and "drain_ms" in rig.timing and rig.driver.has("timing"):
            ends.judge(drain_s)  # only a drain the driver was given has a length to hold it to
        shut = rig.next_request("shutdown", timeout=0.0)
        rig.recorder.exercise(*drain_ids, *self.order_ids)
        if _has_request(candidate.requests, "tool/call"):
            self._violate(self.order_ids, "a call reached N+1 before N was asked to shut down")
        if shut is None:
            what = "was still running" if old.running() else "was ended without a shutdown request"
            self._violate(drain_ids, f"after its candidate N+1 was ready, generation N {what}")
            return not old.running()
        rig.respond(shut.wire_id, {})
        rig.command({"t": "exit", "code": 0})
        rig.until(lambda: not old.running())
        for call, _ in in_flight:
            if rig.settled(call) is None:
                self._violate(drain_ids, f"call {call} of generation N never settled after the reload")
        # N's end is reported before N+1 takes over; a reload marks N draining first (§5).
        rig.until(lambda: self.watch is not None and self.watch.ended(gen))
        reported = (
            [e.params.get("state") for e in self.watch.seen if e.params.get("generation") == gen] if self.watch else []
        )
        if "stopped" in reported and "draining" not in reported:
            self._violate(drain_ids, "generation N was stopped by the reload without being marked draining")
        return True

    def _no_replay(self, in_flight: list[tuple[str, HostRequest]]) -> None:
        """Nothing N left unresolved is sent again to N+1 (judged by N+1's
        session on every request): a new call on N+1 arrives behind anything
        replayed at the swap (one writer per child), so it is awaited."""
        if self.api_version == "0.1":
            return
        rig = self.rig
        texts = {t for _, req in in_flight if isinstance(t := _text(req), str)}
        call, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "after-reload"}})
        if isinstance(answer, OperationError):
            return
        rig.until(lambda: _calls_with(rig.requests, {"after-reload"}))
        replayed = _calls_with(rig.requests, texts)
        for req in [*replayed, *_calls_with(rig.requests, {"after-reload"})]:
            rig.requests.remove(req)
            rig.respond(req.wire_id, tool_result(self.api_version))
        rig.settled(call)


@dataclass
class DrainEnds:
    """The first sign that an in-flight call of generation N ended other than
    by its answer during a reload -- a ``$/cancelRequest`` naming it on N, or
    a ``cancelled``/``failed`` settlement -- timed from the probe's answer to
    N+1's initialize (:class:`DrainWatch`). Polled: a sign is seen no sooner
    than it came, so the gap can only be overstated."""

    rig: HostRig
    in_flight: list[tuple[str, HostRequest]]
    since: float
    first_s: float | None = None
    sign: str = ""

    def look(self) -> None:
        if self.first_s is not None:
            return
        wire_ids = {host_key(req.wire_id) for _, req in self.in_flight}
        named = [n for n in self.rig.notes("$/cancelRequest") if isinstance(n.params, dict)
                 and host_key(n.params.get("id")) in wire_ids]  # fmt: skip
        outcomes = [self.rig.driver.settled[c].params.get("outcome") for c, _ in self.in_flight
                    if c in self.rig.driver.settled]  # fmt: skip
        ended = [o for o in outcomes if o in ("cancelled", "failed")]
        if named or ended:
            self.first_s = self.rig.clock() - self.since
            self.sign = "cancel" if named else str(ended[0])

    def judge(self, drain_s: float) -> None:
        measured = {"drain_s": drain_s, "ended_after_s": round(self.first_s or 0.0, 3)}
        watch = DrainWatch(drain_s, self.first_s, self.sign)
        for finding in drained(watch):
            if isinstance(finding, Violation):
                self.rig.recorder.violate(finding, measured=measured)
            else:
                self.rig.recorder.exercise(finding.requirement)


def reload_in_flight(api_version: str) -> Scenario:
    """Two calls unanswered on N, then a reload (§5): see :class:`Reload`."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("reload"):
            return  # reported untested: never a pass
        if rig.driver.has("timing"):
            rig.timing = {**rig.timing, "drain_ms": SCALED_DRAIN_MS}
        ready(rig, api_version)
        # Two in flight and one more while N+1 negotiates, as the host's limit allows (§1.1).
        limit = room(rig)
        texts = ("in-flight-a", "in-flight-b")[: 2 if limit is None else max(1, min(2, limit - 1))]
        in_flight = [start_call(rig, text) for text in texts]
        if Reload(rig, api_version).run(in_flight):
            shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-reload-in-flight"
    return run


# -- a failed candidate, a changed registration ----------------------------------------------


def failed_candidate(api_version: str) -> Scenario:
    """§5: the candidate dies while negotiating; N stays active and serves."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("reload"):
            return
        ready(rig, api_version)
        generation = _generation(rig)
        watch = Watch(rig)
        try:
            if isinstance(rig.op("reload", {"extension": rig.handle}), OperationError):
                return
            candidate = rig.candidate(rig.patience_s)
            if candidate is None:
                return
            with rig.acting(candidate):
                if rig.next_request("initialize") is None:
                    return
                _crash(rig)
            rig.until(lambda: [e for e in watch.seen if e.method == "state" and e.params.get("state") in ENDS
                               and e.params.get("generation") != generation])  # fmt: skip
        finally:
            watch.close()
        rig.recorder.exercise("EXT-5-host-failed-candidate-keeps-old")
        call, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "after-failed-candidate"}})
        if isinstance(answer, OperationError):
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-failed-candidate-keeps-old",
                    f"after its candidate failed, the extension refused a call: {answer.message}",
                )
            )
        else:
            req = rig.next_request("tool/call")
            if req is not None:
                rig.respond(req.wire_id, tool_result(api_version))
            settled = rig.settled(call)
            outcome = settled.params.get("outcome") if settled is not None else "nothing"
            if outcome != "result":
                rig.recorder.violate(
                    Violation(
                        "EXT-5-host-failed-candidate-keeps-old",
                        f"after its candidate failed, a call to the old generation ended {outcome!r}",
                    )
                )
        if _has_request(rig.requests, "shutdown") or not (rig.link and rig.link.running()):
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-failed-candidate-keeps-old",
                    "the old generation was stopped because its candidate failed",
                )
            )
            return
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-failed-candidate"
    return run


EXTRA_COMMAND = "lifecycle-extra"


def _with_extra_command(text: str) -> str:
    return re.sub(r"(?m)^\[contributes\]\s*$", f'[contributes]\ncommands = ["{EXTRA_COMMAND}"]', text, count=1)


def reload_changed(api_version: str) -> Scenario:
    """§5: the manifest now contributes a command; without dynamic_tools the
    reload is refused (re-registration required): no new generation becomes ready."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("reload"):
            return
        ready(rig, api_version)
        generation = _generation(rig)
        if _rewrite_manifest(rig, _with_extra_command) is None:
            return
        watch = Watch(rig)
        answered: list[Followed] = []
        command = {"name": EXTRA_COMMAND, "description": "a command added after load"}
        try:
            if isinstance(rig.op("reload", {"extension": rig.handle}), OperationError):
                return

            def decided() -> bool:
                if not answered:
                    candidate = rig.candidate(0.0)
                    if candidate is not None and candidate.session is not None:
                        manifest = candidate.session.manifest  # judged against the manifest it was started from
                        contributes = {**manifest.contributes, "commands": [EXTRA_COMMAND]}
                        candidate.session.manifest = dataclasses.replace(manifest, contributes=contributes)
                        answered.append(candidate)
                for candidate in answered[:1]:
                    with rig.acting(candidate):
                        init = rig.next_request("initialize", timeout=0.0)
                        if init is not None:  # a host may compare after negotiating
                            rig.respond(init.wire_id, initialize_result(init.params, api_version, commands=[command]))
                swapped = watch.states("ready", other_than=generation)
                refused = [e for e in watch.seen if e.method == "diagnostic"]
                return bool(swapped or refused)

            rig.until(decided)
            rig.recorder.exercise("EXT-5-host-reload-rejects-changes")
            if watch.states("ready", other_than=generation):
                rig.close()  # the host is replacing N: nothing left to script
                rig.recorder.violate(
                    Violation(
                        "EXT-5-host-reload-rejects-changes",
                        "a reload whose manifest added a command made a new generation ready",
                    )
                )
        finally:
            watch.close()
        if rig.link is not None and rig.link.running() and not _has_request(rig.requests, "shutdown"):
            shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-reload-changed"
    return run


# -- supervision ---------------------------------------------------------------------------


def permanent_park(api_version: str) -> Scenario:
    """§5: the manifest's API version changes, then the probe crashes: the
    host may try once (and learn of the change), then parks -- no more
    backoff. Then the manifest is restored and a manual reload revives the
    watcher: a crash of the new generation is restarted again."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return
        ready(rig, api_version)
        version = _other_version(api_version)
        original = _rewrite_manifest(
            rig, lambda t: re.sub(r"(?m)^api_version\s*=.*$", f'api_version = "{version}"', t, count=1)
        )
        if original is None:
            return
        watch = Watch(rig)
        try:
            parked = _crash_until_parked(rig, watch)
        finally:
            watch.close()
        if parked and rig.manifest_path is not None and rig.driver.has("reload"):
            rig.manifest_path.write_text(original, encoding="utf-8")
            _revive(rig, api_version)

    run.__name__ = "lifecycle-permanent-park"
    return run


def _crash_until_parked(rig: HostRig, watch: Watch) -> bool:
    token = str(rig.link.hello.get("token")) if rig.link is not None else ""
    spawned: list[Any] = []

    def parked() -> bool:
        link = rig.listener.accept(token, 0.0)
        if link is not None:  # an attempt that spawned: not answered, ended
            spawned.append(link)
            link.kill_group()
        return bool(watch.states("parked")) or len(watch.states("backoff")) > 1

    _crash(rig)
    rig.until(parked)
    backoffs = len(watch.states("backoff"))
    if not watch.states("parked") and backoffs <= 1 and len(spawned) <= 1:
        return False  # not observable: the driver reports neither (stays untested)
    rig.recorder.exercise("EXT-5-host-parks-permanent-errors")
    if backoffs > 1 or len(spawned) > 1:
        rig.recorder.violate(
            Violation(
                "EXT-5-host-parks-permanent-errors",
                f"after a permanent manifest (API version) error the host kept restarting "
                f"({backoffs} backoff(s), {len(spawned)} process(es) started)",
            )
        )
        return False
    return True


def _revive(rig: HostRig, api_version: str) -> None:
    """A manual reload of the parked extension, then a crash: it must restart."""
    if isinstance(rig.op("reload", {"extension": rig.handle}), OperationError):
        return
    if rig.relaunched(rig.patience_s) is None or not _answer_initialize(rig, api_version):
        return
    watch = Watch(rig)
    try:
        rig.until(lambda: watch.states("ready"))
        if not watch.states("ready"):
            return
    finally:
        watch.close()
    rig.recorder.exercise("EXT-5-host-manual-revives")
    backoff = Backoff.of(rig)
    _crash(rig)
    if rig.relaunched(backoff.cap_s + backoff.slack_s) is None:
        rig.recorder.violate(
            Violation(
                "EXT-5-host-manual-revives",
                "after a manual reload of a parked extension, its next crash was not restarted",
            )
        )
        return
    _ready_again(rig, api_version)


def _ready_again(rig: HostRig, api_version: str) -> None:
    """Answer a restarted generation's initialize, wait until it is reported
    ready, then shut it down."""
    watch = Watch(rig)
    try:
        if not _answer_initialize(rig, api_version):
            return
        rig.until(lambda: watch.states("ready"))
    finally:
        watch.close()
    shutdown_with(rig, ack=True, exit_after_ack=True)


def dead_tools(api_version: str) -> Scenario:
    """§5: after an unexpected exit the dead generation's tools are gone: a
    call made before the restart is ready is refused, never held for the
    restarted generation."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return
        ready(rig, api_version)
        generation = _generation(rig)
        watch = Watch(rig)
        try:
            _crash(rig)
            rig.until(lambda: watch.ended(generation) or watch.states("backoff"))
        finally:
            watch.close()
        call = rig.driver.new_call_id()
        params = {"name": TOOL, "arguments": {"text": "while-dead"}}
        rid = rig.driver.start("call", {"extension": rig.handle, "call": call, "method": "tool/call", "params": params})
        # Answered before any restart can be ready: its initialize waits for us.
        answer = rig.driver.wait_answer(rid, 5.0, idle=lambda: rig.tick(0.0))
        rig.recorder.exercise("EXT-5-host-removes-dead-tools")
        backoff = Backoff.of(rig)
        refused = isinstance(answer, OperationError)
        # A refusal needs no restart to be judged: follow one only as far as the first ceilings.
        wait_s = backoff.ceiling(1) + NO_RESTART_WINDOW_S if refused else backoff.cap_s + backoff.slack_s
        watch = Watch(rig)
        try:
            restarted = rig.relaunched(wait_s) is not None and _answer_initialize(rig, api_version)
            if restarted:
                rig.until(lambda: watch.states("ready"))
        finally:
            watch.close()
        if not refused:
            rig.until(lambda: _calls_with(rig.requests, {"while-dead"}) or rig.driver.settled.get(call))
            routed = _calls_with(rig.requests, {"while-dead"})
            settled = rig.driver.settled.get(call)
            if routed or (settled is not None and settled.params.get("outcome") == "result"):
                rig.recorder.violate(
                    Violation(
                        "EXT-5-host-removes-dead-tools",
                        "a tool call made after the generation died was kept for its restart",
                    )
                )
            for req in routed:
                rig.requests.remove(req)
                rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
        if restarted:
            shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-dead-tools"
    return run


def restart_after_exit(api_version: str) -> Scenario:
    """§5 (API 0.2+): the probe of a ready generation dies with a call in
    flight. The supervisor owes a restart: the first attempt's ceiling is
    0.5 s at the spec's timing, so this needs neither ``timing`` nor the
    virtual clock; a restart is awaited that ceiling plus slack plus the
    patience. Then nothing the dead generation left unresolved may reach the
    new one (its session judges every request); a later call orders them."""

    def run(rig: HostRig) -> None:
        if api_version == "0.1":
            return  # §5: for API 0.1 the supervisor "may" create a replacement
        ready(rig, api_version)
        start_call(rig, "before-crash")
        backoff = Backoff.of(rig)
        wait_s = backoff.ceiling(0) + backoff.slack_s + rig.patience_s
        watch = Watch(rig)
        try:
            _crash(rig)
            link = rig.relaunched(wait_s)
            parked = bool(watch.states("parked"))
        finally:
            watch.close()
        rig.recorder.add(restarted(RestartWatch(link is not None, wait_s, parked)))
        if link is None or not _answer_initialize(rig, api_version):
            return
        reported_ready(rig)
        try:
            call, later = start_call(rig, "after-restart")
        except HostRejected:
            return  # a second failure under load, say: nothing left to order
        rig.respond(later.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-restart-after-exit"
    return run


def shutdown_no_restart(api_version: str) -> Scenario:
    """§5: an explicit shutdown cancels supervision: no restart follows."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return
        ready(rig, api_version)
        shutdown_with(rig, ack=True, exit_after_ack=True)
        rig.recorder.exercise("EXT-5-host-shutdown-stops-supervision")
        link = rig.relaunched(Backoff.of(rig).ceiling(1) + NO_RESTART_WINDOW_S)
        if link is not None:
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-shutdown-stops-supervision", "the host restarted the extension after its shutdown"
                )
            )
            link.kill_group()

    run.__name__ = "lifecycle-shutdown-no-restart"
    return run


def initial_failure(api_version: str) -> Scenario:
    """§5: the first start dies while initializing; the supervisor does not retry it."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return

        def die(params: Any) -> None:
            rig.command({"t": "crash"})
            return None

        rig.load(api_version, CONTRIBUTES, die)
        rig.recorder.exercise("EXT-5-host-initial-failure-not-retried")
        link = rig.relaunched(Backoff.of(rig).ceiling(1) + NO_RESTART_WINDOW_S)
        if link is not None:
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-initial-failure-not-retried",
                    "the host restarted an extension whose first initialize failed",
                )
            )
            link.kill_group()

    run.__name__ = "lifecycle-initial-failure"
    return run


READY_RESET_S = 30.0  # §5: continuously ready this long restores the restart budget
FIRST_STORM_FAILURES = 1  # a restart that dies before the generation stays ready
SECOND_STORM_FAILURES = 6  # then, after the ready interval: a full budget of 8 allows at least 7 attempts


def ready_reset(api_version: str) -> Scenario:
    """§5: 30 s continuously ready restores the restart budget. A short storm
    uses part of it; the restarted generation then stays ready past the
    interval; a second storm of six failed restarts must still be followed by
    a seventh attempt (a full budget of eight allows it, even counted one off)."""

    def run(rig: HostRig) -> None:
        if rig.idle_wait is None:
            return  # two storms and a ready spell: seconds of real time even scaled; the virtual clock judges it
        reset_s = READY_RESET_S
        ready(rig, api_version)
        # One storm object for both: its backoff ceilings keep growing (lenient
        # when a host resets its parking budget but not its delay exponent).
        storm = Storm(rig, api_version, Backoff.of(rig))
        if not crash_quietly(storm, FIRST_STORM_FAILURES):
            return  # parked already (allowed: a host may count more): nothing to judge
        rig.until(lambda: rig.link is None or not rig.link.running(), reset_s * 1.2 + 0.1)
        if rig.link is None or not rig.link.running():
            return
        before = storm.attempts
        live = crash_quietly(storm, SECOND_STORM_FAILURES)
        attempts = storm.attempts - before
        rig.recorder.exercise("EXT-5-host-parks-after-failures")
        if not live and attempts <= SECOND_STORM_FAILURES:
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-parks-after-failures",
                    f"after staying ready past the {reset_s:g} s interval, the extension was parked "
                    f"after {attempts} failed restart(s): its budget was not restored",
                ),
                measured={"ready_interval_s": reset_s, "attempts": attempts},
            )
        if live:
            shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-ready-reset"
    return run


# -- residency and heartbeats -----------------------------------------------------------------


def idle(api_version: str) -> Scenario:
    """§5: a ready extension left alone gets no heartbeat traffic; an API 0.1
    generation stays resident -- even past the §1.9 grace after a cancelled
    call, which API 0.1 cannot be told about."""

    def run(rig: HostRig) -> None:
        grace_s = 2.0
        if api_version == "0.1" and rig.driver.has("timing"):
            rig.timing = {**rig.timing, "cancel_grace_ms": SCALED_GRACE_MS}
            grace_s = SCALED_GRACE_MS / 1000
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        cancelled: HostRequest | None = None
        if api_version == "0.1":
            call, cancelled = start_call(rig, "cancelled-then-idle")
            rig.op("cancel", {"call": call, "reason": "user"})
            rig.settled(call)
        quiet_s = IDLE_SIMULATED_S if rig.idle_wait is not None else IDLE_S
        if api_version == "0.1":
            quiet_s = max(quiet_s, grace_s + SLACK_S / 2)
        notes = len(rig.notifications)

        def written() -> list[str]:
            frames = [r.method for r in rig.requests if r.method != "shutdown"]
            return frames + [n.method for n in rig.notifications[notes:] if n.method != "$/cancelRequest"]

        rig.until(lambda: written() or not link.running() or _has_request(rig.requests, "shutdown"), quiet_s)
        rig.recorder.exercise("EXT-5-host-no-heartbeat")
        if written():
            rig.recorder.violate(
                Violation(
                    "EXT-5-host-no-heartbeat", f"the host wrote {sorted(set(written()))} to an idle, live extension"
                )
            )
        if api_version == "0.1":
            rig.recorder.exercise("EXT-5-host-0.1-resident")
            if _has_request(rig.requests, "shutdown") or not link.running():
                rig.recorder.violate(
                    Violation(
                        "EXT-5-host-0.1-resident", "an idle API 0.1 generation was stopped without a reload or shutdown"
                    )
                )
                return
            if cancelled is not None:
                rig.respond(cancelled.wire_id, tool_result(api_version, "late"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-idle"
    return run


def lifecycle_scenarios(api_version: str) -> list[Scenario]:
    return [
        make(api_version)
        for make in (
            reload_in_flight,
            failed_candidate,
            reload_changed,
            permanent_park,
            dead_tools,
            restart_after_exit,
            shutdown_no_restart,
            initial_failure,
            idle,
            ready_reset,
        )
    ]
