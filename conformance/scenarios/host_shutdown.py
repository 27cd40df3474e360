"""§1.2 and §1.8: a delivered result, then shutdown in its stages (acknowledged,
unacknowledged, never exiting) and the process group killed at the end."""

from __future__ import annotations

from collections.abc import Callable

from conformance.peers.host_rig import HostRig, ProbeGone
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_steps import SLACK_S, HostRejected, ready, start_call, tool_result

# -- §1.2, §1.8 -----------------------------------------------------------------------------


def call_and_shutdown(api_version: str) -> Scenario:
    """A valid tool result is delivered; shutdown is a request, acknowledged, then exit."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version, "hello"))
        settled = rig.settled(call)
        if settled is None or settled.params.get("outcome") != "result":
            raise HostRejected(f"a valid tool result was not delivered: {settled}")
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("call-and-shutdown", run)


def shutdown_with(rig: HostRig, *, ack: bool, exit_after_ack: bool, bound_s: float | None = None) -> bool:
    """Ask the host to shut the extension down; the probe acknowledges (or not)
    and exits (or not). With ``bound_s``: returns whether the probe was still
    running ``bound_s`` after the shutdown request arrived -- looked at once
    that time has passed, so a harness that falls behind on a loaded machine
    only looks later at a probe that can only have ended meanwhile. (A
    measured duration would be an upper bound, which cannot prove lateness.)"""
    if rig.link is None or not rig.link.running():
        raise ProbeGone("the extension ended before its shutdown")  # nothing to shut down: not judged
    rid = rig.driver.start("shutdown", {"extension": rig.handle})
    # Stop waiting as soon as the host closed stdin or ended the probe: a
    # shutdown request written after that could not be read anyway.
    rig.until(lambda: _has_request(rig, "shutdown") or rig.stdin_closed or not (rig.link and rig.link.connected))
    req = rig.next_request("shutdown", timeout=0.0)
    rig.recorder.exercise("EXT-0-host-graceful-shutdown-request")
    if req is None:
        closed = "closed the extension's stdin" if rig.eof_while_running else "ended the extension"
        rig.recorder.violate(
            Violation("EXT-0-host-graceful-shutdown-request", f"the host {closed} without a shutdown request")
        )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
        return False
    link = rig.link
    asked = rig.pace.clock()
    if ack:
        rig.respond(req.wire_id, {})
        if exit_after_ack:
            rig.command({"t": "exit", "code": 0})
    late = False
    if bound_s is not None and link is not None:
        rig.until(lambda: not link.running(), max(0.0, asked + bound_s - rig.pace.clock()))
        late = link.running()
    rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
    if link is not None:
        link.wait_exit(15.0)
    return late


def _has_request(rig: HostRig, method: str) -> bool:
    return any(r.method == method for r in rig.requests)


def stubborn_shutdown(*, ack: bool) -> Callable[[str], Scenario]:
    """§1.8: a probe that never acknowledges (or acknowledges and never exits),
    ignores SIGTERM and has a SIGTERM-ignoring grandchild: the host must end
    the whole process group within its stages."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            rig.command({"t": "ignore_term"})
            rig.command({"t": "grandchild"})
            assert rig.link is not None
            rig.link.await_report("grandchild", rig.pace.patience_s)
            stage = rig.pace.stage_s
            bound = (1 if ack else 2) * stage + SLACK_S  # ack stage (unless acknowledged), then exit stage
            late = shutdown_with(rig, ack=ack, exit_after_ack=False, bound_s=bound)
            rig.recorder.exercise("EXT-1.8-host-shutdown-stages")
            if late:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-shutdown-stages",
                        "the extension was still running after both shutdown stages "
                        + ("(acknowledged, never exited)" if ack else "(never acknowledged)"),
                    ),
                    measured={"stage_s": stage, "still_running_after_s": round(bound, 3)},
                )
            # SIGKILL is delivered asynchronously: give a killed group a moment to die.
            pids = rig.link.pids()
            rig.until(lambda: not any(_alive(p) for p in pids), SLACK_S)
            leftover = [pid for pid in pids if _alive(pid)]
            rig.recorder.exercise("EXT-1.8-host-kills-process-group")
            if leftover:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-kills-process-group",
                        f"{len(leftover)} process(es) of the extension's group outlived its shutdown",
                    )
                )

        return Scenario("shutdown-ack-no-exit" if ack else "shutdown-no-ack", run)

    return make


def shutdown_exit_after_ack(api_version: str) -> Scenario:
    """§1.8: after the acknowledgement the host gives the extension its exit
    stage: the probe acknowledges and exits on its own a third of a stage
    later; a host that killed it before then did not wait. (The host's stage
    starts when it reads the acknowledgement, after the probe wrote it, so
    the probe's third of a stage is always shorter than the host's wait.)"""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {"extension": rig.handle})
        rig.until(lambda: _has_request(rig, "shutdown") or rig.stdin_closed or not link.connected)
        req = rig.next_request("shutdown", timeout=0.0)
        if req is not None:  # without one EXT-0-host-graceful-shutdown-request is judged by the other scenarios
            acked = rig.pace.clock()  # before the bytes: the host's exit stage starts after it reads them
            rig.respond(req.wire_id, {})
            ended = rig.until(lambda: not link.running(), rig.pace.stage_s / 3)
            rig.recorder.exercise("EXT-1.8-host-waits-for-exit")
            # Only an end seen within the third of a stage proves an early kill: a
            # harness that fell behind may look after the host rightly ended it.
            if ended and rig.pace.clock() - acked < rig.pace.stage_s / 3:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-waits-for-exit",
                        "the extension was ended right after acknowledging shutdown, before its exit stage ran out",
                    ),
                    measured={"stage_s": rig.pace.stage_s, "ended_within_s": round(rig.pace.stage_s / 3, 3)},
                )
            elif link.running():
                rig.command({"t": "exit", "code": 0})
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
        link.wait_exit(15.0)

    return Scenario("shutdown-exit-after-ack", run)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped by its new parent counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
