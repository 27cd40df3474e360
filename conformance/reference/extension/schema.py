"""A deliberately small JSON Schema checker for this extension's own tools.

Why not the jsonschema package: the manifest launches the extension with the
system ``python3``, and an extension should not depend on whatever happens to
be installed there. The tool schemas in :mod:`.catalog` use only the keywords
handled here (type, properties, required, additionalProperties, minimum,
maximum); a test keeps the two in step.
"""

from __future__ import annotations

from typing import Any

from .jsonrpc import JsonObject

SUPPORTED_KEYWORDS = frozenset(
    {"type", "description", "default", "properties", "required", "additionalProperties", "minimum", "maximum"}
)


def first_violation(instance: Any, schema: JsonObject, path: str = "arguments") -> str | None:
    """The first way ``instance`` breaks ``schema``, as a sentence, or None."""
    expected = schema.get("type")
    if isinstance(expected, str) and not has_type(instance, expected):
        return f"{path} must be {_article(expected)}, got {type_name(instance)}"
    if isinstance(instance, dict):
        return _object_violation(instance, schema, path)
    if type_name(instance) in ("integer", "number"):
        return _range_violation(instance, schema, path)
    return None


def has_type(instance: Any, expected: str) -> bool:
    if expected == "integer":
        # JSON Schema: an integer is any number with a zero fractional part.
        is_whole_float = isinstance(instance, float) and instance.is_integer()
        return type_name(instance) == "integer" or is_whole_float
    if expected == "number":
        return type_name(instance) in ("integer", "number")
    return type_name(instance) == expected


def type_name(instance: Any) -> str:
    if isinstance(instance, bool):  # before int: bool is an int subclass
        return "boolean"
    names: dict[type, str] = {int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if instance is None else names.get(type(instance), type(instance).__name__)


def _object_violation(instance: JsonObject, schema: JsonObject, path: str) -> str | None:
    properties: JsonObject = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in instance:
            return f"{path} is missing the required property {name!r}"
    if schema.get("additionalProperties") is False:
        unexpected = sorted(set(instance) - set(properties))
        if unexpected:
            allowed = ", ".join(sorted(properties)) or "none"
            return f"{path} has unexpected properties {unexpected} (allowed: {allowed})"
    for name, subschema in properties.items():
        if name in instance:
            problem = first_violation(instance[name], subschema, f"{path}.{name}")
            if problem is not None:
                return problem
    return None


def _range_violation(instance: float, schema: JsonObject, path: str) -> str | None:
    minimum = schema.get("minimum")
    maximum = schema.get("maximum")
    if minimum is not None and instance < minimum:
        return f"{path} must be >= {minimum}, got {instance}"
    if maximum is not None and instance > maximum:
        return f"{path} must be <= {maximum}, got {instance}"
    return None


def _article(type_word: str) -> str:
    return f"an {type_word}" if type_word[0] in "aeiou" else f"a {type_word}"
