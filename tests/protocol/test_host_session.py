"""ProbeSession: a host judged frame by frame from the probe's side."""

from __future__ import annotations

import json
from typing import Any

import pytest
from host_frames import (
    CONTEXT,
    error,
    frame,
    initialize_params,
    initialize_result,
    manifest,
    notification,
    request,
    result,
    tool_call,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol.framing import FrameDecoder
from conformance.protocol.host_session import ProbeSession
from conformance.protocol.host_tables import UNRESOLVED_CHILDREN, Child, Life, LifeInput
from conformance.protocol.jsonrpc import decode_event
from conformance.protocol.limits import MAX_CHILD_ID_BYTES, MAX_FRAME_BYTES, MAX_OUTSTANDING_CHILDREN
from conformance.protocol.violations import Exercise, Finding, Violation
from conformance.requirements import load_catalog

KNOWN = {r.id for r in load_catalog()}


def violated(findings: list[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def ready(api: str = "0.2", *, features: list[str] | None = None, limit: int = 2, **m: Any) -> ProbeSession:
    s = ProbeSession(manifest=manifest(api, **m))
    assert violated(s.received(request(1, "initialize", initialize_params(api)))) == []
    s.answered(1, result=initialize_result(api, features=features, limit=limit))
    assert s.life is Life.READY
    return s


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_a_careful_host_session_has_no_violation(api: str) -> None:
    s = ready(api)
    out = s.received(request(2, "tool/call", tool_call(api)))
    s.answered(2, result={"content": "ok", "is_error": False})
    out += s.received(request(3, "command/execute", {"name": "hello", "arguments": [], "context": CONTEXT}))
    s.answered(3, result={"text": "hi"})
    out += s.received(request(4, "shutdown", {}))
    s.answered(4, result={})
    out += s.lifecycle_event(LifeInput.STDIN_CLOSED)
    assert violated(out) == []
    assert s.life is Life.STOPPED


def test_nothing_before_initialize() -> None:
    s = ProbeSession(manifest=manifest())
    assert violated(s.received(request(1, "tool/call", tool_call()))) == ["EXT-1.1-host-initialize-first"]


def test_nothing_but_shutdown_while_initialize_is_unanswered() -> None:
    s = ProbeSession(manifest=manifest())
    s.received(request(1, "initialize", initialize_params()))
    assert violated(s.received(request(2, "tool/call", tool_call()))) == ["EXT-1.1-host-awaits-initialize"]
    assert violated(s.received(request(3, "shutdown", {}))) == []


def test_nothing_routed_to_a_refused_child_names_the_rejection_rule() -> None:
    s = ProbeSession(manifest=manifest())
    s.received(request(1, "initialize", initialize_params()))
    out = s.answered(1, result={**initialize_result(), "api_version": "0.4"})
    assert Exercise("EXT-1.1-host-rejects-api-version-mismatch") in out
    assert s.life is Life.REJECTED
    assert violated(s.received(request(2, "tool/call", tool_call()))) == ["EXT-1.1-host-rejects-api-version-mismatch"]
    assert violated(s.host_reported_ready()) == ["EXT-1.1-host-rejects-api-version-mismatch"]
    assert violated(s.received(request(3, "shutdown", {}))) == []


def test_initialize_error_leaves_no_child() -> None:
    s = ProbeSession(manifest=manifest())
    s.received(request(1, "initialize", initialize_params()))
    s.answered(1, error={"code": -32603, "message": "boom"})
    assert violated(s.received(notification("turn/started", {}))) == ["EXT-1.1-host-rejected-child-isolated"]


def test_a_host_may_cancel_its_own_unanswered_initialize_on_api_0_2() -> None:
    s = ProbeSession(manifest=manifest())
    s.received(request(1, "initialize", initialize_params()))
    assert violated(s.received(notification("$/cancelRequest", {"id": 1}))) == []
    assert violated(s.received(notification("$/cancelRequest", {"id": 9}))) == ["EXT-1.1-host-awaits-initialize"]


def test_no_request_after_shutdown_but_notifications_may_trail() -> None:
    s = ready()
    s.received(request(2, "shutdown", {}))
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == []
    assert violated(s.received(request(3, "tool/call", tool_call()))) == ["EXT-1.8-host-nothing-after-shutdown"]


def test_stdin_closed_without_shutdown() -> None:
    s = ready()
    assert violated(s.lifecycle_event(LifeInput.STDIN_CLOSED)) == ["EXT-0-host-graceful-shutdown-request"]
    assert violated(ready().lifecycle_event(LifeInput.HOST_GONE)) == []


def test_envelope_and_frame_rules_are_reported_under_host_ids() -> None:
    s = ready()
    assert violated(s.received(frame({"jsonrpc": "1.0", "method": "x/unknown"}))) == ["JSONRPC-4-host-envelope"]
    assert violated(s.received(frame(b'{"jsonrpc": "2.0", "meth'))) == ["EXT-0-host-single-writer"]
    assert violated(s.received(frame(b"[1, 2]"))) == ["EXT-0-host-one-object-per-line"]
    dup = b'{"jsonrpc": "2.0", "method": "x", "method": "y"}'
    assert violated(s.received(frame(dup))) == ["EXT-0-host-unique-member-names"]
    out = s.received(frame({"jsonrpc": "2.0", "id": 1.5, "method": "status/collect"}))
    assert "JSONRPC-4-host-id-not-fractional" in violated(out)
    assert all(not f.requirement.startswith(("EXT-0-frame", "EXT-0-json")) for f in out)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_frame_bound_n_minus_1_n_n_plus_1(extra: int) -> None:
    s = ready()
    head = b'{"jsonrpc":"2.0","method":"x","params":{"pad":"'
    tail = b'"}}'
    payload = head + b"a" * (MAX_FRAME_BYTES + extra - len(head) - len(tail)) + tail
    assert len(payload) == MAX_FRAME_BYTES + extra
    decoder = FrameDecoder(max_frame_bytes=MAX_FRAME_BYTES)
    events = decoder.feed(payload + b"\n")
    got = [r for e in events for r in violated(s.received(decode_event(e)))]
    assert got == (["EXT-0-host-frame-bound"] if extra > 0 else [])


def test_byte_by_byte_equals_whole() -> None:
    data = (
        b"".join(
            json.dumps(m).encode() + b"\n"
            for m in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()},
                {"jsonrpc": "2.0", "id": 2, "method": "tool/call", "params": tool_call()},
            )
        )
        + b"trailing junk"
    )

    def run(chunks: list[bytes]) -> list[str]:
        s, decoder, out = ProbeSession(manifest=manifest()), FrameDecoder(max_frame_bytes=MAX_FRAME_BYTES), []
        for chunk in chunks:
            for e in decoder.feed(chunk):
                out += violated(s.received(decode_event(e)))
                if s.life is Life.INITIALIZING:
                    s.answered(1, result=initialize_result())
        for e in decoder.close():
            out += violated(s.received(decode_event(e)))
        return out

    whole = run([data])
    assert whole == run([data[i : i + 1] for i in range(len(data))])
    assert whole == ["EXT-0-host-one-object-per-line"]  # the junk line only


def test_request_ids_distinct_fresh_and_never_a_tombstone() -> None:
    s = ready(limit=8)
    s.received(request(2, "tool/call", tool_call()))
    assert violated(s.received(request(2, "tool/call", tool_call()))) == ["EXT-0-host-request-ids-distinct"]
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    assert violated(s.received(request(2, "tool/call", tool_call()))) == ["EXT-0-host-request-ids-fresh"]
    s.received(request(5, "tool/call", tool_call()))
    s.received(notification("$/cancelRequest", {"id": 5}))
    assert violated(s.received(request(5, "tool/call", tool_call()))) == ["EXT-1.9-host-no-tombstone-reuse"]


def test_string_ids_cannot_be_parents() -> None:
    s = ready()
    assert violated(s.received(request("a", "tool/call", tool_call()))) == ["EXT-2-host-numeric-request-ids"]
    assert violated(s.received(request("b", "status/collect", {"surface": "status", "context": CONTEXT}))) == []


def test_cancellation_ids() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == []
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == ["EXT-1.9-host-one-cancel-notification"]
    assert violated(s.received(notification("$/cancelRequest", {"id": 99}))) == ["EXT-1.9-host-cancel-known-id"]
    assert violated(s.received(request(7, "$/cancelRequest", {"id": 2}))) == ["EXT-1.9-host-cancel-shape"]


def test_cancel_after_answer_is_a_race_once() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == []
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == ["EXT-1.9-host-one-cancel-notification"]


def test_no_cancel_on_api_0_1() -> None:
    s = ready("0.1")
    s.received(request(2, "tool/call", tool_call("0.1")))
    assert violated(s.received(notification("$/cancelRequest", {"id": 2}))) == ["EXT-1.9-host-no-cancel-0.1"]


@pytest.mark.parametrize("busy", [1, 2, 3])
def test_concurrency_n_minus_1_n_n_plus_1(busy: int) -> None:
    s = ready(limit=2)  # the probe accepts 2 of the 4 offered
    out: list[Finding] = []
    for i in range(busy):
        out += s.received(request(10 + i, "tool/call", tool_call()))
    assert violated(out) == (["EXT-0-host-concurrency-admission"] if busy > 2 else [])


@pytest.mark.parametrize(
    ("busy", "expected"),
    [(4, []), (5, ["EXT-1.1-host-caps-max-concurrent"]), (9, ["EXT-0-host-concurrency-admission"])],
)
def test_the_host_caps_what_the_probe_accepts(busy: int, expected: list[str]) -> None:
    s = ready(limit=8)  # the host offered 4; the probe accepts 8
    out: list[Finding] = []
    for i in range(busy):
        out += s.received(request(10 + i, "tool/call", tool_call()))
    assert violated(out)[-1:] == expected
    assert Exercise("EXT-1.1-host-caps-max-concurrent") in out


def test_cancelled_requests_free_their_slot() -> None:
    s = ready(limit=1)
    s.received(request(2, "tool/call", tool_call()))
    s.received(notification("$/cancelRequest", {"id": 2}))
    assert violated(s.received(request(3, "tool/call", tool_call()))) == []


def test_request_methods_sent_as_notifications() -> None:
    s = ready()
    assert violated(s.received(notification("tool/call", tool_call()))) == ["EXT-1.2-host-tool-call-shape"]


# -- children ---------------------------------------------------------------


def confirm(parent: Any = 2) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": "ok?"}
    if parent is not None:
        params["parent_request_id"] = parent
    return params


def test_an_admitted_confirmation_is_answered_with_confirmed() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("c1", "confirmation/request", confirm())
    assert violated(s.received(result("c1", {"confirmed": False}))) == []
    assert violated(s.received(result("c1", {"confirmed": False}))) == ["JSONRPC-5-host-one-response"]
    s.sent_child("c2", "confirmation/request", confirm())
    assert violated(s.received(result("c2", {"confirmed": "yes"}))) == ["EXT-2.2-host-answer-shape"]


@pytest.mark.parametrize(
    ("parent", "expected"),
    [(None, "EXT-2-host-refuses-missing-parent"), (99, "EXT-2-host-refuses-inactive-parent")],
)
def test_children_that_must_be_refused(parent: Any, expected: str) -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("c", "confirmation/request", confirm(parent))
    assert violated(s.received(result("c", {"confirmed": True}))) == [expected]
    s.sent_child("d", "confirmation/request", confirm(parent))
    assert violated(s.received(error("d"))) == []


def test_settled_parent_orphans_children_and_refuses_new_ones() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("c", "confirmation/request", confirm())
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    assert [c.id for c in s.orphans()] == ["c"]
    assert violated(s.received(notification("$/cancelRequest", {"id": "c"}))) == []
    assert s.children[("str", "c")].state is Child.CANCELLED
    s.sent_child("late", "confirmation/request", confirm())
    assert violated(s.received(result("late", {"confirmed": True}))) == ["EXT-2-host-refuses-inactive-parent"]


def test_cancelling_a_parent_orphans_its_children() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("c", "confirmation/request", confirm())
    s.received(notification("$/cancelRequest", {"id": 2}))
    assert [c.id for c in s.orphans()] == ["c"]
    assert [c.id for c in s.cancelled_unanswered()] == [2]


def test_a_careful_host_passes_its_lifecycle_rules_not_untested() -> None:
    s = ProbeSession(manifest=manifest())
    out = s.received(request(1, "initialize", initialize_params()))
    s.answered(1, result=initialize_result())
    out += s.received(request(2, "shutdown", {}))
    out += s.lifecycle_event(LifeInput.STDIN_CLOSED)
    exercised = {f.requirement for f in out if isinstance(f, Exercise)}
    assert {
        "EXT-1.1-host-initialize-first",
        "EXT-1.8-host-nothing-after-shutdown",
        "EXT-0-host-graceful-shutdown-request",
        "JSONRPC-4-host-envelope",
    } <= exercised
    assert violated(out) == []


def test_message_batches_precede_settlement() -> None:
    s = ready()
    batch = {"message_id": "m", "delta": "x", "deltas": 1}
    assert violated(s.received(notification("message/updated", batch))) == []
    s.received(notification("message/settled", {"message_id": "m"}))
    assert violated(s.received(notification("message/updated", batch))) == ["EXT-1.11-host-batches-before-settled"]


def test_context_handlers_are_not_parents() -> None:
    s = ready()
    s.received(request(2, "context/collect", {"prompt": None, "context": CONTEXT}))
    s.sent_child("c", "confirmation/request", confirm())
    assert violated(s.received(result("c", {"confirmed": True}))) == ["EXT-1.2-host-owner-not-authority"]


@pytest.mark.parametrize("size", [MAX_CHILD_ID_BYTES - 1, MAX_CHILD_ID_BYTES, MAX_CHILD_ID_BYTES + 1])
def test_child_id_bound_n_minus_1_n_n_plus_1(size: int) -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    cid = "x" * size
    s.sent_child(cid, "confirmation/request", confirm())
    expected = ["EXT-2-host-refuses-bad-child-id"] if size > MAX_CHILD_ID_BYTES else []
    assert violated(s.received(result(cid, {"confirmed": True}))) == expected


def test_reused_child_id() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child(7, "confirmation/request", confirm())
    s.received(result(7, {"confirmed": True}))
    s.sent_child(7, "confirmation/request", confirm())
    assert violated(s.received(result(7, {"confirmed": True}))) == ["EXT-2-host-refuses-reused-child-id"]


@pytest.mark.parametrize(
    "count", [MAX_OUTSTANDING_CHILDREN - 1, MAX_OUTSTANDING_CHILDREN, MAX_OUTSTANDING_CHILDREN + 1]
)
def test_outstanding_children_n_minus_1_n_n_plus_1(count: int) -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    for i in range(count):
        s.sent_child(i, "confirmation/request", confirm())
    expected = ["EXT-2-host-refuses-over-outstanding"] if count > MAX_OUTSTANDING_CHILDREN else []
    assert violated(s.received(result(count - 1, {"confirmed": True}))) == expected


def test_unresolved_children_are_counted_through_every_change() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    for cid in ("a", "b", "c"):
        s.sent_child(cid, "confirmation/request", confirm())
    s.sent_child("x", "x/unknown", {})  # not operation-scoped: outlives its parent
    assert s.unresolved == 4
    s.received(result("a", {"confirmed": False}))  # answered
    s.received(notification("$/cancelRequest", {"id": "b"}))  # cancelled
    assert s.unresolved == 2
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})  # "c" is orphaned
    assert s.unresolved == 2
    s.received(notification("$/cancelRequest", {"id": "c"}))
    s.sent_child("a", "x/unknown", {})  # a resolved id, reused
    s.sent_child("x", "x/unknown", {})  # a duplicate of an outstanding id: not a new child
    assert s.unresolved == 2


