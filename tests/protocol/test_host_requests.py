"""Host request shapes (§1.2-§1.8), one rule at a time."""

from __future__ import annotations

from typing import Any

import pytest
from host_frames import CONTEXT, OWNER, manifest, tool_call

from conformance.protocol.ext_types import Negotiated
from conformance.protocol.host_requests import HostView, check_host_request
from conformance.protocol.violations import Exercise, Violation


def view(api: str = "0.2", features: tuple[str, ...] = (), **m: Any) -> HostView:
    return HostView(manifest(api, **m), Negotiated(api, frozenset(features)), frozenset({"echo"}), frozenset({"hello"}))


def broken(method: str, params: Any, v: HostView | None = None) -> list[str]:
    findings = check_host_request(method, params, view=v or view())
    return [f.requirement for f in findings if isinstance(f, Violation)]


def exercised(method: str, params: Any, v: HostView | None = None) -> set[str]:
    return {f.requirement for f in check_host_request(method, params, view=v or view()) if isinstance(f, Exercise)}


GOOD: dict[str, Any] = {
    "tool/call": tool_call(),
    "command/execute": {"name": "hello", "arguments": ["a"], "context": CONTEXT},
    "hook/run": {"hook": "before_prompt", "payload": {"prompt": "p"}, "context": CONTEXT},
    "context/collect": {"prompt": None, "context": CONTEXT},
    "status/collect": {"surface": "footer", "context": CONTEXT},
    "tool/render": {"name": "echo", "arguments": {}, "output": "o", "is_error": False, "context": CONTEXT},
    "shutdown": {},
}


@pytest.mark.parametrize("method", sorted(GOOD))
def test_careful_requests_pass(method: str) -> None:
    assert broken(method, GOOD[method]) == []
    assert exercised(method, GOOD[method])


def test_unknown_methods_are_not_judged() -> None:
    assert list(check_host_request("x/y", 3, view=view())) == []


@pytest.mark.parametrize("method", ["tool/call", "command/execute", "context/collect", "status/collect", "tool/render"])
def test_non_object_params(method: str) -> None:
    assert broken(method, [1])


@pytest.mark.parametrize(
    ("context", "ok"),
    [
        (CONTEXT, True),
        ({**CONTEXT, "workspace": None}, True),
        ({"workspace": 1, "host": {}}, False),
        ({"workspace": "/w"}, False),
        (None, False),
    ],
)
def test_context_shape(context: Any, ok: bool) -> None:
    params = {"prompt": None, "context": context}
    assert ("EXT-1.2-host-context-shape" in broken("context/collect", params)) is not ok


def test_tool_call_rules() -> None:
    assert broken("tool/call", tool_call(name="nope")) == ["EXT-1.2-host-known-tool"]
    assert broken("tool/call", tool_call(name="nope"), view(features=("dynamic_tools",))) == [
        "EXT-1.2-host-catalog-revision-presence"
    ]
    assert broken("tool/call", tool_call(catalog_revision=0), view(features=("dynamic_tools",))) == []
    assert broken("tool/call", tool_call(catalog_revision=-1), view(features=("dynamic_tools",))) == [
        "EXT-1.2-host-catalog-revision-presence"
    ]
    assert broken("tool/call", tool_call(catalog_revision=1)) == ["EXT-1.2-host-catalog-revision-presence"]
    assert broken("tool/call", {**tool_call(), "arguments": []}) == ["EXT-1.2-host-tool-call-shape"]


def test_resource_owner_per_api() -> None:
    assert broken("tool/call", tool_call("0.1"), view("0.1")) == []
    assert broken("tool/call", tool_call("0.2"), view("0.1")) == ["EXT-1.2-host-resource-owner-presence"]
    assert broken("tool/call", tool_call("0.1")) == ["EXT-1.2-host-resource-owner-presence"]
    bad = tool_call()
    bad["context"]["resource_owner"] = {**OWNER, "process_generation": "3"}
    assert broken("tool/call", bad) == ["EXT-1.2-host-resource-owner-shape"]


def test_command_rules() -> None:
    assert broken("command/execute", {**GOOD["command/execute"], "name": "other"}) == ["EXT-1.3-host-declared-command"]
    assert broken("command/execute", {**GOOD["command/execute"], "arguments": [1]}) == ["EXT-1.3-host-command-shape"]
    assert broken("command/execute", {**GOOD["command/execute"], "arguments": "a"}) == ["EXT-1.3-host-command-shape"]


def test_hook_set_and_payloads() -> None:
    run = GOOD["hook/run"]
    assert broken("hook/run", {**run, "hook": "after_response", "payload": {"response": "r"}}) == [
        "EXT-1.4-host-hook-set"
    ]  # not declared by the manifest
    assert broken("hook/run", {**run, "payload": {"prompt": 3}}) == ["EXT-1.4-host-payload-shapes"]
    tool_hook = {"hook": "after_tool_call", "payload": {"name": "echo", "arguments": {}, "output": "o", "is_error": 1}}
    assert broken("hook/run", {**tool_hook, "context": CONTEXT}) == ["EXT-1.4-host-payload-shapes"]


def test_turn_hooks_need_api_0_4_and_session_entries() -> None:
    declared = {"contributes": {"hooks": ["model_turn_start", "model_turn_end"]}}
    payload = {"kind": "model_turn_start", "run_id": "run:001", "turn_index": 0, "timestamp_ms": 1}
    params = {"hook": "model_turn_start", "payload": payload, "context": CONTEXT}
    assert broken("hook/run", params, view("0.4", ("session_entries",), **declared)) == []
    assert broken("hook/run", params, view("0.4", (), **declared)) == ["EXT-1.4-host-hook-set"]
    end = {
        "hook": "model_turn_end",
        "payload": {**payload, "kind": "model_turn_end", "run_id": "r1"},
        "context": CONTEXT,
    }
    got = broken("hook/run", end, view("0.4", ("session_entries",), **declared))
    assert got == ["EXT-1.4b-host-payload"] * 3  # run_id, assistant_entry, tool_result_entries


def test_status_surface_values() -> None:
    assert broken("status/collect", {"surface": "sidebar", "context": CONTEXT}) == ["EXT-1.6-host-surface-values"]


def test_menu_preconditions() -> None:
    params = {"context": CONTEXT}
    assert broken("menu/collect", params, view(contributes={"menu": True})) == []
    assert broken("menu/collect", params) == ["EXT-1.6b-host-menu-preconditions"]
    assert broken("menu/collect", params, view("0.1", contributes={"menu": True})) == [
        "EXT-1.6b-host-menu-preconditions"
    ]
    no_commands = HostView(manifest("0.2", contributes={"menu": True, "commands": []}), Negotiated("0.2"))
    assert broken("menu/collect", params, no_commands) == ["EXT-1.6b-host-menu-preconditions"]
    # a runtime_commands catalog counts as declared
    assert broken("menu/collect", params, view(contributes={"menu": True, "commands": []})) == []


def test_render_shape() -> None:
    assert broken("tool/render", {**GOOD["tool/render"], "is_error": "no"}) == ["EXT-1.7-host-render-shape"]


def test_shutdown_shape() -> None:
    assert broken("shutdown", None) == []
    assert broken("shutdown", []) == ["EXT-1.8-host-shutdown-shape"]
