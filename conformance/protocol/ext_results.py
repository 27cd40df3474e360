"""Validators for the results an extension returns to host requests (§1.2-§1.7).

Sans-IO and stateless: each ``check_*`` takes the ``result`` member of one
response (plus what was negotiated, where the rules depend on it) and yields
:class:`Exercise` / :class:`Violation` findings. One small function per
requirement, in the jsonschema style; none raises on any JSON value. Paths are
relative to ``result``; the session prefixes them.

Decisions where the document leaves room. The rule throughout: strict where
the text constrains, never stricter than the text when in doubt.

§1.2 tool/call
* API 0.1 (EXT-1.2-result-0.1): ``content`` is a required string, ``is_error``
  a boolean when present; ``metadata`` may be any JSON (the 0.1 decoder
  accepts and discards it), and the §1.2 bounds are API 0.2 guarantees, so
  they are not applied to 0.1 metadata.
* API 0.2/0.4: the content rules apply whenever the API is not 0.1 -- not
  only when content_parts shows up in the negotiated list; a response that
  fails to negotiate the required feature is the initialize rules' business.
* "At least one explicit text part" counts parts whose ``type`` is ``"text"``;
  a malformed text part still counts there and is reported by the shape rule.
* Media (EXT-1.2-media-needs-artifact): a media part must name an artifact
  the host verified for this owner and generation: one the harness issued
  (answered artifact/publish with that id) in this generation. Without the
  artifacts feature every image or audio part is a violation. The harness
  has one session owner, so "this owner" is "this generation" here.
  EXT-1.2-media-kind-match: the part's mime_type is the artifact's, and the
  part type is its media kind (image/* for image, audio/* for audio).
  EXT-1.2-media-aggregate: the issued sizes of every referenced artifact,
  a repeat counted each time, total at most 64 MiB per result.
* structured_content rules need the tool's declaration, so they are skipped
  when the tool is unknown (``tool is None``).
* An error result (``is_error: true``) need not carry structured_content even
  when the tool declares an output_schema, and structured content it does
  carry is not validated against the schema. The text states neither the
  requirement nor the exemption for errors; a failed call has no output for
  the schema to describe, so demanding one would be stricter than the text
  can be shown to be. The forbidden rule and the bounds still apply to errors.
* ``structured_content: null`` counts as absent (the convention of
  :mod:`.members`), so it satisfies "forbidden" and fails "required".
* EXT-1.2-structured-valid uses the JSON Schema draft the schema's
  ``$schema`` names, 2020-12 otherwise (the §1.1 keyword subset means the
  same in every draft since 6). A schema jsonschema rejects, or one it cannot
  evaluate, is skipped without an Exercise: the output_schema rules of §1.1
  report it.
* The bounds use :mod:`.json_measure`'s definitions (compact UTF-8 encoding;
  a scalar is depth 1; every value a node). Metadata keys are checked at
  every depth, not only at the top.

§1.3-§1.7 (their type-reference bodies in §4 are missing, so the examples and
prose are all there is)
* command/execute: every member (text, notifications, context) is optional;
  ``{}`` is a valid result.
* hook/run: ``disposition`` is optional (absent means continue); when present
  it needs an ``action`` of continue or deny. §1.4 spells the deny
  disposition with its ``reason`` string (continue has none), so a deny needs
  one; any other disposition only needs it to be a string when present.
  §1.4b model-turn hooks (model_turn_start / model_turn_end) add their own
  rule (EXT-1.4b-result-envelope), judged when the hook is named: the
  ordinary envelope, no deny, no non-empty context, and ``session_operation``
  absent, null (read as absent) or an object whose action is ``continue``.
  "Unrelated hook effects" are not judged: the text names none.
* context/collect: the result is an array; ``null`` is not allowed (only
  §1.6 offers null as "nothing").
* status/collect: ``null`` or an object with ``surface`` and ``text``
  (required), ``style_role`` string or null, ``priority`` integer. Whether the
  surface must echo the requested one is not stated, so it is not checked.
* tool/render: ``segments`` is required; each segment needs ``text``;
  ``style_role`` is a string or null and may be omitted (read as null).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema.protocols

from . import limits
from .describe import Path, kind
from .ext_notifications import array_items_problems, contribution_problems, notification_problems
from .ext_types import IssuedArtifact, Negotiated, ToolInfo
from .json_measure import depth, encoded_size, node_count, oversized_keys
from .members import (
    bool_member,
    clip,
    enum_member,
    excerpt,
    expected_object,
    integer_member,
    name,
    nullable_string_member,
    present,
    string_member,
)
from .schema_dialects import validators
from .violations import Finding, Violation, rule

ROOT = "result"


# -- §1.2 tool/call, API 0.1 ----------------------------------------------------


@rule("EXT-1.2-result-0.1")
def result_0_1(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.2-result-0.1", ROOT)
        return
    yield from string_member(result, "content", "EXT-1.2-result-0.1", ROOT, required=True)
    yield from bool_member(result, "is_error", "EXT-1.2-result-0.1", ROOT)


# -- §1.2 tool/call, API 0.2 / 0.4 ------------------------------------------------


def _part_type(part: object) -> object:
    return part.get("type") if isinstance(part, dict) else None


@rule("EXT-1.2-content-parts")
def content_parts(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.2-content-parts", ROOT)
        return
    expected = "expected a non-empty array of content parts"
    if "content" not in result:
        yield Violation("EXT-1.2-content-parts", f"result has no content; {expected}")
        return
    content = result["content"]
    if not isinstance(content, list):
        yield Violation("EXT-1.2-content-parts", f"result.content is {kind(content)}; {expected}", ("content",))
    elif not content:
        yield Violation("EXT-1.2-content-parts", f"result.content is an empty array; {expected}", ("content",))
    elif not any(_part_type(part) == "text" for part in content):
        yield Violation(
            "EXT-1.2-content-parts",
            f"result.content has {len(content):,} parts and none of type 'text'; at least one text part is required",
            ("content",),
        )


@rule("EXT-1.2-content-part-count")
def content_part_count(content: list[Any]) -> Iterator[Violation]:
    if len(content) > limits.MAX_CONTENT_PARTS:
        yield Violation(
            "EXT-1.2-content-part-count",
            f"content has {len(content):,} parts; limit {limits.MAX_CONTENT_PARTS:,}",
            ("content",),
        )


def _part_problems(part: object, path: Path) -> Iterator[Violation]:
    if not isinstance(part, dict):
        yield expected_object(part, "EXT-1.2-content-part-shape", ROOT, path)
        return
    part_type = part.get("type")
    if part_type == "text":
        yield from string_member(part, "text", "EXT-1.2-content-part-shape", ROOT, path, required=True)
    elif part_type in limits.MEDIA_PART_TYPES:
        yield from string_member(part, "artifact_id", "EXT-1.2-content-part-shape", ROOT, path, required=True)
        yield from string_member(part, "mime_type", "EXT-1.2-content-part-shape", ROOT, path, required=True)
        optional = "alt" if part_type == "image" else "transcript"
        yield from string_member(part, optional, "EXT-1.2-content-part-shape", ROOT, path, required=False)
    else:
        listing = ", ".join(limits.CONTENT_PART_TYPES)
        if "type" not in part:
            yield Violation(
                "EXT-1.2-content-part-shape", f"{name(ROOT, path)} has no type; expected one of {listing}", path
            )
        else:
            shown = excerpt(part_type) if isinstance(part_type, str) else kind(part_type)
            where = (*path, "type")
            yield Violation(
                "EXT-1.2-content-part-shape", f"{name(ROOT, where)} is {shown}; expected one of {listing}", where
            )


@rule("EXT-1.2-content-part-shape")
def content_part_shape(content: list[Any]) -> Iterator[Violation]:
    for index, part in enumerate(content):
        yield from _part_problems(part, ("content", index))


@rule("EXT-1.2-media-needs-artifact")
def media_needs_artifact(
    content: list[Any], *, negotiated: Negotiated, artifacts: Mapping[str, IssuedArtifact]
) -> Iterator[Violation]:
    has_artifacts = negotiated.has("artifacts")
    for index, part in enumerate(content):
        part_type = _part_type(part)
        if part_type not in limits.MEDIA_PART_TYPES:
            continue
        path: Path = ("content", index)
        label = f"{name(ROOT, path)} is an {part_type} part"
        if not has_artifacts:
            yield Violation("EXT-1.2-media-needs-artifact", f"{label}, but artifacts not negotiated", path)
            continue
        assert isinstance(part, dict)
        artifact_id = part.get("artifact_id")
        if isinstance(artifact_id, str) and artifact_id in artifacts:
            continue
        shown = excerpt(artifact_id) if isinstance(artifact_id, str) else kind(artifact_id)
        yield Violation(
            "EXT-1.2-media-needs-artifact",
            f"{label}: artifact id {shown} was never issued by the host",
            (*path, "artifact_id"),
        )


def _media_parts(
    content: list[Any], artifacts: Mapping[str, IssuedArtifact]
) -> Iterator[tuple[int, str, dict[str, Any], IssuedArtifact]]:
    """(index, part type, part, artifact) for media parts naming an issued artifact."""
    for index, part in enumerate(content):
        part_type = _part_type(part)
        if part_type in limits.MEDIA_PART_TYPES and isinstance(part, dict):
            artifact = artifacts.get(part.get("artifact_id"))  # type: ignore[arg-type]
            if artifact is not None:
                yield index, part_type, part, artifact


@rule("EXT-1.2-media-kind-match")
def media_kind_match(content: list[Any], *, artifacts: Mapping[str, IssuedArtifact]) -> Iterator[Violation]:
    """A media part repeats its artifact's MIME type, and its type is the
    artifact's media kind."""
    for index, part_type, part, artifact in _media_parts(content, artifacts):
        path: Path = ("content", index)
        if part.get("mime_type") != artifact.mime_type:
            yield Violation(
                "EXT-1.2-media-kind-match",
                f"{name(ROOT, path)}.mime_type is {excerpt(part.get('mime_type'))}; artifact "
                f"{excerpt(artifact.artifact_id)} was published as {excerpt(artifact.mime_type)}",
                (*path, "mime_type"),
            )
        if not artifact.mime_type.startswith(f"{part_type}/"):
            yield Violation(
                "EXT-1.2-media-kind-match",
                f"{name(ROOT, path)} is an {part_type} part naming the {excerpt(artifact.mime_type)} artifact "
                f"{excerpt(artifact.artifact_id)}",
                (*path, "type"),
            )