def test_wave1_with_settled_parent_and_no_owner_needs_minus_32002() -> None:
    s = ready(features=["composer"])
    s.received(request(2, "tool/call", tool_call()))
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    s.sent_child("w", "composer/get", {"parent_request_id": 2})
    assert violated(s.received(error("w", -32000, "not_foreground_owner"))) == ["EXT-2-host-wave1-owner-precedence"]
    s.sent_child("v", "composer/get", {"parent_request_id": 2})
    assert violated(s.received(error("v", -32002, "not_foreground_owner"))) == []


def test_answers_to_unknown_or_earlier_generation_ids() -> None:
    s = ready()
    assert violated(s.received(result("nobody", {}))) == ["JSONRPC-5-host-id-echo"]
    assert violated(s.received(result(None, {}))) == ["JSONRPC-4.1-host-no-reply"]
    s.sent_unreadable()
    assert violated(s.received(error(None, -32700, "parse error"))) == []
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("old", "confirmation/request", confirm())
    nxt = ProbeSession(manifest=manifest(), generation=1, earlier=s.memory())
    nxt.received(request(1, "initialize", initialize_params()))
    nxt.answered(1, result=initialize_result())
    assert violated(nxt.received(result("old", {"confirmed": True}))) == [
        "EXT-5-host-generation-boundary",
        "EXT-2.2-host-generation-fence",
    ]
    assert violated(nxt.received(notification("$/cancelRequest", {"id": "old"}))) == ["EXT-5-host-generation-boundary"]


