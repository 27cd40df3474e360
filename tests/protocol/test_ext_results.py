"""Result validators for §1.2-§1.7 (ext_results).

Every rule gets a valid example (rule exercised, no violation of its id) and
invalid examples that break that rule alone; every bound is tried at N-1, N
and N+1.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ext_results as er
from conformance.protocol import limits
from conformance.protocol.ext_types import Negotiated, ToolInfo
from conformance.protocol.json_measure import depth, encoded_size, node_count
from conformance.protocol.violations import Exercise, Finding, Violation

BASE = frozenset({"request_cancellation", "content_parts"})
NEG_01 = Negotiated("0.1")
NEG_02 = Negotiated("0.2", BASE)
NEG_04 = Negotiated("0.4", BASE)
NEG_ART = Negotiated("0.2", BASE | {"artifacts"})

SCHEMA = {
    "type": "object",
    "properties": {
        "sources": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}}
    },
    "required": ["sources"],
}
TOOL_PLAIN = ToolInfo("git_status", {"type": "object"})
TOOL_SCHEMA = ToolInfo("search", {"type": "object"}, SCHEMA)
TOOL_ANY_OBJECT = ToolInfo("dump", {"type": "object"}, {"type": "object"})

TEXT = {"type": "text", "text": "Found 3 sources."}
IMAGE = {"type": "image", "artifact_id": "artifact-opaque-id", "mime_type": "image/png", "alt": "preview"}
AUDIO = {"type": "audio", "artifact_id": "artifact-2", "mime_type": "audio/wav", "transcript": "hello"}

RESULT_01 = {"content": "branch=main\nstate=clean", "is_error": False}
RESULT_02 = {"content": [TEXT], "is_error": False, "metadata": {"cache": "miss"}}
RESULT_SCHEMA = {
    "content": [TEXT],
    "structured_content": {"sources": [{"title": "Example", "url": "https://example.com"}]},
    "is_error": False,
    "metadata": {"cache": "miss"},
}


def violations(findings: Iterable[Finding]) -> list[Violation]:
    return [f for f in findings if isinstance(f, Violation)]


def violated(findings: Iterable[Finding]) -> set[str]:
    return {v.requirement for v in violations(findings)}


def exercised(findings: Iterable[Finding]) -> set[str]:
    return {f.requirement for f in findings if isinstance(f, Exercise)}


def tool_findings(result: Any, negotiated: Negotiated = NEG_02, tool: ToolInfo | None = TOOL_PLAIN) -> list[Finding]:
    return list(er.check_tool_result(result, negotiated=negotiated, tool=tool))


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def without(base: dict[str, Any], key: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    del out[key]
    return out


# -- valid examples ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "negotiated", "tool"),
    [
        (RESULT_01, NEG_01, TOOL_PLAIN),
        ({"content": "x"}, NEG_01, TOOL_PLAIN),
        ({"content": "x", "is_error": True, "metadata": [1, {"any": "json"}]}, NEG_01, TOOL_PLAIN),
        ({"content": "x", "is_error": None}, NEG_01, None),
        (RESULT_02, NEG_02, TOOL_PLAIN),
        (RESULT_02, NEG_04, TOOL_PLAIN),
        (RESULT_SCHEMA, NEG_02, TOOL_SCHEMA),
        ({"content": [TEXT], "is_error": True}, NEG_02, TOOL_SCHEMA),  # error results are exempt
        ({"content": [TEXT], "structured_content": None}, NEG_02, TOOL_PLAIN),  # null counts as absent
        ({"content": [TEXT, {"type": "text", "text": ""}], "extra": 1}, NEG_02, TOOL_PLAIN),
        ({"content": [{"type": "text", "text": "x", "annotations": {}}]}, NEG_02, None),
        ({"content": [TEXT], "structured_content": {"free": "form"}}, NEG_02, None),  # unknown tool
    ],
)
def test_valid_tool_results(result: Any, negotiated: Negotiated, tool: ToolInfo | None) -> None:
    findings = tool_findings(result, negotiated, tool)
    assert violations(findings) == []
    assert findings and all(isinstance(f, Exercise) for f in findings)


def test_api_01_exercises_only_its_own_rule() -> None:
    assert exercised(tool_findings(RESULT_01, NEG_01)) == {"EXT-1.2-result-0.1"}


def test_api_02_exercises_every_applicable_rule() -> None:
    assert exercised(tool_findings(RESULT_SCHEMA, NEG_02, TOOL_SCHEMA)) == {
        "EXT-1.2-content-parts",
        "EXT-1.2-content-part-count",
        "EXT-1.2-content-part-shape",
        "EXT-1.2-media-needs-artifact",
        "EXT-1.2-is-error-bool",
        "EXT-1.2-structured-required",
        "EXT-1.2-structured-valid",
        "EXT-1.2-structured-content-bounds",
        "EXT-1.2-metadata-bounds",
    }
    assert "EXT-1.2-structured-forbidden" in exercised(tool_findings(RESULT_02, NEG_02, TOOL_PLAIN))


def test_unknown_tool_skips_schema_rules() -> None:
    found = exercised(tool_findings(RESULT_SCHEMA, NEG_02, None))
    assert not found & {"EXT-1.2-structured-required", "EXT-1.2-structured-forbidden", "EXT-1.2-structured-valid"}
    assert "EXT-1.2-structured-content-bounds" in found


# -- each rule broken alone --------------------------------------------------------

INVALID_TOOL_RESULTS: list[tuple[str, Any, Negotiated, ToolInfo | None]] = [
    # API 0.1
    ("EXT-1.2-result-0.1", [RESULT_01], NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", None, NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", {"is_error": False}, NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", {"content": [TEXT]}, NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", {"content": None}, NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", {"content": "x", "is_error": "false"}, NEG_01, TOOL_PLAIN),
    ("EXT-1.2-result-0.1", {"content": "x", "is_error": 0}, NEG_01, TOOL_PLAIN),
    # API 0.2: content array
    ("EXT-1.2-content-parts", "text", NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-parts", {"is_error": False}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-parts", {"content": "a string, as in API 0.1"}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-parts", {"content": []}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-parts", {"content": None}, NEG_04, TOOL_PLAIN),
    ("EXT-1.2-content-part-count", {"content": [TEXT] * (limits.MAX_CONTENT_PARTS + 1)}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [TEXT, "plain"]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [TEXT, {"text": "no type"}]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [TEXT, {"type": "video", "url": "x"}]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [TEXT, {"type": 3}]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [{"type": "text"}]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [{"type": "text", "text": None}]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-content-part-shape", {"content": [{"type": "text", "text": ["x"]}]}, NEG_02, TOOL_PLAIN),
    # media
    ("EXT-1.2-media-needs-artifact", {"content": [TEXT, IMAGE]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-media-needs-artifact", {"content": [TEXT, AUDIO]}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-media-needs-artifact", {"content": [TEXT, IMAGE]}, NEG_ART, TOOL_PLAIN),
    ("EXT-1.2-media-needs-artifact", {"content": [TEXT, AUDIO]}, NEG_ART, TOOL_PLAIN),
    # is_error
    ("EXT-1.2-is-error-bool", {"content": [TEXT], "is_error": "false"}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-is-error-bool", {"content": [TEXT], "is_error": 1}, NEG_04, TOOL_PLAIN),
    # structured content
    ("EXT-1.2-structured-required", {"content": [TEXT]}, NEG_02, TOOL_SCHEMA),
    ("EXT-1.2-structured-required", {"content": [TEXT], "is_error": False}, NEG_02, TOOL_SCHEMA),
    ("EXT-1.2-structured-required", {"content": [TEXT], "structured_content": None}, NEG_02, TOOL_SCHEMA),
    ("EXT-1.2-structured-forbidden", {"content": [TEXT], "structured_content": {"a": 1}}, NEG_02, TOOL_PLAIN),
    ("EXT-1.2-structured-forbidden", {"content": [TEXT], "structured_content": 0}, NEG_02, TOOL_PLAIN),
    (
        "EXT-1.2-structured-forbidden",
        {"content": [TEXT], "structured_content": {}, "is_error": True},
        NEG_02,
        TOOL_PLAIN,
    ),
    ("EXT-1.2-structured-valid", {"content": [TEXT], "structured_content": {}}, NEG_02, TOOL_SCHEMA),
    ("EXT-1.2-structured-valid", {"content": [TEXT], "structured_content": []}, NEG_02, TOOL_SCHEMA),
    (
        "EXT-1.2-structured-valid",
        {"content": [TEXT], "structured_content": {"sources": [{"url": 5}]}},
        NEG_04,
        TOOL_SCHEMA,
    ),
    # metadata (bounds proper are below)
    ("EXT-1.2-metadata-bounds", {"content": [TEXT], "metadata": {"k" * 257: 1}}, NEG_02, TOOL_PLAIN),
]


@pytest.mark.parametrize(("requirement", "result", "negotiated", "tool"), INVALID_TOOL_RESULTS)
def test_invalid_tool_results_break_exactly_one_rule(
    requirement: str, result: Any, negotiated: Negotiated, tool: ToolInfo | None
) -> None:
    findings = tool_findings(result, negotiated, tool)
    assert violated(findings) == {requirement}
    assert requirement in exercised(findings)
    for violation in violations(findings):
        assert violation.message  # every violation says what broke


def test_no_text_part_is_reported_even_when_parts_are_media() -> None:
    findings = tool_findings({"content": [IMAGE]}, NEG_ART)
    assert violated(findings) == {"EXT-1.2-content-parts", "EXT-1.2-media-needs-artifact"}
    [violation] = [v for v in violations(findings) if v.requirement == "EXT-1.2-content-parts"]
    assert "text part" in violation.message


def test_malformed_text_part_still_counts_as_the_text_part() -> None:
    assert violated(tool_findings({"content": [{"type": "text", "text": 1}]})) == {"EXT-1.2-content-part-shape"}


def test_shape_messages_name_field_and_value() -> None:
    result = {
        "content": [
            TEXT,
            {"type": "image", "mime_type": "image/png"},
            {"type": "audio", "artifact_id": 7, "mime_type": "audio/wav", "transcript": False},
            {"type": "image", "artifact_id": "a", "mime_type": "image/png", "alt": 3},
            {"type": "gif"},
        ]
    }
    shape = [v for v in violations(tool_findings(result, NEG_ART)) if v.requirement == "EXT-1.2-content-part-shape"]
    assert [(v.path, v.message) for v in shape] == [
        (("content", 1), "result.content[1] has no artifact_id; expected a string"),
        (("content", 2, "artifact_id"), "result.content[2].artifact_id is an integer; expected a string"),
        (("content", 2, "transcript"), "result.content[2].transcript is a boolean; expected a string"),
        (("content", 3, "alt"), "result.content[3].alt is an integer; expected a string"),
        (("content", 4, "type"), "result.content[4].type is 'gif'; expected one of text, image, audio"),
    ]


def test_optional_media_members_may_be_null_or_absent() -> None:
    image = {"type": "image", "artifact_id": "a", "mime_type": "image/png", "alt": None}
    audio = {"type": "audio", "artifact_id": "b", "mime_type": "audio/ogg"}
    assert "EXT-1.2-content-part-shape" not in violated(tool_findings({"content": [TEXT, image, audio]}, NEG_ART))


def test_media_messages() -> None:
    [absent] = violations(tool_findings({"content": [TEXT, IMAGE]}, NEG_02))
    assert "artifacts not negotiated" in absent.message
    assert absent.path == ("content", 1)
    [never] = violations(tool_findings({"content": [TEXT, AUDIO]}, NEG_ART))
    assert "artifact id 'artifact-2' was never issued by the host" in never.message
    assert never.path == ("content", 1, "artifact_id")


def test_every_media_part_is_reported() -> None:
    media = [v for v in violations(tool_findings({"content": [IMAGE, TEXT, AUDIO, IMAGE]}, NEG_ART))]
    assert [v.path[:2] for v in media] == [("content", 0), ("content", 2), ("content", 3)]


def test_structured_valid_reports_each_error_with_its_path() -> None:
    result = {"content": [TEXT], "structured_content": {"sources": [{"url": "ok"}, {"url": 1}, {"url": None}]}}
    found = violations(tool_findings(result, NEG_02, TOOL_SCHEMA))
    assert sorted(v.path for v in found) == [
        ("structured_content", "sources", 1, "url"),
        ("structured_content", "sources", 2, "url"),
    ]
    assert all("output_schema" in v.message and "'search'" in v.message for v in found)


def test_error_results_are_not_validated_against_the_schema() -> None:
    result = {"content": [TEXT], "structured_content": {"wrong": True}, "is_error": True}
    findings = tool_findings(result, NEG_02, TOOL_SCHEMA)
    assert violations(findings) == []
    assert "EXT-1.2-structured-valid" not in exercised(findings)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": 5},  # not a valid schema
        {"minimum": "three"},
        "not a schema",
        {"$schema": 7, "type": "object"},
    ],
)
def test_invalid_output_schema_skips_validation(schema: Any) -> None:
    tool = ToolInfo("bad", {"type": "object"}, schema)
    findings = tool_findings({"content": [TEXT], "structured_content": {"x": 1}}, NEG_02, tool)
    assert violations(findings) == []
    assert "EXT-1.2-structured-valid" not in exercised(findings)


def test_schema_jsonschema_cannot_evaluate_does_not_raise() -> None:
    tool = ToolInfo("ref", {"type": "object"}, {"$ref": "https://example.invalid/nowhere.json"})
    findings = tool_findings({"content": [TEXT], "structured_content": {"x": 1}}, NEG_02, tool)
    assert violated(findings) <= {"EXT-1.2-structured-valid"}


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        # Tuple-form items (draft 7 and earlier): checked position by position.
        ({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}, ["a", 1], ["a", "b"]),
        # Boolean exclusiveMinimum (draft 4): the minimum itself is excluded.
        ({"type": "number", "minimum": 5, "exclusiveMinimum": True}, 6, 5),
    ],
)
def test_schema_without_dollar_schema_is_judged_by_a_draft_that_accepts_it(schema: Any, good: Any, bad: Any) -> None:
    # §1.1 names no draft: a schema valid in some supported draft is read in it.
    tool = ToolInfo("older", {"type": "object"}, schema)
    assert violated(tool_findings({"content": [TEXT], "structured_content": good}, NEG_02, tool)) == set()
    assert violated(tool_findings({"content": [TEXT], "structured_content": bad}, NEG_02, tool)) == {
        "EXT-1.2-structured-valid"
    }


def test_schema_draft_follows_dollar_schema() -> None:
    # draft-04 spells exclusiveMinimum as a boolean next to minimum
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5, "exclusiveMinimum": True}
    tool = ToolInfo("d4", {"type": "object"}, schema)
    assert violated(tool_findings({"content": [TEXT], "structured_content": 5}, NEG_02, tool)) == {
        "EXT-1.2-structured-valid"
    }
    assert violated(tool_findings({"content": [TEXT], "structured_content": 6}, NEG_02, tool)) == set()


# -- bounds at N-1, N, N+1 ----------------------------------------------------------


def sized_object(size: int) -> dict[str, str]:
    value = {"a": "x" * (size - len('{"a":""}'))}
    assert encoded_size(value) == size
    return value


def nested_object(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels - 1):
        value = {"a": value}
    assert depth(value) == levels
    return value


def counted(nodes: int) -> dict[str, list[int]]:
    value = {"a": [0] * (nodes - 2)}
    assert node_count(value) == nodes
    return value


def bound_ids(result: Any) -> list[Violation]:
    return violations(tool_findings(result, NEG_02, None))


@pytest.mark.parametrize(
    "parts", [limits.MAX_CONTENT_PARTS - 1, limits.MAX_CONTENT_PARTS, limits.MAX_CONTENT_PARTS + 1]
)
def test_content_part_count_bound(parts: int) -> None:
    found = violations(tool_findings({"content": [TEXT] * parts}))
    if parts <= limits.MAX_CONTENT_PARTS:
        assert found == []
    else:
        assert [(v.requirement, v.message, v.path) for v in found] == [
            ("EXT-1.2-content-part-count", "content has 257 parts; limit 256", ("content",))
        ]


BYTES = limits.MAX_STRUCTURED_CONTENT_BYTES
META_BYTES = limits.MAX_METADATA_BYTES
LEVELS = limits.MAX_JSON_DEPTH
NODES = limits.MAX_JSON_NODES


@pytest.mark.parametrize("size", [BYTES - 1, BYTES, BYTES + 1])
def test_structured_content_byte_bound(size: int) -> None:
    found = bound_ids({"content": [TEXT], "structured_content": sized_object(size)})
    if size <= BYTES:
        assert found == []
    else:
        assert [(v.requirement, v.message) for v in found] == [
            ("EXT-1.2-structured-content-bounds", "structured_content is 262,145 bytes encoded; limit 262,144")
        ]


@pytest.mark.parametrize("levels", [LEVELS - 1, LEVELS, LEVELS + 1])
def test_structured_content_depth_bound(levels: int) -> None:
    found = bound_ids({"content": [TEXT], "structured_content": nested_object(levels)})
    if levels <= LEVELS:
        assert found == []
    else:
        assert [(v.requirement, v.message) for v in found] == [
            ("EXT-1.2-structured-content-bounds", "structured_content is nested 33 levels deep; limit 32")
        ]


@pytest.mark.parametrize("nodes", [NODES - 1, NODES, NODES + 1])
def test_structured_content_node_bound(nodes: int) -> None:
    found = bound_ids({"content": [TEXT], "structured_content": counted(nodes)})
    if nodes <= NODES:
        assert found == []
    else:
        assert [(v.requirement, v.message) for v in found] == [
            ("EXT-1.2-structured-content-bounds", "structured_content has 16,385 nodes; limit 16,384")
        ]


@pytest.mark.parametrize("size", [META_BYTES - 1, META_BYTES, META_BYTES + 1])
def test_metadata_byte_bound(size: int) -> None:
    found = bound_ids({"content": [TEXT], "metadata": sized_object(size)})
    if size <= META_BYTES:
        assert found == []
    else:
        assert [(v.requirement, v.message, v.path) for v in found] == [
            ("EXT-1.2-metadata-bounds", "metadata is 65,537 bytes encoded; limit 65,536", ("metadata",))
        ]


@pytest.mark.parametrize("levels", [LEVELS - 1, LEVELS, LEVELS + 1])
def test_metadata_depth_bound(levels: int) -> None:
    found = bound_ids({"content": [TEXT], "metadata": nested_object(levels)})
    if levels <= LEVELS:
        assert found == []
    else:
        assert [(v.requirement, v.message) for v in found] == [
            ("EXT-1.2-metadata-bounds", "metadata is nested 33 levels deep; limit 32")
        ]


@pytest.mark.parametrize("nodes", [NODES - 1, NODES, NODES + 1])
def test_metadata_node_bound(nodes: int) -> None:
    found = bound_ids({"content": [TEXT], "metadata": counted(nodes)})
    if nodes <= NODES:
        assert found == []
    else:
        assert [(v.requirement, v.message) for v in found] == [
            ("EXT-1.2-metadata-bounds", "metadata has 16,385 nodes; limit 16,384")
        ]


KEY = limits.MAX_METADATA_KEY_BYTES


@pytest.mark.parametrize("length", [KEY - 1, KEY, KEY + 1])
def test_metadata_key_bound_at_every_depth(length: int) -> None:
    key = "k" * length
    found = bound_ids({"content": [TEXT], "metadata": {"outer": [{"ok": 1, key: {key: 2}}]}})
    if length <= KEY:
        assert found == []
    else:
        assert [(v.requirement, v.path) for v in found] == [
            ("EXT-1.2-metadata-bounds", ("metadata", "outer", 0, key)),
            ("EXT-1.2-metadata-bounds", ("metadata", "outer", 0, key, key)),
        ]
        assert all("is 257 bytes in UTF-8; limit 256" in v.message for v in found)
        assert all(len(v.message) < 400 for v in found)  # the key is quoted short


@pytest.mark.parametrize(("key", "flagged"), [("é" * 128, False), ("é" * 128 + "a", True), ("€" * 86, True)])
def test_metadata_key_bound_counts_utf8_bytes(key: str, flagged: bool) -> None:
    found = bound_ids({"content": [TEXT], "metadata": {key: None}})
    assert bool(found) == flagged


def test_structured_content_bounds_apply_without_a_known_tool_and_on_error_results() -> None:
    result = {"content": [TEXT], "structured_content": nested_object(LEVELS + 1), "is_error": True}
    assert violated(tool_findings(result, NEG_02, None)) == {"EXT-1.2-structured-content-bounds"}


def test_very_deep_values_are_measured_not_crashed_on() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    tool = ToolInfo("s", {"type": "object"}, {"type": "string"})
    result = {"content": [TEXT], "structured_content": deep, "metadata": deep}
    found = violations(tool_findings(result, NEG_02, tool))
    messages = {v.message for v in found}
    assert "structured_content is nested 100,001 levels deep; limit 32" in messages
    assert "metadata is nested 100,001 levels deep; limit 32" in messages


def test_bounds_are_not_applied_to_api_01_metadata() -> None:
    result = {"content": "x", "metadata": nested_object(LEVELS + 1)}
    assert violations(tool_findings(result, NEG_01)) == []


# -- §1.3 - §1.7 ----------------------------------------------------------------------

COMMAND_OK = {
    "text": "Checkpoint preview · release-v2\nmain · clean",
    "notifications": [{"level": "info", "title": "Read-only checkpoint", "message": "No mutation."}],
    "context": [],
}
HOOK_OK = {
    "disposition": {"action": "continue"},
    "context": [{"label": "local-model-workflow", "content": "active", "placement": "system_suffix"}],
    "notifications": [],
}
CONTEXT_OK = [{"label": "hello-world", "content": "The extension is active.", "placement": "system_suffix"}]
STATUS_OK = {"surface": "status", "text": "hello", "style_role": "extension.hello_world.status", "priority": 0}
RENDER_OK = {
    "segments": [
        {"text": "git · clean", "style_role": "extension.git_tools.clean"},
        {"text": "\n", "style_role": None},
    ]
}

Check = Callable[[object], Iterator[Finding]]
CHECKS: dict[str, Check] = {
    "EXT-1.3-command-result": er.check_command_result,
    "EXT-1.4-hook-result": er.check_hook_result,
    "EXT-1.5-context-result": er.check_context_result,
    "EXT-1.6-status-result": er.check_status_result,
    "EXT-1.7-render-result": er.check_render_result,
}

VALID: list[tuple[str, Any]] = [
    ("EXT-1.3-command-result", COMMAND_OK),
    ("EXT-1.3-command-result", {}),
    ("EXT-1.3-command-result", {"text": "x", "future_field": [1]}),
    ("EXT-1.3-command-result", {"notifications": [{"message": "m"}], "context": [{"label": "l", "content": "c"}]}),
    ("EXT-1.3-command-result", {"text": None, "notifications": None, "context": None}),
    ("EXT-1.3-command-result", {"notifications": [{"message": "m", "level": None, "title": None}]}),
    ("EXT-1.4-hook-result", HOOK_OK),
    ("EXT-1.4-hook-result", {}),
    ("EXT-1.4-hook-result", {"disposition": {"action": "deny", "reason": "blocked"}}),
    ("EXT-1.4-hook-result", {"disposition": None, "notifications": [{"level": "error", "message": "m"}]}),
    (
        "EXT-1.4-hook-result",
        {"disposition": {"action": "continue"}, "notifications": [], "session_operation": {"action": "continue"}},
    ),
    ("EXT-1.5-context-result", CONTEXT_OK),
    ("EXT-1.5-context-result", []),
    ("EXT-1.5-context-result", [{"label": "l", "content": ""}]),
    ("EXT-1.5-context-result", [{"label": "l", "content": "c", "placement": p} for p in limits.CONTEXT_PLACEMENTS]),
    ("EXT-1.6-status-result", STATUS_OK),
    ("EXT-1.6-status-result", None),
    ("EXT-1.6-status-result", {"surface": "footer", "text": ""}),
    ("EXT-1.6-status-result", {"surface": "header", "text": "t", "style_role": None, "priority": -3}),
    ("EXT-1.6-status-result", {"surface": "status", "text": "t", "priority": 10.0}),
    ("EXT-1.7-render-result", RENDER_OK),
    ("EXT-1.7-render-result", {"segments": []}),
    ("EXT-1.7-render-result", {"segments": [{"text": "no role"}], "extra": True}),
]


@pytest.mark.parametrize(("requirement", "result"), VALID)
def test_valid_other_results(requirement: str, result: Any) -> None:
    findings = list(CHECKS[requirement](result))
    assert findings == [Exercise(requirement)]


INVALID: list[tuple[str, Any, str]] = [
    # command/execute
    ("EXT-1.3-command-result", None, "result is null; expected an object"),
    ("EXT-1.3-command-result", "done", "result is a string; expected an object"),
    ("EXT-1.3-command-result", {"text": 5}, "result.text is an integer; expected a string"),
    ("EXT-1.3-command-result", {"notifications": {}}, "result.notifications is an object; expected an array"),
    ("EXT-1.3-command-result", {"notifications": ["hi"]}, "result.notifications[0] is a string; expected an object"),
    ("EXT-1.3-command-result", {"notifications": [{}]}, "result.notifications[0] has no message; expected a string"),
    (
        "EXT-1.3-command-result",
        {"notifications": [{"message": "m", "level": "debug"}]},
        "result.notifications[0].level is 'debug'; expected one of info, success, warning, error",
    ),
    (
        "EXT-1.3-command-result",
        {"notifications": [{"message": "m", "title": 1}]},
        "result.notifications[0].title is an integer; expected a string",
    ),
    ("EXT-1.3-command-result", {"context": "x"}, "result.context is a string; expected an array"),
    ("EXT-1.3-command-result", {"context": [{"label": "l"}]}, "result.context[0] has no content; expected a string"),
    # hook/run
    ("EXT-1.4-hook-result", [], "result is an array; expected an object"),
    ("EXT-1.4-hook-result", {"disposition": "continue"}, "result.disposition is a string; expected an object"),
    ("EXT-1.4-hook-result", {"disposition": {}}, "result.disposition has no action; expected one of continue, deny"),
    (
        "EXT-1.4-hook-result",
        {"disposition": {"action": "cancel"}},
        "result.disposition.action is 'cancel'; expected one of continue, deny",
    ),
    ("EXT-1.4-hook-result", {"disposition": {"action": "deny"}}, "result.disposition has no reason; expected a string"),
    (
        "EXT-1.4-hook-result",
        {"disposition": {"action": "deny", "reason": ["r"]}},
        "result.disposition.reason is an array; expected a string",
    ),
    (
        "EXT-1.4-hook-result",
        {"context": [{"label": "l", "content": "c", "placement": "system"}]},
        "result.context[0].placement is 'system'; expected one of system_prefix, system_suffix, prompt_prefix,"
        " prompt_suffix",
    ),
    (
        "EXT-1.4-hook-result",
        {"notifications": [{"message": 3}]},
        "result.notifications[0].message is an integer; expected a string",
    ),
    # context/collect
    ("EXT-1.5-context-result", None, "result is null; expected an array of context contributions"),
    ("EXT-1.5-context-result", CONTEXT_OK[0], "result is an object; expected an array of context contributions"),
    ("EXT-1.5-context-result", [None], "result[0] is null; expected an object"),
    ("EXT-1.5-context-result", [{"content": "c"}], "result[0] has no label; expected a string"),
    ("EXT-1.5-context-result", [{"label": "l", "content": 2}], "result[0].content is an integer; expected a string"),
    (
        "EXT-1.5-context-result",
        [{"label": "l", "content": "c", "placement": 1}],
        "result[0].placement is an integer; expected one of system_prefix, system_suffix, prompt_prefix, prompt_suffix",
    ),
    # status/collect
    ("EXT-1.6-status-result", "hello", "result is a string; expected null or a status contribution object"),
    ("EXT-1.6-status-result", {"text": "t"}, "result has no surface; expected one of status, header, footer"),
    (
        "EXT-1.6-status-result",
        {"surface": "sidebar", "text": "t"},
        "result.surface is 'sidebar'; expected one of status, header, footer",
    ),
    ("EXT-1.6-status-result", {"surface": "status"}, "result has no text; expected a string"),
    ("EXT-1.6-status-result", {"surface": "status", "text": None}, "result.text is null; expected a string"),
    (
        "EXT-1.6-status-result",
        {"surface": "status", "text": "t", "style_role": 1},
        "result.style_role is an integer; expected a string or null",
    ),
    (
        "EXT-1.6-status-result",
        {"surface": "status", "text": "t", "priority": "high"},
        "result.priority is a string; expected an integer",
    ),
    (
        "EXT-1.6-status-result",
        {"surface": "status", "text": "t", "priority": 0.5},
        "result.priority is 0.5; expected an integer",
    ),
    (
        "EXT-1.6-status-result",
        {"surface": "status", "text": "t", "priority": True},
        "result.priority is a boolean; expected an integer",
    ),
    # tool/render
    ("EXT-1.7-render-result", [], "result is an array; expected an object"),
    ("EXT-1.7-render-result", {}, "result has no segments; expected an array"),
    ("EXT-1.7-render-result", {"segments": "text"}, "result.segments is a string; expected an array"),
    ("EXT-1.7-render-result", {"segments": [1]}, "result.segments[0] is an integer; expected an object"),
    (
        "EXT-1.7-render-result",
        {"segments": [{"style_role": None}]},
        "result.segments[0] has no text; expected a string",
    ),
    (
        "EXT-1.7-render-result",
        {"segments": [{"text": "t", "style_role": {}}]},
        "result.segments[0].style_role is an object; expected a string or null",
    ),
]


@pytest.mark.parametrize(("requirement", "result", "message"), INVALID)
def test_invalid_other_results(requirement: str, result: Any, message: str) -> None:
    findings = list(CHECKS[requirement](result))
    assert findings[0] == Exercise(requirement)
    assert [(v.requirement, v.message) for v in violations(findings)] == [(requirement, message)]


def test_other_result_paths_are_relative_to_result() -> None:
    [v] = violations(er.check_hook_result({"context": [{"label": "l", "content": 1}]}))
    assert v.path == ("context", 0, "content")
    [v] = violations(er.check_context_result([{"label": "l", "content": "c"}, {"label": 2, "content": "c"}]))
    assert v.path == (1, "label")


# -- EXT-1.4b-result-envelope (model-turn hooks) -------------------------------------

TURN_ENVELOPE = "EXT-1.4b-result-envelope"
TURN_CONTINUE = {
    "disposition": {"action": "continue"},
    "notifications": [],
    "session_operation": {"action": "continue"},
}


@pytest.mark.parametrize("hook", limits.MODEL_TURN_HOOKS)
@pytest.mark.parametrize(
    "result",
    [
        TURN_CONTINUE,
        {},
        {"disposition": {"action": "continue"}},
        {"session_operation": None, "context": [], "notifications": [{"level": "info", "message": "turn"}]},
        {"disposition": None, "context": None, "session_operation": {"action": "continue", "note": 1}},
    ],
)
def test_model_turn_result_valid(hook: str, result: Any) -> None:
    findings = list(er.check_hook_result(result, hook=hook))
    assert {Exercise("EXT-1.4-hook-result"), Exercise(TURN_ENVELOPE)} <= set(findings)
    assert violations(findings) == []


@pytest.mark.parametrize(
    ("result", "path", "message"),
    [
        (
            {"disposition": {"action": "deny", "reason": "no"}},
            ("disposition", "action"),
            "model_turn_end answered with disposition deny; a model-turn observation cannot deny",
        ),
        (
            {"context": CONTEXT_OK},
            ("context",),
            "model_turn_end answered with 1 prompt-context contributions; a model-turn answer has none",
        ),
        (
            {"session_operation": {"action": "cancel"}},
            ("session_operation", "action"),
            "result.session_operation.action of model_turn_end is 'cancel'; a model-turn answer may only continue",
        ),
        (
            {"session_operation": {"action": "replace_compaction", "summary": "s"}},
            ("session_operation", "action"),
            "result.session_operation.action of model_turn_end is 'replace_compaction'; "
            "a model-turn answer may only continue",
        ),
        (
            {"session_operation": {}},
            ("session_operation", "action"),
            "result.session_operation.action of model_turn_end is absent; a model-turn answer may only continue",
        ),
        (
            {"session_operation": "continue"},
            ("session_operation",),
            "result.session_operation is a string; expected an object",
        ),
    ],
)
def test_model_turn_result_invalid(result: Any, path: tuple[Any, ...], message: str) -> None:
    broken = violations(list(er.check_hook_result(result, hook="model_turn_end")))
    assert [(v.requirement, v.path, v.message) for v in broken] == [(TURN_ENVELOPE, path, message)]


@pytest.mark.parametrize("hook", [None, "before_prompt", "session_compact", 7])
def test_model_turn_rules_only_for_model_turn_hooks(hook: Any) -> None:
    findings = list(er.check_hook_result({"disposition": {"action": "deny", "reason": "no"}}, hook=hook))
    assert Exercise(TURN_ENVELOPE) not in findings
    assert violations(findings) == []


# -- never raises, whatever JSON arrives --------------------------------------------

json_values = strategies.json_values(
    max_leaves=40,
    keys=[
        "type",
        "text",
        "image",
        "audio",
        "content",
        "is_error",
        "structured_content",
        "metadata",
        "artifact_id",
        "mime_type",
        "segments",
        "surface",
        "disposition",
        "action",
        "deny",
        "session_operation",
        "cancel",
        "notifications",
        "context",
        "label",
        "placement",
        "message",
        "level",
    ],
)
negotiations = st.sampled_from([NEG_01, NEG_02, NEG_04, NEG_ART])
tools = st.sampled_from([None, TOOL_PLAIN, TOOL_SCHEMA, TOOL_ANY_OBJECT, ToolInfo("odd", {}, {"type": 5})])

KNOWN_IDS = {
    "EXT-1.4b-result-envelope",
    "EXT-1.2-result-0.1",
    "EXT-1.2-content-parts",
    "EXT-1.2-content-part-count",
    "EXT-1.2-content-part-shape",
    "EXT-1.2-media-needs-artifact",
    "EXT-1.2-media-kind-match",
    "EXT-1.2-media-aggregate",
    "EXT-1.2-is-error-bool",
    "EXT-1.2-structured-required",
    "EXT-1.2-structured-forbidden",
    "EXT-1.2-structured-valid",
    "EXT-1.2-structured-content-bounds",
    "EXT-1.2-metadata-bounds",
    *CHECKS,
}


def assert_well_formed(findings: list[Finding]) -> None:
    assert findings and isinstance(findings[0], Exercise)
    for finding in findings:
        assert isinstance(finding, Exercise | Violation)
        assert finding.requirement in KNOWN_IDS
        if isinstance(finding, Violation):
            assert isinstance(finding.message, str) and finding.message
            assert isinstance(finding.path, tuple)
            assert finding.requirement in exercised(findings)


@given(result=json_values, negotiated=negotiations, tool=tools)
def test_tool_result_never_raises(result: Any, negotiated: Negotiated, tool: ToolInfo | None) -> None:
    assert_well_formed(tool_findings(result, negotiated, tool))


@given(
    result=st.fixed_dictionaries(
        {"content": st.lists(json_values | st.just(TEXT), max_size=4)},
        optional={"is_error": json_values, "structured_content": json_values, "metadata": json_values},
    ),
    negotiated=negotiations,
    tool=tools,
)
def test_tool_result_like_values_never_raise(result: Any, negotiated: Negotiated, tool: ToolInfo | None) -> None:
    assert_well_formed(tool_findings(result, negotiated, tool))


@pytest.mark.parametrize("requirement", sorted(CHECKS))
@given(result=json_values)
def test_other_results_never_raise(requirement: str, result: Any) -> None:
    assert_well_formed(list(CHECKS[requirement](result)))


@given(result=json_values)
def test_model_turn_results_never_raise(result: Any) -> None:
    assert_well_formed(list(er.check_hook_result(result, hook="model_turn_start")))
