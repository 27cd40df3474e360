"""Checks on the extension's answer to ``initialize`` (§1.1).

Entry points:

* :func:`check_initialize_result` -- every §1.1 response rule that applies,
  as :class:`.Exercise` / :class:`.Violation` findings;
* :func:`negotiated_from` -- what the response agreed to, for the session
  state that later rules consult;
* :func:`tools_from` -- the tool definitions by name, for the tool/call rules.

Each rule is one small function decorated with :func:`.violations.rule`, named
after its requirement id. ``result`` may be any decoded JSON value; nothing
here raises on it.

When a rule is evaluated (and so yields its Exercise):

* a rule the catalog scopes to some API versions runs only when the offer's
  ``api_version`` is one of them (the version in force is the one the host
  sent; whether the result echoes the manifest's is api-version-echo's
  business, so a wrong echo does not switch the rule set);
* a rule that needs a feature runs only when the response negotiates it,
  while its "... needs the feature" counterpart runs whatever was negotiated;
* a rule runs only when the part of the result it reads has the right JSON
  type. The wrong type is reported once, by ``result-shape`` (top-level
  members) or ``protocol-present`` (the protocol object), and only the rules
  that need that part are skipped.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from .describe import Path, dotted, duplicates, kind, utf8_len
from .ext_types import ManifestInfo, Negotiated, Offer, ToolInfo
from .limits import (
    FEATURE_DEPENDENCIES,
    LIFECYCLE_EVENTS,
    MAX_INITIALIZE_COMMANDS,
    MAX_OUTPUT_SCHEMA_DEPTH,
    MAX_PROMPT_GUIDELINES,
    MAX_PROMPT_STRING_BYTES,
    MAX_SCHEMA_PROPERTY_NAME_BYTES,
    MODEL_TURN_HOOKS,
    OUTPUT_SCHEMA_KEYWORDS,
    REQUIRED_FEATURES,
)
from .members import clip, excerpt, is_integer
from .schema_dialects import schema_problem
from .violations import Finding, Violation, rule

# API versions (§1.1): 0.1 is frozen and negotiates nothing; 0.2 and 0.4
# share the feature-negotiated wire; prompt metadata is offered only on 0.4.
_LEGACY_API = "0.1"
_NEGOTIATED_APIS = ("0.2", "0.4")
_PROMPT_METADATA_API = "0.4"

# Feature names the §1.1 rules branch on.
_F_DYNAMIC_TOOLS = "dynamic_tools"
_F_RUNTIME_COMMANDS = "runtime_commands"
_F_LIFECYCLE = "lifecycle_events"
_F_PROMPT_METADATA = "tool_prompt_metadata_v1"
_F_PROVIDER_CREDENTIALS = "provider_credentials"
_F_SESSION_ENTRIES = "session_entries"
_MODEL_TURN_API = "0.4"
# §2.26: a descriptor with resource inputs or outputs needs both.
_F_RESOURCE_DESCRIPTORS = ("resource_refs_v1", "operation_descriptors_v1")

_PROMPT_FIELDS = ("prompt_snippet", "prompt_guidelines")
# §1.1 lets prompt strings carry line breaks and tabs, no other control.
_PROMPT_CONTROLS_ALLOWED = frozenset("\n\t")

# Where an output_schema holds further schema nodes (each one level deeper).
# Everything else among the accepted keywords holds data or annotations: the
# values of default/examples/enum/const are instances, not schemas.
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")

_MISSING = object()


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def check_initialize_result(result: object, *, offer: Offer, manifest: ManifestInfo) -> Iterator[Finding]:
    """Every §1.1 rule on the initialize ``result`` that applies to ``offer``."""
    yield from result_shape(result)
    if not isinstance(result, dict):
        return  # no member can be located in a non-object: nothing else can run
    negotiated = negotiated_from(result, offer=offer)
    yield from _check_catalog(result, manifest=manifest, negotiated=negotiated)
    if offer.api_version == _LEGACY_API:
        yield from _check_legacy(result)
    elif offer.api_version in _NEGOTIATED_APIS:
        yield from _check_protocol(result, offer=offer, manifest=manifest, negotiated=negotiated)
        tools = result.get("tools")
        if isinstance(tools, list):
            yield from output_schema_subset(tools)
            yield from resource_descriptor_features(tools, negotiated=negotiated)
    yield from _check_prompt_metadata(result, negotiated=negotiated)


def negotiated_from(result: object, *, offer: Offer) -> Negotiated:
    """What the response agreed to, as far as it is readable (never raises).

    * ``features``: the string entries of ``protocol.features``, as claimed.
      They are not intersected with the offer: an unoffered claim is already
      a violation, and later rules should see what the extension believes it
      agreed to. API 0.1 negotiates nothing, so its set is always empty.
    * ``max_concurrent_requests``: the accepted integer when it is > 0,
      lowered to the offered value when larger (§1.1: the host caps it);
      otherwise None.
    * ``lifecycle_events``: with the feature, the listed known event names
      (first occurrence order), or all six when the list is omitted, null or
      empty (§1.1); without the feature, none.
    """
    if offer.api_version == _LEGACY_API:
        return Negotiated(api_version=offer.api_version)
    protocol = _member(result, "protocol")
    features = frozenset(name for _, name in _strings(_member(protocol, "features")))
    limit = _member(_member(protocol, "limits"), "max_concurrent_requests")
    accepted: int | None = None
    if is_integer(limit) and isinstance(limit, int | float) and limit > 0:
        accepted = int(limit)
        if offer.max_concurrent_requests is not None:
            accepted = min(accepted, offer.max_concurrent_requests)
    events: tuple[str, ...] = ()
    if _F_LIFECYCLE in features:
        listed = _member(protocol, "lifecycle_events")
        if _subscribes_nothing(listed):
            events = LIFECYCLE_EVENTS
        else:
            known = (name for _, name in _strings(listed) if name in LIFECYCLE_EVENTS)
            events = tuple(dict.fromkeys(known))
    return Negotiated(
        api_version=offer.api_version,
        features=features,
        max_concurrent_requests=accepted,
        lifecycle_events=events,
    )


def tools_from(result: object) -> dict[str, ToolInfo]:
    """The tool definitions by name (never raises).

    Entries that are not objects or have no string name are skipped; when a
    name repeats, the first definition wins (the repeat is a violation, and the
    host would refuse the whole catalog anyway). A null or absent
    ``output_schema`` becomes None: both mean "no schema".
    """
    tools: dict[str, ToolInfo] = {}
    for _, tool in _objects(_member(result, "tools")):
        name = tool.get("name")
        if isinstance(name, str) and name not in tools:
            tools[name] = ToolInfo(
                name=name, parameters=tool.get("parameters"), output_schema=tool.get("output_schema")
            )
    return tools


# --------------------------------------------------------------------------
# Chains: which rules run, given what the result looks like
# --------------------------------------------------------------------------


def _check_catalog(result: dict[str, Any], *, manifest: ManifestInfo, negotiated: Negotiated) -> Iterator[Finding]:
    """Rules on api_version, tools and commands (every API version)."""
    if isinstance(result.get("api_version"), str):
        yield from api_version_echo(result["api_version"], manifest=manifest)
    tools = result.get("tools")
    commands = result.get("commands")
    if isinstance(tools, list):
        # dynamic_tools makes this list the authoritative epoch-0 catalog, so
        # it no longer has to mirror the manifest (§1.1).
        if not negotiated.has(_F_DYNAMIC_TOOLS):
            yield from tools_match_contributes(tools, manifest=manifest)
        yield from tool_description(tools)
        yield from tool_parameters_schema(tools)
    if isinstance(commands, list):
        # Likewise runtime_commands for the command list (§1.1).
        if not negotiated.has(_F_RUNTIME_COMMANDS):
            yield from commands_match_contributes(commands, manifest=manifest)
        yield from max_commands(commands)
    if isinstance(tools, list) or isinstance(commands, list):
        yield from no_duplicate_names(
            tools if isinstance(tools, list) else [],
            commands if isinstance(commands, list) else [],
        )


def _check_legacy(result: dict[str, Any]) -> Iterator[Finding]:
    """Rules only the frozen API 0.1 shape has."""
    yield from protocol_absent_0_1(result)
    tools = result.get("tools")
    if isinstance(tools, list):
        yield from no_output_schema_0_1(tools)


def _check_protocol(
    result: dict[str, Any], *, offer: Offer, manifest: ManifestInfo, negotiated: Negotiated
) -> Iterator[Finding]:
    """Rules on the protocol object of an API 0.2/0.4 response."""
    yield from protocol_present(result, offer=offer)
    protocol = result.get("protocol")
    if not isinstance(protocol, dict):
        return
    features = protocol.get("features")
    if isinstance(features, list):
        yield from required_features(features, offer=offer)
        yield from features_offered(features, offer=offer)
        yield from features_unique(features)
        yield from feature_dependencies(features)
        yield from provider_credentials_manifest(features, manifest=manifest)
        yield from model_turn_declaration(features, offer=offer, manifest=manifest)
    limits = protocol.get("limits")
    if isinstance(limits, dict):
        yield from max_concurrent_positive(limits)
    if negotiated.has(_F_LIFECYCLE):
        yield from lifecycle_subscription(protocol)
    yield from lifecycle_needs_feature(protocol, negotiated=negotiated)


def _check_prompt_metadata(result: dict[str, Any], *, negotiated: Negotiated) -> Iterator[Finding]:
    tools = result.get("tools")
    if not isinstance(tools, list):
        return
    if _prompt_metadata_in_force(negotiated):
        yield from prompt_metadata(tools)
    yield from prompt_metadata_needs_feature(tools, negotiated=negotiated)


# --------------------------------------------------------------------------
# Rules: top-level shape and catalog (all API versions)
# --------------------------------------------------------------------------


@rule("EXT-1.1-result-shape")
def result_shape(result: object) -> Iterator[Violation]:
    """An object with api_version (string), tools and commands (arrays), and
    a string name on every tool and command entry (§1.1)."""
    if not isinstance(result, dict):
        yield Violation("EXT-1.1-result-shape", f"result is {kind(result)}; expected an object")
        return
    if not isinstance(result.get("api_version"), str):
        yield _wrong("EXT-1.1-result-shape", result, "api_version", (), "a string")
    for member, entry_noun in (("tools", "tool definition"), ("commands", "command definition")):
        entries = result.get(member)
        if not isinstance(entries, list):
            yield _wrong("EXT-1.1-result-shape", result, member, (), "an array")
            continue
        for index, entry in enumerate(entries):
            path = (member, index)
            if not isinstance(entry, dict):
                yield Violation(
                    "EXT-1.1-result-shape", f"{dotted(path)} is {kind(entry)}; expected a {entry_noun} object", path
                )
            elif not isinstance(entry.get("name"), str):
                yield _wrong("EXT-1.1-result-shape", entry, "name", path, "a string")


@rule("EXT-1.1-api-version-echo")
def api_version_echo(api_version: str, *, manifest: ManifestInfo) -> Iterator[Violation]:
    """The response repeats the version the manifest selected, exactly."""
    if api_version != manifest.api_version:
        yield Violation(
            "EXT-1.1-api-version-echo",
            f"api_version is {excerpt(api_version)}; the manifest selects {excerpt(manifest.api_version)}",
            ("api_version",),
        )


@rule("EXT-1.1-tools-match-contributes")
def tools_match_contributes(tools: list[Any], *, manifest: ManifestInfo) -> Iterator[Violation]:
    """The set of tool names equals contributes.tools (§1.1; the caller skips
    this rule when dynamic_tools is negotiated)."""
    yield from _match_contributes("EXT-1.1-tools-match-contributes", "tools", tools, manifest.declared_names("tools"))


@rule("EXT-1.1-commands-match-contributes")
def commands_match_contributes(commands: list[Any], *, manifest: ManifestInfo) -> Iterator[Violation]:
    """The set of command names equals contributes.commands (§1.1; the caller
    skips this rule when runtime_commands is negotiated)."""
    yield from _match_contributes(
        "EXT-1.1-commands-match-contributes", "commands", commands, manifest.declared_names("commands")
    )


def _match_contributes(requirement: str, member: str, entries: list[Any], declared: list[str]) -> Iterator[Violation]:
    # Compared as sets: repeats are the duplicate rule's business, not this one's.
    returned = _names(entries)
    returned_set = {name for _, name in returned}
    declared_set = set(declared)
    reported: set[str] = set()
    for index, name in returned:
        if name not in declared_set and name not in reported:
            reported.add(name)
            path = (member, index, "name")
            message = f"{dotted(path)} {excerpt(name)} is not declared in contributes.{member}"
            yield Violation(requirement, message, path)
    for name in dict.fromkeys(declared):
        if name not in returned_set:
            message = f"{member} lacks {excerpt(name)}, which contributes.{member} declares"
            yield Violation(requirement, message, (member,))


@rule("EXT-1.1-no-duplicate-names")
def no_duplicate_names(tools: list[Any], commands: list[Any]) -> Iterator[Violation]:
    """No name repeats within tools, nor within commands. A tool and a command
    may share a name: §1.1 compares each list with its own contributes set."""
    for member, entries in (("tools", tools), ("commands", commands)):
        for name, where in duplicates(_names(entries)).items():
            at = ", ".join(dotted((member, i)) for i in where)
            yield Violation(
                "EXT-1.1-no-duplicate-names",
                f"{member} name {excerpt(name)} appears {len(where)} times ({at})",
                (member, where[1], "name"),
            )


@rule("EXT-1.1-max-commands")
def max_commands(commands: list[Any]) -> Iterator[Violation]:
    """At most 256 command definitions. Every entry counts, well formed or not:
    the bound is on definitions sent, and a malformed one was still sent."""
    if len(commands) > MAX_INITIALIZE_COMMANDS:
        yield Violation(
            "EXT-1.1-max-commands",
            f"commands has {len(commands)} definitions; limit {MAX_INITIALIZE_COMMANDS}",
            ("commands",),
        )


@rule("EXT-1.1-tool-description")
def tool_description(tools: list[Any]) -> Iterator[Violation]:
    """Every tool has a non-empty string description. Whitespace counts as
    content: §1.1 asks for non-empty, not for non-blank."""
    for index, tool in _objects(tools):
        path: Path = ("tools", index, "description")
        description = tool.get("description", _MISSING)
        if not isinstance(description, str):
            yield _wrong("EXT-1.1-tool-description", tool, "description", ("tools", index), "a non-empty string")
        elif not description:
            yield Violation("EXT-1.1-tool-description", f"{dotted(path)} is empty", path)


@rule("EXT-1.1-tool-parameters-schema")
def tool_parameters_schema(tools: list[Any]) -> Iterator[Violation]:
    """Every tool's parameters is a JSON object that is a valid JSON Schema
    under the draft its ``$schema`` names, or -- naming none, or one
    jsonschema does not know -- under some supported draft (§1.1 names no
    draft; :mod:`.schema_dialects`). A boolean schema is refused: §1.1 asks
    for a schema *object*. ``"type": "object"`` is not demanded, because §1.1
    does not say the schema must describe an object."""
    for index, tool in _objects(tools):
        base: Path = ("tools", index)
        parameters = tool.get("parameters", _MISSING)
        if not isinstance(parameters, dict):
            yield _wrong("EXT-1.1-tool-parameters-schema", tool, "parameters", base, "a JSON Schema object")
            continue
        yield from _schema_validity("EXT-1.1-tool-parameters-schema", parameters, (*base, "parameters"))


# --------------------------------------------------------------------------
# Rules: API 0.1 only
# --------------------------------------------------------------------------


@rule("EXT-1.1-protocol-absent-0.1")
def protocol_absent_0_1(result: Mapping[str, Any]) -> Iterator[Violation]:
    """No protocol member at all on API 0.1 -- not even null: §1.1 asks for it
    to be omitted, and a null member is present."""
    if "protocol" in result:
        yield Violation(
            "EXT-1.1-protocol-absent-0.1",
            f"protocol is present ({kind(result['protocol'])}) on API {_LEGACY_API}; a 0.1 response omits it",
            ("protocol",),
        )


@rule("EXT-1.1-no-output-schema-0.1")
def no_output_schema_0_1(tools: list[Any]) -> Iterator[Violation]:
    """No API 0.1 tool declares an output schema. ``"output_schema": null``
    passes: on the wire null is how a tool says it has none (§2.11)."""
    for index, tool in _objects(tools):
        if tool.get("output_schema") is not None:
            path = ("tools", index, "output_schema")
            yield Violation(
                "EXT-1.1-no-output-schema-0.1",
                f"{dotted(path)} is {kind(tool['output_schema'])} on API {_LEGACY_API}; "
                "only API 0.2+ tools may declare one",
                path,
            )


# --------------------------------------------------------------------------
# Rules: API 0.2 / 0.4 protocol object
# --------------------------------------------------------------------------


@rule("EXT-1.1-protocol-present")
def protocol_present(result: Mapping[str, Any], *, offer: Offer) -> Iterator[Violation]:
    """protocol is an object with the offered version, a features array of
    names and a limits object (§1.1)."""
    protocol = result.get("protocol", _MISSING)
    if not isinstance(protocol, dict):
        yield _wrong("EXT-1.1-protocol-present", result, "protocol", (), "an object")
        return
    base: Path = ("protocol",)
    version = protocol.get("version", _MISSING)
    if not isinstance(version, str):
        yield _wrong(
            "EXT-1.1-protocol-present", protocol, "version", base, f"the offered version {offer.protocol_version!r}"
        )
    elif version != offer.protocol_version:
        path = (*base, "version")
        yield Violation(
            "EXT-1.1-protocol-present",
            f"{dotted(path)} is {excerpt(version)}; the host offered {offer.protocol_version!r}",
            path,
        )
    features = protocol.get("features", _MISSING)
    if not isinstance(features, list):
        yield _wrong("EXT-1.1-protocol-present", protocol, "features", base, "an array of feature names")
    else:
        for index, name in enumerate(features):
            if not isinstance(name, str):
                path = (*base, "features", index)
                yield Violation(
                    "EXT-1.1-protocol-present", f"{dotted(path)} is {kind(name)}; expected a feature name", path
                )
    if not isinstance(protocol.get("limits"), dict):
        yield _wrong("EXT-1.1-protocol-present", protocol, "limits", base, "an object")


@rule("EXT-1.1-required-features")
def required_features(features: list[Any], *, offer: Offer) -> Iterator[Violation]:
    """Every required feature is accepted: the two §1.1 fixes, plus any other
    the offer lists as required."""
    accepted = {name for _, name in _strings(features)}
    for name in dict.fromkeys((*REQUIRED_FEATURES, *offer.required_features)):
        if name not in accepted:
            yield Violation(
                "EXT-1.1-required-features",
                f"protocol.features lacks required {excerpt(name)}",
                ("protocol", "features"),
            )


@rule("EXT-1.1-features-offered")
def features_offered(features: list[Any], *, offer: Offer) -> Iterator[Violation]:
    """Every accepted feature was offered (conditional ones included, since
    the offer lists them). The §1.1 required pair counts as offered even if
    the harness forgot to list it: the host always offers it."""
    offered = offer.offered | frozenset(REQUIRED_FEATURES)
    for index, name in _strings(features):
        if name not in offered:
            path = ("protocol", "features", index)
            yield Violation("EXT-1.1-features-offered", f"{dotted(path)} {excerpt(name)} was not offered", path)


@rule("EXT-1.1-features-unique")
def features_unique(features: list[Any]) -> Iterator[Violation]:
    """No feature name is accepted twice."""
    for name, where in duplicates(_strings(features)).items():
        at = ", ".join(f"[{i}]" for i in where)
        yield Violation(
            "EXT-1.1-features-unique",
            f"protocol.features lists {excerpt(name)} {len(where)} times (at {at})",
            ("protocol", "features", where[1]),
        )


@rule("EXT-1.1-max-concurrent-positive")
def max_concurrent_positive(limits: Mapping[str, Any]) -> Iterator[Violation]:
    """limits.max_concurrent_requests is an integer above zero.

    "Integer" follows the suite-wide reading in :mod:`.members`: a JSON number
    without a fractional part (``4`` and ``4.0`` alike), never a boolean.
    Absence is a violation: §1.1 has the response state the accepted value.
    A value above the offered one is not flagged -- §1.1 has the host cap it,
    not refuse it.
    """
    base: Path = ("protocol", "limits")
    value = limits.get("max_concurrent_requests", _MISSING)
    if not is_integer(value):
        yield _wrong(
            "EXT-1.1-max-concurrent-positive", limits, "max_concurrent_requests", base, "an integer greater than 0"
        )
    elif isinstance(value, int | float) and value <= 0:
        path = (*base, "max_concurrent_requests")
        yield Violation(
            "EXT-1.1-max-concurrent-positive", f"{dotted(path)} is {excerpt(value)}; must be greater than 0", path
        )


@rule("EXT-1.1-lifecycle-subscription")
def lifecycle_subscription(protocol: Mapping[str, Any]) -> Iterator[Violation]:
    """With lifecycle_events negotiated (the caller checks), a non-empty
    subscription lists known event names, each once. Omitted, null or empty
    means all six (§1.1); null is read as omitted since it names nothing."""
    base: Path = ("protocol", "lifecycle_events")
    events = protocol.get("lifecycle_events")
    if _subscribes_nothing(events):
        return
    if not isinstance(events, list):
        message = f"{dotted(base)} is {kind(events)}; expected an array of event names"
        yield Violation("EXT-1.1-lifecycle-subscription", message, base)
        return
    names: list[tuple[int, str]] = []
    for index, name in enumerate(events):
        path = (*base, index)
        if not isinstance(name, str):
            yield Violation(
                "EXT-1.1-lifecycle-subscription", f"{dotted(path)} is {kind(name)}; expected an event name", path
            )
        elif name not in LIFECYCLE_EVENTS:
            yield Violation(
                "EXT-1.1-lifecycle-subscription", f"{dotted(path)} {excerpt(name)} is not a lifecycle event", path
            )
        else:
            names.append((index, name))
    for name, where in duplicates(names).items():
        yield Violation(
            "EXT-1.1-lifecycle-subscription",
            f"{dotted(base)} lists {excerpt(name)} {len(where)} times",
            (*base, where[1]),
        )


@rule("EXT-1.1-lifecycle-needs-feature")
def lifecycle_needs_feature(protocol: Mapping[str, Any], *, negotiated: Negotiated) -> Iterator[Violation]:
    """Without the lifecycle_events feature, no subscription. An omitted, null
    or empty list subscribes to nothing and passes; any other value asks for
    events the extension did not negotiate."""
    events = protocol.get("lifecycle_events")
    if negotiated.has(_F_LIFECYCLE) or _subscribes_nothing(events):
        return
    path = ("protocol", "lifecycle_events")
    what = f"lists {len(events)} event(s)" if isinstance(events, list) else f"is {kind(events)}"
    yield Violation(
        "EXT-1.1-lifecycle-needs-feature",
        f"{dotted(path)} {what}, but the lifecycle_events feature is not negotiated",
        path,
    )


@rule("EXT-1.1-feature-dependencies")
def feature_dependencies(features: list[Any]) -> Iterator[Violation]:
    """A feature that builds on another is accepted only with it (§1.1, and
    §2.24b for autocomplete_edit_v1)."""
    accepted = _strings(features)
    names = {name for _, name in accepted}
    first = {name: index for index, name in reversed(accepted)}
    for feature, needs in FEATURE_DEPENDENCIES:
        if feature in names and needs not in names:
            path = ("protocol", "features", first[feature])
            message = f"{dotted(path)} {excerpt(feature)} is accepted without {excerpt(needs)}"
            yield Violation("EXT-1.1-feature-dependencies", message, path)


@rule("EXT-2.26-resource-descriptor-features")
def resource_descriptor_features(tools: list[Any], *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.26: a tool whose ``operation`` descriptor names resource inputs or
    outputs is declared only with both resource_refs_v1 and
    operation_descriptors_v1 negotiated. A descriptor without resources, or
    of the wrong shape, is not judged here (its shape rules are separate)."""
    missing = [f for f in _F_RESOURCE_DESCRIPTORS if not negotiated.has(f)]
    if not missing:
        return
    for index, tool in _objects(tools):
        operation = tool.get("operation")
        if not isinstance(operation, dict):
            continue
        bearing = [k for k in ("resource_inputs", "resource_outputs") if operation.get(k) not in (None, [])]
        if bearing:
            path: Path = ("tools", index, "operation", bearing[0])
            yield Violation(
                "EXT-2.26-resource-descriptor-features",
                f"{dotted(path)} makes a resource-bearing descriptor, but {', '.join(missing)} "
                "is not negotiated (it needs resource_refs_v1 and operation_descriptors_v1)",
                path,
            )


