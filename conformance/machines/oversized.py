"""Host-to-extension sizes at their bounds: one step of ``ExtensionMachine``.

The spec bounds what a host writes in two places the harness can reach:
every frame, both ways, at 1 MiB (§0, stated in §2.7/§2.8/§2.25), and the
``reason`` of a settled lifecycle notification at 4 KiB of UTF-8 (§1.10,
only once lifecycle_events is negotiated and a settled event subscribed).
:func:`host_sizes_step` writes one value drawn by
``conformance.strategies.oversized`` at bound - 1, bound or bound + 1 and
judges only what the spec asks of the extension:

* a frame of at most 1 MiB is a frame like any other. Shaped as a request
  naming no method, it must be answered (JSON-RPC §5; with -32601, §3
  ``should``); shaped as a notification, nothing may answer it (JSON-RPC
  §4.1), and a probe request written after it must be answered.
* a frame of 1 MiB + 1 may be refused any way at all: an error with id null
  or with its id, silence, or ending the generation (closing stdout or
  exiting). Its request is registered as never owed an answer (intent
  ``oversize``) and as an unreadable frame (so an id-null refusal is legal).
  A probe request follows it; only an extension that stays alive and keeps
  reading is held to answering the probe, as it is to any request.
* a frame of exactly 1 MiB (the newline not counted) is one byte over the
  bound if the newline counts, which the text leaves open: at must level it
  is treated like 1 MiB + 1, and refusing it is a ``should`` warning
  (EXT-0-frame-bound-exact, :func:`judge_exact_bound`). So the must is
  judged at 1 MiB - 1.
* a settled notification with a 4,095- or 4,096-byte reason is a legal
  notification: nothing may answer it and the probe after it is answered.
  The harness never sends 4,097 bytes: that would break the host's own rule
  (EXT-1.10-host-settled-reason-bound), and the spec says nothing of what an
  extension does with it.

Memory stays bounded: the big frame is built from the drawn recipe, written
and dropped; the trace keeps its size, digest and padding recipe
(``transport.trace.padded_recipe``), so a replay regenerates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from conformance.peers.ext_host import ExtensionHostPeer, TargetGone
from conformance.protocol import jsonrpc
from conformance.protocol.framing import encode_frame, pad_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation
from conformance.strategies.oversized import BY_NAME, OFFSETS, Bound, Oversized, oversized
from conformance.transport.trace import padded_recipe

FRAME = BY_NAME["frame"]
SETTLED_REASON = BY_NAME["settled-reason"]
FRAME_SHAPES = ("request", "notification")  # what a host sends; a stray response is not
UNKNOWN_NOTIFICATION = "octet-conformance/no-such-notification"


def offsets_for(bound: Bound) -> tuple[int, ...]:
    """The frame bound is crossed on purpose (an extension must survive a
    hostile or broken host); a host-only bound never is (see module doc)."""
    return OFFSETS if bound.side == "both" else tuple(o for o in OFFSETS if o <= 0)


def settled_events(peer: ExtensionHostPeer) -> list[str]:
    """Settled lifecycle events the extension is subscribed to (§1.10)."""
    negotiated = peer.session.negotiated if peer.session else None
    if negotiated is None or not negotiated.has("lifecycle_events"):
        return []
    return [event for event in negotiated.lifecycle_events if event.endswith("/settled")]


def host_sizes_step(peer: ExtensionHostPeer, data: st.DataObject, *, method: str, tools: Sequence[str]) -> None:
    """Draw a host-sent bound, an offset and a shape; write it; judge it.
    ``method`` is a method the extension does not implement. Raises
    :class:`TargetGone` when the extension legally ended the generation."""
    events = settled_events(peer)
    # Tuples: Hypothesis builds each sampled_from strategy once (see ExtensionMachine.tools).
    bounds = (FRAME, SETTLED_REASON) if events else (FRAME,)
    bound = data.draw(st.sampled_from(bounds), label="host-sent bound")
    shapes = FRAME_SHAPES if bound is FRAME else None
    recipe = data.draw(oversized(bound, offsets=offsets_for(bound), shapes=shapes), label="size")
    if bound is FRAME:
        _frame_at(peer, recipe, method)
    else:
        event = data.draw(st.sampled_from(tuple(events)), label="settled event")
        _settled_reason_at(peer, recipe, event, tools[0] if tools else "tool")
        _probe(peer, method)


def _write_padded(peer: ExtensionHostPeer, frame: bytes, size: int, *, member: str, filler: str) -> None:
    data = pad_frame(frame, size, member=member, filler=filler)
    peer.write_raw(data, recipe=padded_recipe(frame, size, member=member, filler=filler))


def _frame_at(peer: ExtensionHostPeer, recipe: Oversized, method: str) -> None:
    assert peer.session is not None
    size, filler = recipe.size, recipe.filler
    # At the bound itself the newline may count (§0 is silent): a must only below it.
    refusable = recipe.size >= recipe.bound.limit
    if refusable:
        peer.mark_unreadable()  # an id-null refusal is one legal answer
    allowance = peer.session.unreadable_sent
    if recipe.shape == "request":
        intent = "oversize" if refusable else "unknown-method"
        rid, frame = peer.request_frame(method, {"pad": ""}, intent=intent)
        _write_padded(peer, frame, size, member="pad", filler=filler)
        if not refusable:
            peer.settle([rid])
            return
    else:
        rid = None
        peer.recorder.exercise("JSONRPC-4.1-no-reply-to-notification")  # any reply to it would be seen
        frame = encode_frame(dumps(jsonrpc.notification(UNKNOWN_NOTIFICATION, {"pad": ""})))
        _write_padded(peer, frame, size, member="pad", filler=filler)
    if not refusable:
        _probe(peer, method)
        return
    try:
        _probe_after_oversize(peer, method)
    finally:
        refused = peer.session.request(rid) if rid is not None else None
        answered = refused is not None and isinstance(refused.response, jsonrpc.Response | jsonrpc.ErrorResponse)
        if answered and peer.session.unreadable_sent > 0:
            # Refused with its own id: the id-null allowance made for it is spent.
            peer.session.unreadable_sent -= 1
        if not recipe.over:
            null_reply = peer.session.unreadable_sent < allowance
            judge_exact_bound(peer, handled=(answered if rid is not None else not null_reply) and peer.alive)


def settle_exact_bound(peer: ExtensionHostPeer, rid: Any, allowance: int) -> None:
    """After a refusable request of exactly 1 MiB of JSON was written (with
    ``allowance`` id-null refusals owed, its own included): wait for its
    answer, as long as a response may take and no id-null refusal came, then
    judge EXT-0-frame-bound-exact. The frame-size scenario and replay judge it
    the same way."""
    assert peer.session is not None
    request = peer.session.request(rid)
    if request is None:
        return
    deadline = peer.now() + peer.patience.response_s
    while request.response is None and peer.alive and peer.session.unreadable_sent >= allowance:
        remaining = deadline - peer.now()
        if remaining <= 0:
            break
        peer.pump(min(remaining, 0.5))
    answered = request.response is not None
    if answered and peer.session.unreadable_sent > 0:
        peer.session.unreadable_sent -= 1  # answered with its own id: the id-null allowance is spent
    judge_exact_bound(peer, handled=answered)


def judge_exact_bound(peer: ExtensionHostPeer, *, handled: bool) -> None:
    """EXT-0-frame-bound-exact: a frame of exactly 1 MiB of JSON was handled
    as an ordinary frame (a request answered with its own id, a notification
    left unanswered, the generation still going), or it was not."""
    peer.recorder.exercise("EXT-0-frame-bound-exact")
    if not handled:
        peer.recorder.violate(
            Violation(
                "EXT-0-frame-bound-exact",
                "a host frame of exactly 1,048,576 bytes of JSON (newline not counted) was refused, "
                "left unanswered, or ended the generation; it should be handled as an ordinary frame",
            )
        )


def _settled_reason_at(peer: ExtensionHostPeer, recipe: Oversized, event: str, tool: str) -> None:
    params: dict[str, Any] = {
        "session_id": "conformance-session",
        "run_id": "run-1",
        "turn_id": "turn-1",
        "outcome": "failed",
        "duration_ms": 1,
        "reason": "",
    }
    if event.startswith("tool/"):
        params |= {"tool_call_id": "call-1", "tool_name": tool}
    peer.recorder.exercise("JSONRPC-4.1-no-reply-to-notification")  # any reply to it would be seen
    frame = encode_frame(dumps(jsonrpc.notification(event, params)))
    payload_size = len(frame) - 1 + recipe.size  # the reason grows from 0 to exactly recipe.size bytes
    _write_padded(peer, frame, payload_size, member="reason", filler=recipe.filler)


def _probe(peer: ExtensionHostPeer, method: str) -> None:
    """A small request the extension must answer: it is still serving."""
    peer.settle([peer.request(method, {"probe": "after a value at its bound"}, intent="unknown-method")])


def _probe_after_oversize(peer: ExtensionHostPeer, method: str) -> None:
    """Wait for the probe until it is answered or the extension ends the
    generation (both legal); a live extension that never answers it is
    judged as for any unanswered request."""
    assert peer.session is not None and peer.process is not None
    rid = peer.request(method, {"probe": "after a frame over the bound"}, intent="unknown-method")
    probe = peer.session.request(rid)
    assert probe is not None
    deadline = peer.now() + peer.patience.response_s  # the target's clock (virtual when simulated)
    while probe.response is None and not peer.stdout_closed and peer.process.running():
        remaining = deadline - peer.now()
        if remaining <= 0:
            break
        peer.pump(min(remaining, 0.5))
    if probe.response is not None:
        return
    if peer.stdout_closed or not peer.process.running():
        raise TargetGone("the extension ended the generation after a frame over the 1 MiB bound (allowed)")
    peer.settle([rid], timeout=0.0)  # alive and reading, yet silent: unanswered like any request
