"""Fixed storm scenarios: frame shapes, a restart storm and the §5/§2.2
generation boundary across one restart."""

from __future__ import annotations

from conformance.peers.host_rig import HostRig
from conformance.protocol import limits
from conformance.scenarios import Scenario
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import HostRejected, ready, room, start_call, tool_result
from conformance.scenarios.storm_steps import (
    SHAPES,
    Backoff,
    Storm,
    answer_shaped,
    crash_quietly,
    storms_measurable,
    unjudged_then_answered,
)

# -- fixed scenarios (played by the runner after scenarios/host.py's) ------------------------


def frame_shapes(api_version: str) -> Scenario:
    """Every shape; two answers in one write need two calls outstanding at
    once, so they come last, and not at all when the host negotiated a
    limit of one (§1.1 lets it)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        for shape in SHAPES:
            answer_shaped(rig, [start_call(rig)], shape, api_version)
        for size in (limits.MAX_FRAME_BYTES, limits.MAX_FRAME_BYTES + 1):
            unjudged_then_answered(rig, *start_call(rig), size, api_version)
        limit = room(rig)
        if limit is None or limit >= 2:
            answer_shaped(rig, [start_call(rig), start_call(rig)], "coalesced", api_version)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("frame-shapes", run)


def restart_storm(api_version: str) -> Scenario:
    """A call in flight, the probe crashes, and every restart dies while
    initializing: each delay within the ceiling, and no ninth restart."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return  # real time at the spec's 30 s cap: left to the virtual clock or a timing driver
        ready(rig, api_version)
        start_call(rig)
        storm = Storm(rig, api_version, Backoff.of(rig))
        if storm.crash_and_follow(limits.FAILED_RESTARTS_BEFORE_PARK + 1):
            shutdown_with(rig, ack=True, exit_after_ack=True)  # it never parked: end the live generation

    return Scenario("restart-storm", run)


# -- §5 generation boundary, §2.2 confirmation fence (one restart) -------------------------

CROSSING_PROMPT = "Proceed across the restart?"


def restart_boundary(api_version: str) -> Scenario:
    """§5/§2.2: generation 1 has a call in flight and a confirmation under it
    when the probe crashes; the host restarts it once. Whatever the host does
    with what generation 1 left (the lost call, the confirmation its frontend
    may still be answering), none of it may reach generation 2: the session
    judges every frame of generation 2 against generation 1's ids. A later
    call orders the frames, once the frontend answered (its ``prompt`` event)."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return  # real time at the spec's 30 s cap: left to the virtual clock or a timing driver
        ready(rig, api_version)
        _, req = start_call(rig)
        params: dict[str, object] = {"prompt": CROSSING_PROMPT, "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        rig.child_request("confirm-crossing", "confirmation/request", params)
        storm = Storm(rig, api_version, Backoff.of(rig))
        if not crash_quietly(storm, 0):
            return  # no restart: nothing crosses (backoff and parking are judged by restart-storm)
        rig.driver.wait_event(
            lambda e: e.method == "prompt" and e.params.get("text") == CROSSING_PROMPT,
            rig.pace.patience_s,
            idle=lambda: rig.tick(0.0),
        )
        try:
            call, later = start_call(rig, "after-restart")
        except HostRejected:
            # A host may refuse a call while it holds the extension crashed or
            # restarting (say, a second crash under load): the frames of
            # generation 2 were judged as they came, but with no later call to
            # order them the boundary is not claimed exercised here.
            return
        # Every frame generation 2 got so far went through the session, which
        # fails any that names generation 1's ids: the boundary was exercised.
        rig.recorder.exercise("EXT-5-host-generation-boundary", "EXT-2.2-host-generation-fence")
        rig.respond(later.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("restart-boundary", run)


def machine_scenarios(api_version: str) -> list[Scenario]:
    return [frame_shapes(api_version), restart_storm(api_version), restart_boundary(api_version)]