@rule("EXT-1.1-provider-credentials-manifest")
def provider_credentials_manifest(features: list[Any], *, manifest: ManifestInfo) -> Iterator[Violation]:
    """provider_credentials only when the manifest declares it with ``true``
    -- whatever was offered: §1.1 makes the manifest the only source."""
    capabilities = manifest.capabilities if isinstance(manifest.capabilities, Mapping) else {}
    if capabilities.get(_F_PROVIDER_CREDENTIALS) is True:
        return
    for index, name in _strings(features):
        if name == _F_PROVIDER_CREDENTIALS:
            path = ("protocol", "features", index)
            yield Violation(
                "EXT-1.1-provider-credentials-manifest",
                f"{dotted(path)} accepts 'provider_credentials' but the manifest does not declare "
                "[capabilities].provider_credentials = true",
                path,
            )
            return


@rule("EXT-1.4b-declaration")
def model_turn_declaration(features: list[Any], *, offer: Offer, manifest: ManifestInfo) -> Iterator[Violation]:
    """§1.4b: a manifest that lists model_turn_start or model_turn_end in
    contributes.hooks selects API 0.4 and negotiates session_entries. Judged
    only where the extension could do both: the host speaks 0.4 and offers
    session_entries (without the offer, declining is all it can do)."""
    declared = [hook for hook in manifest.declared_names("hooks") if hook in MODEL_TURN_HOOKS]
    if not declared or offer.api_version != _MODEL_TURN_API or _F_SESSION_ENTRIES not in offer.offered:
        return
    if _F_SESSION_ENTRIES not in {name for _, name in _strings(features)}:
        yield Violation(
            "EXT-1.4b-declaration",
            f"contributes.hooks declares {', '.join(declared)} but protocol.features does not accept the offered "
            "'session_entries' the model-turn hooks need",
            ("protocol", "features"),
        )


