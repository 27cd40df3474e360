"""§1.9 cancellation (late responses, the grace period, no replay) and §2.6
progress sequences."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRequest, HostRig
from conformance.protocol.host_notifications import CancelWatch, cancel_sent
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import SLACK_S, TOOL, HostRejected, ready, start_call, tool_result

# -- §1.9 ---------------------------------------------------------------------------------


def cancel_then_late_response(api_version: str) -> Scenario:
    """Two calls; the first is cancelled: exactly one $/cancelRequest (API
    0.2+; on API 0.1 none at all), its waiter dropped, the late answer
    ignored and diagnosed, the second call intact. A host whose concurrency
    limit is 1 may write the second call only once the first frees its slot
    (at the cancel, or at the late answer): it is awaited after those."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        first, req1 = start_call(rig, "one")
        second, answer2 = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "two"}})
        if isinstance(answer2, OperationError):
            raise HostRejected(f"the host refused a tool call: {answer2.code} {answer2.message}")
        rig.op("cancel", {"call": first, "reason": "user"})
        rig.recorder.exercise("EXT-1.9-host-tombstone", "EXT-1.9-host-one-cancel-notification")
        if api_version != "0.1":
            cancel_told(rig, req1)
        settled = rig.settled(first)
        if settled is None or settled.params.get("outcome") != "cancelled":
            outcome = settled.params.get("outcome") if settled else "nothing"
            rig.recorder.violate(
                Violation("EXT-1.9-host-tombstone", f"a cancelled call settled as {outcome!r}, not cancelled")
            )
        rig.respond(req1.wire_id, tool_result(api_version, "late"))  # the late answer
        req2 = rig.until(lambda: _take(rig, "tool/call", {"text": "two"}))
        if req2 is None:
            raise HostRejected("the host never wrote the tool call to the extension")
        rig.respond(req2.wire_id, tool_result(api_version, "two"))
        other = rig.settled(second)
        rig.recorder.exercise("EXT-1.9-host-ignores-late-response")
        if other is None or other.params.get("outcome") != "result":
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-ignores-late-response", "a late answer to a cancelled call disturbed another call"
                )
            )
        if not [e for e in rig.events("diagnostic") if e.params.get("kind") == "stale-response"]:
            rig.recorder.violate(
                Violation("EXT-1.9-host-ignores-late-response", "a late answer to a cancelled call was not diagnosed")
            )
        # One serialized writer: once a later request arrives, every cancel
        # written for the first call has arrived before it (and every frame
        # the host wrote on its own since, such as a replay of the first call).
        third, answer3 = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "three"}})
        if isinstance(answer3, OperationError):
            raise HostRejected(f"the host refused a tool call: {answer3.code} {answer3.message}")
        req3 = rig.until(lambda: _take(rig, "tool/call", {"text": "three"}))
        if req3 is None:
            raise HostRejected("the host never wrote the tool call to the extension")
        if api_version != "0.1":
            no_replay(rig, req1)
        if api_version == "0.1":  # API 0.1 has no $/cancelRequest: the session fails any that arrived
            rig.recorder.exercise("EXT-1.9-host-no-cancel-0.1")
        if len(_cancels_of(rig, req1.wire_id)) > 1:
            rig.recorder.violate(
                Violation("EXT-1.9-host-one-cancel-notification", "more than one $/cancelRequest for one call")
            )
        rig.respond(req3.wire_id, tool_result(api_version, "three"))
        rig.settled(third)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("cancel-then-late-response", run)


def cancel_told(rig: HostRig, req: HostRequest) -> None:
    """§1.9: after the driver's cancel of ``req`` (read by the probe, not
    answered), wait for the ``$/cancelRequest`` naming it -- until it comes,
    the host ends the probe, or patience runs out -- and judge what came."""
    link = rig.link

    def over() -> str | None:
        if _cancels_of(rig, req.wire_id):
            return "cancel"
        return "ended" if link is None or not link.connected or rig.stdin_closed else None

    ended = rig.until(over, rig.recorder.deadline_s("EXT-1.9-host-sends-cancel", rig.pace.patience_s)) or "patience"
    watch = CancelWatch(req.method, req.wire_id, len(_cancels_of(rig, req.wire_id)), ended)
    rig.recorder.add(cancel_sent(watch))
    if ended == "patience":
        rig.recorder.missed_deadline("EXT-1.9-host-sends-cancel")  # later waits for it need not be long


def _take(rig: HostRig, method: str, arguments: Any) -> HostRequest | None:
    """The first queued request of ``method`` with these arguments, removed from the queue."""
    for req in rig.requests:
        if req.method == method and isinstance(req.params, dict) and req.params.get("arguments") == arguments:
            rig.requests.remove(req)
            return req
    return None


