"""Judging a host's ``initialize`` (§1.1) as the probe extension receives it.

How to use (the probe peer, harness side):

* ``check_initialize_request(params, manifest=...)`` -- every §1.1 rule on the
  request the host wrote, as :class:`.Exercise` / :class:`.Violation`
  findings (paths are relative to ``params``);
* ``offer_from(params)`` -- what the host offered, as an :class:`.Offer`
  (never raises), so the probe can build answers and the session can judge
  later frames against the negotiation;
* ``must_reject(result, offer=..., manifest=...)`` -- the host-side rejection
  requirements a scripted initialize *result* triggers: an empty tuple means
  the host may accept the child; otherwise the host must refuse it and route
  nothing to it (:mod:`.host_session` enforces that).

``must_reject`` reuses the extension-side §1.1 validators: a result that
breaks one of the rules the text says the host refuses on is one the host
must refuse. Only rules with that force are mapped; rules whose breach the
text leaves to the host (a 0.1 result carrying protocol, prompt metadata
without the feature, ...) are not, so a host that tolerates them passes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .describe import kind
from .ext_initialize import check_initialize_result
from .ext_types import ManifestInfo, Offer
from .limits import REQUIRED_FEATURES
from .members import excerpt, is_integer, name
from .violations import Finding, Violation, rule

SOURCES = ("project", "global", "explicit")  # §1.1
_LEGACY_API = "0.1"
# §1.1: what a 0.4 offer carries as protocol.version. The 0.4 wire is the
# retained 0.2 one, so "0.2" is accepted beside "0.4" (never stricter).
PROTOCOL_VERSIONS = {"0.2": ("0.2",), "0.4": ("0.2", "0.4")}
# §1.1: features the text introduces as API 0.4 offers only.
API_0_4_FEATURES = (
    "tool_prompt_metadata_v1",
    "tool_composition_v1",
    "session_control_v1",
    "session_compaction_v1",
    "agent_session_events_v1",
    "agent_session_lifetime_v1",
)

_ROOT = "params"


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def check_initialize_request(params: object, *, manifest: ManifestInfo) -> Iterator[Finding]:
    """Every §1.1 rule on the host's initialize params that applies to the
    API version the manifest selected."""
    yield from request_members(params)
    if not isinstance(params, dict):
        return
    yield from no_requires_octet(params)
    if isinstance(params.get("api_version"), str):
        yield from api_version_selected(params["api_version"], manifest=manifest)
    extension = params.get("extension")
    if isinstance(extension, dict) and "source" in extension:
        yield from source_values(extension)
    capabilities = params.get("capabilities")
    offer = offer_from(params)
    if manifest.api_version == _LEGACY_API:
        yield from no_protocol_0_1(params)
    else:
        yield from request_protocol(params, api_version=manifest.api_version)
        yield from _check_offer(offer, manifest=manifest)
    if isinstance(capabilities, dict):
        yield from secrets_capabilities_shape(capabilities, manifest=manifest)
        if manifest.api_version != _LEGACY_API:  # the declaration exists from API 0.2 on
            yield from provider_credentials_echo(capabilities, manifest=manifest)


def offer_from(params: object) -> Offer:
    """What the host offered (never raises). API 0.1 and unreadable protocol
    members give an offer with no features."""
    api = params.get("api_version") if isinstance(params, dict) else None
    api_version = api if isinstance(api, str) else _LEGACY_API
    protocol = params.get("protocol") if isinstance(params, dict) else None
    if not isinstance(protocol, dict):
        return Offer(api_version=api_version, protocol_version=None)
    version = protocol.get("version")
    limits = protocol.get("limits")
    limit = limits.get("max_concurrent_requests") if isinstance(limits, dict) else None
    return Offer(
        api_version=api_version,
        protocol_version=version if isinstance(version, str) else None,
        required_features=_names(protocol.get("required_features")),
        optional_features=_names(protocol.get("optional_features")),
        max_concurrent_requests=int(limit) if is_integer(limit) and isinstance(limit, int | float) else None,
    )


def must_reject(result: object, *, offer: Offer, manifest: ManifestInfo) -> tuple[str, ...]:
    """Host-side rejection requirements the scripted ``result`` triggers
    (first-occurrence order, no repeats). Each extension-side §1.1 rule maps
    to the host-side rule saying the host refuses such a result; rules absent
    here do not oblige the host to refuse."""
    host_rejects = {
        "EXT-1.1-api-version-echo": "EXT-1.1-host-rejects-api-version-mismatch",
        "EXT-1.1-tools-match-contributes": "EXT-1.1-host-rejects-bad-catalog",
        "EXT-1.1-commands-match-contributes": "EXT-1.1-host-rejects-bad-catalog",
        "EXT-1.1-no-duplicate-names": "EXT-1.1-host-rejects-duplicate-names",
        "EXT-1.1-max-commands": "EXT-1.1-host-rejects-too-many-commands",
        "EXT-1.1-tool-description": "EXT-1.1-host-rejects-bad-tool-definition",
        "EXT-1.1-tool-parameters-schema": "EXT-1.1-host-rejects-bad-tool-definition",
        "EXT-1.1-protocol-present": "EXT-1.1-host-rejects-bad-features",
        "EXT-1.1-required-features": "EXT-1.1-host-rejects-bad-features",
        "EXT-1.1-features-offered": "EXT-1.1-host-rejects-bad-features",
        "EXT-1.1-features-unique": "EXT-1.1-host-rejects-bad-features",
        "EXT-1.1-provider-credentials-manifest": "EXT-1.1-host-rejects-bad-features",
        "EXT-1.1-feature-dependencies": "EXT-1.1-host-rejects-feature-dependencies",
        "EXT-1.1-max-concurrent-positive": "EXT-1.1-host-rejects-bad-concurrency",
        "EXT-1.1-lifecycle-subscription": "EXT-1.1-host-rejects-bad-subscription",
        "EXT-1.1-lifecycle-needs-feature": "EXT-1.1-host-rejects-bad-subscription",
        "EXT-1.1-output-schema-subset": "EXT-1.1-host-rejects-output-schema",
    }
    broken = (
        host_rejects.get(f.requirement)
        for f in check_initialize_result(result, offer=offer, manifest=manifest)
        if isinstance(f, Violation)
    )
    return tuple(dict.fromkeys(r for r in broken if r is not None))


def _names(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _check_offer(offer: Offer, *, manifest: ManifestInfo) -> Iterator[Finding]:
    offered = offer.offered
    if manifest.api_version == "0.4":
        yield from prompt_metadata_offer(offered)
    else:
        yield from api_0_4_offers_only(offered)
    yield from agent_dependents_offer(offered, api_version=manifest.api_version)
    yield from session_compaction_offer(offered)
    yield from secrets_offer(offered, manifest=manifest)
    yield from provider_credentials_offer(offered, manifest=manifest)


# --------------------------------------------------------------------------
# Rules: the request object
# --------------------------------------------------------------------------

_MEMBER_TYPES: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("api_version", str, "a string"),
    ("octet_version", str, "a string"),
    ("extension", dict, "an object"),
    ("capabilities", dict, "an object"),
    ("contributes", dict, "an object"),
    ("host", dict, "an object"),
)


@rule("EXT-1.1-host-request-members")
def request_members(params: object) -> Iterator[Violation]:
    """params is an object with every top-level member of the frozen §1.1
    request; extension names the manifest (name, version, manifest_path
    strings). workspace is a string or null: the text shows a string but no
    sentence forbids a host without a workspace."""
    if not isinstance(params, dict):
        yield Violation("EXT-1.1-host-request-members", f"params is {kind(params)}; expected an object")
        return
    for member, types, noun in _MEMBER_TYPES:
        if not isinstance(params.get(member), types):
            got = kind(params[member]) if member in params else "absent"
            yield Violation("EXT-1.1-host-request-members", f"params.{member} is {got}; expected {noun}", (member,))
    workspace = params.get("workspace", 0)
    if workspace is not None and not isinstance(workspace, str):
        got = kind(workspace) if "workspace" in params else "absent"
        yield Violation(
            "EXT-1.1-host-request-members", f"params.workspace is {got}; expected a string or null", ("workspace",)
        )
    extension = params.get("extension")
    if isinstance(extension, dict):
        for member in ("name", "version", "manifest_path"):
            if not isinstance(extension.get(member), str):
                got = kind(extension[member]) if member in extension else "absent"
                path = ("extension", member)
                yield Violation(
                    "EXT-1.1-host-request-members", f"{name(_ROOT, path)} is {got}; expected a string", path
                )


@rule("EXT-1.1-host-api-version-selected")
def api_version_selected(api_version: str, *, manifest: ManifestInfo) -> Iterator[Violation]:
    """The request names the one wire version the manifest selected (§0, §1.1)."""
    if api_version != manifest.api_version:
        yield Violation(
            "EXT-1.1-host-api-version-selected",
            f"params.api_version is {excerpt(api_version)}; the manifest selects {excerpt(manifest.api_version)}",
            ("api_version",),
        )


@rule("EXT-0-host-requires-octet-not-in-initialize")
def no_requires_octet(params: Mapping[str, Any]) -> Iterator[Violation]:
    """requires_octet is packaging metadata (§0): it appears neither at the
    top of the request nor in its extension object."""
    extension = params.get("extension")
    for path, holder in ((("requires_octet",), params), (("extension", "requires_octet"), extension)):
        if isinstance(holder, dict) and "requires_octet" in holder:
            yield Violation(
                "EXT-0-host-requires-octet-not-in-initialize",
                f"{name(_ROOT, path)} is present; it is not an initialize field",
                path,
            )


@rule("EXT-1.1-host-source-values")
def source_values(extension: Mapping[str, Any]) -> Iterator[Violation]:
    source = extension.get("source")
    if not isinstance(source, str) or source not in SOURCES:
        shown = excerpt(source) if isinstance(source, str) else kind(source)
        yield Violation(
            "EXT-1.1-host-source-values",
            f"params.extension.source is {shown}; expected one of {', '.join(SOURCES)}",
            ("extension", "source"),
        )


@rule("EXT-1.1-host-request-no-protocol-0.1")
def no_protocol_0_1(params: Mapping[str, Any]) -> Iterator[Violation]:
    """API 0.1 omits protocol entirely (null counts as present)."""
    if "protocol" in params:
        yield Violation(
            "EXT-1.1-host-request-no-protocol-0.1",
            f"params.protocol is present ({kind(params['protocol'])}) on API 0.1; the frozen request omits it",
            ("protocol",),
        )


@rule("EXT-1.1-host-request-protocol")
def request_protocol(params: Mapping[str, Any], *, api_version: str) -> Iterator[Violation]:
    """API 0.2/0.4: protocol with a version, both required features among
    required_features, optional_features an array of names, and a positive
    integer limits.max_concurrent_requests."""
    protocol = params.get("protocol")
    if not isinstance(protocol, dict):
        got = kind(protocol) if "protocol" in params else "absent"
        yield Violation(
            "EXT-1.1-host-request-protocol",
            f"params.protocol is {got}; API {api_version} needs an object",
            ("protocol",),
        )
        return
    allowed = PROTOCOL_VERSIONS.get(api_version, (api_version,))
    version = protocol.get("version")
    if version not in allowed:
        shown = excerpt(version) if isinstance(version, str) else kind(version)
        message = f"params.protocol.version is {shown}; expected {' or '.join(allowed)}"
        yield Violation("EXT-1.1-host-request-protocol", message, ("protocol", "version"))
    yield from _feature_lists(protocol)
    limits = protocol.get("limits")
    limit = limits.get("max_concurrent_requests") if isinstance(limits, dict) else None
    if not is_integer(limit) or not isinstance(limit, int | float) or limit < 1:
        shown = excerpt(limit) if isinstance(limit, int | float) else kind(limit)
        path = ("protocol", "limits", "max_concurrent_requests")
        yield Violation(
            "EXT-1.1-host-request-protocol", f"{name(_ROOT, path)} is {shown}; expected an integer >= 1", path
        )


def _feature_lists(protocol: Mapping[str, Any]) -> Iterator[Violation]:
    for member in ("required_features", "optional_features"):
        value = protocol.get(member)
        path = ("protocol", member)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            got = kind(value) if member in protocol else "absent"
            yield Violation(
                "EXT-1.1-host-request-protocol", f"{name(_ROOT, path)} is {got}; expected an array of names", path
            )
    required = _names(protocol.get("required_features"))
    for feature in REQUIRED_FEATURES:
        if feature not in required:
            path = ("protocol", "required_features")
            yield Violation("EXT-1.1-host-request-protocol", f"{name(_ROOT, path)} lacks {feature!r}", path)


# --------------------------------------------------------------------------
# Rules: what is offered
# --------------------------------------------------------------------------

_OPTIONAL = ("protocol", "optional_features")


@rule("EXT-1.1-host-prompt-metadata-offer")
def prompt_metadata_offer(offered: frozenset[str]) -> Iterator[Violation]:
    if "tool_prompt_metadata_v1" not in offered:
        yield Violation(
            "EXT-1.1-host-prompt-metadata-offer", "an API 0.4 offer lacks tool_prompt_metadata_v1", _OPTIONAL
        )


@rule("EXT-1.1-host-api-0.4-offers-only")
def api_0_4_offers_only(offered: frozenset[str]) -> Iterator[Violation]:
    """Features §1.1 introduces for API 0.4 are not offered on 0.2."""
    for feature in API_0_4_FEATURES:
        if feature in offered:
            yield Violation(
                "EXT-1.1-host-api-0.4-offers-only",
                f"an API 0.2 offer includes the API 0.4 feature {feature}",
                _OPTIONAL,
            )


@rule("EXT-1.1-host-agent-dependents-offer")
def agent_dependents_offer(offered: frozenset[str], *, api_version: str) -> Iterator[Violation]:
    if "agent_sessions" not in offered:
        return
    needed = ["agent_model_selection_v1"]
    if api_version == "0.4":
        needed += ["agent_session_events_v1", "agent_session_lifetime_v1"]
    for feature in needed:
        if feature not in offered:
            yield Violation(
                "EXT-1.1-host-agent-dependents-offer", f"agent_sessions is offered without {feature}", _OPTIONAL
            )


@rule("EXT-1.1-host-session-control-offer")
def session_compaction_offer(offered: frozenset[str]) -> Iterator[Violation]:
    """session_compaction_v1 needs the session-control service, so it is
    never offered without session_control_v1."""
    if "session_compaction_v1" in offered and "session_control_v1" not in offered:
        yield Violation(
            "EXT-1.1-host-session-control-offer",
            "session_compaction_v1 is offered without session_control_v1",
            _OPTIONAL,
        )


@rule("EXT-1.1-host-secrets-offer")
def secrets_offer(offered: frozenset[str], *, manifest: ManifestInfo) -> Iterator[Violation]:
    if "secrets" in offered and not _secret_allowlist(manifest):
        yield Violation(
            "EXT-1.1-host-secrets-offer", "secrets is offered, but the manifest's secrets allowlist is empty", _OPTIONAL
        )


@rule("EXT-1.1-host-provider-credentials-offer")
def provider_credentials_offer(offered: frozenset[str], *, manifest: ManifestInfo) -> Iterator[Violation]:
    if "provider_credentials" in offered and manifest.capabilities.get("provider_credentials") is not True:
        yield Violation(
            "EXT-1.1-host-provider-credentials-offer",
            "provider_credentials is offered, but the manifest does not declare provider_credentials = true",
            _OPTIONAL,
        )


# --------------------------------------------------------------------------
# Rules: the capabilities object
# --------------------------------------------------------------------------


@rule("EXT-1.1-host-secrets-capabilities-shape")
def secrets_capabilities_shape(capabilities: Mapping[str, Any], *, manifest: ManifestInfo) -> Iterator[Violation]:
    """An empty allowlist is omitted; a non-empty one (API 0.2+) is sent as
    the exact array the manifest declares."""
    allowlist = _secret_allowlist(manifest)
    path = ("capabilities", "secrets")
    if not allowlist:
        if "secrets" in capabilities:
            yield Violation(
                "EXT-1.1-host-secrets-capabilities-shape",
                "capabilities.secrets is present, but the allowlist is empty",
                path,
            )
        return
    if manifest.api_version != _LEGACY_API and capabilities.get("secrets") != allowlist:
        got = kind(capabilities["secrets"]) if "secrets" in capabilities else "absent"
        yield Violation(
            "EXT-1.1-host-secrets-capabilities-shape",
            f"capabilities.secrets is {got}; expected the declared {allowlist!r:.80}",
            path,
        )


@rule("EXT-1.1-host-provider-credentials-echo")
def provider_credentials_echo(capabilities: Mapping[str, Any], *, manifest: ManifestInfo) -> Iterator[Violation]:
    """A declaring manifest is echoed as provider_credentials: true; an
    undeclared one never shows it as true."""
    declared = manifest.capabilities.get("provider_credentials") is True
    value = capabilities.get("provider_credentials")
    path = ("capabilities", "provider_credentials")
    if declared and value is not True:
        shown = kind(value) if "provider_credentials" in capabilities else "absent"
        yield Violation(
            "EXT-1.1-host-provider-credentials-echo",
            f"capabilities.provider_credentials is {shown}; expected true",
            path,
        )
    elif not declared and value is True:
        yield Violation(
            "EXT-1.1-host-provider-credentials-echo",
            "capabilities.provider_credentials is true for an undeclared manifest",
            path,
        )


def _secret_allowlist(manifest: ManifestInfo) -> list[str]:
    value = manifest.capabilities.get("secrets")
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