# --------------------------------------------------------------------------
# Rules: output_schema (API 0.2 / 0.4)
# --------------------------------------------------------------------------


@rule("EXT-1.1-output-schema-subset")
def output_schema_subset(tools: list[Any]) -> Iterator[Violation]:
    """Each non-null output_schema stays inside the §1.1 subset.

    The schema is walked as a tree of *nodes*. The root is a node at depth 1;
    a node one level deeper is each value of its ``properties`` object, its
    ``items`` (or each element of a tuple-form ``items`` array -- whether the
    tuple form is allowed is left to the dialect check below), its
    ``additionalProperties`` when that is not a boolean, and each element of
    its ``allOf``/``anyOf``/``oneOf``. Nothing else holds nodes: the values of
    ``default``, ``examples``, ``enum`` and ``const`` are data. On that tree:

    * every node is a JSON object (``additionalProperties: true/false`` is the
      keyword's flag form, not a node, so it passes);
    * every key of a node is one of the accepted keywords;
    * no node is deeper than 32 (reported once per tool, at the first node
      found beyond the bound; deeper parts are not walked);
    * every key of a ``properties`` object is at most 256 UTF-8 bytes.

    A schema that passes all of that must also be a valid JSON Schema (its
    own ``$schema`` draft, else some supported draft), since §1.1 calls it a
    subset of JSON Schema and §1.2 validates results against it. That check
    runs only on a clean walk so one defect is not reported twice.
    """
    for index, tool in _objects(tools):
        schema = tool.get("output_schema")
        if schema is None:
            continue  # absent or null: the tool declares no output schema
        path: Path = ("tools", index, "output_schema")
        problems = list(_subset_walk(schema, path))
        yield from problems
        if not problems and isinstance(schema, dict):
            yield from _schema_validity("EXT-1.1-output-schema-subset", schema, path)