@rule("EXT-1.2-media-aggregate")
def media_aggregate(content: list[Any], *, artifacts: Mapping[str, IssuedArtifact]) -> Iterator[Violation]:
    """Referenced media per result, repeats counted, at most 64 MiB."""
    total = sum(artifact.size for _, _, _, artifact in _media_parts(content, artifacts))
    if total > limits.MAX_REFERENCED_MEDIA_BYTES:
        yield Violation(
            "EXT-1.2-media-aggregate",
            f"the result references {total:,} bytes of media; limit {limits.MAX_REFERENCED_MEDIA_BYTES:,}",
            ("content",),
        )


@rule("EXT-1.2-is-error-bool")
def is_error_bool(result: dict[str, Any]) -> Iterator[Violation]:
    yield from bool_member(result, "is_error", "EXT-1.2-is-error-bool", ROOT)


def is_error_result(result: Any) -> bool:
    """A tool result that reports a tool error (``is_error: true``, §1.2)."""
    return isinstance(result, dict) and result.get("is_error") is True


@rule("EXT-1.2-structured-required")
def structured_required(result: dict[str, Any], *, tool: ToolInfo) -> Iterator[Violation]:
    # Error results are exempt; see the module docstring.
    if is_error_result(result) or present(result, "structured_content"):
        return
    shown = "null" if "structured_content" in result else "absent"
    yield Violation(
        "EXT-1.2-structured-required",
        f"result.structured_content is {shown}, but tool {excerpt(tool.name)} declares an output_schema",
    )


