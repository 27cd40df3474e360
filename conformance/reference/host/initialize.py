"""The initialize request per API version, and every §1.1 rule on its response.

``initialize_params(manifest, config)`` builds the request: API 0.1 uses the
frozen shape with no ``protocol`` member; API 0.2 / 0.4 add the protocol
offer (required + optional features this host implements, and its
concurrency limit). ``accept(result, offer, manifest)`` returns the
:class:`Negotiated` session or raises :class:`InitializeRejected` naming the
first broken rule -- a rejected child gets nothing routed to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jsonschema

from conformance.protocol.limits import (
    FEATURE_DEPENDENCIES,
    LIFECYCLE_EVENTS,
    MAX_INITIALIZE_COMMANDS,
    MAX_OUTPUT_SCHEMA_DEPTH,
    MAX_PROMPT_GUIDELINES,
    MAX_PROMPT_STRING_BYTES,
    MAX_SCHEMA_PROPERTY_NAME_BYTES,
    OUTPUT_SCHEMA_KEYWORDS,
    REQUIRED_FEATURES,
)

from .config import HostConfig
from .jsonrpc import JsonObject
from .manifest import Manifest

# Keywords whose value is a map of schemas / a list of schemas.
_SCHEMA_MAPS = ("properties",)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_PROMPT_METADATA = "tool_prompt_metadata_v1"


class InitializeRejected(ValueError):
    """The response broke a §1.1 rule; the child is shut down. ``permanent``
    marks a manifest/version/re-registration error (§5: parked at once, not
    retried)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class Offer:
    api_version: str
    protocol_version: str | None  # None on API 0.1
    offered: tuple[str, ...] = ()
    max_concurrent_requests: int = 0


@dataclass(frozen=True)
class Negotiated:
    api_version: str
    features: frozenset[str]
    max_concurrent_requests: int | None  # None: API 0.1, no negotiated limit
    subscriptions: frozenset[str]
    tools: tuple[str, ...]
    commands: tuple[str, ...]
    output_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool -> output_schema (API 0.2+)

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def cancellation(self) -> bool:
        return self.has("request_cancellation")


def offered_features(api_version: str, config: HostConfig) -> tuple[str, ...]:
    extra = config.optional_features_0_4 if api_version == "0.4" else ()
    return tuple(dict.fromkeys((*config.optional_features, *extra)))


def initialize_params(manifest: Manifest, config: HostConfig, *, source: str | None = None) -> tuple[JsonObject, Offer]:
    capabilities: JsonObject = {
        "filesystem": manifest.capabilities.get("filesystem", "none"),
        "process": bool(manifest.capabilities.get("process", False)),
        "network": bool(manifest.capabilities.get("network", False)),
    }
    if manifest.secrets:  # §1.1: an empty allowlist is omitted
        capabilities["secrets"] = list(manifest.secrets)
    if manifest.capabilities.get("provider_credentials") is True:
        capabilities["provider_credentials"] = True
    params: JsonObject = {
        "api_version": manifest.api_version,
        "octet_version": config.octet_version,
        "extension": {
            "name": manifest.name,
            "version": manifest.version,
            "manifest_path": str(manifest.path),
            "source": source or manifest.source,
        },
        "workspace": config.workspace,
        "capabilities": capabilities,
        "contributes": _contributes(manifest),
        "host": dict(config.host_state),
    }
    if manifest.api_version == "0.1":
        return params, Offer("0.1", None)
    optional = offered_features(manifest.api_version, config)
    if config.secret_broker is not None and manifest.secrets:  # §1.1/§2.10: offered only with an allowlist
        optional = (*optional, "secrets")
    params["protocol"] = {
        "version": manifest.api_version,
        "required_features": list(REQUIRED_FEATURES),
        "optional_features": list(optional),
        "limits": {"max_concurrent_requests": config.max_concurrent_requests},
    }
    offer = Offer(
        manifest.api_version, manifest.api_version, (*REQUIRED_FEATURES, *optional), config.max_concurrent_requests
    )
    return params, offer


def _contributes(manifest: Manifest) -> JsonObject:
    out: JsonObject = {
        "tools": manifest.declared("tools"),
        "commands": manifest.declared("commands"),
        "hooks": manifest.declared("hooks"),
        "ui": manifest.declared("ui"),
        "context": bool(manifest.contributes.get("context", False)),
        "tool_renderers": manifest.declared("tool_renderers"),
        "notifications": bool(manifest.contributes.get("notifications", False)),
        "confirmations": bool(manifest.contributes.get("confirmations", False)),
    }
    if manifest.api_version != "0.1":
        for flag in ("presentation", "menu"):
            if manifest.contributes.get(flag):
                out[flag] = True
    return out