def _subset_walk(schema: object, root: Path) -> Iterator[Violation]:
    # Iterative on purpose: a hostile schema nested thousands deep must not
    # exhaust the interpreter's stack before the depth bound is reported.
    stack: list[tuple[object, Path, int]] = [(schema, root, 1)]
    depth_reported = False
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, dict):
            yield Violation(
                "EXT-1.1-output-schema-subset", f"{dotted(path)} is {kind(node)}; schema nodes must be objects", path
            )
            continue
        if depth > MAX_OUTPUT_SCHEMA_DEPTH:
            if not depth_reported:
                depth_reported = True
                yield Violation(
                    "EXT-1.1-output-schema-subset",
                    f"{dotted(path)} is at nesting depth {depth}; limit {MAX_OUTPUT_SCHEMA_DEPTH}",
                    path,
                )
            continue
        for keyword in node:
            if keyword not in OUTPUT_SCHEMA_KEYWORDS:
                yield Violation(
                    "EXT-1.1-output-schema-subset",
                    f"{dotted(path)} uses keyword {excerpt(str(keyword))}, outside the supported output_schema subset",
                    (*path, keyword),
                )
        yield from _property_names(node, path)
        # Pushed in reverse so nodes are visited (and reported) in document order.
        stack.extend(reversed(list(_child_nodes(node, path, depth + 1))))


