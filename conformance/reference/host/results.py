"""What the host accepts as the result of each request it sends (§1.2-§1.7).

``result_problem(method, result, ...)`` returns None for a usable result or a
sentence saying what is wrong; the host then refuses the result (the call
ends "invalid" and a diagnostic is raised) instead of passing it on. The
tool/call rules are the ones §1.2 states: on API 0.2+ a non-empty array of
at most 256 content parts with at least one text part; image/audio parts only
with a verified artifact (this host offers no artifacts feature, so never);
structured_content required and validated when the tool declared an
output_schema and refused otherwise; structured content within 256 KiB,
metadata within 64 KiB, both within 32 levels and 16,384 nodes, metadata keys
within 256 bytes. Other methods get a shape check of their container.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from conformance.protocol.limits import (
    MAX_CONTENT_PARTS,
    MAX_JSON_DEPTH,
    MAX_JSON_NODES,
    MAX_METADATA_BYTES,
    MAX_METADATA_KEY_BYTES,
    MAX_STRUCTURED_CONTENT_BYTES,
)

from .initialize import Negotiated
from .requests import TURN_HOOKS

PART_TYPES = ("text", "image", "audio")


def result_problem(method: str, params: dict[str, Any], result: Any, negotiated: Negotiated) -> str | None:
    if method == "tool/call":
        if negotiated.api_version == "0.1":
            return _tool_result_0_1(result)
        return _tool_result(result, negotiated.output_schemas.get(str(params.get("name"))), negotiated)
    if method == "context/collect":
        return (
            None if isinstance(result, list) and all(isinstance(c, dict) for c in result) else "not an array of objects"
        )
    if method == "status/collect":
        return None if result is None or isinstance(result, dict) else "neither null nor an object"
    if method == "tool/render":
        segments = result.get("segments") if isinstance(result, dict) else None
        return None if isinstance(segments, list) else "no segments array"
    if method == "hook/run" and params.get("hook") in TURN_HOOKS:
        return turn_hook_problem(result)
    if method in ("command/execute", "hook/run", "menu/collect"):
        return None if isinstance(result, dict) else "not an object"
    return None


# §1.4b: what a model-turn observation may answer: the ordinary hook envelope,
# with session_operation continue at most.
TURN_ENVELOPE = ("disposition", "notifications", "context", "session_operation")


def turn_hook_problem(result: Any) -> str | None:
    """§1.4b: deny, a session_operation other than continue, a non-empty
    context and members outside the hook envelope are refused."""
    if not isinstance(result, dict):
        return "not an object"
    extra = sorted(k for k in result if k not in TURN_ENVELOPE)
    if extra:
        return f"a model-turn hook result cannot carry {extra[:4]}"
    for member in ("disposition", "session_operation"):
        value = result.get(member, {"action": "continue"})
        if not isinstance(value, dict) or value.get("action") != "continue":
            return f"a model-turn hook's {member} can only be continue"
    if result.get("context", []) != []:
        return "a model-turn hook contributes no prompt context"
    return None


def _tool_result_0_1(result: Any) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("content"), str):
        return "an API 0.1 tool result is an object with a content string"
    if not isinstance(result.get("is_error", False), bool):
        return "is_error must be a boolean"
    return None  # metadata is accepted and discarded (§1.2)


def _tool_result(result: Any, schema: dict[str, Any] | None, negotiated: Negotiated) -> str | None:
    if not isinstance(result, dict):
        return "a tool result is an object"
    if not isinstance(result.get("is_error", False), bool):
        return "is_error must be a boolean"
    problem = _content(result.get("content"), negotiated)
    if problem is None:
        problem = _structured(result, schema)
    if problem is None and "metadata" in result:
        problem = _bounded(result["metadata"], MAX_METADATA_BYTES, "metadata", key_bytes=MAX_METADATA_KEY_BYTES)
    return problem


def _content(content: Any, negotiated: Negotiated) -> str | None:
    if not isinstance(content, list) or not content:
        return "content must be a non-empty array of parts"
    if len(content) > MAX_CONTENT_PARTS:
        return f"content has {len(content)} parts; at most {MAX_CONTENT_PARTS}"
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in PART_TYPES:
            return f"content[{index}] is not a text, image or audio part"
        if kind == "text" and not isinstance(part.get("text"), str):
            return f"content[{index}].text must be a string"
        if kind != "text" and not negotiated.has("artifacts"):
            return f"content[{index}] is {kind}, which needs a verified artifact (artifacts not negotiated)"
    if not any(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "content needs at least one text part"
    return None


def _structured(result: dict[str, Any], schema: dict[str, Any] | None) -> str | None:
    present = "structured_content" in result
    if schema is None:
        return "structured_content without an output_schema" if present else None
    if not present:
        return "structured_content is required by the tool's output_schema"
    value = result["structured_content"]
    problem = _bounded(value, MAX_STRUCTURED_CONTENT_BYTES, "structured_content")
    if problem is not None:
        return problem
    try:
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except jsonschema.exceptions.SchemaError as exc:
        return f"the tool's output_schema is unusable: {exc.message[:120]}"
    return None if error is None else f"structured_content does not match output_schema: {error.message[:160]}"


def _bounded(value: Any, max_bytes: int, what: str, *, key_bytes: int | None = None) -> str | None:
    problem = _shape_bounds(value, what, key_bytes)  # first: it is iterative, json.dumps is not
    if problem is not None:
        return problem
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    return f"{what} is {size} bytes; at most {max_bytes}" if size > max_bytes else None


def _shape_bounds(value: Any, what: str, key_bytes: int | None) -> str | None:
    """Depth (a scalar is 1 level), node count and key sizes, iteratively."""
    nodes, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_JSON_DEPTH:
            return f"{what} nests deeper than {MAX_JSON_DEPTH}"
        if nodes > MAX_JSON_NODES:
            return f"{what} has more than {MAX_JSON_NODES} nodes"
        if isinstance(node, dict):
            for key, child in node.items():
                if key_bytes is not None and len(key.encode("utf-8", "surrogatepass")) > key_bytes:
                    return f"{what} has a key over {key_bytes} bytes"
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return None


# §1.4: a deny disposition blocks the hooked operation only for these legacy hooks.
VETO_HOOKS: tuple[str, ...] = ("before_prompt", "before_tool_call")
# §1.5: where a context contribution goes when it names no placement.
DEFAULT_PLACEMENT = "prompt_suffix"


def hook_proceeds(hook: str, result: Any) -> bool:
    """Whether the hooked operation goes on after this hook/run result (§1.4)."""
    disposition = result.get("disposition") if isinstance(result, dict) else None
    denied = isinstance(disposition, dict) and disposition.get("action") == "deny"
    return not (denied and hook in VETO_HOOKS)


def placed(contributions: Any) -> Any:
    """context/collect contributions as the host uses them: each with its placement (§1.5)."""
    if not isinstance(contributions, list):
        return contributions
    return [{"placement": DEFAULT_PLACEMENT, **c} if isinstance(c, dict) else c for c in contributions]