# -- the response -----------------------------------------------------------------


def accept(result: Any, offer: Offer, manifest: Manifest) -> Negotiated:
    if not isinstance(result, dict):
        raise InitializeRejected(f"the result is a {type(result).__name__}, not an object")
    if result.get("api_version") != manifest.api_version:
        raise InitializeRejected(
            f"api_version is {result.get('api_version')!r}; the manifest selects {manifest.api_version!r}",
            permanent=True,
        )
    if offer.protocol_version is None:
        if "protocol" in result:
            raise InitializeRejected("an API 0.1 response must omit protocol")
        features: frozenset[str] = frozenset()
        limit: int | None = None
        subscriptions: frozenset[str] = frozenset()
    else:
        features, limit, subscriptions = _protocol(result.get("protocol"), offer)
    tools = _definitions(result, "tools")
    commands = _definitions(result, "commands")
    _check_catalog(tools, commands, manifest, features)
    _check_tools(result["tools"], offer.api_version, features)
    schemas = {t["name"]: t["output_schema"] for t in result["tools"] if isinstance(t.get("output_schema"), dict)}
    return Negotiated(offer.api_version, features, limit, subscriptions, tuple(tools), tuple(commands), schemas)


def _definitions(result: JsonObject, key: str) -> list[str]:
    entries = result.get(key)
    if not isinstance(entries, list):
        raise InitializeRejected(f"{key} must be an array")
    names: list[str] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise InitializeRejected(f"{key}[{index}] must be an object with a non-empty name")
        names.append(entry["name"])
    return names


def _check_catalog(tools: list[str], commands: list[str], manifest: Manifest, features: frozenset[str]) -> None:
    for key, names in (("tools", tools), ("commands", commands)):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InitializeRejected(f"duplicate {key} names {duplicates}")
    if len(commands) > MAX_INITIALIZE_COMMANDS:
        raise InitializeRejected(f"{len(commands)} commands; at most {MAX_INITIALIZE_COMMANDS}")
    if "dynamic_tools" not in features and set(tools) != set(manifest.declared("tools")):
        declared = sorted(manifest.declared("tools"))
        raise InitializeRejected(f"tools {sorted(tools)} differ from contributes.tools {declared}", permanent=True)
    if "runtime_commands" not in features and set(commands) != set(manifest.declared("commands")):
        declared = sorted(manifest.declared("commands"))
        raise InitializeRejected(
            f"commands {sorted(commands)} differ from contributes.commands {declared}", permanent=True
        )


def _check_tools(tools: list[JsonObject], api_version: str, features: frozenset[str]) -> None:
    for tool in tools:
        name = tool["name"]
        description = tool.get("description")
        if not isinstance(description, str) or not description:
            raise InitializeRejected(f"tool {name!r} needs a non-empty description")
        if not isinstance(tool.get("parameters"), dict) or not _valid_schema(tool["parameters"]):
            raise InitializeRejected(f"tool {name!r}: parameters must be a JSON Schema object")
        if "output_schema" in tool:
            if api_version == "0.1":
                raise InitializeRejected(f"tool {name!r}: API 0.1 tools cannot declare output_schema")
            problem = output_schema_problem(tool["output_schema"])
            if problem is None and not _valid_schema(tool["output_schema"]):
                problem = "is not a valid JSON Schema"
            if problem:
                raise InitializeRejected(f"tool {name!r}: output_schema {problem}")
        if _PROMPT_METADATA in features:
            problem = prompt_metadata_problem(tool)
            if problem:
                raise InitializeRejected(f"tool {name!r}: {problem}")


def _valid_schema(schema: dict[str, Any]) -> bool:
    """A schema its own dialect's meta-schema accepts (the default dialect when
    $schema is absent or unknown)."""
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.exceptions.SchemaError:
        return False
    except Exception:  # an unresolvable $schema or a hostile document: not usable
        return False
    return True


