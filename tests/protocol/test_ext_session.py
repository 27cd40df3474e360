from __future__ import annotations

import itertools
from typing import Any

import pytest

from conformance.protocol import limits
from conformance.protocol.ext_session import (
    LIFECYCLE_TRANSITIONS,
    REQUEST_TRANSITIONS,
    HostSession,
    Lifecycle,
    LifecycleInput,
    LocalProtocolError,
    RequestInput,
    RequestState,
)
from conformance.protocol.ext_types import ManifestInfo, Offer
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation

MANIFEST = ManifestInfo("t", "1", "0.2", {"tools": ["echo"], "commands": []}, {})
OFFER = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, ("request_progress",), 8)
INIT_RESULT = {
    "api_version": "0.2",
    "tools": [{"name": "echo", "description": "d", "parameters": {"type": "object"}}],
    "commands": [],
    "protocol": {
        "version": "0.2",
        "features": ["request_cancellation", "content_parts", "request_progress"],
        "limits": {"max_concurrent_requests": 4},
    },
}


def frame(msg: dict[str, Any], index: int = 0) -> Any:
    return decode_frame(Frame(index, dumps({"jsonrpc": "2.0", **msg}), "lf"))


def violations(session: HostSession, msg: dict[str, Any]) -> list[str]:
    return [f.requirement for f in session.received(frame(msg)) if isinstance(f, Violation)]


def ready_session() -> HostSession:
    s = HostSession(MANIFEST, OFFER)
    s.sent_request(1, "initialize", {})
    assert violations(s, {"id": 1, "result": INIT_RESULT}) == []
    assert s.lifecycle is Lifecycle.READY
    return s


def test_request_table_covers_every_state_and_input() -> None:
    for state, event in itertools.product(RequestState, RequestInput):
        assert (state, event) in REQUEST_TRANSITIONS, (state, event)


def test_lifecycle_every_pair_is_a_transition_or_a_local_error() -> None:
    for state, event in itertools.product(Lifecycle, LifecycleInput):
        s = HostSession(MANIFEST, OFFER, lifecycle=state)
        if (state, event) in LIFECYCLE_TRANSITIONS:
            s.advance(event)
            assert s.lifecycle is LIFECYCLE_TRANSITIONS[(state, event)]
        else:
            with pytest.raises(LocalProtocolError):
                s.advance(event)


def test_response_to_unknown_id() -> None:
    assert violations(ready_session(), {"id": 99, "result": {}}) == ["JSONRPC-5-id-echo"]


def test_second_response() -> None:
    s = ready_session()
    s.sent_request(2, "status/collect", {})
    assert violations(s, {"id": 2, "result": None}) == []
    assert violations(s, {"id": 2, "result": None}) == ["JSONRPC-5-one-response"]


def test_id_types_must_match_exactly() -> None:
    s = ready_session()
    s.sent_request(2**53 + 1, "x", {}, intent="unknown-method")
    assert violations(s, {"id": 2**53, "error": {"code": -32601, "message": "m"}}) == ["JSONRPC-5-id-echo"]
    s.sent_request("7", "y", {}, intent="unknown-method")
    assert violations(s, {"id": 7, "error": {"code": -32601, "message": "m"}}) == ["JSONRPC-5-id-echo"]


def test_a_whole_number_written_with_a_fraction_echoes_the_same_id() -> None:
    s = ready_session()
    s.sent_request(5, "x", {}, intent="unknown-method")
    assert violations(s, {"id": 5.0, "error": {"code": -32601, "message": "m"}}) == []


CANCELLED_REPLIES = [
    {"error": {"code": -32800, "message": "cancelled"}},
    {"result": {"content": [{"type": "text", "text": "won the race"}]}},
    {"error": {"code": -32603, "message": "failed before the cancel was read"}},
    {"error": {"code": -32602, "message": "bad arguments"}},
]


