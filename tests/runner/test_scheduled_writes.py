"""ExtensionHostPeer.perform: schedules executed against the simulated
reference (deterministic, so each ordering relation is observed exactly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer
from conformance.peers.simulated import simulated_reference
from conformance.protocol import jsonrpc
from conformance.runner.extension import full_offer
from conformance.transport.schedule import Schedule, Write

MANIFEST = Path(__file__).resolve().parents[2] / "conformance/reference/extension/manifests/api-0.2/extension.toml"
SLOW = {"name": "slow", "arguments": {"steps": 3, "delay_ms": 100}, "context": {}}


def started() -> ExtensionHostPeer:
    peer = ExtensionHostPeer(load_manifest(MANIFEST), Recorder(), launcher=simulated_reference)
    offer = full_offer("0.2")
    peer.start(offer)
    assert peer.initialize(offer)
    return peer


def writes(peer: ExtensionHostPeer) -> list[dict[str, Any]]:
    assert peer.trace is not None
    return [e for e in peer.trace.entries if e.get("dir") == "host->target"][1:]  # after initialize


def test_a_cancel_held_until_the_first_progress_frame() -> None:
    peer = started()
    call = peer.prepare_request("tool/call", SLOW)
    before = peer.frames_observed
    ids = peer.perform(Schedule((Write((call,)), Write((peer.prepare_cancel(call.id),), after=1))))
    peer.settle(ids)
    assert peer.session is not None
    response = peer.session.request(call.id).response  # type: ignore[union-attr]
    # the first $/progress came at 100 ms; the cancel stopped the second step
    assert isinstance(response, jsonrpc.ErrorResponse) and response.code == -32800
    assert [w["after"] for w in writes(peer)] == [before, before + 1]
    assert not peer.recorder.violations
    peer.close()


def test_split_pieces_are_separate_writes_of_one_step() -> None:
    peer = started()
    call = peer.prepare_request("tool/call", {"name": "echo", "arguments": {"text": "hi"}, "context": {}})
    peer.settle(peer.perform(Schedule((Write((call,), split_at=(1, 10)),))))
    pieces = writes(peer)
    assert len(pieces) == 3 and "requests" in pieces[0] and "requests" not in pieces[1]
    assert not peer.recorder.violations
    peer.close()


def test_a_cancel_held_until_the_answer_is_ignored_by_the_extension() -> None:
    peer = started()
    call = peer.prepare_request("tool/call", SLOW)
    cancel = peer.prepare_cancel(call.id)
    ids = peer.perform(Schedule((Write((call,)), Write((cancel,), awaits=(call.id,)))))
    peer.drain(0.5)
    assert peer.session is not None
    response = peer.session.request(ids[0]).response  # type: ignore[union-attr]
    assert isinstance(response, jsonrpc.Response)  # finished before the cancel was written
    assert writes(peer)[1]["awaits"] == [call.id]
    assert not peer.recorder.violations
    peer.close()
