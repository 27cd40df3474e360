"""Pushed contributions: §2.3, §2.4 and the §2.5 snapshot rules (ext_contributions),
plus their wiring into the session (revision memory, active parents, as-request)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from conformance.protocol import ext_contributions as ec
from conformance.protocol import limits
from conformance.protocol.ext_session import HostSession
from conformance.protocol.ext_types import ManifestInfo, Negotiated, Offer
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Exercise, Finding, Violation

NEGOTIATED = Negotiated("0.2", frozenset({"request_cancellation", "content_parts"}))
CONTEXT = ec.SnapshotContext(NEGOTIATED, True, frozenset({"workers"}), frozenset({2}))

# The document's own example (§2.5), which must pass every rule.
EXAMPLE: dict[str, Any] = {
    "parent_request_id": 2,
    "snapshot": {
        "revision": 4,
        "status": {"state": "active", "label": "1 worker"},
        "activities": [
            {
                "id": "worker:1",
                "kind": "delegation",
                "state": "running",
                "summary": "Reviewing tests",
                "provenance": "local child",
                "started_at_ms": 1721000000000,
                "metrics": {
                    "tool_calls": 4,
                    "input_tokens": 12000,
                    "cache_read_tokens": 800,
                    "cache_write_tokens": 0,
                    "output_tokens": 220,
                    "reasoning_tokens": 60,
                    "cost_microdollars": 7200,
                },
                "references": [],
            }
        ],
        "collection": {
            "kind": "tree",
            "title": "Workers",
            "nodes": [
                {
                    "id": "worker:1",
                    "parent_id": None,
                    "state": "running",
                    "label": "test-review",
                    "secondary": "running",
                    "action_ids": ["stop"],
                    "references": [],
                }
            ],
            "selected_node_id": "worker:1",
            "detail": {"node_id": "worker:1", "title": "test-review", "body": "Running.", "references": []},
        },
        "actions": [
            {"id": "stop", "label": "Stop worker", "command": "workers", "arguments": ["stop"], "destructive": True}
        ],
    },
}


def example() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE)


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def judge(params: Any, context: ec.SnapshotContext = CONTEXT) -> list[str]:
    return broken(ec.check_presentation(params, as_request=False, context=context))


# -- §2.3 / §2.4 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"label": "w", "content": "c", "placement": "system_suffix"}, True),
        ({"label": "w", "content": "c"}, True),  # placement defaults (§1.5)
        ({"label": "w", "content": "c", "placement": None, "extra": 1}, True),
        ({"label": "w", "content": "c", "placement": "system"}, False),
        ({"label": "w"}, False),
        ([], False),
    ],
)
def test_context_contribution(params: Any, ok: bool) -> None:
    found = list(ec.context_contribution(params, as_request=False))
    assert Exercise("EXT-2.3-context-contribution") in found
    assert (broken(found) == []) is ok


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"surface": "status", "text": "watching src/", "style_role": "x", "priority": 10}, True),
        ({"surface": "footer", "text": "t"}, True),
        ({"surface": "sidebar", "text": "t"}, False),
        ({"surface": "status"}, False),
        ({"surface": "status", "text": "t", "priority": 1.5}, False),
    ],
)
def test_status_contribution(params: Any, ok: bool) -> None:
    assert (broken(ec.status_contribution(params, as_request=False)) == []) is ok


def test_contributions_sent_as_requests_are_flagged() -> None:
    good = {"label": "w", "content": "c"}
    assert broken(ec.context_contribution(good, as_request=True)) == ["EXT-2.3-context-contribution"]
    assert broken(ec.status_contribution({"surface": "status", "text": "t"}, as_request=True)) == [
        "EXT-2.4-status-contribution"
    ]


# -- §2.5 ---------------------------------------------------------------------------


def test_the_documents_example_passes_every_rule() -> None:
    found = list(ec.check_presentation(example(), as_request=False, context=CONTEXT))
    assert broken(found) == []
    exercised = {f.requirement for f in found if isinstance(f, Exercise)}
    every = {
        "EXT-2.5-presentation-declared",
        "EXT-2.5-snapshot-shape",
        "EXT-2.5-snapshot-bounds",
        "EXT-2.5-collection-integrity",
        "EXT-2.5-action-commands",
        "EXT-2.5-url-sanitized",
        "EXT-2.5-owner-fields",
        "EXT-2.5-plain-labels",
        "EXT-2.5-revision-monotonic",
    }
    assert exercised == every


def test_minimal_process_scoped_snapshot_passes() -> None:
    # Everything but revision is optional; omitting both owner fields is process-scoped state.
    assert judge({"snapshot": {"revision": 0}}) == []


@pytest.mark.parametrize(
    ("negotiated", "declared", "as_request"),
    [(Negotiated("0.1"), True, False), (NEGOTIATED, False, False), (NEGOTIATED, True, True)],
)
def test_presentation_declared(negotiated: Negotiated, declared: bool, as_request: bool) -> None:
    context = ec.SnapshotContext(negotiated, declared, frozenset({"workers"}), frozenset({2}))
    found = broken(ec.check_presentation(example(), as_request=as_request, context=context))
    assert found == ["EXT-2.5-presentation-declared"]


def mutate(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    params = example()
    target: Any = params
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return params


S, A, C = ("snapshot",), ("snapshot", "activities", 0), ("snapshot", "collection")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((*S, "revision"), -1),
        ((*S, "revision"), "4"),
        ((*S, "status"), {"state": "busy"}),
        ((*A, "state"), "done"),
        ((*A, "metrics", "input_tokens"), -1),
        ((*A, "metrics", "reasoning_tokens"), 221),
        ((*A, "metrics", "tool_calls"), limits.LARGEST_SAFE_JSON_INTEGER + 1),
        ((*A, "references"), [{"kind": "file", "id": "x"}]),
        ((*C, "kind"), "grid"),
        ((*S, "actions", 0, "arguments"), [1]),
        ((*S, "actions", 0, "label"), None),
        ((*C, "nodes", 0, "action_ids"), "stop"),
        (S, []),
    ],
)
def test_snapshot_shape(path: tuple[Any, ...], value: Any) -> None:
    assert judge(mutate(path, value)) == ["EXT-2.5-snapshot-shape"]


def test_reasoning_equal_to_output_passes() -> None:
    assert judge(mutate((*A, "metrics", "reasoning_tokens"), 220)) == []


def many(n: int, make: Any) -> list[Any]:
    return [make(i) for i in range(n)]


def action(i: int) -> dict[str, Any]:
    return {"id": f"a{i}", "label": "x", "command": "workers"}


@pytest.mark.parametrize(
    ("path", "limit", "make"),
    [
        ((*S, "activities"), limits.SNAPSHOT_MAX_ACTIVITIES, lambda i: {"id": f"w{i}"}),
        ((*S, "actions"), limits.SNAPSHOT_MAX_ACTIONS, action),
        ((*A, "references"), limits.SNAPSHOT_MAX_REFERENCES, lambda i: {"kind": "session", "id": f"s{i}"}),
    ],
)
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_count_bounds(path: tuple[Any, ...], limit: int, make: Any, delta: int) -> None:
    assert judge(mutate(path, many(limit + delta, make))) == (["EXT-2.5-snapshot-bounds"] if delta > 0 else [])


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_node_bound(delta: int) -> None:
    nodes = many(limits.SNAPSHOT_MAX_NODES + delta, lambda i: {"id": f"n{i}"})
    params = mutate((*C, "nodes"), nodes)
    params["snapshot"]["collection"]["kind"] = "list"
    params["snapshot"]["collection"]["selected_node_id"] = None
    del params["snapshot"]["collection"]["detail"]
    assert judge(params) == (["EXT-2.5-snapshot-bounds"] if delta > 0 else [])


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        ((*S, "status", "label"), limits.SNAPSHOT_MAX_LABEL_BYTES),
        ((*C, "detail", "body"), limits.SNAPSHOT_MAX_BODY_BYTES),
    ],
)
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_text_bounds(path: tuple[Any, ...], limit: int, delta: int) -> None:
    # é is two bytes: the bound is on UTF-8 bytes, not characters.
    text = "é" * ((limit + delta) // 2) + "x" * ((limit + delta) % 2)
    assert judge(mutate(path, text)) == (["EXT-2.5-snapshot-bounds"] if delta > 0 else [])


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_revision_and_timestamp_bounds(delta: int) -> None:
    value = limits.LARGEST_SAFE_JSON_INTEGER + delta
    assert judge(mutate((*S, "revision"), value)) == (["EXT-2.5-snapshot-bounds"] if delta > 0 else [])
    assert judge(mutate((*A, "started_at_ms"), value)) == (["EXT-2.5-snapshot-bounds"] if delta > 0 else [])


def test_encoded_size_bound() -> None:
    # 300 activities of ~1 KiB summaries: over 256 KiB, and over 128 activities.
    activities = [{"id": f"w{i}", "summary": "s" * 1000} for i in range(300)]
    assert judge(mutate((*S, "activities"), activities)) == ["EXT-2.5-snapshot-bounds", "EXT-2.5-snapshot-bounds"]


def tree(depth: int) -> list[dict[str, Any]]:
    return [{"id": f"n{i}", "parent_id": f"n{i - 1}" if i else None} for i in range(depth)]


@pytest.mark.parametrize(("depth", "ok"), [(15, True), (16, True), (17, False)])
def test_tree_depth(depth: int, ok: bool) -> None:
    params = mutate((*C, "nodes"), tree(depth))
    params["snapshot"]["collection"]["selected_node_id"] = "n0"
    params["snapshot"]["collection"]["detail"]["node_id"] = "n0"
    assert (judge(params) == []) is ok
    if not ok:
        assert set(judge(params)) == {"EXT-2.5-collection-integrity"}


@pytest.mark.parametrize(
    ("kind", "nodes"),
    [
        ("tree", [{"id": "worker:1", "parent_id": "ghost"}]),
        ("tree", [{"id": "worker:1", "parent_id": "b"}, {"id": "b", "parent_id": "worker:1"}]),
        ("list", [{"id": "worker:1"}, {"id": "b", "parent_id": "worker:1"}]),
    ],
)
def test_collection_integrity(kind: str, nodes: list[dict[str, Any]]) -> None:
    params = mutate((*C, "nodes"), nodes)
    params["snapshot"]["collection"]["kind"] = kind
    assert set(judge(params)) == {"EXT-2.5-collection-integrity"}


def test_list_without_parents_passes() -> None:
    params = mutate((*C, "kind"), "list")
    assert judge(params) == []


def test_detail_must_match_selected_node() -> None:
    assert judge(mutate((*C, "detail", "node_id"), "worker:2")) == ["EXT-2.5-collection-integrity"]
    assert judge(mutate((*C, "selected_node_id"), None)) == ["EXT-2.5-collection-integrity"]


def test_action_commands() -> None:
    assert judge(mutate((*S, "actions", 0, "command"), "deploy")) == ["EXT-2.5-action-commands"]


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://example.com/a?b=c#d", True),
        ("http://8.8.8.8/", True),
        ("HTTPS://Example.COM", True),
        ("ftp://example.com/", False),
        ("/relative/path", False),
        ("https://user:pw@example.com/", False),
        ("https://user@example.com/", False),
        ("http://localhost:8080/", False),
        ("http://printer.local/", False),
        ("http://127.0.0.1/", False),
        ("http://10.0.0.1/", False),
        ("http://192.168.1.1/", False),
        ("http://169.254.1.1/", False),
        ("http://0.0.0.0/", False),
        ("http://224.0.0.1/", False),
        ("http://[::1]/", False),
        ("http://[fe80::1]/", False),
        ("http://[2001:4860:4860::8888]/", True),
        ("http://[::1/", False),
    ],
)
def test_url_references(url: str, ok: bool) -> None:
    params = mutate((*A, "references"), [{"kind": "url", "id": url, "label": "link"}])
    assert judge(params) == ([] if ok else ["EXT-2.5-url-sanitized"])


def test_non_url_references_are_opaque() -> None:
    params = mutate((*A, "references"), [{"kind": "session", "id": "http://127.0.0.1/"}])
    assert judge(params) == []


OWNER = {"session_id": "s", "extension_instance_id": "i", "process_generation": 1}


@pytest.mark.parametrize(
    ("changes", "ok"),
    [
        ({"parent_request_id": None, "resource_owner": OWNER}, True),
        ({"resource_owner": OWNER}, False),  # both fields
        ({"parent_request_id": 3}, False),  # not an active request
        ({"parent_request_id": "2"}, False),
        ({"parent_request_id": None, "resource_owner": {"session_id": "s"}}, False),
    ],
)
def test_owner_fields(changes: dict[str, Any], ok: bool) -> None:
    params = {**example(), **changes}
    assert set(judge(params)) == (set() if ok else {"EXT-2.5-owner-fields"})


@pytest.mark.parametrize("text", ["\x1b[32mok\x1b[0m", "a\x00b", "a\x9bb", "a\x7fb"])
def test_plain_labels_warn_on_control_characters(text: str) -> None:
    assert judge(mutate((*S, "status", "label"), text)) == ["EXT-2.5-plain-labels"]


@pytest.mark.parametrize("text", ["line one\nline two\tend", "<b>not html to us</b>", "ünïcödé"])
def test_plain_text_passes(text: str) -> None:
    assert judge(mutate((*C, "detail", "body"), text)) == []


@pytest.mark.parametrize(("last", "ok"), [(None, True), (3, True), (4, True), (5, False)])
def test_revision_monotonic(last: int | None, ok: bool) -> None:
    context = ec.SnapshotContext(NEGOTIATED, True, frozenset({"workers"}), frozenset({2}), last)
    assert judge(example(), context) == ([] if ok else ["EXT-2.5-revision-monotonic"])


# -- wiring into the session -------------------------------------------------------------

MANIFEST = ManifestInfo("t", "1", "0.2", {"commands": ["greet"], "presentation": True}, {})
OFFER = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, ("runtime_commands",), 8)
INIT_RESULT = {
    "api_version": "0.2",
    "tools": [],
    "commands": [{"name": "greet", "description": "d"}, {"name": "workers", "description": "d"}],
    "protocol": {
        "version": "0.2",
        "features": [*limits.REQUIRED_FEATURES, "runtime_commands"],
        "limits": {"max_concurrent_requests": 4},
    },
}


def receive(session: HostSession, msg: dict[str, Any]) -> list[Finding]:
    return session.received(decode_frame(Frame(0, dumps({"jsonrpc": "2.0", **msg}), "lf")))


def ready() -> HostSession:
    session = HostSession(MANIFEST, OFFER)
    session.sent_request(1, "initialize", {})
    assert broken(receive(session, {"id": 1, "result": INIT_RESULT})) == []
    session.sent_request(2, "command/execute", {"name": "greet"})
    return session


def update(revision: int, **extra: Any) -> dict[str, Any]:
    params = example()
    params["snapshot"]["revision"] = revision
    return {"method": "presentation/update", "params": params, **extra}


def test_session_remembers_revisions_per_generation() -> None:
    session = ready()
    assert broken(receive(session, update(4))) == []
    assert broken(receive(session, update(4))) == []
    found = [f for f in receive(session, update(3)) if isinstance(f, Violation)]
    assert [f.requirement for f in found] == ["EXT-2.5-revision-monotonic"]
    assert found[0].path == ("params", "snapshot", "revision")
    assert broken(receive(ready(), update(0))) == []  # a new generation restarts


def test_session_judges_parent_by_its_state_and_commands_from_initialize() -> None:
    session = ready()
    assert broken(receive(session, update(1))) == []  # "workers" came from initialize
    receive(session, {"id": 2, "result": {"text": "hi"}})
    assert broken(receive(session, update(2))) == ["EXT-2.5-owner-fields"]


def test_session_flags_contributions_sent_as_requests() -> None:
    session = ready()
    found = broken(receive(session, {"id": "c1", "method": "context/contribution", "params": {"label": "l"}}))
    assert found.count("EXT-2.3-context-contribution") == 2  # sent with an id, and no content
    assert broken(receive(session, {**update(1), "id": "p1"})) == ["EXT-2.5-presentation-declared"]


def test_session_undeclared_presentation_reports_only_the_declaration() -> None:
    session = HostSession(ManifestInfo("t", "1", "0.2", {"commands": ["greet"]}, {}), OFFER)
    session.sent_request(1, "initialize", {})
    receive(session, {"id": 1, "result": INIT_RESULT})
    assert broken(receive(session, update(1, params={"snapshot": "nonsense"}))) == ["EXT-2.5-presentation-declared"]


def test_unstructured_params_are_left_to_the_envelope_rule() -> None:
    session = ready()
    found = broken(receive(session, {"method": "status/contribution", "params": '{"surface": "status"}'}))
    assert found == ["JSONRPC-4-params-structured"]


def test_session_judges_menu_results_against_declared_commands() -> None:
    session = ready()
    session.sent_request(3, "menu/collect", {"context": {}})
    menu = {"items": [{"id": "a", "label": "A", "command": "workers"}, {"id": "b", "label": "B", "command": "x"}]}
    found = [f for f in receive(session, {"id": 3, "result": menu}) if isinstance(f, Violation)]
    assert [(f.requirement, f.path) for f in found] == [("EXT-1.6b-menu-shape", ("result", "items", 1, "command"))]
