"""The machine's host-sent-bounds step (conformance/machines/oversized.py),
against the simulated reference (deterministic, no process) -- as is, or
wrapped so it meets a frame over the bound in one of the ways an extension
may (refuse with id null or with its id, stay silent, end the generation) or
may not (stay alive but stop answering)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conformance.strategies.oversized import BY_NAME, Oversized
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.evidence import Recorder
from conformance.machines.oversized import _frame_at, _probe, _settled_reason_at, host_sizes_step, offsets_for
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Patience, TargetGone
from conformance.peers.simulated import simulated_reference
from conformance.protocol import limits
from conformance.protocol.framing import Frame, FrameDecoder
from conformance.runner.extension import full_offer
from conformance.transport.simulated import SimulatedTarget
from conformance.transport.target import Received, StdoutClosed
from conformance.transport.trace import decode_bytes

MANIFEST = Path(__file__).resolve().parents[2] / "conformance/reference/extension/manifests/api-0.2/extension.toml"
METHOD = "octet-conformance/no-such-method"
FRAME, REASON = BY_NAME["frame"], BY_NAME["settled-reason"]


@dataclass
class Refusing:
    """The simulated reference behind a filter: a frame over the bound is
    handled by ``policy`` instead of reaching it; everything else passes."""

    inner: SimulatedTarget
    policy: str  # "reference" | "null-error" | "id-error" | "silent" | "exit" | "deaf"
    queue: list[Received | StdoutClosed] = field(default_factory=list)
    gone: bool = False
    deaf: bool = False
    bytes_written: int = 0
    stderr_total: int = 0

    def __post_init__(self) -> None:
        self.decoder = FrameDecoder(max_frame_bytes=2 * limits.MAX_FRAME_BYTES)  # sees the oversized frame whole

    def write(self, data: bytes, *, timeout: float) -> None:
        if self.gone:
            raise BrokenPipeError("gone")
        for event in self.decoder.feed(data):
            assert isinstance(event, Frame)
            if self.deaf:
                continue
            if len(event.payload) <= limits.MAX_FRAME_BYTES or self.policy == "reference":
                self.inner.write(event.payload + b"\n", timeout=timeout)
            else:
                self._refuse(event.payload)

    def _refuse(self, payload: bytes) -> None:
        rid = json.loads(payload).get("id")
        reply = {"jsonrpc": "2.0", "error": {"code": -32600, "message": "frame too large"}}
        if self.policy == "null-error":
            self._emit({**reply, "id": None})
        elif self.policy == "id-error" and rid is not None:
            self._emit({**reply, "id": rid})
        elif self.policy == "exit":
            self.gone = True
            self.queue.append(StdoutClosed(self.inner.now()))
        elif self.policy == "deaf":
            self.deaf = True

    def _emit(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        self.queue.append(Received(Frame(10_000 + len(self.queue), payload, "lf"), self.inner.now()))

    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        if self.queue:
            return self.queue.pop(0)
        return self.inner.next_event(timeout)

    def running(self) -> bool:
        return not self.gone and self.inner.running()

    def now(self) -> float:
        return self.inner.now()

    def __getattr__(self, name: str) -> Any:  # close_stdin, wait_exit, kill_group, stderr_excerpt ...
        return getattr(self.inner, name)


def started(policy: str = "reference", features: tuple[str, ...] | None = None) -> ExtensionHostPeer:
    def launch(manifest: Any) -> Any:
        return Refusing(simulated_reference(manifest), policy)

    peer = ExtensionHostPeer(load_manifest(MANIFEST), Recorder(), Patience(response_s=2.0), launcher=launch)
    offer = full_offer("0.2")
    peer.start(offer)
    assert peer.initialize(offer)
    return peer


def violated(peer: ExtensionHostPeer) -> set[str]:
    return set(peer.recorder.violations)


def host_writes(peer: ExtensionHostPeer) -> list[dict[str, Any]]:
    assert peer.trace is not None
    return [e for e in peer.trace.entries if e.get("dir") == "host->target"][1:]  # after initialize


@pytest.mark.parametrize("shape", ["request", "notification"])
@pytest.mark.parametrize("offset", [-1, 0])
def test_frames_up_to_the_bound_are_served_and_regenerate_from_the_trace(offset: int, shape: str) -> None:
    peer = started()
    _frame_at(peer, Oversized(FRAME, offset, shape, "☃"), METHOD)
    assert violated(peer) == set()
    assert peer.session is not None and peer.session.unanswered() == []
    big = host_writes(peer)[0]
    assert big["size"] == limits.MAX_FRAME_BYTES + offset + 1 and "text" not in big  # never kept whole
    data = decode_bytes(big)
    assert data is not None and len(data) == big["size"]
    assert "pad" in json.loads(data)["params"]
    peer.close()


@pytest.mark.parametrize("shape", ["request", "notification"])
@pytest.mark.parametrize("policy", ["reference", "null-error", "id-error", "silent"])
def test_a_frame_over_the_bound_may_be_refused_any_way(policy: str, shape: str) -> None:
    peer = started(policy)
    _frame_at(peer, Oversized(FRAME, 1, shape, "x"), METHOD)
    assert violated(peer) == set()
    assert peer.session is not None and peer.session.unanswered() == []  # the oversized request is owed nothing
    if policy == "id-error" and shape == "request":
        assert peer.session.unreadable_sent == 0  # the id-null allowance was spent by the id'd refusal
    _probe(peer, METHOD)  # and the generation goes on
    assert violated(peer) == set()
    peer.close()


def test_ending_the_generation_on_a_frame_over_the_bound_is_allowed() -> None:
    peer = started("exit")
    with pytest.raises(TargetGone):
        _frame_at(peer, Oversized(FRAME, 1, "request", "x"), METHOD)
    assert violated(peer) == set()
    peer.close()


def test_staying_alive_but_answering_nothing_after_it_is_not() -> None:
    peer = started("deaf")
    _frame_at(peer, Oversized(FRAME, 1, "request", "x"), METHOD)
    assert violated(peer) == {"JSONRPC-5-every-request-answered"}
    peer.close()


@pytest.mark.parametrize("offset", [-1, 0])
@pytest.mark.parametrize("filler", ["x", "é", "\u2028", "𝄞"])
def test_settled_reasons_sit_exactly_at_the_bound(offset: int, filler: str) -> None:
    peer = started()
    _settled_reason_at(peer, Oversized(REASON, offset, "plain", filler), "tool/settled", "echo")
    _probe(peer, METHOD)
    assert violated(peer) == set()
    data = decode_bytes(host_writes(peer)[0])
    assert data is not None
    params = json.loads(data)["params"]
    assert len(params["reason"].encode()) == limits.MAX_SETTLED_REASON_BYTES + offset
    assert params["tool_name"] == "echo" and params["outcome"] == "failed"
    peer.close()


def test_a_host_only_bound_is_never_crossed() -> None:
    assert offsets_for(FRAME) == (-1, 0, 1)
    assert offsets_for(REASON) == (-1, 0)


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_the_step_draws_only_host_sent_bounds(data: st.DataObject) -> None:
    peer = started()
    try:
        host_sizes_step(peer, data, method=METHOD, tools=["echo"])
        assert violated(peer) == set()
        sizes = [e["size"] for e in host_writes(peer) if "size" in e]
        assert sizes and all(abs(s - 1 - limits.MAX_FRAME_BYTES) <= 1 or s < 8192 for s in sizes)
    finally:
        peer.close()
