"""The params of every host request, checked before anything is sent (§1.2-§1.7).

The embedder supplies names, arguments and payloads; a careful host refuses a
malformed request locally (outcome "refused") instead of writing it.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol.limits import STATUS_SURFACES

LEGACY_HOOKS = ("before_prompt", "after_response", "before_tool_call", "after_tool_call")  # §1.4, every API
HOOKS_0_2 = ("provider_retry", "before_persistence", "post_mutation")  # §1.4, API 0.2+
# §1.4b: model-turn hooks need API 0.4 and session_entries negotiated. This host
# routes them (payload checked below) but has no private session-leaf lane, so
# it offers session_entries only when its embedder adds it.
TURN_HOOKS = ("model_turn_start", "model_turn_end")
PAYLOAD_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "before_prompt": (("prompt", str),),
    "after_response": (("response", str),),
    "before_tool_call": (("name", str), ("arguments", dict)),
    "after_tool_call": (("name", str), ("arguments", dict), ("output", str), ("is_error", bool)),
}


def known_hooks(api_version: str, features: frozenset[str] = frozenset()) -> tuple[str, ...]:
    hooks: tuple[str, ...] = LEGACY_HOOKS if api_version == "0.1" else LEGACY_HOOKS + HOOKS_0_2
    if api_version == "0.4" and "session_entries" in features:
        hooks += TURN_HOOKS
    return hooks


def params_problem(
    method: str, params: dict[str, Any], api_version: str, features: frozenset[str] = frozenset()
) -> str | None:
    check = {
        "tool/call": _tool_call,
        "command/execute": _command,
        "hook/run": lambda p: _hook(p, api_version, features),
        "context/collect": _context,
        "status/collect": _status,
        "menu/collect": lambda p: None,
        "tool/render": _render,
    }.get(method)
    return None if check is None else check(params)


def _tool_call(params: dict[str, Any]) -> str | None:
    if not isinstance(params.get("name"), str) or not isinstance(params.get("arguments"), dict):
        return "tool/call needs a string name and an arguments object"
    return None


def _command(params: dict[str, Any]) -> str | None:
    arguments = params.get("arguments")
    if not isinstance(params.get("name"), str) or not isinstance(arguments, list):
        return "command/execute needs a string name and an arguments array"
    if not all(isinstance(a, str) for a in arguments):
        return "command arguments are strings"
    return None


def _hook(params: dict[str, Any], api_version: str, features: frozenset[str]) -> str | None:
    hook, payload = params.get("hook"), params.get("payload")
    if hook not in known_hooks(api_version, features):
        return f"hook {str(hook)[:80]!r} is not a hook of API {api_version} as negotiated"
    if not isinstance(payload, dict):
        return "a hook payload is an object"
    if hook in TURN_HOOKS:
        return _turn_payload(str(hook), payload)
    for name, kind in PAYLOAD_FIELDS.get(hook, ()):
        if not isinstance(payload.get(name), kind):
            return f"{hook} payload needs {name} ({kind.__name__})"
    return None


def _context(params: dict[str, Any]) -> str | None:
    prompt = params.get("prompt")
    return None if prompt is None or isinstance(prompt, str) else "context/collect prompt is a string or null"


def _status(params: dict[str, Any]) -> str | None:
    return None if params.get("surface") in STATUS_SURFACES else f"surface must be one of {STATUS_SURFACES}"


def _render(params: dict[str, Any]) -> str | None:
    ok = (
        isinstance(params.get("name"), str)
        and isinstance(params.get("output"), str)
        and isinstance(params.get("arguments"), dict)
        and isinstance(params.get("is_error"), bool)
    )
    return None if ok else "tool/render needs name and output strings, an arguments object and a boolean is_error"


def _turn_payload(hook: str, payload: dict[str, Any]) -> str | None:
    """§1.4b: kind names the hook, run_id is "run:" and the initiating entry id,
    turn_index and timestamp_ms are non-negative integers; the end adds the
    assistant entry (an object) and the tool-result entries (an array)."""
    run_id = payload.get("run_id")
    if payload.get("kind") != hook or not isinstance(run_id, str) or not run_id.startswith("run:") or run_id == "run:":
        return f"{hook} payload needs kind {hook!r} and a run_id 'run:<entry id>'"
    for name in ("turn_index", "timestamp_ms"):
        value = payload.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{hook} payload needs a non-negative integer {name}"
    if hook == "model_turn_end" and (
        not isinstance(payload.get("assistant_entry"), dict) or not isinstance(payload.get("tool_result_entries"), list)
    ):
        return "model_turn_end payload needs an assistant_entry object and a tool_result_entries array"
    return None