@pytest.mark.parametrize("reply", CANCELLED_REPLIES)
def test_any_reply_written_before_the_cancel_could_be_read_wins_the_race(reply: dict[str, Any]) -> None:
    # §1.9: nothing shows the extension read the cancellation before it
    # answered, so an error of any code wins the race exactly as a result does.
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    s.sent_cancel(2)
    s.sent_request(3, "probe/unknown", {}, intent="unknown-method")
    assert violations(s, {"id": 2, **reply}) == []  # answered before the probe: maybe before reading the cancel
    assert violations(s, {"id": 3, "error": {"code": -32601, "message": "m"}}) == []
    assert s.request(2) is not None and s.request(2).state is RequestState.TOMBSTONED  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (CANCELLED_REPLIES[0], []),
        (CANCELLED_REPLIES[1], []),
        (CANCELLED_REPLIES[2], ["EXT-1.9-cancel-reply-code"]),
        (CANCELLED_REPLIES[3], ["EXT-1.9-cancel-reply-code"]),
    ],
)
def test_a_reply_after_the_cancel_was_provably_read(reply: dict[str, Any], expected: list[str]) -> None:
    # The probe was written after the cancellation and answered first: input
    # is read in order, so the extension had read the cancellation.
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    s.sent_cancel(2)
    s.sent_request(3, "probe/unknown", {}, intent="unknown-method")
    assert violations(s, {"id": 3, "error": {"code": -32601, "message": "m"}}) == []
    assert violations(s, {"id": 2, **reply}) == expected


def test_a_probe_written_before_the_cancel_proves_nothing() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    s.sent_request(3, "probe/unknown", {}, intent="unknown-method")
    s.sent_cancel(2)
    assert violations(s, {"id": 3, "error": {"code": -32601, "message": "m"}}) == []
    assert violations(s, {"id": 2, **CANCELLED_REPLIES[2]}) == []


def test_progress_on_a_later_request_also_proves_the_cancel_was_read() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    s.sent_cancel(2)
    s.sent_request(3, "tool/call", {"name": "echo", "arguments": {}})
    event = {"type": "status", "message": "working"}
    assert violations(s, {"method": "$/progress", "params": {"request_id": 3, "sequence": 1, "event": event}}) == []
    assert violations(s, {"id": 2, **CANCELLED_REPLIES[2]}) == ["EXT-1.9-cancel-reply-code"]


def test_cancel_after_reply_is_ignored_and_a_reply_to_it_is_a_second_response() -> None:
    s = ready_session()
    s.sent_request(2, "status/collect", {})
    violations(s, {"id": 2, "result": None})
    s.sent_cancel(2)
    assert violations(s, {"id": 2, "error": {"code": -32800, "message": "c"}}) == ["JSONRPC-5-one-response"]


def test_progress_rules() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    status = {"type": "status", "message": "m"}
    ok = {"method": "$/progress", "params": {"request_id": 2, "sequence": 1, "event": status}}
    assert violations(s, ok) == []
    again = {"method": "$/progress", "params": {"request_id": 2, "sequence": 1, "event": status}}
    assert violations(s, again) == ["EXT-2.6-sequence-increasing"]
    violations(s, {"id": 2, "result": {"content": [{"type": "text", "text": "t"}]}})
    late = {"method": "$/progress", "params": {"request_id": 2, "sequence": 5, "event": status}}
    assert violations(s, late) == ["EXT-2.6-progress-active-request"]
    ghost = {"method": "$/progress", "params": {"request_id": 77, "sequence": 1, "event": status}}
    assert violations(s, ghost) == ["EXT-2.6-progress-active-request"]


def confirm(cid: Any, parent: Any = 2) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": "ok?"}
    if parent is not None:
        params["parent_request_id"] = parent
    return {"id": cid, "method": "confirmation/request", "params": params}