def test_owner_generation_fences() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    nxt = ProbeSession(manifest=manifest(), generation=1, earlier=s.memory())
    nxt.received(request(1, "initialize", initialize_params()))
    nxt.answered(1, result=initialize_result())
    assert violated(nxt.received(request(2, "tool/call", tool_call()))) == ["EXT-1.2-host-owner-fences"]
    fresh = tool_call()
    fresh["context"]["resource_owner"]["process_generation"] = 2
    assert violated(nxt.received(request(3, "tool/call", fresh))) == ["EXT-1.2-host-owner-fences"]  # changed within


def test_shortcut_trigger_needs_an_admitted_registration() -> None:
    s = ready(features=["shortcuts"])
    s.sent_child("r", "shortcut/register", {"id": "k1"})
    s.received(result("r", {}))
    assert violated(s.received(notification("shortcut/trigger", {"id": "k1"}))) == []
    assert violated(s.received(notification("shortcut/trigger", {"id": "k2"}))) == ["EXT-1.11-host-trigger-registered"]


def test_never_raises_on_arbitrary_params() -> None:
    s = ready(features=["lifecycle_events", "dynamic_tools"])
    junk: list[Any] = [None, 0, "x", [], {}, {"context": 1}, {"name": 3, "arguments": []}]
    rid = 100
    for method in (
        "tool/call",
        "command/execute",
        "hook/run",
        "context/collect",
        "status/collect",
        "menu/collect",
        "tool/render",
        "shutdown",
        "turn/settled",
        "$/cancelRequest",
        "message/updated",
    ):
        for params in junk:
            rid += 1
            s.received(request(rid, method, params))
            s.received(notification(method, params))


