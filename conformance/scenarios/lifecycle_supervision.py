"""§5 supervision: permanent parking, dead tools, restarts after an exit, no
restart after a shutdown, an initial failure, the ready interval that
resets the budget, and idle residency."""

from __future__ import annotations

import re
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRequest, HostRig
from conformance.protocol.host_supervision import RestartWatch, restarted
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import SCALED_GRACE_MS
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, SLACK_S, TOOL, HostRejected, ready, start_call, tool_result
from conformance.scenarios.lifecycle_steps import (
    IDLE_S,
    IDLE_SIMULATED_S,
    NO_RESTART_WINDOW_S,
    Watch,
    _answer_initialize,
    _calls_with,
    _crash,
    _generation,
    _has_request,
    _other_version,
    _rewrite_manifest,
)
from conformance.scenarios.storm_steps import Backoff, Storm, crash_quietly, reported_ready, storms_measurable

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

    return Scenario("lifecycle-permanent-park", run)


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
    if rig.relaunched(rig.pace.patience_s) is None or not _answer_initialize(rig, api_version):
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

    return Scenario("lifecycle-dead-tools", run)


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
        wait_s = backoff.ceiling(0) + backoff.slack_s + rig.pace.patience_s
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

    return Scenario("lifecycle-restart-after-exit", run)


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

    return Scenario("lifecycle-shutdown-no-restart", run)


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

    return Scenario("lifecycle-initial-failure", run)


READY_RESET_S = 30.0  # §5: continuously ready this long restores the restart budget
FIRST_STORM_FAILURES = 1  # a restart that dies before the generation stays ready
SECOND_STORM_FAILURES = 6  # then, after the ready interval: a full budget of 8 allows at least 7 attempts


def ready_reset(api_version: str) -> Scenario:
    """§5: 30 s continuously ready restores the restart budget. A short storm
    uses part of it; the restarted generation then stays ready past the
    interval; a second storm of six failed restarts must still be followed by
    a seventh attempt (a full budget of eight allows it, even counted one off)."""

    def run(rig: HostRig) -> None:
        if rig.pace.idle_wait is None:
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

    return Scenario("lifecycle-ready-reset", run)


# -- residency and heartbeats -----------------------------------------------------------------


def idle(api_version: str) -> Scenario:
    """§5: a ready extension left alone gets no heartbeat traffic; an API 0.1
    generation stays resident -- even past the §1.9 grace after a cancelled
    call, which API 0.1 cannot be told about."""

    def run(rig: HostRig) -> None:
        grace_s = 2.0
        if api_version == "0.1" and rig.driver.has("timing"):
            rig.pace.timing = {**rig.pace.timing, "cancel_grace_ms": SCALED_GRACE_MS}
            grace_s = SCALED_GRACE_MS / 1000
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        cancelled: HostRequest | None = None
        if api_version == "0.1":
            call, cancelled = start_call(rig, "cancelled-then-idle")
            rig.op("cancel", {"call": call, "reason": "user"})
            rig.settled(call)
        quiet_s = IDLE_SIMULATED_S if rig.pace.idle_wait is not None else IDLE_S
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

    return Scenario("lifecycle-idle", run)
