"""The params of every host request, checked before anything is sent (§1.2-§1.7).

The embedder supplies names, arguments and payloads; a careful host refuses a
malformed request locally (outcome "refused") instead of writing it.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol.limits import STATUS_SURFACES

LEGACY_HOOKS = ("before_prompt", "after_response", "before_tool_call", "after_tool_call")  # §1.4, every API
HOOKS_0_2 = ("provider_retry", "before_persistence", "post_mutation")  # §1.4, API 0.2+
# §1.4b: model-turn hooks need API 0.4 and session_entries, which this host does not offer.
PAYLOAD_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "before_prompt": (("prompt", str),),
    "after_response": (("response", str),),
    "before_tool_call": (("name", str), ("arguments", dict)),
    "after_tool_call": (("name", str), ("arguments", dict), ("output", str), ("is_error", bool)),
}


def known_hooks(api_version: str) -> tuple[str, ...]:
    return LEGACY_HOOKS if api_version == "0.1" else LEGACY_HOOKS + HOOKS_0_2


def params_problem(method: str, params: dict[str, Any], api_version: str) -> str | None:
    check = {
        "tool/call": _tool_call,
        "command/execute": _command,
        "hook/run": lambda p: _hook(p, api_version),
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


def _hook(params: dict[str, Any], api_version: str) -> str | None:
    hook, payload = params.get("hook"), params.get("payload")
    if hook not in known_hooks(api_version):
        return f"hook {str(hook)[:80]!r} is not a hook of API {api_version}"
    if not isinstance(payload, dict):
        return "a hook payload is an object"
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