# -- property: arbitrary host behaviour only ever yields findings ------------

_METHODS = [
    "initialize",
    "tool/call",
    "command/execute",
    "hook/run",
    "status/collect",
    "shutdown",
    "$/cancelRequest",
    "turn/settled",
    "shortcut/trigger",
    "x/unknown",
]
_PARAMS = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(
        st.sampled_from(["id", "name", "context", "hook", "surface", "reason"]),
        st.one_of(st.none(), st.integers(0, 3), st.text(max_size=2), st.just({})),
        max_size=3,
    ),
)
_IDS = st.one_of(st.integers(0, 5), st.sampled_from(["a", "b"]), st.none())
_STEP = st.one_of(
    st.tuples(st.just("request"), _IDS, st.sampled_from(_METHODS), _PARAMS),
    st.tuples(st.just("notify"), st.none(), st.sampled_from(_METHODS), _PARAMS),
    st.tuples(st.just("answer"), _IDS, st.none(), _PARAMS),
    st.tuples(st.just("probe-answers"), _IDS, st.none(), _PARAMS),
    st.tuples(st.just("probe-child"), _IDS, st.sampled_from(["confirmation/request", "composer/get"]), _PARAMS),
)


@settings(max_examples=100, deadline=None)
@given(api=st.sampled_from(["0.1", "0.2", "0.4"]), steps=st.lists(_STEP, max_size=25))
def test_any_host_frame_sequence_only_yields_findings(api: str, steps: list[Any]) -> None:
    s = ProbeSession(manifest=manifest(api))
    for kind, rid, method, params in steps:
        if kind == "request":
            out = s.received(request(rid, method, params))
        elif kind == "notify":
            out = s.received(notification(method, params))
        elif kind == "answer":
            out = s.received(result(rid, params))
        elif kind == "probe-answers":
            call = s.call(rid)
            if call is None:
                continue
            out = s.answered(rid, result=initialize_result(api) if call.method == "initialize" else params)
        else:
            out = s.sent_child(rid, method, params)
        assert all(isinstance(f, Exercise | Violation) for f in out)
        assert all(f.requirement in KNOWN for f in out)
        # The O(1) count of unresolved children follows every state change.
        assert s.unresolved == sum(c.state in UNRESOLVED_CHILDREN for c in s.children.values())


