"""Param checks for the requests an extension sends its host (§2.2, §2.7-§2.12).

Sans-IO and stateless. Id rules, parent correlation and the outstanding
bounds are shared by every child request and live in :mod:`.ext_session`;
this module holds one row per method for what its params must look like.

Decisions where the text leaves room (never stricter than the document):

* §2.7: "non-whitespace text" is read with Unicode's notion of whitespace
  (``str.isspace``); the 16 KiB bound counts UTF-8 bytes of ``prompt``;
  ``secret`` may be omitted (it only changes how a frontend echoes).
* input/request belongs to API 0.2 (parent correlation including it is a base
  0.2 invariant, not a feature string), so it is judged on 0.2 and 0.4 only;
  on 0.1 the harness refuses it as an unknown method.
* §2.10: asking without the negotiated secrets feature, or for a name outside
  the manifest's [capabilities].secrets allowlist, is the extension's fault
  (the text requires both); the host's -32602/-32002/-32004 answers are its
  own and any of them is a fine outcome for a correct extension.
* §2.8: "exactly one source" is ``data`` or ``path``, null counting as
  absent. The inline bound counts decoded bytes (the text does not say which;
  the decoded size is the lenient reading). A path is relative, with no
  ``..`` component and no NUL; whether the file is a regular file inside the
  scratch directory is judged by the session once the harness read it
  (:func:`artifact_file`). MIME spellings: the registered names and their
  common aliases (``limits.ARTIFACT_MEDIA_TYPES``), lowercase, without
  parameters. Media signatures are the formats' magic numbers; MPEG audio and
  AAC accept an ID3 tag or a frame sync, Opus an Ogg page.
* §2.8 limits are the host's documented *defaults*: a host may configure
  others, so the per-publication ones are a should (EXT-2.8-artifact-limits).
  The per-generation count and bytes are the host's budget, not the
  extension's: a correct tool asked to publish a 65th time publishes, and the
  host refuses it (:func:`over_generation_budget` is that refusal for a host).
* §2.9: §4 lists no members of the intent, so only the example's members are
  judged when present; ``kind`` and ``operation`` are required strings.
  approval_token needs the approvals feature (the host refuses it otherwise)
  and is 64 lowercase hex characters; a retry with a token repeats an intent
  the host answered ask with (EXT-2.9-approval-token).
* §2.11: definitions are judged with the §1.1 rules (description,
  parameters, output_schema subset) and reported under EXT-2.11-tools-register;
  prompt metadata under EXT-1.1-prompt-metadata-registration. Tool names are
  non-empty strings (the identifier grammar is not stated). The prospective
  catalog is the current epoch's names plus the new ones.
* §2.12: names are non-empty unique strings; an empty list is a should
  (EXT-2.12-no-empty-mutation: "should not use no-op catalog changes").
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import limits
from .describe import kind, utf8_len
from .ext_initialize import output_schema_subset, prompt_metadata, tool_description, tool_parameters_schema
from .ext_types import IssuedArtifact, Negotiated
from .ext_wave1 import WAVE1_PARAM_RULES, check_wave1_params
from .members import bool_member, excerpt, expected_object, integer_member, is_integer, string_member
from .violations import Finding, Violation, rule


@dataclass(frozen=True)
class ChildContext:
    """What a child request's params are judged against."""

    negotiated: Negotiated
    secret_names: frozenset[str] = frozenset()
    # §2.11: the tool names of the current catalog epoch.
    catalog: frozenset[str] = frozenset()
    # §2.9: canonical intents the host answered ask with a token, by token.
    approvals: Mapping[str, str] = field(default_factory=dict)


@rule("EXT-2.2-request-shape")
def confirmation_shape(params: object) -> Iterator[Violation]:
    """§2.2 on every API version: the parent id is judged by the session."""
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.2-request-shape", "params")
        return
    yield from string_member(params, "prompt", "EXT-2.2-request-shape", "params", required=True)
    yield from string_member(params, "detail", "EXT-2.2-request-shape", "params", required=False)
    yield from bool_member(params, "destructive", "EXT-2.2-request-shape", "params")
    yield from bool_member(params, "default", "EXT-2.2-request-shape", "params")


