"""The Wave-1 scenario of a certification (§1.10, §1.11, §2.19-§2.24).

One generation under the full offer plus every Wave-1 service, whatever the
state machine drew:

1. every subscribed lifecycle notification, the settled ones once per
   outcome with the reason absent, null or a string, then a probe
   request: the extension must still answer it (EXT-1.10-keeps-serving);
2. a shortcut/trigger for every shortcut the harness admitted inside
   initialize, then a probe (EXT-1.11-keeps-serving);
3. on API 0.4 with session_entries negotiated, a hook/run of each declared
   model-turn hook, start then end (§1.4b); the answers are judged by
   EXT-1.4b-result-envelope (conformance/protocol/ext_results.py);
4. the first declared command, run without arguments, where an extension
   may use the Wave-1 services; every request it sends is judged by the
   session (conformance/protocol/ext_wave1.py) and answered by the scripted
   backends (conformance/peers/wave1_backend.py).

Any answer to a probe passes (it is an unknown method: -32601 is the
expected one, judged as for any unknown method); only silence within the
patience, or the end of the process, breaks the rule, in place of the
generic every-request-answered one, so one fault is reported once.
"""

from __future__ import annotations

from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.machines.extension import UNKNOWN_METHODS, contribution_requests, model_turn_requests
from conformance.manifest import Manifest
from conformance.peers.ext_host import ExtensionHostPeer, Launcher, Patience, TargetGone, spawn_process
from conformance.protocol import jsonrpc, limits
from conformance.protocol.ext_hosting import WAVE1_OFFERED
from conformance.protocol.ext_types import Offer
from conformance.protocol.framing import encode_frame
from conformance.protocol.strict_json import dumps
from conformance.transport.trace import INLINE_BYTES

# §1.10: the seven outcomes a settled event may carry.
OUTCOMES = ("completed", "failed", "cancelled", "interrupted", "frontend_disconnected", "shutdown", "limit_reached")
# A reason absent, null or a string (one at the 4 KiB bound is written by the
# state machine's sizes step, conformance/machines/oversized.py).
REASONS: tuple[Any, ...] = ("absent", None, "the turn ended")


def wave1_scenario(
    manifest: Manifest,
    recorder: Recorder,
    patience: Patience,
    offer: Offer,
    launcher: Launcher = spawn_process,
) -> None:
    """Run the scenario under ``offer`` (the full offer) plus the Wave-1 services."""
    if manifest.api_version == "0.1":
        return
    recorder.context = StepContext(scenario="wave1")
    full = Offer(
        offer.api_version,
        offer.protocol_version,
        offer.required_features,
        offer.optional_features + tuple(f for f in WAVE1_OFFERED if f not in offer.optional_features),
        offer.max_concurrent_requests,
    )
    peer = ExtensionHostPeer(manifest, recorder, patience, launcher=launcher)
    try:
        peer.start(full)
        if peer.initialize(full):
            # Each part a step of its own, so a trace shrinks to the part that broke a rule.
            for part in (lifecycle_observations, shortcut_triggers):
                peer.next_step()
                part(peer)
            model_turn_hooks(peer, manifest)
            commands = [r for r in contribution_requests(manifest) if r[0] == "command/execute"][:1]
            if commands and peer.alive:
                peer.next_step()
                peer.settle([peer.request(*commands[0])])
            if peer.alive:
                peer.next_step()
                peer.drain()
                peer.shutdown()
    except TargetGone:
        pass
    finally:
        peer.close()


def lifecycle_events(subscribed: tuple[str, ...]) -> list[dict[str, Any]]:
    """The §1.10 notifications a host may send for ``subscribed``: one per
    start event, and per settled event one per outcome, cycling the reasons."""
    frames: list[dict[str, Any]] = []
    for event in subscribed:
        base: dict[str, Any] = {"session_id": "conformance-session", "run_id": "run-w1", "turn_id": "turn-w1"}
        if event.startswith("tool/"):
            base |= {"tool_call_id": "call-w1", "tool_name": "conformance_tool"}
        if not event.endswith("settled"):
            frames.append(jsonrpc.notification(event, base))
            continue
        for index, outcome in enumerate(OUTCOMES):
            params = base | {"outcome": outcome, "duration_ms": index}
            reason = REASONS[index % len(REASONS)]
            if reason != "absent":
                params["reason"] = reason
            frames.append(jsonrpc.notification(event, params))
    return frames


def lifecycle_observations(peer: ExtensionHostPeer) -> None:
    """§1.10: every lifecycle notification the extension subscribed to, then a probe."""
    session = peer.session
    negotiated = session.negotiated if session is not None else None
    if negotiated is None or not negotiated.has("lifecycle_events") or not peer.alive:
        return
    frames = lifecycle_events(negotiated.lifecycle_events or limits.LIFECYCLE_EVENTS)
    peer.recorder.exercise("EXT-1.10-keeps-serving")
    _notify_then_probe(peer, frames, "after-lifecycle")


def shortcut_triggers(peer: ExtensionHostPeer) -> None:
    """§1.11: a trigger for every shortcut the host admitted, then a probe."""
    session = peer.session
    negotiated = session.negotiated if session is not None else None
    admitted = peer.children.wave1.shortcuts
    if negotiated is None or not negotiated.has("shortcuts") or not admitted or not peer.alive:
        return
    frames = [jsonrpc.notification("shortcut/trigger", {"id": sid}) for sid in admitted]
    peer.recorder.exercise("EXT-1.11-keeps-serving")
    _notify_then_probe(peer, frames, "after-trigger")


def model_turn_hooks(peer: ExtensionHostPeer, manifest: Manifest) -> None:
    """§1.4b: each declared model-turn hook once, in turn order (start, then
    end), when the extension speaks API 0.4 and negotiated session_entries."""
    session = peer.session
    negotiated = session.negotiated if session is not None else None
    if negotiated is None or negotiated.api_version != "0.4" or not negotiated.has("session_entries"):
        return
    for method, params in model_turn_requests(manifest):
        if not peer.alive:
            return
        peer.next_step()
        peer.settle([peer.request(method, params)])


def _notify_then_probe(peer: ExtensionHostPeer, frames: list[dict[str, Any]], intent: str) -> None:
    """Write ``frames`` and then a probe request, in writes a trace keeps
    whole; a probe left unanswered breaks the rule ``intent`` names
    (ext_session.UNANSWERED_BREAKS), in replay too. The probe is registered
    before the first write: an extension that exits part-way (its stdin
    closing under a later write) still owes it."""
    rid, probe = peer.request_frame(UNKNOWN_METHODS[0], {"probe": f"{intent} notifications"}, intent=intent)
    chunks: list[bytes] = [b""]
    for frame in frames:
        peer.recorder.exercise("JSONRPC-4.1-no-reply-to-notification")  # any reply to one would be seen
        data = encode_frame(dumps(frame))
        if chunks[-1] and len(chunks[-1]) + len(data) > INLINE_BYTES:
            chunks.append(b"")
        chunks[-1] += data
    if len(chunks[-1]) + len(probe) > INLINE_BYTES:
        chunks.append(b"")
    chunks[-1] += probe
    try:
        for chunk in chunks:
            peer.write_raw(chunk)
    except TargetGone:
        pass  # the probe is still owed: settle judges it
    peer.settle([rid])