def no_replay(rig: HostRig, cancelled: HostRequest) -> None:
    """§1.9: a cancelled call's outcome is unknown to the host (the probe never
    settled it in time), so the operation is ambiguous; the probe tool declares
    no safety, so it may be unsafe: the host must not send it again on its own.
    Judged once a later request arrived (one serialized writer orders them)."""
    rig.recorder.exercise("EXT-1.9-host-no-replay")
    params = cancelled.params if isinstance(cancelled.params, dict) else {}
    replays = [
        r
        for r in rig.requests
        if r.method == cancelled.method and isinstance(r.params, dict)
        and r.params.get("name") == params.get("name") and r.params.get("arguments") == params.get("arguments")
    ]  # fmt: skip
    if replays:
        rig.recorder.violate(
            Violation(
                "EXT-1.9-host-no-replay",
                f"the cancelled {cancelled.method} {cancelled.wire_id!r} was sent again as {replays[0].wire_id!r}",
            )
        )


# Cancellation grace the probe asks for when the driver offers ``timing``
# (the spec's 2 s otherwise): short, so the scenario costs well under a second.
SCALED_GRACE_MS = 400
GRACE_S = 2.0  # §1.9 default


def cancel_grace(api_version: str) -> Scenario:
    """§1.9: a cancelled call the probe never settles. Within the grace plus
    a slack the host marks the generation degraded (a ``state`` event, which
    the contract requires for every transition) and ends the probe; ending it
    sooner than the grace is not judged here (the rule only bounds the wait)."""

    def run(rig: HostRig) -> None:
        grace_s = GRACE_S
        if rig.driver.has("timing"):
            rig.pace.timing = {**rig.pace.timing, "cancel_grace_ms": SCALED_GRACE_MS}
            grace_s = SCALED_GRACE_MS / 1000
        ready(rig, api_version)
        call, req = start_call(rig)
        rig.op("cancel", {"call": call, "reason": "user"})
        rig.recorder.exercise("EXT-1.9-host-terminates-after-grace")
        link, handle = rig.link, rig.handle
        assert link is not None
        rig.until(lambda: not link.running(), grace_s + SLACK_S)
        if link.running():
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-terminates-after-grace",
                    "the extension still ran after ignoring a cancellation for the whole grace",
                ),
                measured={"grace_s": grace_s, "waited_s": grace_s + SLACK_S},
            )
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return
        rig.until(lambda: _reported(rig, handle, "degraded"), SLACK_S)
        if not _reported(rig, handle, "degraded"):
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-terminates-after-grace",
                    "the generation was ended after the cancel grace without being reported degraded",
                )
            )

    return Scenario("cancel-grace", run)


def _reported(rig: HostRig, handle: str | None, state: str) -> bool:
    return any(e.params.get("extension") == handle and e.params.get("state") == state for e in rig.events("state"))


def _cancels_of(rig: HostRig, wire_id: Any) -> list[Any]:
    return [n for n in rig.notes("$/cancelRequest") if isinstance(n.params, dict) and n.params.get("id") == wire_id]


# -- §2.6 ---------------------------------------------------------------------------------


def progress_sequences(api_version: str) -> Scenario:
    """Repeated, decreasing and after-settlement progress is ignored; the
    host never reports it as accepted."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        if "request_progress" not in offered_features(rig):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # the host never offers progress: nothing to judge (the verdict stays untested)
        call, req = start_call(rig)
        for sequence in (1, 1, 0, 2):
            rig.send(_progress(req.wire_id, sequence))
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        rig.send(_progress(req.wire_id, 3))  # after settlement
        later, req2 = start_call(rig)  # the host handled the frame above once this settles
        rig.respond(req2.wire_id, tool_result(api_version))
        rig.settled(later)
        rig.recorder.exercise("EXT-2.6-host-ignores-invalid")
        seen = [e.params.get("sequence") for e in rig.events("progress") if e.params.get("call") == call]
        numbers = [s for s in seen if isinstance(s, int)]
        if numbers != seen or numbers != sorted(set(numbers)) or not set(numbers) <= {1, 2}:
            rig.recorder.violate(
                Violation(
                    "EXT-2.6-host-ignores-invalid", f"the host accepted progress sequences {seen} (sent 1, 1, 0, 2, 3)"
                )
            )
        if not [e for e in rig.events("diagnostic") if e.params.get("kind") == "progress-ignored"]:
            rig.recorder.violate(Violation("EXT-2.6-host-ignores-invalid", "ignored progress was not diagnosed"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("progress-sequences", run)


def offered_features(rig: HostRig) -> list[str]:
    params = rig.initialize_params
    protocol = params.get("protocol") if isinstance(params, dict) else None
    offered = protocol.get("optional_features") if isinstance(protocol, dict) else None
    return [f for f in offered if isinstance(f, str)] if isinstance(offered, list) else []


def _progress(wire_id: Any, sequence: int) -> dict[str, Any]:
    event = {"type": "status", "message": f"step {sequence}"}
    return {
        "jsonrpc": "2.0",
        "method": "$/progress",
        "params": {"request_id": wire_id, "sequence": sequence, "event": event},
    }