@rule("EXT-2.7-input-request")
def input_request(params: object) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.7-input-request", "params")
        return
    problems = list(string_member(params, "prompt", "EXT-2.7-input-request", "params", required=True))
    yield from problems
    yield from bool_member(params, "secret", "EXT-2.7-input-request", "params")
    prompt = params.get("prompt")
    if problems or not isinstance(prompt, str):
        return
    if not prompt or prompt.isspace():
        yield Violation("EXT-2.7-input-request", "params.prompt has no non-whitespace text", ("prompt",))
    size = len(prompt.encode("utf-8", "surrogatepass"))
    if size > limits.INPUT_PROMPT_MAX_BYTES:
        yield Violation(
            "EXT-2.7-input-request",
            f"params.prompt is {size:,} UTF-8 bytes; limit {limits.INPUT_PROMPT_MAX_BYTES:,}",
            ("prompt",),
        )


@rule("EXT-2.10-secret-get")
def secret_get(params: object, *, context: ChildContext) -> Iterator[Violation]:
    if not context.negotiated.has("secrets"):
        yield Violation("EXT-2.10-secret-get", "secret/get sent but the secrets feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.10-secret-get", "params")
        return
    problems = list(string_member(params, "name", "EXT-2.10-secret-get", "params", required=True))
    yield from problems
    name = params.get("name")
    if not problems and isinstance(name, str) and name not in context.secret_names:
        allowed = ", ".join(sorted(context.secret_names)) or "none"
        yield Violation(
            "EXT-2.10-secret-get",
            f"params.name {excerpt(name)} is not in the manifest's secrets allowlist ({allowed})",
            ("name",),
        )


# -- §2.8 artifact/publish -----------------------------------------------------


