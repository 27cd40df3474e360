"""Initialize negotiation (§1.1) and the session state it produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

from .jsonrpc import INVALID_PARAMS, JsonObject, RpcError

# §1.1: every API 0.2+ response must contain these two.
REQUIRED_FEATURES = ("request_cancellation", "content_parts")
# Optional features this extension implements, taken only when offered.
# lifecycle_events: we accept the notifications and ignore them (§1.10).
# secrets: a host offers it only to a manifest with a secrets allowlist (§1.1).
# The Wave-1 services (§2.19-§2.24): the greet command uses each one offered,
# and a shortcut is registered inside initialize when shortcuts is offered.
# policy_intents, artifacts, dynamic_tools: the greet command asks policy,
# publishes a greeting card and toggles the dynamic picture tool (§2.8-§2.12).
OPTIONAL_FEATURES = (
    "request_progress",
    "lifecycle_events",
    "secrets",
    "policy_intents",
    "artifacts",
    "dynamic_tools",
    "composer",
    "shortcuts",
    "session_entries",
    "message_injection",
    "active_tools",
    "terminal_handoff",
)
# §1.1: tool_prompt_metadata_v1 is an API 0.4 offer.
OPTIONAL_FEATURES_0_4 = ("tool_prompt_metadata_v1",)
# Our own ceiling on concurrent handlers; the host may only lower it.
MAX_CONCURRENT_REQUESTS = 8


def supported_features(api_version: str) -> tuple[str, ...]:
    extra = OPTIONAL_FEATURES_0_4 if api_version == "0.4" else ()
    return REQUIRED_FEATURES + OPTIONAL_FEATURES + extra


def negotiate(api_version: str, offer: Any) -> JsonObject | None:
    """The protocol member of our initialize result; None on API 0.1.

    Raises RpcError(-32602) when the offer cannot be accepted honestly: it
    lacks a required feature, requires one we do not implement, or is
    malformed. Failing loudly beats an answer the host must reject anyway.
    """
    if api_version == "0.1":
        return None  # §1.1: API 0.1 omits protocol from request and response
    if not isinstance(offer, dict):
        raise RpcError(INVALID_PARAMS, f"API {api_version} initialize needs a protocol offer object (§1.1)")
    return {
        "version": _offered_version(offer),
        "features": _choose_features(api_version, offer),
        "limits": {"max_concurrent_requests": _choose_concurrency(offer.get("limits"))},
        # lifecycle_events subscription list omitted on purpose: §1.1 says an
        # omitted list subscribes all six events.
    }


def _offered_version(offer: JsonObject) -> str:
    version = offer.get("version")
    if not isinstance(version, str) or not version:
        raise RpcError(INVALID_PARAMS, "protocol.version must be a non-empty string")
    return version


def _choose_features(api_version: str, offer: JsonObject) -> list[str]:
    required_by_host = _feature_list(offer, "required_features")
    offered = required_by_host + _feature_list(offer, "optional_features")
    supported = supported_features(api_version)
    unsupported = [name for name in required_by_host if name not in supported]
    if unsupported:
        raise RpcError(INVALID_PARAMS, f"host requires features this extension does not implement: {unsupported}")
    missing = [name for name in REQUIRED_FEATURES if name not in offered]
    if missing:
        raise RpcError(INVALID_PARAMS, f"host did not offer the required features {missing} (§1.1)")
    # Never return a feature that was not offered; keep a stable order.
    return [name for name in supported if name in offered]


def _feature_list(offer: JsonObject, key: str) -> list[str]:
    value = offer.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RpcError(INVALID_PARAMS, f"protocol.{key} must be an array of strings")
    return value


def _choose_concurrency(limits: Any) -> int:
    if limits is None:
        return MAX_CONCURRENT_REQUESTS
    if not isinstance(limits, dict):
        raise RpcError(INVALID_PARAMS, "protocol.limits must be an object")
    offered = limits.get("max_concurrent_requests")
    if offered is None:
        return MAX_CONCURRENT_REQUESTS
    if not _is_positive_int(offered):
        message = f"protocol.limits.max_concurrent_requests must be a positive integer, got {offered!r}"
        raise RpcError(INVALID_PARAMS, message)
    # §1.1: the accepted value must be > 0 and is capped by the host.
    return min(offered, MAX_CONCURRENT_REQUESTS)


def _is_positive_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class Session:
    """What initialize agreed to, as the runtime enforces it.

    Derived from the result we actually sent, so a test subclass that
    overrides ``initialize`` also changes what the runtime honours.
    """

    api_version: str
    features: frozenset[str] = frozenset()
    max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS

    @property
    def cancellation(self) -> bool:
        return "request_cancellation" in self.features

    @property
    def progress(self) -> bool:
        return "request_progress" in self.features

    @property
    def parent_correlation(self) -> bool:
        # §2: API 0.2+ child requests carry parent_request_id; 0.1 omits it.
        return self.api_version != "0.1"

    @classmethod
    def from_initialize_result(cls, api_version: str, result: Any) -> Session:
        protocol = result.get("protocol") if isinstance(result, dict) else None
        if not isinstance(protocol, dict):
            return cls(api_version)
        features = protocol.get("features")
        limits = protocol.get("limits")
        limit = limits.get("max_concurrent_requests") if isinstance(limits, dict) else None
        return cls(
            api_version,
            frozenset(f for f in features if isinstance(f, str)) if isinstance(features, list) else frozenset(),
            limit if _is_positive_int(limit) else MAX_CONCURRENT_REQUESTS,
        )