def test_probe_wrote_classifies_the_probes_frames() -> None:
    s = ProbeSession(manifest=manifest())
    s.received(request(1, "initialize", initialize_params()))
    s.probe_wrote(json.dumps({"jsonrpc": "2.0", "id": 1, "result": initialize_result()}).encode())
    assert s.life is Life.READY
    s.received(request(2, "tool/call", tool_call()))
    child = {"jsonrpc": "2.0", "id": "c", "method": "confirmation/request", "params": confirm()}
    s.probe_wrote(json.dumps(child).encode())
    assert s.call(2) is not None and ("str", "c") in s.children
    s.probe_wrote(b"{not json")
    assert violated(s.received(error(None, -32700, "parse error"))) == []
    s.probe_wrote(json.dumps({"jsonrpc": "2.0", "method": "notification", "params": {}}).encode())
    s.probe_wrote(json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}).encode())  # to nothing: ignored


def test_wave1_owner_rule_binds_only_a_host_that_negotiated_the_feature() -> None:
    s = ready()  # composer offered, not accepted: the host serves no composer/get
    s.received(request(2, "tool/call", tool_call()))
    s.answered(2, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    s.sent_child("w", "composer/get", {"parent_request_id": 2})
    assert violated(s.received(error("w", -32601, "method composer/get is not available"))) == []


def test_an_illegal_child_id_may_be_refused_with_id_null() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("x" * (MAX_CHILD_ID_BYTES + 1), "confirmation/request", confirm())
    s.sent_child(-1, "confirmation/request", confirm())
    assert violated(s.received(error(None, -32600, "bad id"))) == []
    assert violated(s.received(error(None, -32600, "bad id"))) == []
    assert violated(s.received(error(None, -32600, "no request"))) == ["JSONRPC-4.1-host-no-reply"]


def test_an_illegal_child_id_admitted_with_id_null_is_flagged() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child(-1, "confirmation/request", confirm())
    assert violated(s.received(result(None, {"confirmed": False}))) == ["EXT-2-host-refuses-bad-child-id"]


def test_a_cancel_may_name_an_oversized_request_the_probe_could_not_read() -> None:
    s = ready()
    assert violated(s.received(notification("$/cancelRequest", {"id": 5}))) == ["EXT-1.9-host-cancel-known-id"]
    oversized = b'{"jsonrpc":"2.0","id":6,"method":"tool/call","params":"' + b"x" * MAX_FRAME_BYTES + b'"}\n'
    events = list(FrameDecoder(max_frame_bytes=MAX_FRAME_BYTES).feed(oversized))
    assert violated(s.received(decode_event(events[0]))) == ["EXT-0-host-frame-bound"]
    assert violated(s.received(notification("$/cancelRequest", {"id": 6}))) == []


def test_outstanding_children_are_counted_when_the_answer_arrives() -> None:
    """Answers that crossed the probe's writes freed slots: admitting the
    129th is fine when, by its answer, an earlier child was answered."""
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    for i in range(MAX_OUTSTANDING_CHILDREN + 1):
        s.sent_child(i, "confirmation/request", confirm())
    s.received(result(0, {"confirmed": False}))
    out = s.received(result(MAX_OUTSTANDING_CHILDREN, {"confirmed": False}))
    assert violated(out) == []
    assert Exercise("EXT-2-host-refuses-over-outstanding") in out


# -- JSON-RPC §5 on the host's answers ----------------------------------------------------


def test_an_answer_must_echo_the_id_with_its_type() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child(7, "confirmation/request", confirm())
    s.sent_child("8", "confirmation/request", confirm())
    out = s.received(result("7", {"confirmed": False}))
    assert violated(out) == ["JSONRPC-5-host-id-echo"]
    assert "the string '7'" in next(f.message for f in out if isinstance(f, Violation))
    assert violated(s.received(result(8, {"confirmed": False}))) == ["JSONRPC-5-host-id-echo"]
    assert violated(s.received(result(7, {"confirmed": False}))) == []
    assert violated(s.received(result(7.0, {"confirmed": False}))) == ["JSONRPC-5-host-one-response"]  # 7.0 is 7


def test_a_response_is_judged_by_the_response_rules() -> None:
    s = ready()
    s.received(request(2, "tool/call", tool_call()))
    s.sent_child("c1", "confirmation/request", confirm())
    both = frame({"jsonrpc": "2.0", "id": "c1", "result": {"confirmed": False}, "error": {"code": 1, "message": "x"}})
    assert "JSONRPC-5-host-responses" in violated(s.received(both))
    s.sent_child("c2", "confirmation/request", confirm())
    wrong = frame({"jsonrpc": "2.1", "id": "c2", "result": {"confirmed": False}})
    assert violated(s.received(wrong)) == ["JSONRPC-5-host-responses"]
    s.sent_child("c3", "confirmation/request", confirm())
    fractional = frame({"jsonrpc": "2.0", "id": 1.5, "result": {}})
    assert set(violated(s.received(fractional))) == {"JSONRPC-5-host-id-echo"}
    # §4's envelope rules stay on the host's own requests and notifications.
    assert violated(s.received(frame({"jsonrpc": "2.1", "method": "$/cancelRequest", "params": {"id": 2}}))) == [
        "JSONRPC-4-host-envelope"
    ]


# -- §5 no replay across generations -------------------------------------------------------


def _call(text: str, generation: int = 2) -> dict[str, Any]:
    """A tool call of a later generation (its owner names that generation)."""
    built = tool_call(arguments={"text": text})
    built["context"]["resource_owner"]["process_generation"] = generation
    return built


def _unresolved_then_next() -> tuple[ProbeSession, ProbeSession]:
    s = ready()
    s.received(request(2, "tool/call", tool_call(arguments={"text": "a"})))
    s.received(request(3, "tool/call", tool_call(arguments={"text": "b"})))
    s.answered(3, result={"content": [{"type": "text", "text": "x"}], "is_error": False})
    nxt = ProbeSession(manifest=manifest(), generation=1, earlier=s.memory())
    assert violated(nxt.received(request(1, "initialize", initialize_params("0.2")))) == []
    nxt.answered(1, result=initialize_result("0.2"))
    return s, nxt


def test_a_call_left_unresolved_is_never_sent_to_a_later_generation() -> None:
    _, nxt = _unresolved_then_next()
    # b was answered: the host may send it again (nothing unresolved about it)
    assert violated(nxt.received(request(2, "tool/call", _call("b")))) == []
    assert violated(nxt.received(request(3, "tool/call", _call("a")))) == ["EXT-5-host-no-replay-on-reload"]
    later = ProbeSession(manifest=manifest(), generation=2, earlier=nxt.memory())
    later.received(request(1, "initialize", initialize_params("0.2")))
    later.answered(1, result=initialize_result("0.2"))
    assert violated(later.received(request(2, "tool/call", _call("a", 3)))) == ["EXT-5-host-no-replay-on-reload"]


def test_an_identical_call_the_harness_asked_for_is_no_replay() -> None:
    _, nxt = _unresolved_then_next()
    nxt.harness_called("tool/call", {"name": "echo", "arguments": {"text": "a"}})
    out = nxt.received(request(2, "tool/call", _call("a")))
    assert violated(out) == [] and Exercise("EXT-5-host-no-replay-on-reload") in out
    assert violated(nxt.received(request(3, "tool/call", _call("a")))) == ["EXT-5-host-no-replay-on-reload"]