@pytest.mark.parametrize(
    ("cid", "ok"),
    [
        (0, True),
        (limits.MAX_U64, True),
        (limits.MAX_U64 + 1, False),
        (-1, False),
        (True, False),
        ("x" * limits.MAX_CHILD_ID_BYTES, True),
        ("x" * (limits.MAX_CHILD_ID_BYTES + 1), False),
        ("é" * 128, True),
        ("é" * 129, False),
    ],
)
def test_child_id_type(cid: Any, ok: bool) -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    got = [v for v in violations(s, confirm(cid)) if v != "JSONRPC-4-id-type"]  # bool breaks JSON-RPC too
    assert got == ([] if ok else ["EXT-2-child-id-type"])


def test_child_id_unique_and_never_reused() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    assert violations(s, confirm("c1")) == []
    assert violations(s, confirm("c1")) == ["EXT-2-child-id-unique"]
    s.child_answered("c1")
    assert violations(s, confirm("c1")) == ["EXT-2-child-id-no-reuse"]


@pytest.mark.parametrize(
    "outstanding",
    [limits.MAX_OUTSTANDING_CHILDREN - 1, limits.MAX_OUTSTANDING_CHILDREN, limits.MAX_OUTSTANDING_CHILDREN + 1],
)
def test_outstanding_children_bound(outstanding: int) -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    found = [v for i in range(outstanding) for v in violations(s, confirm(f"c{i}"))]
    assert found == ([] if outstanding <= limits.MAX_OUTSTANDING_CHILDREN else ["EXT-2-child-max-outstanding"])


def test_distinct_child_id_bound() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    for i in range(limits.MAX_CHILD_IDS_PER_GENERATION - 1):
        s.child_ids_used.add(("int", 10_000_000 + i))
    assert violations(s, confirm("last-allowed")) == []
    assert violations(s, confirm("one-too-many")) == ["EXT-2-child-max-ids"]


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        (2, []),
        (None, ["EXT-2-parent-request-id"]),
        ("2", ["EXT-2-parent-request-id"]),
        (99, ["EXT-2-parent-request-id"]),
        (1, ["EXT-2-parent-request-id"]),  # 1 = initialize, already settled
    ],
)
def test_parent_request_id(parent: Any, expected: list[str]) -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    assert violations(s, confirm("c", parent)) == expected


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("tool/call", []),
        ("command/execute", []),
        ("hook/run", ["EXT-2-parent-request-id"]),  # a prompt handler (§1.2)
        ("context/collect", ["EXT-2-parent-request-id"]),  # a context handler (§1.2)
        ("status/collect", ["EXT-2-parent-request-id"]),  # process-scoped
        ("tool/render", ["EXT-2-parent-request-id"]),
    ],
)
def test_only_model_tool_and_command_requests_are_active_parents(method: str, expected: list[str]) -> None:
    s = ready_session()
    s.sent_request(2, method, {})
    assert violations(s, confirm("c", 2)) == expected


SHORTCUT = {"id": "pi:0:ctrl+shift+p", "key": "ctrl+shift+p", "description": "palette"}
SHORTCUTS_OFFER = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, ("request_progress", "shortcuts"), 8)


def register(rid: Any = "pi:0", parent: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = dict(SHORTCUT)
    if parent is not None:
        params["parent_request_id"] = parent
    return {"id": rid, "method": "shortcut/register", "params": params}


def initializing(offer: Offer = SHORTCUTS_OFFER) -> HostSession:
    s = HostSession(MANIFEST, offer)
    s.sent_request(1, "initialize", {})
    return s


def test_shortcut_register_inside_initialize_when_offered_passes() -> None:
    s = initializing()
    found = s.received(frame(register()))
    assert [f.requirement for f in found if isinstance(f, Violation)] == []
    assert "EXT-2.20-shortcut-register" in {f.requirement for f in found}


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        (register(parent=None), "parent_request_id is absent; expected the initialize id 1"),
        (register(parent=7), "parent_request_id is 7; expected the initialize id 1"),
        (register(parent="1"), "parent_request_id is '1'"),
        ({"method": "shortcut/register", "params": {"parent_request_id": 1, **SHORTCUT}}, "as a notification"),
    ],
)
def test_shortcut_register_shape_and_parent(message: dict[str, Any], fragment: str) -> None:
    found = [f for f in initializing().received(frame(message)) if isinstance(f, Violation)]
    assert [v.requirement for v in found] == ["EXT-2.20-shortcut-register"]
    assert fragment in found[0].message


