"""Shared builders for the host-judging tests: what a careful host writes."""

from __future__ import annotations

import json
from typing import Any

from conformance.protocol.ext_types import ManifestInfo
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import Decoded, decode_frame

CONTRIBUTES = {"tools": ["echo"], "commands": ["hello"], "hooks": ["before_prompt", "after_tool_call"]}


def manifest(api: str = "0.2", **extra: Any) -> ManifestInfo:
    contributes = {**CONTRIBUTES, **extra.pop("contributes", {})}
    return ManifestInfo("probe", "1.0.0", api, contributes, extra.pop("capabilities", {}))


def initialize_params(api: str = "0.2", **override: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "api_version": api,
        "octet_version": "0.8.0",
        "extension": {"name": "probe", "version": "1.0.0", "manifest_path": "/x/extension.toml", "source": "explicit"},
        "workspace": "/w",
        "capabilities": {"filesystem": "none", "process": False, "network": False},
        "contributes": dict(CONTRIBUTES),
        "host": {"session_id": None, "session_name": None, "model": "m", "reasoning": None, "active_skills": []},
    }
    if api != "0.1":
        optional = ["request_progress", "lifecycle_events", "dynamic_tools", "shortcuts", "composer"]
        if api == "0.4":
            optional.append("tool_prompt_metadata_v1")
        params["protocol"] = {
            "version": "0.2",
            "required_features": ["request_cancellation", "content_parts"],
            "optional_features": optional,
            "limits": {"max_concurrent_requests": 4},
        }
    params.update(override)
    return params


def initialize_result(api: str = "0.2", *, features: list[str] | None = None, limit: int = 2) -> dict[str, Any]:
    result: dict[str, Any] = {
        "api_version": api,
        "tools": [{"name": "echo", "description": "Echo", "parameters": {"type": "object"}}],
        "commands": [{"name": "hello", "description": "Hi"}],
    }
    if api != "0.1":
        result["protocol"] = {
            "version": "0.2",
            "features": ["request_cancellation", "content_parts", *(features or [])],
            "limits": {"max_concurrent_requests": limit},
        }
    return result


CONTEXT = {"workspace": "/w", "execution_scope": None, "host": {}}
OWNER = {"session_id": "s", "extension_instance_id": "i-1", "process_generation": 1}


def tool_call(api: str = "0.2", name: str = "echo", **extra: Any) -> dict[str, Any]:
    context = dict(CONTEXT) if api == "0.1" else {**CONTEXT, "resource_owner": dict(OWNER)}
    return {"name": name, "arguments": {}, "context": context, **extra}


_index = [0]


def frame(message: dict[str, Any] | bytes) -> Decoded:
    payload = message if isinstance(message, bytes) else json.dumps(message).encode()
    _index[0] += 1
    return decode_frame(Frame(_index[0], payload, "lf"))


def request(rid: Any, method: str, params: Any = None) -> Decoded:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return frame(msg)


def notification(method: str, params: Any = None) -> Decoded:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return frame(msg)


def result(rid: Any, value: Any) -> Decoded:
    return frame({"jsonrpc": "2.0", "id": rid, "result": value})


def error(rid: Any, code: int = -32000, message: str = "refused") -> Decoded:
    return frame({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})