@rule("EXT-1.2-structured-forbidden")
def structured_forbidden(result: dict[str, Any], *, tool: ToolInfo) -> Iterator[Violation]:
    if present(result, "structured_content"):
        yield Violation(
            "EXT-1.2-structured-forbidden",
            f"result.structured_content is {kind(result['structured_content'])}, "
            f"but tool {excerpt(tool.name)} declares no output_schema",
            ("structured_content",),
        )


@rule("EXT-1.2-structured-valid")
def structured_valid(
    result: dict[str, Any], *, tool: ToolInfo, drafts: tuple[jsonschema.protocols.Validator, ...]
) -> Iterator[Violation]:
    """structured_content matches the tool's output_schema under some draft
    that accepts the schema (the declared one, or any: §1.1 names none).
    When none is satisfied, the newest draft's errors are reported."""
    instance = result.get("structured_content")
    if any(_conforms(validator, instance) for validator in drafts[1:]):
        return
    errors = drafts[0].iter_errors(instance)
    while True:
        try:
            error = next(errors)
        except StopIteration:
            return
        except Exception:
            # jsonschema could not go on: a schema it cannot evaluate (the
            # §1.1 rules report those) or an instance too deep even to repr
            # in a message (far over the depth bound, reported there).
            return
        path: Path = ("structured_content", *error.absolute_path)
        keyword = "/".join(str(step) for step in error.absolute_schema_path)
        yield Violation(
            "EXT-1.2-structured-valid",
            f"{name(ROOT, path)} does not match the output_schema of tool {excerpt(tool.name)} "
            f"at {keyword or 'the root'}: {clip(error.message)}",
            path,
        )