def _property_names(node: Mapping[str, Any], path: Path) -> Iterator[Violation]:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return
    for name in properties:
        size = utf8_len(name) if isinstance(name, str) else 0
        if size > MAX_SCHEMA_PROPERTY_NAME_BYTES:
            where = (*path, "properties", name)
            yield Violation(
                "EXT-1.1-output-schema-subset",
                f"{dotted((*path, 'properties'))} has a property name of {size} bytes; "
                f"limit {MAX_SCHEMA_PROPERTY_NAME_BYTES}",
                where,
            )


def _child_nodes(node: Mapping[str, Any], path: Path, depth: int) -> Iterator[tuple[object, Path, int]]:
    """The nodes directly under ``node`` (see output_schema_subset). A keyword
    whose value has the wrong container type yields nothing here; the
    validity check reports it once the walk is clean."""
    properties = node.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            yield sub, (*path, "properties", name), depth
    if "items" in node:
        items = node["items"]
        if isinstance(items, list):
            for index, sub in enumerate(items):
                yield sub, (*path, "items", index), depth
        else:
            yield items, (*path, "items"), depth
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], bool):
        yield node["additionalProperties"], (*path, "additionalProperties"), depth
    for keyword in _SUBSCHEMA_LISTS:
        branches = node.get(keyword)
        if isinstance(branches, list):
            for index, sub in enumerate(branches):
                yield sub, (*path, keyword, index), depth


