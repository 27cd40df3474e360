"""Plain data shared by the extension-protocol validators and session state.

These describe *what was agreed* (offer, negotiation, declared tools); they
hold no behaviour. Validators take them as keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ApiVersion = str  # "0.1" | "0.2" | "0.4"
API_VERSIONS: tuple[ApiVersion, ...] = ("0.1", "0.2", "0.4")


@dataclass(frozen=True)
class ManifestInfo:
    """The parts of ``extension.toml`` the protocol rules look at."""

    name: str
    version: str
    api_version: ApiVersion
    contributes: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    requires_octet: object = None  # the manifest's value as written; None when absent

    def declared_names(self, kind: str) -> list[str]:
        """contributes.tools / contributes.commands as a list (empty if absent)."""
        value = self.contributes.get(kind, [])
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    def secret_names(self) -> frozenset[str]:
        """[capabilities].secrets, the broker allowlist, as names (§1.1, §2.10)."""
        value = self.capabilities.get("secrets", [])
        return frozenset(v for v in value if isinstance(v, str)) if isinstance(value, list) else frozenset()


@dataclass(frozen=True)
class Offer:
    """What the host (the harness) put in the initialize request.

    ``protocol_version`` is None for API 0.1, whose request has no protocol
    member. ``optional_features`` includes any conditionally offered ones.
    """

    api_version: ApiVersion
    protocol_version: str | None
    required_features: tuple[str, ...] = ()
    optional_features: tuple[str, ...] = ()
    max_concurrent_requests: int | None = None

    @property
    def offered(self) -> frozenset[str]:
        return frozenset(self.required_features) | frozenset(self.optional_features)


@dataclass(frozen=True)
class Negotiated:
    """What the initialize response agreed to (as far as it was well formed)."""

    api_version: ApiVersion
    features: frozenset[str] = frozenset()
    max_concurrent_requests: int | None = None
    lifecycle_events: tuple[str, ...] = ()

    @property
    def is_legacy(self) -> bool:
        return self.api_version == "0.1"

    def has(self, feature: str) -> bool:
        return feature in self.features


@dataclass(frozen=True)
class ToolInfo:
    """One tool definition from the initialize response."""

    name: str
    parameters: Any
    output_schema: Any = None  # None when the tool declares no output_schema


@dataclass(frozen=True)
class IssuedArtifact:
    """An artifact the host verified and issued to this generation (§2.8)."""

    artifact_id: str
    mime_type: str
    size: int