def _conforms(validator: jsonschema.protocols.Validator, instance: object) -> bool:
    try:
        return bool(validator.is_valid(instance))
    except Exception:  # noqa: BLE001 -- unevaluable under this draft: it does not vouch for the instance
        return False


def _json_bounds(value: object, field: str, max_bytes: int, requirement: str) -> Iterator[Violation]:
    path: Path = (field,)
    size = encoded_size(value)
    if size > max_bytes:
        yield Violation(requirement, f"{field} is {size:,} bytes encoded; limit {max_bytes:,}", path)
    levels = depth(value)
    if levels > limits.MAX_JSON_DEPTH:
        yield Violation(requirement, f"{field} is nested {levels:,} levels deep; limit {limits.MAX_JSON_DEPTH:,}", path)
    nodes = node_count(value)
    if nodes > limits.MAX_JSON_NODES:
        yield Violation(requirement, f"{field} has {nodes:,} nodes; limit {limits.MAX_JSON_NODES:,}", path)


@rule("EXT-1.2-structured-content-bounds")
def structured_content_bounds(structured_content: object) -> Iterator[Violation]:
    yield from _json_bounds(
        structured_content,
        "structured_content",
        limits.MAX_STRUCTURED_CONTENT_BYTES,
        "EXT-1.2-structured-content-bounds",
    )


@rule("EXT-1.2-metadata-bounds")
def metadata_bounds(metadata: object) -> Iterator[Violation]:
    yield from _json_bounds(metadata, "metadata", limits.MAX_METADATA_BYTES, "EXT-1.2-metadata-bounds")
    for key_path, key, size in oversized_keys(metadata, limits.MAX_METADATA_KEY_BYTES):
        path: Path = ("metadata", *key_path)
        yield Violation(
            "EXT-1.2-metadata-bounds",
            f"metadata key {excerpt(key)} at {name(ROOT, path[:-1])} is {size:,} bytes in UTF-8; "
            f"limit {limits.MAX_METADATA_KEY_BYTES:,}",
            path,
        )