# --------------------------------------------------------------------------
# Rules: prompt metadata (tool_prompt_metadata_v1, API 0.4)
# --------------------------------------------------------------------------


@rule("EXT-1.1-prompt-metadata")
def prompt_metadata(tools: list[Any]) -> Iterator[Violation]:
    """With tool_prompt_metadata_v1 negotiated on API 0.4 (the caller checks):
    prompt_snippet is a string; prompt_guidelines is an array of at most 16
    strings; every such string is at most 1,024 UTF-8 bytes and holds no
    control character but LF and TAB. Null reads as absent for both (the
    fields are optional and null carries no metadata)."""
    for index, tool in _objects(tools):
        base: Path = ("tools", index)
        snippet = tool.get("prompt_snippet")
        if snippet is not None:
            if isinstance(snippet, str):
                yield from _prompt_string(snippet, (*base, "prompt_snippet"))
            else:
                yield _wrong("EXT-1.1-prompt-metadata", tool, "prompt_snippet", base, "a string")
        guidelines = tool.get("prompt_guidelines")
        if guidelines is None:
            continue
        gpath: Path = (*base, "prompt_guidelines")
        if not isinstance(guidelines, list):
            yield _wrong("EXT-1.1-prompt-metadata", tool, "prompt_guidelines", base, "an array of strings")
            continue
        if len(guidelines) > MAX_PROMPT_GUIDELINES:
            yield Violation(
                "EXT-1.1-prompt-metadata",
                f"{dotted(gpath)} has {len(guidelines)} entries; limit {MAX_PROMPT_GUIDELINES}",
                gpath,
            )
        for position, guideline in enumerate(guidelines):
            path = (*gpath, position)
            if isinstance(guideline, str):
                yield from _prompt_string(guideline, path)
            else:
                yield Violation(
                    "EXT-1.1-prompt-metadata", f"{dotted(path)} is {kind(guideline)}; expected a string", path
                )


