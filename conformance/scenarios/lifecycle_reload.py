"""§5 reload: calls in flight while a new generation takes over, a failed
candidate, and a reload that changes what the extension registers."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from conformance.peers.host_driver import NOT_READY, OperationError
from conformance.peers.host_rig import Followed, HostRequest, HostRig
from conformance.protocol.host_session import host_key
from conformance.protocol.host_supervision import DrainWatch, drained
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import SLACK_S, TOOL, initialize_result, ready, room, start_call, tool_result
from conformance.scenarios.lifecycle_steps import (
    DRAIN_S,
    ENDS,
    SCALED_DRAIN_MS,
    Watch,
    _calls_with,
    _crash,
    _generation,
    _has_request,
    _rewrite_manifest,
    _text,
)
from conformance.scenarios.storm_steps import swapped

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
        drain_s = float(rig.pace.timing.get("drain_ms", DRAIN_S * 1000)) / 1000
        candidate = rig.candidate(rig.pace.patience_s + drain_s + 2 * rig.pace.stage_s)
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
            self.answered_at = rig.pace.clock()  # before the bytes: the host reads them after
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
            rig.pace.patience_s,
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
        bound = rig.pace.patience_s + drain_s + 2 * rig.pace.stage_s + SLACK_S
        ends = DrainEnds(rig, in_flight, self.answered_at)

        def shut_or_gone() -> bool:
            ends.look()
            return _has_request(rig.requests, "shutdown") or not old.running()

        rig.until(shut_or_gone, bound)
        if drain_ids and "drain_ms" in rig.pace.timing and rig.driver.has("timing"):
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
            self.first_s = self.rig.pace.clock() - self.since
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
            rig.pace.timing = {**rig.pace.timing, "drain_ms": SCALED_DRAIN_MS}
        ready(rig, api_version)
        # Two in flight and one more while N+1 negotiates, as the host's limit allows (§1.1).
        limit = room(rig)
        texts = ("in-flight-a", "in-flight-b")[: 2 if limit is None else max(1, min(2, limit - 1))]
        in_flight = [start_call(rig, text) for text in texts]
        if Reload(rig, api_version).run(in_flight):
            shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("lifecycle-reload-in-flight", run)


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
            candidate = rig.candidate(rig.pace.patience_s)
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

    return Scenario("lifecycle-failed-candidate", run)


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

    return Scenario("lifecycle-reload-changed", run)