def _protocol(protocol: Any, offer: Offer) -> tuple[frozenset[str], int, frozenset[str]]:
    if not isinstance(protocol, dict):
        raise InitializeRejected(f"an API {offer.api_version} response needs a protocol object")
    if protocol.get("version") != offer.protocol_version:
        raise InitializeRejected(f"protocol.version is {protocol.get('version')!r}; offered {offer.protocol_version!r}")
    raw = protocol.get("features")
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise InitializeRejected("protocol.features must be an array of strings")
    if len(set(raw)) != len(raw):
        raise InitializeRejected(f"protocol.features repeats a name: {raw}")
    unknown = [f for f in raw if f not in offer.offered]
    if unknown:
        raise InitializeRejected(f"protocol.features names features never offered: {unknown}")
    missing = [f for f in REQUIRED_FEATURES if f not in raw]
    if missing:
        raise InitializeRejected(f"protocol.features lacks the required {missing}")
    features = frozenset(raw)
    for feature, needs in FEATURE_DEPENDENCIES:
        if feature in features and needs not in features:
            raise InitializeRejected(f"feature {feature} cannot be negotiated without {needs}")
    return features, _limit(protocol.get("limits"), offer), _subscriptions(protocol, features)


def _limit(limits: Any, offer: Offer) -> int:
    value = limits.get("max_concurrent_requests") if isinstance(limits, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InitializeRejected(f"protocol.limits.max_concurrent_requests must be an integer > 0; got {value!r}")
    return min(value, offer.max_concurrent_requests)  # §1.1: capped by the host


def _subscriptions(protocol: JsonObject, features: frozenset[str]) -> frozenset[str]:
    events = protocol.get("lifecycle_events")
    negotiated = "lifecycle_events" in features
    if events is None or events == []:
        return frozenset(LIFECYCLE_EVENTS) if negotiated else frozenset()
    if not negotiated:
        raise InitializeRejected("a lifecycle_events subscription without the lifecycle_events feature")
    if (
        not isinstance(events, list)
        or not all(e in LIFECYCLE_EVENTS for e in events)
        or len(set(events)) != len(events)
    ):
        raise InitializeRejected(
            f"lifecycle_events must be distinct names from {list(LIFECYCLE_EVENTS)}; got {events!r}"
        )
    return frozenset(events)


def output_schema_problem(schema: Any, depth: int = 1) -> str | None:
    """§1.1: objects only, depth <= 32, property names <= 256 bytes, known keywords."""
    if not isinstance(schema, dict):
        return "has a node that is not an object"
    if depth > MAX_OUTPUT_SCHEMA_DEPTH:
        return f"nests deeper than {MAX_OUTPUT_SCHEMA_DEPTH}"
    unknown = sorted(k for k in schema if k not in OUTPUT_SCHEMA_KEYWORDS)
    if unknown:
        return f"uses unsupported keywords {unknown}"
    children: list[Any] = []
    if "additionalProperties" in schema and not isinstance(schema["additionalProperties"], bool):
        children.append(schema["additionalProperties"])
    if "items" in schema:
        items = schema["items"]
        children.extend(items if isinstance(items, list) else [items])
    for key in _SCHEMA_MAPS:
        value = schema.get(key, {})
        if not isinstance(value, dict):
            return f"{key} is not an object"
        for name, sub in value.items():
            if len(name.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_PROPERTY_NAME_BYTES:
                return f"has a property name over {MAX_SCHEMA_PROPERTY_NAME_BYTES} bytes"
            children.append(sub)
    for key in _SCHEMA_LISTS:
        value = schema.get(key, [])
        if not isinstance(value, list):
            return f"{key} is not an array"
        children.extend(value)
    for child in children:
        problem = output_schema_problem(child, depth + 1)
        if problem:
            return problem
    return None


def prompt_metadata_problem(tool: JsonObject) -> str | None:
    """§1.1 (API 0.4, tool_prompt_metadata_v1)."""
    strings: list[Any] = []
    if "prompt_snippet" in tool:
        strings.append(tool["prompt_snippet"])
    guidelines = tool.get("prompt_guidelines", [])
    if not isinstance(guidelines, list):
        return "prompt_guidelines must be an array"
    if len(guidelines) > MAX_PROMPT_GUIDELINES:
        return f"{len(guidelines)} prompt_guidelines; at most {MAX_PROMPT_GUIDELINES}"
    strings.extend(guidelines)
    for text in strings:
        if not isinstance(text, str):
            return "prompt metadata must be strings"
        if len(text.encode("utf-8", "surrogatepass")) > MAX_PROMPT_STRING_BYTES:
            return f"a prompt metadata string is over {MAX_PROMPT_STRING_BYTES} bytes"
        if any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text):
            return "prompt metadata holds a control character"
    return None