def test_shortcut_register_needs_the_offer() -> None:
    found = [f for f in initializing(OFFER).received(frame(register())) if isinstance(f, Violation)]
    assert [v.requirement for v in found] == ["EXT-2.20-shortcut-register"]
    assert "did not offer the shortcuts feature" in found[0].message


def test_shortcut_register_after_initialize_settled() -> None:
    s = HostSession(MANIFEST, SHORTCUTS_OFFER)
    s.sent_request(1, "initialize", {})
    assert violations(s, {"id": 1, "result": INIT_RESULT}) == []
    assert violations(s, register()) == ["EXT-2.20-shortcut-register"]


def test_parent_cancelled_but_unanswered_is_a_legal_race() -> None:
    s = ready_session()
    s.sent_request(2, "tool/call", {"name": "echo", "arguments": {}})
    s.sent_cancel(2)
    assert violations(s, confirm("c")) == []


def test_api_01_confirmation_omits_parent() -> None:
    manifest = ManifestInfo("t", "1", "0.1", {"tools": [], "commands": []}, {})
    s = HostSession(manifest, Offer("0.1", None))
    s.sent_request(1, "initialize", {})
    violations(s, {"id": 1, "result": {"api_version": "0.1", "tools": [], "commands": []}})
    s.sent_request(2, "tool/call", {})
    assert violations(s, confirm("c", None)) == []
    assert violations(s, confirm("d", 2)) == ["EXT-2.2-confirmation-0.1-no-parent"]


def test_messages_before_initialize_answer() -> None:
    s = HostSession(MANIFEST, OFFER)
    s.sent_request(1, "initialize", {})
    note = {"method": "notification", "params": {"message": "hi"}}
    assert violations(s, note) == ["EXT-0-messages-after-initialize", "EXT-2-after-initialize-completes"]
    # §2.20: the one exception, a request parented on initialize (when offered).
    s2 = HostSession(MANIFEST, SHORTCUTS_OFFER)
    s2.sent_request(1, "initialize", {})
    register = {"id": "pi:0", "method": "shortcut/register", "params": {"parent_request_id": 1, **SHORTCUT}}
    assert violations(s2, register) == []


def test_null_id_replies() -> None:
    s = ready_session()
    s.sent_unreadable()
    assert violations(s, {"id": None, "error": {"code": -32700, "message": "parse"}}) == []
    assert violations(s, {"id": None, "error": {"code": -32700, "message": "parse"}}) == [
        "JSONRPC-4.1-no-reply-to-notification"
    ]
    s.sent_unreadable()
    assert violations(s, {"id": 0, "error": {"code": -32700, "message": "parse"}}) == [
        "JSONRPC-5-null-id-on-parse-error"
    ]


@pytest.mark.parametrize(
    ("intent", "reply", "expected"),
    [
        ("unknown-method", {"error": {"code": -32601, "message": "m"}}, []),
        ("unknown-method", {"error": {"code": -32600, "message": "m"}}, ["EXT-3-unknown-method-code"]),
        ("unknown-method", {"result": {}}, ["EXT-3-unknown-method-code"]),
        ("invalid-params", {"error": {"code": -32602, "message": "m"}}, []),
        ("invalid-params", {"error": {"code": -32603, "message": "m"}}, ["EXT-3-invalid-params-code"]),
    ],
)
def test_error_code_advice(intent: str, reply: dict[str, Any], expected: list[str]) -> None:
    s = ready_session()
    s.sent_request(2, "x/y", {}, intent=intent)
    assert violations(s, {"id": 2, **reply}) == expected


