"""The §1.1 initialize-response rules (ext_initialize).

Every rule has a valid example (its Exercise is yielded, nothing is violated)
and invalid examples that break that rule and no other. Bounds are tested at
N-1, N and N+1.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import limits
from conformance.protocol.ext_initialize import check_initialize_result, negotiated_from, tools_from
from conformance.protocol.ext_types import ManifestInfo, Negotiated, Offer, ToolInfo
from conformance.protocol.violations import Exercise, Finding, Violation

RESULT_SHAPE = "EXT-1.1-result-shape"
API_VERSION_ECHO = "EXT-1.1-api-version-echo"
TOOLS_MATCH = "EXT-1.1-tools-match-contributes"
COMMANDS_MATCH = "EXT-1.1-commands-match-contributes"
NO_DUPLICATES = "EXT-1.1-no-duplicate-names"
MAX_COMMANDS = "EXT-1.1-max-commands"
TOOL_DESCRIPTION = "EXT-1.1-tool-description"
TOOL_PARAMETERS = "EXT-1.1-tool-parameters-schema"
PROTOCOL_ABSENT = "EXT-1.1-protocol-absent-0.1"
NO_OUTPUT_SCHEMA = "EXT-1.1-no-output-schema-0.1"
PROTOCOL_PRESENT = "EXT-1.1-protocol-present"
REQUIRED = "EXT-1.1-required-features"
OFFERED = "EXT-1.1-features-offered"
UNIQUE = "EXT-1.1-features-unique"
MAX_CONCURRENT = "EXT-1.1-max-concurrent-positive"
LIFECYCLE_SUBSCRIPTION = "EXT-1.1-lifecycle-subscription"
LIFECYCLE_NEEDS_FEATURE = "EXT-1.1-lifecycle-needs-feature"
DEPENDENCIES = "EXT-1.1-feature-dependencies"
PROVIDER_CREDENTIALS = "EXT-1.1-provider-credentials-manifest"
TURN_DECLARATION = "EXT-1.4b-declaration"
OUTPUT_SCHEMA = "EXT-1.1-output-schema-subset"
RESOURCE_DESCRIPTORS = "EXT-2.26-resource-descriptor-features"
PROMPT_METADATA = "EXT-1.1-prompt-metadata"
PROMPT_NEEDS_FEATURE = "EXT-1.1-prompt-metadata-needs-feature"

COMMON = {
    RESULT_SHAPE,
    API_VERSION_ECHO,
    TOOLS_MATCH,
    COMMANDS_MATCH,
    NO_DUPLICATES,
    MAX_COMMANDS,
    TOOL_DESCRIPTION,
    TOOL_PARAMETERS,
    PROMPT_NEEDS_FEATURE,
}
LEGACY_ONLY = {PROTOCOL_ABSENT, NO_OUTPUT_SCHEMA}
NEGOTIATED_ONLY = {
    PROTOCOL_PRESENT,
    REQUIRED,
    OFFERED,
    UNIQUE,
    MAX_CONCURRENT,
    LIFECYCLE_NEEDS_FEATURE,
    DEPENDENCIES,
    PROVIDER_CREDENTIALS,
    TURN_DECLARATION,
    OUTPUT_SCHEMA,
    RESOURCE_DESCRIPTORS,
}
FEATURE_GATED = {LIFECYCLE_SUBSCRIPTION, PROMPT_METADATA}
ALL_IDS = COMMON | LEGACY_ONLY | NEGOTIATED_ONLY | FEATURE_GATED

# Everything the tests below may negotiate, conditional services included.
OPTIONAL = (
    "request_progress",
    "artifacts",
    "lifecycle_events",
    "policy_intents",
    "dynamic_tools",
    "runtime_commands",
    "approvals",
    "agent_sessions",
    "agent_model_selection_v1",
    "agent_session_events_v1",
    "agent_session_lifetime_v1",
    "session_control_v1",
    "session_compaction_v1",
    "autocomplete",
    "autocomplete_edit_v1",
    "provider_credentials",
    "secrets",
)


# -- builders -------------------------------------------------------------------


def make_offer(api: str, *, optional: tuple[str, ...] | None = None) -> Offer:
    if api == "0.1":
        return Offer("0.1", None)
    extra = ("tool_prompt_metadata_v1",) if api == "0.4" else ()
    return Offer(
        api_version=api,
        protocol_version="0.2",
        required_features=limits.REQUIRED_FEATURES,
        optional_features=(*OPTIONAL, *extra) if optional is None else optional,
        max_concurrent_requests=64,
    )


def make_manifest(
    api: str,
    *,
    tools: tuple[str, ...] = ("greet",),
    commands: tuple[str, ...] = ("hello",),
    capabilities: dict[str, Any] | None = None,
    hooks: tuple[str, ...] = (),
) -> ManifestInfo:
    return ManifestInfo(
        name="demo",
        version="1.0.0",
        api_version=api,
        contributes={"tools": list(tools), "commands": list(commands), "hooks": list(hooks)},
        capabilities={} if capabilities is None else capabilities,
    )


def tool(name: str = "greet", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Greet someone",
        "parameters": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
        **extra,
    }


def command(name: str = "hello") -> dict[str, Any]:
    return {"name": name, "description": "Say hello", "usage": "/hello"}


def make_result(
    api: str = "0.2",
    *,
    tools: list[Any] | None = None,
    commands: list[Any] | None = None,
    features: tuple[str, ...] = (),
    **protocol_extra: Any,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "api_version": api,
        "tools": [tool()] if tools is None else tools,
        "commands": [command()] if commands is None else commands,
    }
    if api != "0.1":
        result["protocol"] = {
            "version": "0.2",
            "features": [*limits.REQUIRED_FEATURES, *features],
            "limits": {"max_concurrent_requests": 4},
            **protocol_extra,
        }
    return result


def run(
    result: Any,
    api: str = "0.2",
    *,
    offer: Offer | None = None,
    manifest: ManifestInfo | None = None,
) -> list[Finding]:
    return list(
        check_initialize_result(
            result,
            offer=make_offer(api) if offer is None else offer,
            manifest=make_manifest(api) if manifest is None else manifest,
        )
    )


def violations(found: list[Finding]) -> list[Violation]:
    return [f for f in found if isinstance(f, Violation)]


def exercised(found: list[Finding]) -> set[str]:
    return {f.requirement for f in found if isinstance(f, Exercise)}


def assert_clean(found: list[Finding], requirement: str) -> None:
    """The rule ran and nothing at all was violated."""
    assert requirement in exercised(found)
    assert violations(found) == [], [v.message for v in violations(found)]


def assert_only(found: list[Finding], requirement: str) -> list[Violation]:
    """Something was violated, and only ``requirement``."""
    broken = violations(found)
    assert broken, f"expected a {requirement} violation"
    assert {v.requirement for v in broken} == {requirement}, [(v.requirement, v.message) for v in broken]
    return broken


def messages(broken: list[Violation]) -> str:
    return "\n".join(v.message for v in broken)


def with_change(result: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    changed = copy.deepcopy(result)
    change(changed)
    return changed


def nested_schema(depth: int) -> dict[str, Any]:
    """A schema whose deepest node is at ``depth`` (root = 1), alternating the
    keywords that hold nodes so each counts one level."""
    node: dict[str, Any] = {"type": "string"}
    wrappers: list[Callable[[dict[str, Any]], dict[str, Any]]] = [
        lambda n: {"type": "object", "properties": {"p": n}},
        lambda n: {"type": "array", "items": n},
        lambda n: {"allOf": [n]},
        lambda n: {"anyOf": [n]},
        lambda n: {"oneOf": [n]},
        lambda n: {"type": "object", "additionalProperties": n},
    ]
    for level in range(depth - 1):
        node = wrappers[level % len(wrappers)](node)
    return node


# -- the baseline and which rules run where --------------------------------------


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        ("0.1", COMMON | LEGACY_ONLY),
        ("0.2", COMMON | NEGOTIATED_ONLY),
        ("0.4", COMMON | NEGOTIATED_ONLY),
    ],
)
def test_baseline_is_clean(api: str, expected: set[str]) -> None:
    found = run(make_result(api), api)
    assert violations(found) == []
    assert exercised(found) == expected


def test_feature_gated_rules_run_when_negotiated() -> None:
    found = run(make_result("0.4", features=("lifecycle_events", "tool_prompt_metadata_v1")), "0.4")
    assert violations(found) == []
    assert exercised(found) == COMMON | NEGOTIATED_ONLY | FEATURE_GATED


def test_every_exercise_comes_once() -> None:
    found = run(make_result("0.4", features=("lifecycle_events", "tool_prompt_metadata_v1")), "0.4")
    ids = [f.requirement for f in found if isinstance(f, Exercise)]
    assert len(ids) == len(set(ids))


# -- EXT-1.1-result-shape ----------------------------------------------------------


@pytest.mark.parametrize("result", [None, True, 3, 2.5, "result", [], [make_result()]])
def test_result_not_an_object_stops_everything_else(result: Any) -> None:
    found = run(result)
    broken = assert_only(found, RESULT_SHAPE)
    assert exercised(found) == {RESULT_SHAPE}
    assert broken[0].path == ()
    assert "expected an object" in broken[0].message


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda r: r.pop("api_version"), "api_version is missing"),
        (lambda r: r.update(api_version=2), "api_version is an integer; expected a string"),
        (lambda r: r.pop("tools"), "tools is missing; expected an array"),
        (lambda r: r.update(tools={"greet": {}}), "tools is an object; expected an array"),
        (lambda r: r.pop("commands"), "commands is missing"),
        (lambda r: r.update(commands="hello"), "commands is a string"),
        (lambda r: r["commands"].append("bye"), "commands[1] is a string; expected a command definition object"),
        (lambda r: r["commands"].append({"description": "x"}), "commands[1].name is missing"),
        (lambda r: r["commands"].append({"name": 3}), "commands[1].name is an integer"),
        (lambda r: r["tools"].append(None), "tools[1] is null; expected a tool definition object"),
        (lambda r: r["tools"].append({"description": "d", "parameters": {}}), "tools[1].name is missing"),
    ],
)
@pytest.mark.parametrize("api", ["0.1", "0.2"])
def test_result_shape_invalid(api: str, change: Callable[[dict[str, Any]], None], fragment: str) -> None:
    broken = assert_only(run(with_change(make_result(api), change), api), RESULT_SHAPE)
    assert fragment in messages(broken)


def test_result_shape_valid() -> None:
    # Extra members are not the shape rule's business.
    result = make_result()
    result["extra"] = {"anything": True}
    assert_clean(run(result), RESULT_SHAPE)


# -- EXT-1.1-api-version-echo ------------------------------------------------------


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_api_version_echo_valid(api: str) -> None:
    assert_clean(run(make_result(api), api), API_VERSION_ECHO)


@pytest.mark.parametrize("echoed", ["0.4", "0.2.0", " 0.2", ""])
def test_api_version_echo_invalid(echoed: str) -> None:
    result = make_result("0.2")
    result["api_version"] = echoed
    broken = assert_only(run(result, "0.2"), API_VERSION_ECHO)
    assert broken[0].path == ("api_version",)
    assert "the manifest selects '0.2'" in broken[0].message


# -- EXT-1.1-tools-match-contributes / commands-match-contributes ----------------


def test_tools_match_valid_in_any_order() -> None:
    manifest = make_manifest("0.2", tools=("a", "b", "c"))
    result = make_result(tools=[tool("c"), tool("a"), tool("b")])
    assert_clean(run(result, manifest=manifest), TOOLS_MATCH)


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_tools_match_extra_tool(api: str) -> None:
    broken = assert_only(run(make_result(api, tools=[tool("greet"), tool("extra")]), api), TOOLS_MATCH)
    assert messages(broken) == "tools[1].name 'extra' is not declared in contributes.tools"
    assert broken[0].path == ("tools", 1, "name")


def test_tools_match_missing_tool() -> None:
    broken = assert_only(run(make_result(tools=[])), TOOLS_MATCH)
    assert messages(broken) == "tools lacks 'greet', which contributes.tools declares"


def test_tools_match_skipped_with_dynamic_tools() -> None:
    found = run(make_result(tools=[tool("runtime_only")], features=("dynamic_tools",)))
    assert TOOLS_MATCH not in exercised(found)
    assert violations(found) == []


def test_dynamic_tools_claim_means_nothing_on_0_1() -> None:
    # API 0.1 negotiates nothing, whatever a stray protocol member says.
    result = make_result("0.1", tools=[tool("other")])
    result["protocol"] = {"features": ["dynamic_tools"]}
    found = run(result, "0.1")
    assert TOOLS_MATCH in exercised(found)
    assert {v.requirement for v in violations(found)} == {TOOLS_MATCH, PROTOCOL_ABSENT}


def test_commands_match_valid() -> None:
    manifest = make_manifest("0.2", commands=("a", "b"))
    assert_clean(run(make_result(commands=[command("b"), command("a")]), manifest=manifest), COMMANDS_MATCH)


@pytest.mark.parametrize(
    ("commands", "fragment"),
    [
        ([command("hello"), command("bye")], "commands[1].name 'bye' is not declared in contributes.commands"),
        ([], "commands lacks 'hello', which contributes.commands declares"),
    ],
)
@pytest.mark.parametrize("api", ["0.1", "0.4"])
def test_commands_match_invalid(api: str, commands: list[Any], fragment: str) -> None:
    broken = assert_only(run(make_result(api, commands=commands), api), COMMANDS_MATCH)
    assert fragment in messages(broken)


def test_commands_match_skipped_with_runtime_commands() -> None:
    found = run(make_result(commands=[command("foreign")], features=("runtime_commands",)))
    assert COMMANDS_MATCH not in exercised(found)
    assert violations(found) == []


# -- EXT-1.1-no-duplicate-names ------------------------------------------------------


def test_no_duplicate_names_valid_across_kinds() -> None:
    # Tools and commands are separate lists: sharing a name is not a duplicate.
    manifest = make_manifest("0.2", tools=("greet",), commands=("greet",))
    assert_clean(run(make_result(commands=[command("greet")]), manifest=manifest), NO_DUPLICATES)


@pytest.mark.parametrize(
    ("tools", "commands", "fragment", "path"),
    [
        ([tool(), tool()], None, "tools name 'greet' appears 2 times (tools[0], tools[1])", ("tools", 1, "name")),
        (None, [command(), command(), command()], "commands name 'hello' appears 3 times", ("commands", 1, "name")),
    ],
)
@pytest.mark.parametrize("api", ["0.1", "0.2"])
def test_no_duplicate_names_invalid(
    api: str, tools: list[Any] | None, commands: list[Any] | None, fragment: str, path: tuple[Any, ...]
) -> None:
    broken = assert_only(run(make_result(api, tools=tools, commands=commands), api), NO_DUPLICATES)
    assert fragment in messages(broken)
    assert broken[0].path == path


def test_duplicates_are_flagged_even_with_discovery_features() -> None:
    result = make_result(tools=[tool("x"), tool("x")], features=("dynamic_tools",))
    assert_only(run(result), NO_DUPLICATES)


# -- EXT-1.1-max-commands ----------------------------------------------------------------


def many_commands(count: int) -> tuple[dict[str, Any], ManifestInfo]:
    names = tuple(f"c{i}" for i in range(count))
    return make_result(commands=[command(n) for n in names]), make_manifest("0.2", commands=names)


@pytest.mark.parametrize("count", [limits.MAX_INITIALIZE_COMMANDS - 1, limits.MAX_INITIALIZE_COMMANDS])
def test_max_commands_valid(count: int) -> None:
    result, manifest = many_commands(count)
    assert_clean(run(result, manifest=manifest), MAX_COMMANDS)


def test_max_commands_invalid() -> None:
    result, manifest = many_commands(limits.MAX_INITIALIZE_COMMANDS + 1)
    broken = assert_only(run(result, manifest=manifest), MAX_COMMANDS)
    assert messages(broken) == "commands has 257 definitions; limit 256"


def test_max_commands_holds_with_runtime_commands() -> None:
    result, _ = many_commands(limits.MAX_INITIALIZE_COMMANDS + 1)
    result["protocol"]["features"].append("runtime_commands")
    assert_only(run(result), MAX_COMMANDS)


# -- EXT-1.1-tool-description --------------------------------------------------------------


@pytest.mark.parametrize("description", ["x", " ", "Greet someone\nin two lines"])
def test_tool_description_valid(description: str) -> None:
    assert_clean(run(make_result(tools=[tool(description=description)])), TOOL_DESCRIPTION)


@pytest.mark.parametrize(
    ("description", "fragment"),
    [
        ("", "tools[0].description is empty"),
        (None, "tools[0].description is null; expected a non-empty string"),
        (3, "tools[0].description is an integer"),
        (["Greet"], "tools[0].description is an array"),
    ],
)
def test_tool_description_invalid(description: Any, fragment: str) -> None:
    broken = assert_only(run(make_result(tools=[tool(description=description)])), TOOL_DESCRIPTION)
    assert messages(broken) == fragment or fragment in messages(broken)


def test_tool_description_missing() -> None:
    bare = tool()
    del bare["description"]
    broken = assert_only(run(make_result("0.1", tools=[bare]), "0.1"), TOOL_DESCRIPTION)
    assert messages(broken) == "tools[0].description is missing; expected a non-empty string"


# -- EXT-1.1-tool-parameters-schema ---------------------------------------------------------


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {"type": "object", "properties": {}, "additionalProperties": False},
        {"type": "string"},  # §1.1 does not demand that the schema describe an object
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": True},
        {"$schema": "https://example.com/unknown-dialect", "type": "object"},
        {"$schema": "http://[", "type": "object"},  # not a parseable URI: checked as 2020-12, no crash
        {"type": "object", "x-vendor": {"anything": [1, 2]}},
        # §1.1 names no draft: without $schema, what any supported draft accepts passes.
        {"type": "array", "items": [{"type": "string"}], "additionalItems": False},  # draft 7 tuple items
        {"type": "number", "minimum": 0, "exclusiveMinimum": True},  # draft 4 boolean form
    ],
)
def test_tool_parameters_valid(parameters: dict[str, Any]) -> None:
    assert_clean(run(make_result(tools=[tool(parameters=parameters)])), TOOL_PARAMETERS)


@pytest.mark.parametrize(
    ("parameters", "fragment"),
    [
        (True, "tools[0].parameters is a boolean; expected a JSON Schema object"),
        (None, "tools[0].parameters is null"),
        ([{"type": "object"}], "tools[0].parameters is an array"),
        ('{"type": "object"}', "tools[0].parameters is a string"),
        ({"type": 5}, "tools[0].parameters.type is not a valid JSON Schema (any supported draft)"),
        ({"type": "objekt"}, "is not a valid JSON Schema"),
        ({"required": "who"}, "tools[0].parameters.required is not a valid JSON Schema"),
        ({"properties": {"who": 3}}, "tools[0].parameters.properties.who is not a valid JSON Schema"),
        ({"pattern": "("}, "is not a valid JSON Schema"),
        ({"$schema": 5}, "tools[0].parameters.$schema is not a valid JSON Schema"),
        (
            {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 5},
            "(Draft4)",
        ),
    ],
)
def test_tool_parameters_invalid(parameters: Any, fragment: str) -> None:
    broken = assert_only(run(make_result(tools=[tool(parameters=parameters)])), TOOL_PARAMETERS)
    assert fragment in messages(broken)


def test_tool_parameters_missing() -> None:
    bare = tool()
    del bare["parameters"]
    broken = assert_only(run(make_result(tools=[bare])), TOOL_PARAMETERS)
    assert messages(broken) == "tools[0].parameters is missing; expected a JSON Schema object"


# -- EXT-1.1-protocol-absent-0.1 ---------------------------------------------------------


def test_protocol_absent_valid() -> None:
    assert_clean(run(make_result("0.1"), "0.1"), PROTOCOL_ABSENT)


@pytest.mark.parametrize("protocol", [{"version": "0.2"}, None, {}])
def test_protocol_absent_invalid(protocol: Any) -> None:
    result = make_result("0.1")
    result["protocol"] = protocol
    broken = assert_only(run(result, "0.1"), PROTOCOL_ABSENT)
    assert broken[0].path == ("protocol",)
    assert "on API 0.1" in broken[0].message


# -- EXT-1.1-no-output-schema-0.1 --------------------------------------------------------


@pytest.mark.parametrize("extra", [{}, {"output_schema": None}])
def test_no_output_schema_valid(extra: dict[str, Any]) -> None:
    assert_clean(run(make_result("0.1", tools=[tool(**extra)]), "0.1"), NO_OUTPUT_SCHEMA)


@pytest.mark.parametrize("schema", [{"type": "object"}, {}, True, "object"])
def test_no_output_schema_invalid(schema: Any) -> None:
    broken = assert_only(run(make_result("0.1", tools=[tool(output_schema=schema)]), "0.1"), NO_OUTPUT_SCHEMA)
    assert broken[0].path == ("tools", 0, "output_schema")


def test_output_schema_subset_does_not_run_on_0_1() -> None:
    found = run(make_result("0.1", tools=[tool(output_schema={"not": {}})]), "0.1")
    assert OUTPUT_SCHEMA not in exercised(found)


# -- EXT-1.1-protocol-present ----------------------------------------------------------------


@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_protocol_present_valid(api: str) -> None:
    assert_clean(run(make_result(api), api), PROTOCOL_PRESENT)


def test_protocol_version_is_whatever_was_offered() -> None:
    offer = Offer("0.4", "0.4", limits.REQUIRED_FEATURES, (), 8)
    result = make_result("0.4")
    result["protocol"]["version"] = "0.4"
    assert_clean(run(result, "0.4", offer=offer), PROTOCOL_PRESENT)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda r: r.pop("protocol"), "protocol is missing; expected an object"),
        (lambda r: r.update(protocol=None), "protocol is null; expected an object"),
        (lambda r: r.update(protocol=["0.2"]), "protocol is an array"),
        (lambda r: r["protocol"].pop("version"), "protocol.version is missing"),
        (lambda r: r["protocol"].update(version=0.2), "protocol.version is a number"),
        (lambda r: r["protocol"].update(version="0.4"), "protocol.version is '0.4'; the host offered '0.2'"),
        (lambda r: r["protocol"].pop("features"), "protocol.features is missing; expected an array"),
        (lambda r: r["protocol"].update(features="content_parts"), "protocol.features is a string"),
        (lambda r: r["protocol"]["features"].append(7), "protocol.features[2] is an integer; expected a feature"),
        (lambda r: r["protocol"].pop("limits"), "protocol.limits is missing; expected an object"),
        (lambda r: r["protocol"].update(limits=[4]), "protocol.limits is an array"),
    ],
)
@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_protocol_present_invalid(api: str, change: Callable[[dict[str, Any]], None], fragment: str) -> None:
    broken = assert_only(run(with_change(make_result(api), change), api), PROTOCOL_PRESENT)
    assert fragment in messages(broken)


# -- EXT-1.1-required-features -------------------------------------------------------------


def test_required_features_valid_in_any_order() -> None:
    result = make_result()
    result["protocol"]["features"] = ["artifacts", "content_parts", "request_cancellation"]
    assert_clean(run(result), REQUIRED)


@pytest.mark.parametrize(
    ("features", "missing"),
    [
        (["request_cancellation"], ["content_parts"]),
        (["content_parts", "artifacts"], ["request_cancellation"]),
        ([], ["request_cancellation", "content_parts"]),
    ],
)
def test_required_features_invalid(features: list[str], missing: list[str]) -> None:
    result = make_result()
    result["protocol"]["features"] = features
    broken = assert_only(run(result), REQUIRED)
    assert [v.message for v in broken] == [f"protocol.features lacks required '{name}'" for name in missing]


def test_required_features_include_what_the_offer_requires() -> None:
    offer = Offer("0.2", "0.2", (*limits.REQUIRED_FEATURES, "artifacts"), (), 8)
    assert_only(run(make_result(), offer=offer), REQUIRED)
    assert_clean(run(make_result(features=("artifacts",)), offer=offer), REQUIRED)


# -- EXT-1.1-features-offered -----------------------------------------------------------------


def test_features_offered_valid_with_conditional_feature() -> None:
    assert_clean(run(make_result(features=("agent_sessions", "secrets"))), OFFERED)


@pytest.mark.parametrize(
    ("optional", "features", "fragment"),
    [
        ((), ("artifacts",), "protocol.features[2] 'artifacts' was not offered"),
        (("artifacts",), ("teleport",), "protocol.features[2] 'teleport' was not offered"),
        (("request_progress",), ("agent_sessions",), "'agent_sessions' was not offered"),
        (("request_progress",), ("Request_Progress",), "'Request_Progress' was not offered"),
    ],
)
def test_features_offered_invalid(optional: tuple[str, ...], features: tuple[str, ...], fragment: str) -> None:
    broken = assert_only(run(make_result(features=features), offer=make_offer("0.2", optional=optional)), OFFERED)
    assert fragment in messages(broken)


def test_tool_prompt_metadata_is_not_offered_on_0_2() -> None:
    assert_only(run(make_result("0.2", features=("tool_prompt_metadata_v1",)), "0.2"), OFFERED)


# -- EXT-1.1-features-unique --------------------------------------------------------------------


def test_features_unique_valid() -> None:
    assert_clean(run(make_result(features=("artifacts", "request_progress"))), UNIQUE)


@pytest.mark.parametrize(
    ("features", "fragment"),
    [
        (("artifacts", "artifacts"), "protocol.features lists 'artifacts' 2 times (at [2], [3])"),
        (("content_parts",), "protocol.features lists 'content_parts' 2 times"),
    ],
)
def test_features_unique_invalid(features: tuple[str, ...], fragment: str) -> None:
    broken = assert_only(run(make_result(features=features)), UNIQUE)
    assert fragment in messages(broken)


# -- EXT-1.1-max-concurrent-positive -------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 4, 4.0, 64, 1000])  # above the offer is capped by the host, not refused
def test_max_concurrent_valid(value: Any) -> None:
    assert_clean(run(make_result(limits={"max_concurrent_requests": value})), MAX_CONCURRENT)


@pytest.mark.parametrize(
    ("limits_value", "fragment"),
    [
        ({"max_concurrent_requests": 0}, "protocol.limits.max_concurrent_requests is 0; must be greater than 0"),
        ({"max_concurrent_requests": -1}, "is -1; must be greater than 0"),
        ({"max_concurrent_requests": True}, "is a boolean; expected an integer greater than 0"),
        ({"max_concurrent_requests": 2.5}, "is a number; expected an integer"),
        ({"max_concurrent_requests": "4"}, "is a string"),
        ({"max_concurrent_requests": None}, "is null"),
        ({}, "protocol.limits.max_concurrent_requests is missing"),
    ],
)
def test_max_concurrent_invalid(limits_value: dict[str, Any], fragment: str) -> None:
    broken = assert_only(run(make_result(limits=limits_value)), MAX_CONCURRENT)
    assert fragment in messages(broken)


# -- EXT-1.1-lifecycle-subscription ---------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"lifecycle_events": []},
        {"lifecycle_events": None},
        {"lifecycle_events": list(limits.LIFECYCLE_EVENTS)},
        {"lifecycle_events": ["turn/settled", "session/started"]},
    ],
)
def test_lifecycle_subscription_valid(extra: dict[str, Any]) -> None:
    assert_clean(run(make_result(features=("lifecycle_events",), **extra)), LIFECYCLE_SUBSCRIPTION)


@pytest.mark.parametrize(
    ("events", "fragment"),
    [
        (["turn/started", "turn/progress"], "protocol.lifecycle_events[1] 'turn/progress' is not a lifecycle event"),
        (["Turn/Started"], "is not a lifecycle event"),
        (["turn/started", "turn/started"], "protocol.lifecycle_events lists 'turn/started' 2 times"),
        (["turn/started", 1], "protocol.lifecycle_events[1] is an integer; expected an event name"),
        ("turn/started", "protocol.lifecycle_events is a string; expected an array"),
        ({"turn/started": True}, "is an object"),
    ],
)
def test_lifecycle_subscription_invalid(events: Any, fragment: str) -> None:
    result = make_result(features=("lifecycle_events",), lifecycle_events=events)
    broken = assert_only(run(result), LIFECYCLE_SUBSCRIPTION)
    assert fragment in messages(broken)


def test_lifecycle_subscription_needs_the_feature_to_run() -> None:
    assert LIFECYCLE_SUBSCRIPTION not in exercised(run(make_result()))


# -- EXT-1.1-lifecycle-needs-feature ----------------------------------------------------------------


@pytest.mark.parametrize("extra", [{}, {"lifecycle_events": []}, {"lifecycle_events": None}])
def test_lifecycle_needs_feature_valid(extra: dict[str, Any]) -> None:
    assert_clean(run(make_result(**extra)), LIFECYCLE_NEEDS_FEATURE)


def test_lifecycle_needs_feature_valid_with_feature() -> None:
    result = make_result(features=("lifecycle_events",), lifecycle_events=["tool/started"])
    assert_clean(run(result), LIFECYCLE_NEEDS_FEATURE)


@pytest.mark.parametrize(
    ("events", "fragment"),
    [
        (["turn/started"], "protocol.lifecycle_events lists 1 event(s), but the lifecycle_events feature"),
        (list(limits.LIFECYCLE_EVENTS), "lists 6 event(s)"),
        ("turn/started", "protocol.lifecycle_events is a string, but"),
    ],
)
def test_lifecycle_needs_feature_invalid(events: Any, fragment: str) -> None:
    broken = assert_only(run(make_result(lifecycle_events=events)), LIFECYCLE_NEEDS_FEATURE)
    assert fragment in messages(broken)


# -- EXT-1.1-feature-dependencies ---------------------------------------------------------------------


@pytest.mark.parametrize(("feature", "needs"), limits.FEATURE_DEPENDENCIES)
def test_feature_dependencies_valid(feature: str, needs: str) -> None:
    assert_clean(run(make_result("0.4", features=(needs, feature)), "0.4"), DEPENDENCIES)


@pytest.mark.parametrize(("feature", "needs"), limits.FEATURE_DEPENDENCIES)
def test_feature_dependencies_invalid(feature: str, needs: str) -> None:
    broken = assert_only(run(make_result("0.4", features=(feature,)), "0.4"), DEPENDENCIES)
    assert messages(broken) == f"protocol.features[2] '{feature}' is accepted without '{needs}'"


def test_every_dependency_named_in_the_brief_is_covered() -> None:
    assert dict(limits.FEATURE_DEPENDENCIES) == {
        "approvals": "policy_intents",
        "agent_model_selection_v1": "agent_sessions",
        "agent_session_events_v1": "agent_sessions",
        "agent_session_lifetime_v1": "agent_sessions",
        "session_compaction_v1": "session_control_v1",
        "autocomplete_edit_v1": "autocomplete",
    }


# -- EXT-1.1-provider-credentials-manifest ----------------------------------------------------------


# -- EXT-1.4b-declaration -----------------------------------------------------------

TURN_OFFER = make_offer("0.4", optional=("session_entries",))


@pytest.mark.parametrize("hooks", [("model_turn_start",), ("model_turn_end",), ("model_turn_start", "model_turn_end")])
def test_turn_declaration_valid_when_session_entries_negotiated(hooks: tuple[str, ...]) -> None:
    manifest = make_manifest("0.4", hooks=("before_prompt", *hooks))
    found = run(make_result("0.4", features=("session_entries",)), "0.4", offer=TURN_OFFER, manifest=manifest)
    assert_clean(found, TURN_DECLARATION)


@pytest.mark.parametrize("hooks", [("model_turn_end",), ("model_turn_start", "model_turn_end")])
def test_turn_declaration_invalid_without_session_entries(hooks: tuple[str, ...]) -> None:
    manifest = make_manifest("0.4", hooks=hooks)
    broken = assert_only(run(make_result("0.4"), "0.4", offer=TURN_OFFER, manifest=manifest), TURN_DECLARATION)
    assert len(broken) == 1 and broken[0].path == ("protocol", "features")
    assert ", ".join(hooks) in broken[0].message and "session_entries" in broken[0].message


@pytest.mark.parametrize(
    ("api", "offer"),
    [
        ("0.4", make_offer("0.4", optional=())),  # not offered: declining is all the extension can do
        ("0.2", make_offer("0.2", optional=("session_entries",))),  # the model-turn hooks are an API 0.4 matter
    ],
)
def test_turn_declaration_not_judged_where_it_cannot_be_met(api: str, offer: Offer) -> None:
    manifest = make_manifest(api, hooks=("model_turn_start",))
    assert violations(run(make_result(api), api, offer=offer, manifest=manifest)) == []


def test_turn_declaration_without_turn_hooks_needs_nothing() -> None:
    manifest = make_manifest("0.4", hooks=("before_prompt",))
    assert_clean(run(make_result("0.4"), "0.4", offer=TURN_OFFER, manifest=manifest), TURN_DECLARATION)


def test_provider_credentials_valid_when_declared() -> None:
    manifest = make_manifest("0.2", capabilities={"provider_credentials": True})
    assert_clean(run(make_result(features=("provider_credentials",)), manifest=manifest), PROVIDER_CREDENTIALS)


def test_provider_credentials_not_negotiated_is_valid() -> None:
    assert_clean(run(make_result()), PROVIDER_CREDENTIALS)


@pytest.mark.parametrize("capabilities", [{}, {"provider_credentials": False}, {"provider_credentials": "true"}])
def test_provider_credentials_invalid(capabilities: dict[str, Any]) -> None:
    manifest = make_manifest("0.2", capabilities=capabilities)
    broken = assert_only(run(make_result(features=("provider_credentials",)), manifest=manifest), PROVIDER_CREDENTIALS)
    assert broken[0].path == ("protocol", "features", 2)
    assert "[capabilities].provider_credentials = true" in broken[0].message


# -- EXT-1.1-output-schema-subset ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        None,  # null: no schema declared
        {},
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]},
        {"type": "object", "additionalProperties": False},
        {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
        {"type": "array", "items": {"type": "number"}, "minItems": 1, "uniqueItems": True},
        # Tuple-form items: each element is a node; valid where the dialect has it.
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}, {"type": "integer"}]},
        {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "t", "description": "d"},
        # Values under default/examples/enum/const are data, not schema nodes.
        {"type": "object", "default": {"pattern": 1}, "examples": [{"not": {}}, 3], "enum": [1, "x", None]},
        {"const": {"$ref": "#/x", "properties": 5}},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"},
        # No $schema: valid under some supported draft is valid (§1.1 names none).
        {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},  # draft 7 tuple items
        {"type": "number", "minimum": 0, "exclusiveMinimum": True},  # draft 4 boolean form
    ],
)
@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_output_schema_valid(api: str, schema: Any) -> None:
    assert_clean(run(make_result(api, tools=[tool(output_schema=schema)]), api), OUTPUT_SCHEMA)


def test_output_schema_absent_is_valid() -> None:
    assert_clean(run(make_result(tools=[tool()])), OUTPUT_SCHEMA)


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        (True, "tools[0].output_schema is a boolean; schema nodes must be objects"),
        ("object", "tools[0].output_schema is a string; schema nodes must be objects"),
        ({"properties": {"a": True}}, "tools[0].output_schema.properties.a is a boolean; schema nodes must be objects"),
        ({"items": 5}, "tools[0].output_schema.items is an integer"),
        ({"items": [{"type": "string"}, 5]}, "tools[0].output_schema.items[1] is an integer"),
        ({"allOf": [{}, []]}, "tools[0].output_schema.allOf[1] is an array"),
        ({"additionalProperties": "no"}, "output_schema.additionalProperties is a string"),
        ({"type": "string", "pattern": "^a"}, "uses keyword 'pattern', outside the supported output_schema subset"),
        ({"$ref": "#/$defs/x", "$defs": {"x": {}}}, "uses keyword '$ref'"),
        ({"properties": {"a": {"not": {}}}}, "tools[0].output_schema.properties.a uses keyword 'not'"),
        ({"type": "strin"}, "tools[0].output_schema.type is not a valid JSON Schema"),
        ({"required": "a"}, "tools[0].output_schema.required is not a valid JSON Schema"),
        ({"allOf": {}}, "tools[0].output_schema.allOf is not a valid JSON Schema"),
        (
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "items": [{"type": "string"}]},
            "tools[0].output_schema.items is not a valid JSON Schema (Draft202012)",
        ),
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "minimum": 0, "exclusiveMinimum": True},
            "tools[0].output_schema.exclusiveMinimum is not a valid JSON Schema (Draft7)",
        ),
        ({"minLength": -1}, "is not a valid JSON Schema"),
    ],
)
@pytest.mark.parametrize("api", ["0.2", "0.4"])
def test_output_schema_invalid(api: str, schema: Any, fragment: str) -> None:
    broken = assert_only(run(make_result(api, tools=[tool(output_schema=schema)]), api), OUTPUT_SCHEMA)
    assert fragment in messages(broken)


@pytest.mark.parametrize("depth", [limits.MAX_OUTPUT_SCHEMA_DEPTH - 1, limits.MAX_OUTPUT_SCHEMA_DEPTH])
def test_output_schema_depth_valid(depth: int) -> None:
    assert_clean(run(make_result(tools=[tool(output_schema=nested_schema(depth))])), OUTPUT_SCHEMA)


def test_output_schema_depth_invalid() -> None:
    schema = nested_schema(limits.MAX_OUTPUT_SCHEMA_DEPTH + 1)
    broken = assert_only(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)
    assert len(broken) == 1
    assert broken[0].message.endswith("is at nesting depth 33; limit 32")
    assert len(broken[0].path) > 3


def test_output_schema_depth_counts_only_schema_nodes() -> None:
    # 32 levels of properties, plus deep *data* under const and enum: still 32.
    schema = nested_schema(limits.MAX_OUTPUT_SCHEMA_DEPTH)
    deep_data: Any = "leaf"
    for _ in range(100):
        deep_data = {"properties": {"p": deep_data}}
    schema["const"] = deep_data
    schema["enum"] = [deep_data]
    assert_clean(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)


def test_output_schema_depth_is_reported_once_per_tool() -> None:
    deep = nested_schema(limits.MAX_OUTPUT_SCHEMA_DEPTH)
    schema = {"type": "object", "properties": {"a": deep, "b": deep}}
    broken = assert_only(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)
    assert len(broken) == 1


def test_output_schema_hostile_depth_does_not_recurse() -> None:
    schema = nested_schema(50_000)
    broken = assert_only(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)
    assert len(broken) == 1


@pytest.mark.parametrize(
    "name",
    [
        "a" * (limits.MAX_SCHEMA_PROPERTY_NAME_BYTES - 1),
        "a" * limits.MAX_SCHEMA_PROPERTY_NAME_BYTES,
        "é" * (limits.MAX_SCHEMA_PROPERTY_NAME_BYTES // 2),  # 256 bytes in 128 characters
    ],
)
def test_output_schema_property_name_valid(name: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "string"}}}
    assert_clean(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("a" * (limits.MAX_SCHEMA_PROPERTY_NAME_BYTES + 1), 257),
        ("é" * (limits.MAX_SCHEMA_PROPERTY_NAME_BYTES // 2) + "a", 257),  # 129 characters, 257 bytes
    ],
)
def test_output_schema_property_name_invalid(name: str, size: int) -> None:
    schema = {"type": "object", "properties": {"ok": {"properties": {name: {}}}}}
    broken = assert_only(run(make_result(tools=[tool(output_schema=schema)])), OUTPUT_SCHEMA)
    assert messages(broken) == (
        f"tools[0].output_schema.properties.ok.properties has a property name of {size} bytes; limit 256"
    )
    assert broken[0].path[-1] == name


# -- EXT-1.1-prompt-metadata ----------------------------------------------------------------------------

PROMPT_FEATURES = ("tool_prompt_metadata_v1",)


def prompt_run(**metadata: Any) -> list[Finding]:
    return run(make_result("0.4", tools=[tool(**metadata)], features=PROMPT_FEATURES), "0.4")


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"prompt_snippet": "Use greet to say hi."},
        {"prompt_snippet": ""},
        {"prompt_guidelines": ["Only greet people by name."]},  # guidelines need no snippet
        {"prompt_snippet": "line one\nline two\ttabbed", "prompt_guidelines": ["a\nb", "\t"]},
        {"prompt_snippet": None, "prompt_guidelines": None},
        {"prompt_guidelines": []},
        {"prompt_guidelines": ["g"] * (limits.MAX_PROMPT_GUIDELINES - 1)},
        {"prompt_guidelines": ["g"] * limits.MAX_PROMPT_GUIDELINES},
        {"prompt_snippet": "a" * (limits.MAX_PROMPT_STRING_BYTES - 1)},
        {"prompt_snippet": "a" * limits.MAX_PROMPT_STRING_BYTES},
        {"prompt_guidelines": ["é" * (limits.MAX_PROMPT_STRING_BYTES // 2)]},  # 1,024 bytes
        {"prompt_snippet": "zero\u200bwidth and emoji 🙂"},  # format characters are not control characters
    ],
)
def test_prompt_metadata_valid(metadata: dict[str, Any]) -> None:
    assert_clean(prompt_run(**metadata), PROMPT_METADATA)


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        ({"prompt_snippet": 5}, "tools[0].prompt_snippet is an integer; expected a string"),
        ({"prompt_snippet": ["x"]}, "tools[0].prompt_snippet is an array"),
        ({"prompt_guidelines": "be nice"}, "tools[0].prompt_guidelines is a string; expected an array of strings"),
        ({"prompt_guidelines": ["ok", 3]}, "tools[0].prompt_guidelines[1] is an integer; expected a string"),
        (
            {"prompt_guidelines": ["g"] * (limits.MAX_PROMPT_GUIDELINES + 1)},
            "tools[0].prompt_guidelines has 17 entries; limit 16",
        ),
        (
            {"prompt_snippet": "a" * (limits.MAX_PROMPT_STRING_BYTES + 1)},
            "tools[0].prompt_snippet is 1025 UTF-8 bytes; limit 1024",
        ),
        (
            {"prompt_guidelines": ["é" * (limits.MAX_PROMPT_STRING_BYTES // 2) + "a"]},
            "tools[0].prompt_guidelines[0] is 1025 UTF-8 bytes; limit 1024",
        ),
        ({"prompt_snippet": "a\r\nb"}, "contains 1 control character(s), first U+000D at index 1"),
        ({"prompt_snippet": "\x00"}, "first U+0000"),
        ({"prompt_snippet": "bell\x07"}, "first U+0007"),
        ({"prompt_guidelines": ["esc \x1b[31m red"]}, "tools[0].prompt_guidelines[0] contains 1 control"),
        ({"prompt_snippet": "del\x7f"}, "U+007F"),
        ({"prompt_snippet": "c1\x85"}, "U+0085"),
    ],
)
def test_prompt_metadata_invalid(metadata: dict[str, Any], fragment: str) -> None:
    broken = assert_only(prompt_run(**metadata), PROMPT_METADATA)
    assert fragment in messages(broken)


def test_prompt_metadata_lone_surrogate_does_not_crash() -> None:
    found = prompt_run(prompt_snippet="\ud800" * 400)  # 3 bytes each once encoded
    assert "1200 UTF-8 bytes" in messages(assert_only(found, PROMPT_METADATA))


def test_prompt_metadata_needs_0_4_and_the_feature_to_run() -> None:
    assert PROMPT_METADATA not in exercised(run(make_result("0.4"), "0.4"))


# -- EXT-1.1-prompt-metadata-needs-feature ------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "metadata"),
    [
        ("0.1", {}),
        ("0.2", {"prompt_snippet": None}),
        ("0.4", {"prompt_guidelines": []}),  # the documented default carries nothing
        ("0.4", {"prompt_snippet": None, "prompt_guidelines": None}),
    ],
)
def test_prompt_needs_feature_valid_without_feature(api: str, metadata: dict[str, Any]) -> None:
    assert_clean(run(make_result(api, tools=[tool(**metadata)]), api), PROMPT_NEEDS_FEATURE)


def test_prompt_needs_feature_valid_with_feature() -> None:
    assert_clean(prompt_run(prompt_snippet="s", prompt_guidelines=["g"]), PROMPT_NEEDS_FEATURE)


@pytest.mark.parametrize(
    ("api", "metadata", "fragment"),
    [
        ("0.1", {"prompt_guidelines": ["g"]}, "tools[0].prompt_guidelines is set (an array)"),
        ("0.2", {"prompt_snippet": "s"}, "tools[0].prompt_snippet is set (a string) but tool_prompt_metadata_v1"),
        ("0.4", {"prompt_snippet": ""}, "is not negotiated on API 0.4"),
        ("0.4", {"prompt_snippet": 5}, "tools[0].prompt_snippet is set (an integer)"),
    ],
)
def test_prompt_needs_feature_invalid(api: str, metadata: dict[str, Any], fragment: str) -> None:
    broken = assert_only(run(make_result(api, tools=[tool(**metadata)]), api), PROMPT_NEEDS_FEATURE)
    assert fragment in messages(broken)


def test_prompt_metadata_feature_claimed_on_0_2_licenses_nothing() -> None:
    result = make_result("0.2", tools=[tool(prompt_snippet="s")], features=PROMPT_FEATURES)
    broken = violations(run(result, "0.2"))
    assert {v.requirement for v in broken} == {OFFERED, PROMPT_NEEDS_FEATURE}


# -- negotiated_from ----------------------------------------------------------------------------------


def test_negotiated_from_0_1_is_empty() -> None:
    result = make_result("0.1")
    result["protocol"] = {"features": ["dynamic_tools"], "limits": {"max_concurrent_requests": 3}}
    assert negotiated_from(result, offer=make_offer("0.1")) == Negotiated(api_version="0.1")


def test_negotiated_from_reads_the_protocol_object() -> None:
    result = make_result("0.4", features=("artifacts", "lifecycle_events"), lifecycle_events=["turn/started"])
    result["protocol"]["features"].append(9)
    assert negotiated_from(result, offer=make_offer("0.4")) == Negotiated(
        api_version="0.4",
        features=frozenset({"request_cancellation", "content_parts", "artifacts", "lifecycle_events"}),
        max_concurrent_requests=4,
        lifecycle_events=("turn/started",),
    )


@pytest.mark.parametrize("listed", [None, [], "absent"])
def test_negotiated_lifecycle_defaults_to_all_six(listed: Any) -> None:
    extra = {} if listed == "absent" else {"lifecycle_events": listed}
    result = make_result(features=("lifecycle_events",), **extra)
    assert negotiated_from(result, offer=make_offer("0.2")).lifecycle_events == limits.LIFECYCLE_EVENTS


def test_negotiated_lifecycle_keeps_known_names_once() -> None:
    events = ["tool/settled", "bogus", "tool/settled", 3, "turn/started"]
    result = make_result(features=("lifecycle_events",), lifecycle_events=events)
    assert negotiated_from(result, offer=make_offer("0.2")).lifecycle_events == ("tool/settled", "turn/started")


def test_negotiated_lifecycle_needs_the_feature() -> None:
    result = make_result(lifecycle_events=["turn/started"])
    assert negotiated_from(result, offer=make_offer("0.2")).lifecycle_events == ()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4, 4), (4.0, 4), (64, 64), (1000, 64), (0, None), (-3, None), (True, None), ("4", None), (2.5, None)],
)
def test_negotiated_max_concurrent(value: Any, expected: int | None) -> None:
    result = make_result(limits={"max_concurrent_requests": value})
    assert negotiated_from(result, offer=make_offer("0.2")).max_concurrent_requests == expected


def test_negotiated_max_concurrent_uncapped_without_offer_value() -> None:
    offer = Offer("0.2", "0.2", limits.REQUIRED_FEATURES, (), None)
    result = make_result(limits={"max_concurrent_requests": 1000})
    assert negotiated_from(result, offer=offer).max_concurrent_requests == 1000


# -- tools_from ---------------------------------------------------------------------------------------------


def test_tools_from_skips_malformed_and_keeps_the_first() -> None:
    schema = {"type": "object"}
    result = make_result(
        tools=[
            tool("a", output_schema=schema),
            "junk",
            {"description": "nameless"},
            {"name": 5},
            tool("b", output_schema=None),
            {"name": "a", "parameters": {"second": True}},
            {"name": "c"},
        ]
    )
    tools = tools_from(result)
    assert list(tools) == ["a", "b", "c"]
    assert tools["a"] == ToolInfo("a", tool("a")["parameters"], schema)
    assert tools["b"].output_schema is None
    assert tools["c"] == ToolInfo("c", None, None)


@pytest.mark.parametrize("result", [None, [], "x", {}, {"tools": None}, {"tools": {"a": {}}}])
def test_tools_from_garbage_is_empty(result: Any) -> None:
    assert tools_from(result) == {}


# -- robustness -------------------------------------------------------------------------------------------------

json_values = strategies.json_values(max_leaves=25)
apis = st.sampled_from(["0.1", "0.2", "0.4"])


def assert_only_findings(found: list[Finding]) -> None:
    assert all(isinstance(f, Exercise | Violation) for f in found)
    assert {f.requirement for f in found} <= ALL_IDS
    assert all(v.message for v in violations(found))


@given(result=json_values, api=apis)
def test_arbitrary_json_never_raises(result: Any, api: str) -> None:
    assert_only_findings(run(result, api))
    negotiated_from(result, offer=make_offer(api))
    tools_from(result)


# Arbitrary values in the places the rules read, so the deeper checks are reached.
tool_like = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["greet", "other"]) | json_values,
        "description": json_values,
        "parameters": json_values,
        "output_schema": json_values,
        "prompt_snippet": json_values,
        "prompt_guidelines": json_values,
    },
)
protocol_like = st.fixed_dictionaries(
    {},
    optional={
        "version": st.just("0.2") | json_values,
        "features": st.lists(st.sampled_from([*OPTIONAL, *limits.REQUIRED_FEATURES]) | json_values, max_size=6)
        | json_values,
        "limits": st.fixed_dictionaries({}, optional={"max_concurrent_requests": json_values}) | json_values,
        "lifecycle_events": st.lists(st.sampled_from(limits.LIFECYCLE_EVENTS) | json_values, max_size=4) | json_values,
    },
)
result_like = st.fixed_dictionaries(
    {},
    optional={
        "api_version": apis | json_values,
        "tools": st.lists(tool_like | json_values, max_size=3) | json_values,
        "commands": st.lists(st.fixed_dictionaries({"name": json_values}) | json_values, max_size=3) | json_values,
        "protocol": protocol_like | json_values,
    },
)


@settings(max_examples=300)
@given(result=result_like, api=apis)
def test_near_miss_results_never_raise(result: dict[str, Any], api: str) -> None:
    assert_only_findings(run(result, api))
    negotiated = negotiated_from(result, offer=make_offer(api))
    assert all(isinstance(name, str) for name in negotiated.features)
    assert all(isinstance(name, str) for name in tools_from(result))


# -- EXT-2.26-resource-descriptor-features ---------------------------------------------------------

RESOURCE_FEATURES = ("resource_refs_v1", "operation_descriptors_v1")
CIRCUIT_INPUT = {"path": "/circuit", "type": "Circuit", "access": "exclusive"}


def operation(**resources: Any) -> dict[str, Any]:
    return {"id": "simulate", **resources}


def offer_04(*extra: str) -> Offer:
    return make_offer("0.4", optional=("request_progress", *extra))


@pytest.mark.parametrize(
    ("features", "op"),
    [
        (RESOURCE_FEATURES, operation(resource_inputs=[CIRCUIT_INPUT])),
        (RESOURCE_FEATURES, operation(resource_outputs=[{"path": "/out", "type": "Circuit"}])),
        ((), operation()),  # no resources: not resource-bearing
        ((), operation(resource_inputs=[], resource_outputs=[])),
        (("operation_descriptors_v1",), operation(resource_inputs=[])),
    ],
)
def test_resource_descriptor_with_its_features(features: tuple[str, ...], op: dict[str, Any]) -> None:
    result = make_result("0.4", tools=[tool(operation=op)], features=features)
    assert_clean(run(result, "0.4", offer=offer_04(*RESOURCE_FEATURES)), RESOURCE_DESCRIPTORS)


@pytest.mark.parametrize("features", [(), ("resource_refs_v1",), ("operation_descriptors_v1",)])
def test_resource_bearing_descriptor_needs_both_features(features: tuple[str, ...]) -> None:
    op = operation(resource_inputs=[CIRCUIT_INPUT])
    result = make_result("0.4", tools=[tool(operation=op)], features=features)
    broken = assert_only(run(result, "0.4", offer=offer_04(*RESOURCE_FEATURES)), RESOURCE_DESCRIPTORS)
    assert broken[0].path == ("tools", 0, "operation", "resource_inputs")
    assert "needs resource_refs_v1 and operation_descriptors_v1" in broken[0].message