def check_tool_result(
    result: object,
    *,
    negotiated: Negotiated,
    tool: ToolInfo | None,
    artifacts: Mapping[str, IssuedArtifact] | None = None,
) -> Iterator[Finding]:
    """Judge a ``tool/call`` result (§1.2) under the negotiated API.

    ``tool`` is the called tool's definition, or None when the call named a
    tool the extension never declared (the schema rules are then skipped).
    """
    if negotiated.is_legacy:
        yield from result_0_1(result)
        return
    yield from content_parts(result)
    if not isinstance(result, dict):
        return
    content = result.get("content")
    if isinstance(content, list):
        yield from content_part_count(content)
        yield from content_part_shape(content)
        issued = artifacts or {}
        yield from media_needs_artifact(content, negotiated=negotiated, artifacts=issued)
        if negotiated.has("artifacts"):
            yield from media_kind_match(content, artifacts=issued)
            yield from media_aggregate(content, artifacts=issued)
    yield from is_error_bool(result)
    if tool is not None:
        if tool.output_schema is None:
            yield from structured_forbidden(result, tool=tool)
        else:
            yield from structured_required(result, tool=tool)
            drafts = validators(tool.output_schema)
            if drafts and present(result, "structured_content") and not is_error_result(result):
                yield from structured_valid(result, tool=tool, drafts=drafts)
    if present(result, "structured_content"):
        yield from structured_content_bounds(result["structured_content"])
    if present(result, "metadata"):
        yield from metadata_bounds(result["metadata"])


# -- §1.3 command/execute -------------------------------------------------------


@rule("EXT-1.3-command-result")
def command_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.3-command-result", ROOT)
        return
    yield from string_member(result, "text", "EXT-1.3-command-result", ROOT, required=False)
    yield from array_items_problems(result, "notifications", "EXT-1.3-command-result", ROOT, notification_problems)
    yield from array_items_problems(result, "context", "EXT-1.3-command-result", ROOT, contribution_problems)


def check_command_result(result: object) -> Iterator[Finding]:
    """Judge a ``command/execute`` result (§1.3)."""
    yield from command_result(result)


# -- §1.4 hook/run ----------------------------------------------------------------


@rule("EXT-1.4-hook-result")
def hook_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.4-hook-result", ROOT)
        return
    if present(result, "disposition"):
        disposition = result["disposition"]
        path: Path = ("disposition",)
        if not isinstance(disposition, dict):
            yield expected_object(disposition, "EXT-1.4-hook-result", ROOT, path)
        else:
            yield from enum_member(
                disposition, "action", limits.HOOK_ACTIONS, "EXT-1.4-hook-result", ROOT, path, required=True
            )
            # §1.4 writes a denial with its reason; a continue carries none.
            denies = disposition.get("action") == "deny"
            yield from string_member(disposition, "reason", "EXT-1.4-hook-result", ROOT, path, required=denies)
    yield from array_items_problems(result, "context", "EXT-1.4-hook-result", ROOT, contribution_problems)
    yield from array_items_problems(result, "notifications", "EXT-1.4-hook-result", ROOT, notification_problems)