@rule("EXT-2.8-artifact-publish")
def artifact_publish(params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """Requires artifacts; a MIME string, a non-negative integer size, a
    lowercase hex SHA-256 and exactly one source: inline base64 data or a
    relative scratch path."""
    rid = "EXT-2.8-artifact-publish"
    if not negotiated.has("artifacts"):
        yield Violation(rid, "artifact/publish sent but the artifacts feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, rid, "params")
        return
    yield from string_member(params, "mime_type", rid, "params", required=True)
    yield from integer_member(params, "size", rid, "params", required=True, minimum=0)
    digest = params.get("sha256")
    if not isinstance(digest, str) or not _is_lower_hex(digest, limits.SHA256_HEX_CHARS):
        shown = excerpt(digest) if isinstance(digest, str) else ("missing" if "sha256" not in params else kind(digest))
        yield Violation(rid, f"params.sha256 is {shown}; expected 64 lowercase hexadecimal characters", ("sha256",))
    sources = [key for key in ("data", "path") if params.get(key) is not None]
    if len(sources) != 1:
        which = "both data and path" if sources else "neither data nor path"
        yield Violation(rid, f"params has {which}; exactly one source is required")
    if params.get("data") is not None:
        yield from _inline_source(params["data"])
    if params.get("path") is not None:
        yield from _path_source(params["path"])


def _inline_source(data: object) -> Iterator[Violation]:
    rid = "EXT-2.8-artifact-publish"
    if not isinstance(data, dict):
        yield expected_object(data, rid, "params", ("data",))
        return
    if data.get("encoding") != "base64":
        yield Violation(rid, f"params.data.encoding is {excerpt(data.get('encoding'))}; expected 'base64'", ("data",))
    if inline_bytes(data) is None:
        yield Violation(rid, "params.data.data is not a base64 string", ("data", "data"))


def _path_source(path: object) -> Iterator[Violation]:
    rid = "EXT-2.8-artifact-publish"
    if not isinstance(path, str) or not path:
        yield Violation(rid, f"params.path is {excerpt(path)}; expected a relative path", ("path",))
        return
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        yield Violation(
            rid, f"params.path {excerpt(path)} is absolute; expected a path under the scratch directory", ("path",)
        )
    if ".." in path.replace("\\", "/").split("/"):
        yield Violation(rid, f"params.path {excerpt(path)} climbs out of the scratch directory", ("path",))
    if "\x00" in path:
        yield Violation(rid, "params.path contains NUL", ("path",))


def inline_bytes(data: object) -> bytes | None:
    """The decoded bytes of an inline source, or None if they cannot be read."""
    text = data.get("data") if isinstance(data, dict) else None
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        return None


@rule("EXT-2.8-artifact-bytes")
def artifact_bytes(params: Mapping[str, Any], content: bytes) -> Iterator[Violation]:
    """The declared size, SHA-256 and MIME type describe the bytes: exact
    size, the same digest, a canonical supported MIME type whose media
    signature the bytes carry."""
    rid = "EXT-2.8-artifact-bytes"
    size = params.get("size")
    if is_integer(size) and size != len(content):
        yield Violation(rid, f"params.size is {excerpt(size)}; the bytes are {len(content):,} long", ("size",))
    digest = params.get("sha256")
    actual = hashlib.sha256(content).hexdigest()
    if isinstance(digest, str) and _is_lower_hex(digest, limits.SHA256_HEX_CHARS) and digest != actual:
        yield Violation(rid, f"params.sha256 is {excerpt(digest)}; the bytes hash to {actual}", ("sha256",))
    mime = params.get("mime_type")
    if not isinstance(mime, str):
        return
    media = limits.ARTIFACT_MEDIA_TYPES.get(mime)
    if media is None:
        supported = ", ".join(sorted(limits.ARTIFACT_MEDIA_TYPES))
        yield Violation(
            rid, f"params.mime_type {excerpt(mime)} is not a canonical supported type ({supported})", ("mime_type",)
        )
    elif not _has_signature(media, content):
        yield Violation(
            rid, f"the bytes do not carry the {media} signature params.mime_type {excerpt(mime)} claims", ("mime_type",)
        )


def _has_signature(media: str, head: bytes) -> bool:
    checks: dict[str, Callable[[bytes], bool]] = {
        "png": lambda b: b.startswith(b"\x89PNG\r\n\x1a\n"),
        "jpeg": lambda b: b.startswith(b"\xff\xd8\xff"),
        "gif": lambda b: b.startswith((b"GIF87a", b"GIF89a")),
        "webp": lambda b: b[:4] == b"RIFF" and b[8:12] == b"WEBP",
        "wav": lambda b: b[:4] == b"RIFF" and b[8:12] == b"WAVE",
        "mpeg": lambda b: b.startswith(b"ID3") or (len(b) > 1 and b[0] == 0xFF and b[1] & 0xE0 == 0xE0),
        "flac": lambda b: b.startswith(b"fLaC"),
        "opus": lambda b: b.startswith(b"OggS"),
        "aac": lambda b: b.startswith((b"ADIF", b"ID3")) or (len(b) > 1 and b[0] == 0xFF and b[1] & 0xF6 == 0xF0),
        "mp4": lambda b: b[4:8] == b"ftyp",
    }
    return checks[media](head)


@rule("EXT-2.8-artifact-limits")
def artifact_limits(params: object) -> Iterator[Violation]:
    """The host's per-publication defaults: 256 KiB inline, 20 MiB per
    artifact, 4096-byte/64-component paths."""
    rid = "EXT-2.8-artifact-limits"
    if not isinstance(params, dict):
        return
    size = _declared_size(params)
    inline = inline_bytes(params.get("data")) if params.get("data") is not None else None
    if inline is not None and len(inline) > limits.ARTIFACT_INLINE_MAX_BYTES:
        yield Violation(
            rid, f"inline data is {len(inline):,} bytes; default limit {limits.ARTIFACT_INLINE_MAX_BYTES:,}", ("data",)
        )
    if size > limits.ARTIFACT_MAX_BYTES:
        yield Violation(rid, f"params.size is {size:,} bytes; default limit {limits.ARTIFACT_MAX_BYTES:,}", ("size",))
    path = params.get("path")
    if isinstance(path, str):
        parts = [p for p in path.split("/") if p]
        if utf8_len(path) > limits.ARTIFACT_PATH_MAX_BYTES or len(parts) > limits.ARTIFACT_PATH_MAX_COMPONENTS:
            yield Violation(
                rid,
                f"params.path is {utf8_len(path):,} bytes in {len(parts)} components; default limits "
                f"{limits.ARTIFACT_PATH_MAX_BYTES:,} bytes, {limits.ARTIFACT_PATH_MAX_COMPONENTS} components",
                ("path",),
            )


def over_generation_budget(params: object, issued: Mapping[str, IssuedArtifact]) -> str | None:
    """§2.8: why a host at its default per-generation budget (64 artifacts,
    64 MiB) refuses this publication, or None. A host's decision, never a
    finding against the extension that asked."""
    if len(issued) >= limits.ARTIFACT_GENERATION_MAX_COUNT:
        return (
            f"{len(issued)} artifacts already issued to this generation; limit {limits.ARTIFACT_GENERATION_MAX_COUNT}"
        )
    total = sum(a.size for a in issued.values()) + _declared_size(params)
    if total > limits.ARTIFACT_GENERATION_MAX_BYTES:
        return (
            f"this publication brings the generation to {total:,} bytes; limit {limits.ARTIFACT_GENERATION_MAX_BYTES:,}"
        )
    return None


def _declared_size(params: object) -> int:
    raw = params.get("size") if isinstance(params, dict) else None
    return max(int(raw), 0) if isinstance(raw, int | float) and is_integer(raw) else 0


# -- §2.9 policy/evaluate --------------------------------------------------------


@rule("EXT-2.9-policy-evaluate")
def policy_evaluate(params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """Requires policy_intents; an intent object with string kind and
    operation; target an object, data_classes an array of strings and
    adapter_hints an object of booleans when present."""
    rid = "EXT-2.9-policy-evaluate"
    if not negotiated.has("policy_intents"):
        yield Violation(rid, "policy/evaluate sent but the policy_intents feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, rid, "params")
        return
    intent = params.get("intent")
    if not isinstance(intent, dict):
        yield expected_object(intent, rid, "params", ("intent",))
        return
    where = ("intent",)
    yield from string_member(intent, "kind", rid, "params", where, required=True)
    yield from string_member(intent, "operation", rid, "params", where, required=True)
    target = intent.get("target")
    if target is not None and not isinstance(target, dict):
        yield expected_object(target, rid, "params", (*where, "target"))
    classes = intent.get("data_classes")
    if classes is not None and not (isinstance(classes, list) and all(isinstance(c, str) for c in classes)):
        yield Violation(rid, "params.intent.data_classes is not an array of strings", (*where, "data_classes"))
    hints = intent.get("adapter_hints")
    if hints is not None:
        if not isinstance(hints, dict):
            yield expected_object(hints, rid, "params", (*where, "adapter_hints"))
        else:
            for key in ("read_only", "destructive"):
                yield from bool_member(hints, key, rid, "params", (*where, "adapter_hints"))


@rule("EXT-2.9-approval-token")
def approval_token(params: object, *, negotiated: Negotiated, approvals: Mapping[str, str]) -> Iterator[Violation]:
    """A token only with approvals negotiated, 64 lowercase hex characters,
    repeating exactly the intent the host answered ask with that token."""
    rid = "EXT-2.9-approval-token"
    if not isinstance(params, dict) or params.get("approval_token") is None:
        return
    token = params["approval_token"]
    if not negotiated.has("approvals"):
        yield Violation(
            rid, "params.approval_token sent but the approvals feature was not negotiated", ("approval_token",)
        )
        return
    if not isinstance(token, str) or not _is_lower_hex(token, limits.SHA256_HEX_CHARS):
        yield Violation(
            rid,
            f"params.approval_token is {excerpt(token)}; expected 64 lowercase hexadecimal characters",
            ("approval_token",),
        )
        return
    original = approvals.get(token)
    if original is None:
        yield Violation(rid, "params.approval_token was never issued by the host", ("approval_token",))
    elif original != canonical(params.get("intent")):
        yield Violation(rid, "params.intent differs from the intent the approval_token was issued for", ("intent",))


def canonical(value: object) -> str:
    """A canonical encoding of an intent, to compare a retry with its original."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- §2.11 tools/register, §2.12 tools/unregister ---------------------------------


@rule("EXT-2.11-tools-register")
def tools_register(params: object, *, negotiated: Negotiated, catalog: frozenset[str]) -> Iterator[Violation]:
    """Requires dynamic_tools; complete definitions (the §1.1 rules), unique
    names, at most 256 per request and in the prospective catalog."""
    rid = "EXT-2.11-tools-register"
    if not negotiated.has("dynamic_tools"):
        yield Violation(rid, "tools/register sent but the dynamic_tools feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, rid, "params")
        return
    tools = params.get("tools")
    if not isinstance(tools, list):
        yield Violation(rid, f"params.tools is {kind(tools)}; expected an array of tool definitions", ("tools",))
        return
    names: list[str] = []
    for index, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not name:
            yield Violation(rid, f"params.tools[{index}] has no tool name (a non-empty string)", ("tools", index))
        else:
            names.append(name)
    for repeated in sorted({n for n in names if names.count(n) > 1}):
        yield Violation(rid, f"params.tools names {excerpt(repeated)} more than once", ("tools",))
    yield from _catalog_bound(rid, len(tools), len(catalog | set(names)), "tools")
    for check in (tool_description, tool_parameters_schema, output_schema_subset):
        for found in check(tools):
            if isinstance(found, Violation):
                yield Violation(rid, f"params.{found.message}", found.path)


@rule("EXT-1.1-prompt-metadata-registration")
def registration_prompt_metadata(params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """Prompt metadata in registered definitions follows the §1.1 rules
    (judged when tool_prompt_metadata_v1 is in force; otherwise the
    initialize rule's counterpart applies: none may be set)."""
    tools = params.get("tools") if isinstance(params, dict) else None
    if not isinstance(tools, list):
        return
    in_force = negotiated.api_version == "0.4" and negotiated.has("tool_prompt_metadata_v1")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        if not in_force and any(tool.get(k) not in (None, []) for k in ("prompt_snippet", "prompt_guidelines")):
            yield Violation(
                "EXT-1.1-prompt-metadata-registration",
                f"params.tools[{index}] carries prompt metadata but tool_prompt_metadata_v1 is not in force",
                ("tools", index),
            )
    if in_force:
        for found in prompt_metadata(tools):
            if isinstance(found, Violation):
                yield Violation("EXT-1.1-prompt-metadata-registration", f"params.{found.message}", found.path)


@rule("EXT-2.12-tools-unregister")
def tools_unregister(params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """Requires dynamic_tools; names unique non-empty strings, at most 256."""
    rid = "EXT-2.12-tools-unregister"
    if not negotiated.has("dynamic_tools"):
        yield Violation(rid, "tools/unregister sent but the dynamic_tools feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, rid, "params")
        return
    names = params.get("names")
    if not isinstance(names, list):
        yield Violation(rid, f"params.names is {kind(names)}; expected an array of tool names", ("names",))
        return
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name:
            yield Violation(rid, f"params.names[{index}] is {excerpt(name)}; expected a tool name", ("names", index))
    strings = [n for n in names if isinstance(n, str)]
    for repeated in sorted({n for n in strings if strings.count(n) > 1}):
        yield Violation(rid, f"params.names lists {excerpt(repeated)} more than once", ("names",))
    yield from _catalog_bound(rid, len(names), None, "names")


@rule("EXT-2.12-no-empty-mutation")
def no_empty_mutation(method: str, params: object) -> Iterator[Violation]:
    """A catalog mutation changes something: no empty tools or names list."""
    member = "tools" if method == "tools/register" else "names"
    value = params.get(member) if isinstance(params, dict) else None
    if isinstance(value, list) and not value:
        yield Violation(
            "EXT-2.12-no-empty-mutation", f"{method} with an empty {member} list changes nothing", (member,)
        )


def _catalog_bound(rid: str, count: int, prospective: int | None, member: str) -> Iterator[Violation]:
    if count > limits.CATALOG_MAX_TOOLS:
        yield Violation(rid, f"params.{member} has {count} entries; limit {limits.CATALOG_MAX_TOOLS}", (member,))
    if prospective is not None and prospective > limits.CATALOG_MAX_TOOLS:
        yield Violation(
            rid, f"the prospective catalog has {prospective} tools; limit {limits.CATALOG_MAX_TOOLS}", (member,)
        )


def _is_lower_hex(text: str, length: int) -> bool:
    return len(text) == length and all(c in "0123456789abcdef" for c in text)


@rule("EXT-2.8-artifact-publish")
def artifact_file(problem: str) -> Iterator[Violation]:
    """A path source must name a regular file (no symlink) inside the
    scratch directory; ``problem`` says why the harness could not read one."""
    yield Violation("EXT-2.8-artifact-publish", f"params.path names no readable scratch file: {problem}", ("path",))


# -- message rules on every extension call (not per method) -------------------------

# §2: the ten Wave-1 requests may carry a caller-supplied resource_owner;
# presentation/update may carry the issued triple (§2.5, see the catalog note).
WAVE1_OWNER_METHODS = frozenset(
    {
        "composer/get",
        "composer/set",
        "composer/insert",
        "shortcut/register",
        "session/append_entry",
        "session/set_name",
        "session/set_label",
        "session/send_message",
        "session/send_user_message",
        "tools/set_active",
        "presentation/update",
    }
)


@rule("EXT-2-owner-field-scope")
def owner_field_scope(method: str, params: object) -> Iterator[Violation]:
    """Only Wave-1 requests (and §2.5 snapshots) carry resource_owner."""
    if method not in WAVE1_OWNER_METHODS and isinstance(params, dict) and "resource_owner" in params:
        yield Violation(
            "EXT-2-owner-field-scope",
            f"{method} carries resource_owner; only the ten Wave-1 requests accept a caller-supplied owner",
            ("params", "resource_owner"),
        )


@rule("JSONRPC-4-reserved-method-prefix")
def reserved_method_prefix(method: str) -> Iterator[Violation]:
    """Method names starting with "rpc." are reserved for JSON-RPC itself."""
    if method.startswith("rpc."):
        yield Violation(
            "JSONRPC-4-reserved-method-prefix", f"method {excerpt(method)} uses the reserved rpc. prefix", ("method",)
        )


@rule("JSONRPC-4-id-not-null")
def request_id_not_null(rid: object) -> Iterator[Violation]:
    """A request's id should not be null (JSON-RPC 2.0 §4)."""
    if rid is None:
        yield Violation(
            "JSONRPC-4-id-not-null", "request id is null; null marks replies to unreadable requests", ("id",)
        )


@rule("JSONRPC-6-no-batch")
def no_batch(raw: object) -> Iterator[Violation]:
    """No JSON-RPC batch on this wire: a frame holding an array of messages
    is one (its one-object-per-line breach is EXT-0-one-object-per-line)."""
    if isinstance(raw, list):
        yield Violation("JSONRPC-6-no-batch", f"frame is a batch of {len(raw)} element(s); this wire has no batches")


@rule("EXT-0-extension-single-writer")
def single_writer(payload: bytes, *, readable: bool) -> Iterator[Violation]:
    """An unreadable line in which a new frame starts after the first byte
    is a frame abandoned part-way or interleaved with another: what one
    writer owning stdout never produces."""
    restart = payload.find(b'{"jsonrpc"', 1)
    if not readable and restart > 0:
        yield Violation(
            "EXT-0-extension-single-writer",
            f"a frame starts again at byte {restart} of an unreadable line: a frame was torn or interleaved",
        )


def _confirmation(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from confirmation_shape(params)


def _input_request(params: object, context: ChildContext) -> Iterator[Finding]:
    if not context.negotiated.is_legacy:
        yield from input_request(params)


def _secret_get(params: object, context: ChildContext) -> Iterator[Finding]:
    if not context.negotiated.is_legacy:
        yield from secret_get(params, context=context)


def _wave1(method: str, params: object, context: ChildContext) -> Iterator[Finding]:
    yield from check_wave1_params(method, params, negotiated=context.negotiated)


def _artifact_publish(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from artifact_publish(params, negotiated=context.negotiated)
    yield from artifact_limits(params)
    content = inline_bytes(params.get("data")) if isinstance(params, dict) else None
    if content is not None and isinstance(params, dict):
        yield from artifact_bytes(params, content)


def _policy_evaluate(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from policy_evaluate(params, negotiated=context.negotiated)
    yield from approval_token(params, negotiated=context.negotiated, approvals=context.approvals)


def _tools_register(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from tools_register(params, negotiated=context.negotiated, catalog=context.catalog)
    yield from registration_prompt_metadata(params, negotiated=context.negotiated)
    yield from no_empty_mutation("tools/register", params)


def _tools_unregister(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from tools_unregister(params, negotiated=context.negotiated)
    yield from no_empty_mutation("tools/unregister", params)


def _api_0_2(check: ParamCheck) -> ParamCheck:
    """Services of API 0.2+: on 0.1 the harness refuses them as unknown methods."""

    def judged(params: object, context: ChildContext) -> Iterator[Finding]:
        if not context.negotiated.is_legacy:
            yield from check(params, context)

    return judged


ParamCheck = Callable[[object, ChildContext], Iterator[Finding]]
# One row per child request method whose params are judged here.
CHILD_PARAM_CHECKS: dict[str, ParamCheck] = {
    "confirmation/request": _confirmation,
    "input/request": _input_request,
    "secret/get": _secret_get,
    # §2.19-§2.24: the Wave-1 requests, one row each (rules in .ext_wave1)
    **{method: functools.partial(_wave1, method) for method in WAVE1_PARAM_RULES},
    "artifact/publish": _api_0_2(_artifact_publish),
    "policy/evaluate": _api_0_2(_policy_evaluate),
    "tools/register": _api_0_2(_tools_register),
    "tools/unregister": _api_0_2(_tools_unregister),
}


def check_child_params(method: str, params: object, *, context: ChildContext) -> Iterator[Finding]:
    """Judge the params of one extension-originated request, if its method has a row."""
    check = CHILD_PARAM_CHECKS.get(method)
    if check is not None:
        yield from check(params, context)