def _prompt_string(text: str, path: Path) -> Iterator[Violation]:
    size = utf8_len(text)
    if size > MAX_PROMPT_STRING_BYTES:
        yield Violation(
            "EXT-1.1-prompt-metadata", f"{dotted(path)} is {size} UTF-8 bytes; limit {MAX_PROMPT_STRING_BYTES}", path
        )
    # "Control character" is read as Unicode category Cc: C0, DEL and C1. CR is
    # one of them; §1.1 names only newline and tab as allowed.
    controls = [(i, ch) for i, ch in enumerate(text) if ch not in _PROMPT_CONTROLS_ALLOWED and _is_control(ch)]
    if controls:
        at, ch = controls[0]
        yield Violation(
            "EXT-1.1-prompt-metadata",
            f"{dotted(path)} contains {len(controls)} control character(s), first U+{ord(ch):04X} at index {at}; "
            "only LF and TAB are allowed",
            path,
        )


@rule("EXT-1.1-prompt-metadata-needs-feature")
def prompt_metadata_needs_feature(tools: list[Any], *, negotiated: Negotiated) -> Iterator[Violation]:
    """Without tool_prompt_metadata_v1 in force (negotiated on API 0.4), no
    tool carries prompt metadata. Null and an empty guideline list carry none
    (empty is the documented default), so they pass."""
    if _prompt_metadata_in_force(negotiated):
        return
    for index, tool in _objects(tools):
        for field in _PROMPT_FIELDS:
            value = tool.get(field)
            if value is None or value == []:
                continue
            path = ("tools", index, field)
            yield Violation(
                "EXT-1.1-prompt-metadata-needs-feature",
                f"{dotted(path)} is set ({kind(value)}) but tool_prompt_metadata_v1 is not negotiated on API "
                f"{negotiated.api_version}",
                path,
            )


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _prompt_metadata_in_force(negotiated: Negotiated) -> bool:
    # The feature exists only on API 0.4; a claim of it elsewhere is an
    # unoffered feature and does not license the fields.
    return negotiated.api_version == _PROMPT_METADATA_API and negotiated.has(_F_PROMPT_METADATA)