@rule("EXT-1.4b-result-envelope")
def model_turn_result(result: object, hook: str) -> Iterator[Violation]:
    """§1.4b: what a model-turn observation may answer beyond §1.4's shape."""
    if not isinstance(result, dict):
        return  # reported by EXT-1.4-hook-result
    disposition = result.get("disposition")
    if isinstance(disposition, dict) and disposition.get("action") == "deny":
        message = f"{hook} answered with disposition deny; a model-turn observation cannot deny"
        yield Violation("EXT-1.4b-result-envelope", message, ("disposition", "action"))
    context = result.get("context")
    if isinstance(context, list) and context:
        message = f"{hook} answered with {len(context):,} prompt-context contributions; a model-turn answer has none"
        yield Violation("EXT-1.4b-result-envelope", message, ("context",))
    if not present(result, "session_operation"):
        return  # absence means continue
    operation = result["session_operation"]
    if not isinstance(operation, dict):
        yield expected_object(operation, "EXT-1.4b-result-envelope", ROOT, ("session_operation",))
        return
    action = operation.get("action")
    if action != limits.SESSION_OPERATION_CONTINUE:
        shown = excerpt(action) if present(operation, "action") else "absent"
        where = name(ROOT, ("session_operation", "action"))
        message = f"{where} of {hook} is {shown}; a model-turn answer may only continue"
        yield Violation("EXT-1.4b-result-envelope", message, ("session_operation", "action"))


def check_hook_result(result: object, *, hook: object = None) -> Iterator[Finding]:
    """Judge a ``hook/run`` result (§1.4), and a model-turn one (§1.4b)
    when ``hook``, the params.hook of the request, names one."""
    yield from hook_result(result)
    if isinstance(hook, str) and hook in limits.MODEL_TURN_HOOKS:
        yield from model_turn_result(result, hook)


# -- §1.5 context/collect ------------------------------------------------------


@rule("EXT-1.5-context-result")
def context_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, list):
        yield Violation(
            "EXT-1.5-context-result", f"result is {kind(result)}; expected an array of context contributions"
        )
        return
    for index, item in enumerate(result):
        yield from contribution_problems(item, "EXT-1.5-context-result", ROOT, (index,))


def check_context_result(result: object) -> Iterator[Finding]:
    """Judge a ``context/collect`` result (§1.5)."""
    yield from context_result(result)


# -- §1.6 status/collect --------------------------------------------------------


@rule("EXT-1.6-status-result")
def status_result(result: object) -> Iterator[Violation]:
    if result is None:  # "contribute nothing"
        return
    if not isinstance(result, dict):
        yield Violation(
            "EXT-1.6-status-result", f"result is {kind(result)}; expected null or a status contribution object"
        )
        return
    yield from enum_member(result, "surface", limits.STATUS_SURFACES, "EXT-1.6-status-result", ROOT, required=True)
    yield from string_member(result, "text", "EXT-1.6-status-result", ROOT, required=True)
    yield from nullable_string_member(result, "style_role", "EXT-1.6-status-result", ROOT)
    yield from integer_member(result, "priority", "EXT-1.6-status-result", ROOT, required=False)


def check_status_result(result: object) -> Iterator[Finding]:
    """Judge a ``status/collect`` result (§1.6)."""
    yield from status_result(result)


# -- §1.7 tool/render -------------------------------------------------------------


@rule("EXT-1.7-render-result")
def render_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.7-render-result", ROOT)
        return
    if "segments" not in result:
        yield Violation("EXT-1.7-render-result", "result has no segments; expected an array")
        return
    segments = result["segments"]
    if not isinstance(segments, list):
        yield Violation(
            "EXT-1.7-render-result", f"result.segments is {kind(segments)}; expected an array", ("segments",)
        )
        return
    for index, segment in enumerate(segments):
        path: Path = ("segments", index)
        if not isinstance(segment, dict):
            yield expected_object(segment, "EXT-1.7-render-result", ROOT, path)
            continue
        yield from string_member(segment, "text", "EXT-1.7-render-result", ROOT, path, required=True)
        yield from nullable_string_member(segment, "style_role", "EXT-1.7-render-result", ROOT, path)


def check_render_result(result: object) -> Iterator[Finding]:
    """Judge a ``tool/render`` result (§1.7)."""
    yield from render_result(result)