def test_initialize_refused_is_a_shape_violation() -> None:
    s = HostSession(MANIFEST, OFFER)
    s.sent_request(1, "initialize", {})
    assert violations(s, {"id": 1, "error": {"code": -32603, "message": "no"}}) == ["EXT-1.1-result-shape"]


def test_harness_misuse_is_local() -> None:
    s = ready_session()
    with pytest.raises(LocalProtocolError):
        s.sent_request(1, "again", {})


def test_a_request_in_an_oversized_frame_is_not_owed_an_answer() -> None:
    """§0: a frame over the bound may be refused any way, silence included;
    an answer with its id is still matched (not an unknown id)."""
    s = ready_session()
    s.sent_request(2, "octet-conformance/no-such-method", {"pad": "..."}, intent="oversize")
    s.sent_request(3, "octet-conformance/no-such-method", {})
    assert [r.id for r in s.unanswered()] == [3]
    assert violations(s, {"id": 2, "error": {"code": -32600, "message": "frame too large"}}) == []
    assert violations(s, {"id": 2, "error": {"code": -32600, "message": "again"}}) == ["JSONRPC-5-one-response"]


# -- §2.8 artifacts and §2.11/§2.12 catalog epochs ------------------------------------

SERVICES_OFFER = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, ("artifacts", "dynamic_tools"), 8)
SERVICES_RESULT = {
    **INIT_RESULT,
    "protocol": {**INIT_RESULT["protocol"], "features": [*limits.REQUIRED_FEATURES, "artifacts", "dynamic_tools"]},
}
PICTURE = {"name": "picture", "description": "d", "parameters": {"type": "object"}}


def services_session() -> HostSession:
    s = HostSession(MANIFEST, SERVICES_OFFER)
    s.sent_request(1, "initialize", {})
    assert violations(s, {"id": 1, "result": SERVICES_RESULT}) == []
    s.sent_request(2, "command/execute", {"name": "greet"})
    assert violations(s, {"id": "c-1", "method": "tools/register", "params": {"tools": [PICTURE]}}) == []
    s.child_answered("c-1", {"jsonrpc": "2.0", "id": "c-1", "result": {"revision": 1, "tools": ["echo", "picture"]}})
    return s


def call(s: HostSession, rid: int, name: str, revision: int, reply: dict[str, Any]) -> list[str]:
    s.sent_request(rid, "tool/call", {"name": name, "arguments": {}, "catalog_revision": revision})
    return violations(s, {"id": rid, **reply})


TEXT = {"result": {"content": [{"type": "text", "text": "ok"}]}}
REFUSED = {"error": {"code": -32602, "message": "unknown or retired catalog revision"}}


def test_an_accepted_registration_is_the_next_epoch() -> None:
    s = services_session()
    assert (s.catalog_revision, sorted(s.tools), sorted(s.epochs[0])) == (1, ["echo", "picture"], ["echo"])
    assert call(s, 3, "picture", 1, TEXT) == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (TEXT, ["EXT-1.2-catalog-revision-dispatch"]),
        (REFUSED, []),
        ({"error": {"code": -32603, "message": "boom"}}, ["EXT-1.2-catalog-revision-dispatch"]),
    ],
)
def test_a_call_under_an_epoch_never_published(reply: dict[str, Any], expected: list[str]) -> None:
    assert call(services_session(), 3, "echo", 3, reply) == expected


TOOL_ERROR = {"result": {"content": [{"type": "text", "text": "no such tool"}], "is_error": True}}
DECLINES = [REFUSED, TOOL_ERROR, {"error": {"code": -32603, "message": "no such tool"}}]


