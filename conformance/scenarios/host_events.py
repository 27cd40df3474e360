"""§1.10 lifecycle events, §1.11 wave-1 notifications and §1.4b model-turn hooks."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRequest, HostRig
from conformance.protocol.host_initialize import offer_from
from conformance.protocol.limits import (
    MAX_FRAME_BYTES,
    MAX_SETTLED_REASON_BYTES,
    MESSAGE_BATCH_DELTAS,
)
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import offered_features
from conformance.scenarios.host_children import _child
from conformance.scenarios.host_initialize import _protocol
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, HostRejected, initialize_result, start_call, tool_result

# -- §1.10 ----------------------------------------------------------------------------------

LIFECYCLE_SUBSCRIBED = ["turn/started", "turn/settled"]
LIFECYCLE_IDS = {"session_id": "session-1", "run_id": "run-1", "turn_id": "turn-1"}
# Longer than the 4 KiB a settled reason may carry: a host cuts it or drops the event.
LONG_REASON = "r" * (MAX_SETTLED_REASON_BYTES + 100)


def lifecycle_events(api_version: str) -> Scenario:
    """§1.10 (driver capability ``lifecycle``, API 0.2+): the probe negotiates
    lifecycle_events subscribed to turn events only; the driver reports a turn
    start, a session start (not subscribed: never sent) and a turn settlement
    with an over-long reason. The session judges every event frame (identifiers,
    settled fields, reason bound, subscription); a later call orders them."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("lifecycle"):
            return  # the checks stay unexercised: reported skip/untested, never pass

        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "lifecycle_events" not in offer_from(params).offered:
                return result
            features = [*result["protocol"]["features"], "lifecycle_events"]
            return _protocol(result, features=features, lifecycle_events=LIFECYCLE_SUBSCRIBED)

        loaded = rig.load(api_version, CONTRIBUTES, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        if "lifecycle_events" in offered_features(rig):
            settled = {**LIFECYCLE_IDS, "outcome": "completed", "duration_ms": 12, "reason": LONG_REASON}
            for event, params in (
                ("turn/started", LIFECYCLE_IDS),
                ("session/started", {"session_id": LIFECYCLE_IDS["session_id"]}),
                ("turn/settled", settled),
            ):
                rig.op("observe", {"extension": rig.handle, "event": event, "params": params})
            if rig.driver.has("wave1"):  # §1.11: shortcuts is not negotiated here, so no trigger is sent
                rig.op("observe", {"extension": rig.handle, "event": "shortcut/trigger", "params": {"id": SHORTCUT}})
            call, req = start_call(rig)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("lifecycle-events", run)


# -- §1.11 ----------------------------------------------------------------------------------

SHORTCUT = "probe.shortcut"
# An owner no host issued to the probe (§2): a made-up instance id.
FORGED_OWNER = {"extension_instance_id": "probe-forged-instance", "process_generation": 1, "session_id": "forged"}
SHORTCUT_REGISTER = {"id": SHORTCUT, "key": "ctrl+shift+p", "description": "the probe's shortcut"}
# One past the 64 deltas a coalesced batch may represent (limits.MESSAGE_BATCH_DELTAS).
OVERFULL_BATCH = {"message_id": "message-1", "delta": "x", "deltas": MESSAGE_BATCH_DELTAS + 1}


def wave1_notifications(api_version: str) -> Scenario:
    """§1.11 (driver capability ``wave1``, API 0.2+): when the host offers
    shortcuts the probe registers one inside the initialize request (§2.20)
    and accepts the feature; the driver then reports a press of it, a press
    of an unknown shortcut (never delivered) and an over-full message batch
    (never delivered as such). The session judges every Wave-1 frame (a
    notification, negotiated, an admitted registration, the batch shape); a
    later call orders them."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("wave1"):
            return  # the checks stay unexercised: reported skip/untested, never pass

        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "shortcuts" not in offer_from(params).offered or rig.session is None:
                return result
            init = next(c.id for c in rig.session.calls.values() if c.method == "initialize")
            # Awaited, not judged: a host may answer it only once initialize is answered.
            rig.child_request("shortcut-1", "shortcut/register", {"parent_request_id": init, **SHORTCUT_REGISTER})
            rig.until(lambda: rig.answers.get("shortcut-1"))
            return _protocol(result, features=[*result["protocol"]["features"], "shortcuts"])

        loaded = rig.load(api_version, CONTRIBUTES, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        for event, params in (
            ("shortcut/trigger", {"id": SHORTCUT}),
            ("shortcut/trigger", {"id": "probe.unknown"}),
            ("message/updated", OVERFULL_BATCH),
            ("message/settled", {"message_id": "message-2"}),
            ("message/updated", {"message_id": "message-2", "delta": "x", "deltas": 1}),  # after it settled
        ):
            rig.op("observe", {"extension": rig.handle, "event": event, "params": params})
        if rig.session is not None and rig.session.negotiated is not None and rig.session.negotiated.has("shortcuts"):
            # §2: the initialize request (the registrations' parent) has settled and
            # no resource_owner is given: refused with -32002 (the session judges it).
            init = next(c.id for c in rig.session.calls.values() if c.method == "initialize")
            late = {"parent_request_id": init, **SHORTCUT_REGISTER, "id": "probe.late"}
            _child(rig, "shortcut-2", "shortcut/register", late)
            # §2: an owner this generation never issued is refused, never coerced
            # into a valid one (the session judges it).
            forged = {**late, "id": "probe.forged", "resource_owner": FORGED_OWNER}
            _child(rig, "shortcut-3", "shortcut/register", forged)
        call, req = start_call(rig)
        # Every frame the observations caused arrived before this call and was
        # judged: a refused over-full or late batch held the batch rules too.
        rig.recorder.exercise("EXT-1.11-host-message-batch-shape", "EXT-1.11-host-batches-before-settled")
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("wave1-notifications", run)


# -- §1.4b ----------------------------------------------------------------------------------

TURN_HOOK = "model_turn_start"
TURN_PAYLOAD = {"kind": TURN_HOOK, "run_id": "run:001", "turn_index": 0, "timestamp_ms": 1791129600000}
CONTINUE = {"action": "continue"}
# §1.4b: answers both model-turn observations refuse (the ordinary envelope
# with session_operation continue is all they take). "Unrelated hook effects"
# are not sent: the text names none of them.
BAD_TURN_DECISIONS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"disposition": {"action": "deny", "reason": "the probe objects"}}, "a deny disposition"),
    ({"disposition": CONTINUE, "session_operation": {"action": "cancel"}}, "session_operation cancel"),
    (
        {"disposition": CONTINUE, "session_operation": {"action": "replace_compaction"}},
        "session_operation replace_compaction",
    ),
    (
        {"disposition": CONTINUE, "context": [{"label": "probe", "content": "x", "placement": "system_suffix"}]},
        "a prompt-context contribution",
    ),
)
# §1.4b: an answer over the §0 frame bound (by more than the line feed whose
# counting the text leaves open) makes the invocation fail.
OVERSIZED_TURN_BYTES = MAX_FRAME_BYTES + 64 * 1024


def model_turn_hooks(api_version: str) -> Scenario:
    """§1.4b (API 0.4): the manifest declares model_turn_start; when the host
    offers session_entries the probe accepts it and the driver runs the hook
    with a valid payload (the session judges the payload the host writes:
    kind, run_id, turn_index, timestamp_ms). Then the hook is run once per
    decision the host must refuse (deny, session_operation cancel or
    replace_compaction, prompt context) and once more, answered with a frame
    over the bound: none of these may settle as a result. A host that never
    offers session_entries leaves the rules untested."""

    def run(rig: HostRig) -> None:
        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "session_entries" not in offer_from(params).offered:
                return result
            return _protocol(result, features=[*result["protocol"]["features"], "session_entries"])

        loaded = rig.load(api_version, {**CONTRIBUTES, "hooks": [TURN_HOOK]}, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        if "session_entries" in offered_features(rig) and (turn := _turn_hook(rig)) is not None:
            rig.respond_error(turn[1].wire_id, -32603, "the probe declines")
            rig.settled(turn[0])
            for result, what in BAD_TURN_DECISIONS:
                if (turn := _turn_hook(rig)) is None:
                    break
                rig.respond(turn[1].wire_id, result)
                judge_refused(rig, "EXT-1.4b-host-rejects-bad-decisions", turn[0], f"a model-turn answer with {what}")
            if (turn := _turn_hook(rig)) is not None:
                frame = dumps(rig.answering(turn[1].wire_id, {"disposition": CONTINUE}))
                rig.write(padded(frame, OVERSIZED_TURN_BYTES) + b"\n", {"shape": f"padded to {OVERSIZED_TURN_BYTES}"})
                what = f"a model-turn answer of {OVERSIZED_TURN_BYTES:,} bytes (bound {MAX_FRAME_BYTES:,})"
                judge_refused(rig, "EXT-1.4b-host-oversize-fails", turn[0], what)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("model-turn-hooks", run)


def _turn_hook(rig: HostRig) -> tuple[str, HostRequest] | None:
    """Run model_turn_start through the driver: (call id, the frame the probe got), or None."""
    call, refused = rig.call("hook/run", {"hook": TURN_HOOK, "payload": dict(TURN_PAYLOAD)})
    req = None if isinstance(refused, OperationError) else rig.next_request("hook/run")
    return None if req is None else (call, req)


def judge_refused(rig: HostRig, requirement: str, call: str, what: str) -> None:
    """An answer the host must refuse: ``call`` may settle as anything but a
    ``result`` (``failed`` is the contract's word; ``error`` passes too). A
    call that never settles is not these rules' concern."""
    settled = rig.settled(call)
    if settled is None:
        return
    rig.recorder.exercise(requirement)
    if settled.params.get("outcome") == "result":
        rig.recorder.violate(Violation(requirement, f"the host accepted {what}"))


def padded(payload: bytes, size: int | None) -> bytes:
    """``payload`` (a JSON object) grown to ``size`` bytes with spaces before its last brace."""
    if size is None or size <= len(payload):
        return payload
    return payload[:-1] + b" " * (size - len(payload)) + payload[-1:]