def _schema_validity(requirement: str, schema: dict[str, Any], path: Path) -> Iterator[Violation]:
    """Check ``schema`` against the draft it declares, or, declaring none,
    against every supported draft (:mod:`.schema_dialects`); one violation,
    at the first error of the newest candidate, when none accepts it."""
    try:
        problem = schema_problem(schema)
    except (RecursionError, ValueError):
        # jsonschema itself gave up: the schema is nested deeper than the
        # interpreter can walk, or holds an integer too long for Python to
        # print in an error message. Neither makes a schema invalid, and §1.1
        # sets no depth bound on parameters, so the schema is left unjudged
        # rather than called invalid.
        return
    if problem is not None:
        where = (*path, *problem.error.absolute_path)
        drafts = problem.dialect if "$schema" in schema else "any supported draft"
        message = f"{dotted(where)} is not a valid JSON Schema ({drafts}): {clip(problem.error.message)}"
        yield Violation(requirement, message, where)


def _wrong(requirement: str, container: Mapping[str, Any], key: str, base: Path, expected: str) -> Violation:
    """``<base>.<key> is missing|<kind>; expected <expected>``."""
    path = (*base, key)
    actual = "missing" if key not in container else kind(container[key])
    return Violation(requirement, f"{dotted(path)} is {actual}; expected {expected}", path)


def _member(value: object, key: str) -> object:
    """``value[key]`` when ``value`` is an object, else None."""
    return value.get(key) if isinstance(value, dict) else None


def _objects(entries: object) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, entry) for the object entries of an array (nothing otherwise)."""
    if isinstance(entries, list):
        for index, entry in enumerate(entries):
            if isinstance(entry, dict):
                yield index, entry


def _names(entries: list[Any]) -> list[tuple[int, str]]:
    """(index, name) for entries that are objects with a string name."""
    return [(i, e["name"]) for i, e in _objects(entries) if isinstance(e.get("name"), str)]


def _strings(entries: object) -> list[tuple[int, str]]:
    """(index, entry) for the string entries of an array (none otherwise)."""
    if not isinstance(entries, list):
        return []
    return [(index, entry) for index, entry in enumerate(entries) if isinstance(entry, str)]


def _subscribes_nothing(events: object) -> bool:
    return events is None or (isinstance(events, list) and not events)


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc"