@pytest.mark.parametrize(
    ("reply", "expected"), [(TEXT, ["EXT-1.2-catalog-revision-snapshot"]), *((r, []) for r in DECLINES)]
)
def test_an_older_epoch_lacking_the_tool_must_not_run_it(reply: dict[str, Any], expected: list[str]) -> None:
    """A successful result ran a handler outside the snapshot; §2.12 names no
    way to decline a tool the epoch lacks, so any error or tool error will do."""
    assert call(services_session(), 3, "picture", 0, reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"), [(TEXT, ["EXT-1.2-catalog-revision-snapshot"]), *((r, []) for r in DECLINES)]
)
def test_an_unknown_tool_under_the_current_epoch(reply: dict[str, Any], expected: list[str]) -> None:
    assert call(services_session(), 3, "no-such-tool", 1, reply) == expected


def test_a_tool_error_under_an_epoch_never_published_is_still_dispatch() -> None:
    """-32602 is owed for an unknown epoch (§2.12), whatever the tool."""
    assert call(services_session(), 3, "no-such-tool", 3, TOOL_ERROR) == ["EXT-1.2-catalog-revision-dispatch"]


def test_an_older_epoch_holding_the_tool_may_dispatch_or_refuse() -> None:
    s = services_session()
    assert call(s, 3, "echo", 0, TEXT) == []
    assert call(s, 4, "echo", 0, REFUSED) == []


def test_a_refused_registration_publishes_nothing() -> None:
    s = services_session()
    assert violations(s, {"id": "c-2", "method": "tools/unregister", "params": {"names": ["picture"]}}) == []
    s.child_answered("c-2", {"jsonrpc": "2.0", "id": "c-2", "error": {"code": -32602, "message": "no"}})
    assert (s.catalog_revision, sorted(s.tools)) == (1, ["echo", "picture"])


def test_media_parts_are_judged_against_issued_artifacts() -> None:
    s = services_session()
    publish = {"parent_request_id": 2, "mime_type": "image/png", "size": 10, "sha256": "0" * 64, "path": "a.png"}
    s.received(frame({"id": "a-1", "method": "artifact/publish", "params": publish}))
    s.child_answered("a-1", {"jsonrpc": "2.0", "id": "a-1", "result": {"artifact_id": "art-1"}})

    def image(mime: str, artifact: str = "art-1", kind: str = "image") -> dict[str, Any]:
        part = {"type": kind, "artifact_id": artifact, "mime_type": mime}
        return {"result": {"content": [{"type": "text", "text": "t"}, part]}}

    assert call(s, 3, "echo", 1, image("image/png")) == []
    assert call(s, 4, "echo", 1, image("image/jpeg")) == ["EXT-1.2-media-kind-match"]
    assert call(s, 5, "echo", 1, image("image/png", kind="audio")) == ["EXT-1.2-media-kind-match"]
    assert call(s, 6, "echo", 1, image("image/png", artifact="art-9")) == ["EXT-1.2-media-needs-artifact"]


@pytest.mark.parametrize(("repeats", "over"), [(63, False), (64, False), (65, True)])
def test_referenced_media_aggregate(repeats: int, over: bool) -> None:
    s = services_session()
    size = limits.MAX_REFERENCED_MEDIA_BYTES // 64
    publish = {"parent_request_id": 2, "mime_type": "image/png", "size": size, "sha256": "0" * 64, "path": "a.png"}
    s.received(frame({"id": "a-1", "method": "artifact/publish", "params": publish}))
    s.child_answered("a-1", {"jsonrpc": "2.0", "id": "a-1", "result": {"artifact_id": "art-1"}})
    parts = [{"type": "image", "artifact_id": "art-1", "mime_type": "image/png"}] * repeats
    reply = {"result": {"content": [{"type": "text", "text": "t"}, *parts]}}
    assert call(s, 3, "echo", 1, reply) == (["EXT-1.2-media-aggregate"] if over else [])
