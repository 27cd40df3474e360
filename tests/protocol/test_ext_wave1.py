"""The Wave-1 requests an extension sends (ext_wave1): §2 owners, §2.19-§2.24.

Every bound at N-1, N and N+1; gating by the negotiated feature; the parent
rule through the session, as the harness meets it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from conformance.protocol import ext_wave1 as w1
from conformance.protocol import limits
from conformance.protocol.ext_requests import ChildContext, check_child_params
from conformance.protocol.ext_session import HostSession
from conformance.protocol.ext_types import ManifestInfo, Negotiated, Offer
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Exercise, Finding, Violation

ALL = Negotiated("0.2", frozenset({"request_cancellation", "content_parts", *w1.WAVE1_FEATURES.values()}))
NONE = Negotiated("0.2", frozenset({"request_cancellation", "content_parts"}))
PARENT = {"parent_request_id": 2}


def judge(method: str, params: Any, negotiated: Negotiated = ALL) -> list[Finding]:
    return list(check_child_params(method, params, context=ChildContext(negotiated)))


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def sized(n: int, char: str = "a") -> str:
    return char * n


# -- valid requests pass, each exercising its section's rule -------------------------

VALID: list[tuple[str, dict[str, Any], str]] = [
    ("composer/get", PARENT, "EXT-2.19-composer-request"),
    ("composer/set", {**PARENT, "text": "hello\n\tworld\r\n"}, "EXT-2.19-composer-request"),
    ("composer/insert", {**PARENT, "text": sized(limits.COMPOSER_TEXT_MAX_BYTES)}, "EXT-2.19-composer-request"),
    ("session/append_entry", {**PARENT, "entry_type": "custom", "data": None}, "EXT-2.21-session-entries-request"),
    ("session/set_name", {**PARENT, "name": ""}, "EXT-2.21-session-entries-request"),
    ("session/set_label", {**PARENT, "entry_id": "e", "label": ""}, "EXT-2.21-session-entries-request"),
    ("session/send_message", {**PARENT, "role": "system", "text": "x"}, "EXT-2.22-message-injection-request"),
    ("session/send_user_message", {**PARENT, "text": "x"}, "EXT-2.22-message-injection-request"),
    ("tools/set_active", {**PARENT, "names": []}, "EXT-2.23-set-active-request"),
    ("terminal/acquire", PARENT, "EXT-2.24-terminal-request"),
    ("terminal/release", {**PARENT, "extra": 1}, "EXT-2.24-terminal-request"),
]


@pytest.mark.parametrize(("method", "params", "requirement"), VALID, ids=[v[0] for v in VALID])
def test_valid_requests_pass(method: str, params: dict[str, Any], requirement: str) -> None:
    found = judge(method, params)
    assert Exercise(requirement) in found
    assert broken(found) == []


@pytest.mark.parametrize(("method", "params", "requirement"), VALID, ids=[v[0] for v in VALID])
def test_each_needs_its_feature(method: str, params: dict[str, Any], requirement: str) -> None:
    found = [f for f in judge(method, params, NONE) if isinstance(f, Violation)]
    assert [v.requirement for v in found] == [requirement]
    assert f"the {w1.WAVE1_FEATURES[method]} feature was not negotiated" in found[0].message


def test_api_01_is_not_judged() -> None:
    assert judge("composer/set", {"text": 3}, Negotiated("0.1")) == []


# -- §2.19 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (sized(limits.COMPOSER_TEXT_MAX_BYTES - 1), True),
        (sized(limits.COMPOSER_TEXT_MAX_BYTES), True),
        (sized(limits.COMPOSER_TEXT_MAX_BYTES + 1), False),
        ("é" * (limits.COMPOSER_TEXT_MAX_BYTES // 2), True),  # bytes, not characters
        ("é" * (limits.COMPOSER_TEXT_MAX_BYTES // 2) + "a", False),
        ("\x1b[1mbold\x1b[0m", False),
        ("bell\x07", False),
        ("del\x7f", False),
        ("csi\x9b", False),
        ("lone \ud800 surrogate", False),
        ("tab\tnewline\ncr\r ☃", True),
    ],
)
def test_composer_text(text: str, ok: bool) -> None:
    assert broken(judge("composer/insert", {**PARENT, "text": text})) == ([] if ok else ["EXT-2.19-composer-request"])


@pytest.mark.parametrize("params", [PARENT, {**PARENT, "text": None}, {**PARENT, "text": 3}, []])
def test_composer_set_needs_text(params: Any) -> None:
    assert broken(judge("composer/set", params)) == ["EXT-2.19-composer-request"]


# -- §2.20 ------------------------------------------------------------------------

SHORTCUT = {"parent_request_id": 1, "id": "pi:0:ctrl+p", "key": "ctrl+p", "description": "d"}


@pytest.mark.parametrize(
    ("member", "limit"),
    [
        ("id", limits.SHORTCUT_ID_MAX_BYTES),
        ("key", limits.SHORTCUT_KEY_MAX_BYTES),
        ("description", limits.SHORTCUT_DESCRIPTION_MAX_BYTES),
    ],
)
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_shortcut_bounds(member: str, limit: int, delta: int) -> None:
    found = list(w1.shortcut_bounds({**SHORTCUT, member: sized(limit + delta)}))
    assert broken(found) == ([] if delta <= 0 else ["EXT-2.20-shortcut-bounds"])


@pytest.mark.parametrize("params", [{"id": "a"}, {"key": "k"}, {"id": 1, "key": "k"}, "x"])
def test_shortcut_needs_id_and_key(params: Any) -> None:
    assert broken(w1.shortcut_bounds(params)) == ["EXT-2.20-shortcut-bounds"]


def test_shortcut_description_is_optional() -> None:
    assert broken(w1.shortcut_bounds({"id": "a", "key": "k"})) == []


# -- §2.21 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "limit", "method", "base"),
    [
        ("entry_type", limits.ENTRY_TYPE_MAX_BYTES, "session/append_entry", {"data": {}}),
        ("name", limits.SESSION_NAME_MAX_BYTES, "session/set_name", {}),
        ("entry_id", limits.ENTRY_ID_MAX_BYTES, "session/set_label", {"label": "l"}),
        ("label", limits.SESSION_LABEL_MAX_BYTES, "session/set_label", {"entry_id": "e"}),
    ],
)
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_session_entry_bounds(member: str, limit: int, method: str, base: dict[str, Any], delta: int) -> None:
    found = judge(method, {**PARENT, **base, member: sized(limit + delta)})
    assert broken(found) == ([] if delta <= 0 else ["EXT-2.21-session-entries-request"])


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_entry_data_bound(delta: int) -> None:
    data = sized(limits.ENTRY_DATA_MAX_BYTES - 2 + delta)  # the two quotes count
    found = judge("session/append_entry", {**PARENT, "entry_type": "t", "data": data})
    assert broken(found) == ([] if delta <= 0 else ["EXT-2.21-session-entries-request"])


def nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_entry_data_depth(delta: int) -> None:
    found = judge("session/append_entry", {**PARENT, "entry_type": "t", "data": nested(limits.MAX_JSON_DEPTH + delta)})
    assert broken(found) == ([] if delta <= 0 else ["EXT-2.21-session-entries-request"])


def test_append_entry_needs_data() -> None:
    assert broken(judge("session/append_entry", {**PARENT, "entry_type": "t"})) == ["EXT-2.21-session-entries-request"]


# -- §2.22 ------------------------------------------------------------------------


@pytest.mark.parametrize(("role", "ok"), [("assistant", True), ("system", True), ("user", False), (None, False)])
def test_injected_role(role: Any, ok: bool) -> None:
    found = judge("session/send_message", {**PARENT, "role": role, "text": "x"})
    assert broken(found) == ([] if ok else ["EXT-2.22-message-injection-request"])


@pytest.mark.parametrize("method", ["session/send_message", "session/send_user_message"])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_injected_text_bound(method: str, delta: int) -> None:
    found = judge(method, {**PARENT, "role": "assistant", "text": sized(limits.INJECTED_TEXT_MAX_BYTES + delta)})
    assert broken(found) == ([] if delta <= 0 else ["EXT-2.22-message-injection-request"])


# -- §2.23 ------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_set_active_count(delta: int) -> None:
    names = [f"t{i}" for i in range(limits.ACTIVE_TOOLS_MAX_NAMES + delta)]
    assert broken(judge("tools/set_active", {**PARENT, "names": names})) == (
        [] if delta <= 0 else ["EXT-2.23-set-active-request"]
    )


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_set_active_name_bytes(delta: int) -> None:
    names = [sized(limits.ACTIVE_TOOL_NAME_MAX_BYTES + delta)]
    assert broken(judge("tools/set_active", {**PARENT, "names": names})) == (
        [] if delta <= 0 else ["EXT-2.23-set-active-request"]
    )


@pytest.mark.parametrize("names", [None, "echo", [1]])
def test_set_active_names_are_strings(names: Any) -> None:
    assert broken(judge("tools/set_active", {**PARENT, "names": names})) == ["EXT-2.23-set-active-request"]


# -- §2.24 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params", [{}, {"parent_request_id": "2"}, {"parent_request_id": -1}, {**PARENT, "grant_id": "grant-1"}]
)
def test_terminal_request_faults(params: Any) -> None:
    assert broken(judge("terminal/release", params)) == ["EXT-2.24-terminal-request"]


# -- §2 owners, through the session -----------------------------------------------

MANIFEST = ManifestInfo("t", "1", "0.2", {"tools": ["echo"], "commands": ["greet"]}, {})
FEATURES = ["request_cancellation", "content_parts", *sorted(set(w1.WAVE1_FEATURES.values())), "shortcuts"]
OFFER = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, tuple(FEATURES[2:]), 8)
INIT_RESULT = {
    "api_version": "0.2",
    "tools": [{"name": "echo", "description": "d", "parameters": {"type": "object"}}],
    "commands": [{"name": "greet", "description": "d"}],
    "protocol": {"version": "0.2", "features": FEATURES, "limits": {"max_concurrent_requests": 4}},
}
OWNER = {"session_id": "s", "extension_instance_id": "i", "process_generation": 1}


def frame(msg: dict[str, Any]) -> Any:
    return decode_frame(Frame(0, dumps({"jsonrpc": "2.0", **msg}), "lf"))


def ready() -> HostSession:
    s = HostSession(MANIFEST, OFFER)
    s.sent_request(1, "initialize", {})
    assert broken(s.received(frame({"id": 1, "result": INIT_RESULT}))) == []
    s.sent_request(2, "command/execute", {"name": "greet", "arguments": []})
    s.sent_request(3, "hook/run", {"hook": "before_prompt", "payload": {}})
    s.sent_request(4, "hook/run", {"hook": "model_turn_end", "payload": {}})
    s.sent_request(5, "tool/call", {"name": "echo", "arguments": {}})
    assert broken(s.received(frame({"id": 5, "result": {"content": [{"type": "text", "text": "x"}]}}))) == []
    return s


def wave1(cid: str, method: str, params: dict[str, Any]) -> list[str]:
    return broken(ready().received(frame({"id": cid, "method": method, "params": params})))


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("composer/get", {"parent_request_id": 2}),  # a live command
        ("composer/get", {"parent_request_id": 2, "resource_owner": OWNER}),  # ignored under a live parent
        ("composer/get", {"parent_request_id": 5, "resource_owner": OWNER}),  # a deferred caller
        ("composer/get", {"parent_request_id": 1, "resource_owner": OWNER}),  # its owner decides, not the parent
        ("session/append_entry", {"parent_request_id": 4, "entry_type": "t", "data": 1}),  # an awaited turn hook
        ("terminal/acquire", {"parent_request_id": 3}),  # terminal/* are not owner-scoped Wave-1 requests
    ],
)
def test_wave1_parents_that_pass(method: str, params: dict[str, Any]) -> None:
    assert wave1("c", method, params) == []


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({}, "needs a numeric parent_request_id; got absent"),
        ({"parent_request_id": "2"}, "got '2'"),
        ({"parent_request_id": 99}, "which the host never sent"),
        ({"parent_request_id": 3}, "a hook/run (before_prompt) request"),
        ({"parent_request_id": 4}, "a hook/run (model_turn_end) request"),  # only append_entry's lane
        ({"parent_request_id": 5}, "already answered, and carries no resource_owner"),
        ({"parent_request_id": 2, "resource_owner": "s"}, "resource_owner is a string"),
        ({"parent_request_id": 2, "resource_owner": {**OWNER, "process_generation": "1"}}, "process_generation"),
    ],
)
def test_wave1_parent_faults(params: dict[str, Any], fragment: str) -> None:
    found = [f for f in ready().received(frame({"id": "c", "method": "composer/get", "params": params}))]
    violations = [f for f in found if isinstance(f, Violation)]
    assert [v.requirement for v in violations] == ["EXT-2-wave1-parent"]
    assert fragment in violations[0].message


def test_at_most_64_shortcuts_per_generation() -> None:
    s = HostSession(MANIFEST, OFFER)
    s.sent_request(1, "initialize", {})
    register = {"parent_request_id": 1, "key": "k"}
    for i in range(limits.SHORTCUTS_PER_GENERATION):
        assert (
            broken(
                s.received(frame({"id": f"s{i}", "method": "shortcut/register", "params": {**register, "id": f"{i}"}}))
            )
            == []
        )
    over = s.received(frame({"id": "s64", "method": "shortcut/register", "params": {**register, "id": "64"}}))
    assert broken(over) == ["EXT-2.20-shortcut-bounds"]
