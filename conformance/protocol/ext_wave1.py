"""The Wave-1 requests an extension sends its host (§2 intro, §2.19-§2.24).

Sans-IO and stateless, like :mod:`.ext_requests`: one small rule per section
judging the params of one request, and whether the feature that gates the
method was negotiated. Which host request a Wave-1 request may name as its
parent needs the session's memory; :func:`wave1_parent` takes what the
session knows of that parent as plain data.

Decisions where the text leaves room (never stricter than the document):

* Gating: each method needs its section's feature in the negotiated set
  (§2.19-§2.24 name it in the heading). On API 0.1 there is no negotiation
  and the entries do not apply.
* §2.19 "terminal control characters": C0 controls other than TAB, LF and
  CR, DEL and the C1 range; a composer holds multi-line text, so TAB, LF and
  CR are allowed. Lone surrogates are refused as the text says.
* §2.20: ``description`` is optional (only ``id`` and ``key`` are needed to
  name a shortcut); the 64-shortcut bound counts registrations of one
  generation, judged by the session.
* §2.21: ``data`` is any JSON value (the text only bounds it); an empty
  name or label is legal (it clears).
* §2.23: the names are not judged against the extension's own tools: the
  active set is the host's, built-in tools included.
* §2.24: the extension never supplies ``grant_id``; any other extra member
  is not judged.
* §2 intro: a Wave-1 request names a tool/call or command/execute request
  as its parent (§1.2: the active parents); session/append_entry may also
  name an awaited model-turn or compaction hook/run (§1.4b, §1.11), while
  that parent is live. A parent the extension has already answered (any
  host request) makes it a deferred caller: it must then carry an explicit
  resource_owner, which decides. Whether that owner is one the host issued
  is the host's to refuse (-32002); only its shape is judged here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from . import limits
from .describe import kind, utf8_len
from .ext_types import Negotiated
from .json_measure import depth, encoded_size
from .members import excerpt, expected_object, integer_member, is_integer, string_member
from .violations import Finding, Violation, rule

# method -> the feature its section gates it on.
WAVE1_FEATURES: Mapping[str, str] = {
    "composer/get": "composer",
    "composer/set": "composer",
    "composer/insert": "composer",
    "session/append_entry": "session_entries",
    "session/set_name": "session_entries",
    "session/set_label": "session_entries",
    "session/send_message": "message_injection",
    "session/send_user_message": "message_injection",
    "tools/set_active": "active_tools",
    "terminal/acquire": "terminal_handoff",
    "terminal/release": "terminal_handoff",
}
# §2 intro: the Wave-1 requests that name an owning parent (shortcut/register
# names the initialize request instead: EXT-2.20-shortcut-register).
PARENTED_WAVE1 = frozenset(m for m in WAVE1_FEATURES if not m.startswith("terminal/"))
# §1.2: the active parents; §1.4b/§1.11: awaited session-operation hooks
# whose private lane is session/append_entry.
WAVE1_PARENT_METHODS = frozenset({"tool/call", "command/execute"})
APPEND_ENTRY_HOOKS = frozenset({"model_turn_start", "model_turn_end", "session_before_compact", "session_compact"})
OWNER_MEMBERS = ("session_id", "extension_instance_id")


@dataclass(frozen=True)
class ParentView:
    """What the session knows of the host request a child names as parent."""

    method: str
    hook: str | None  # params.hook of a hook/run, else None
    active: bool  # the extension has not answered it yet


def _terminal_controls(text: str) -> list[str]:
    """Characters a terminal interprets (§2.19): C0 but TAB/LF/CR, DEL, C1."""
    return [ch for ch in text if (ord(ch) < 0x20 and ch not in "\t\n\r") or 0x7F <= ord(ch) <= 0x9F]


def _lone_surrogates(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _gate(method: str, requirement: str, negotiated: Negotiated) -> Iterator[Violation]:
    feature = WAVE1_FEATURES[method]
    if not negotiated.has(feature):
        yield Violation(requirement, f"{method} sent, but the {feature} feature was not negotiated")


def _bounded_text(
    params: Mapping[str, object], key: str, requirement: str, limit: int, *, required: bool = True
) -> Iterator[Violation]:
    """A string member of at most ``limit`` UTF-8 bytes."""
    problems = list(string_member(params, key, requirement, "params", required=required))
    yield from problems
    value = params.get(key)
    if problems or not isinstance(value, str):
        return
    size = utf8_len(value)
    if size > limit:
        yield Violation(requirement, f"params.{key} is {size:,} UTF-8 bytes; limit {limit:,}", (key,))


@rule("EXT-2.19-composer-request")
def composer_request(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.19: with composer negotiated; set/insert carry bounded plain text."""
    yield from _gate(method, "EXT-2.19-composer-request", negotiated)
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.19-composer-request", "params")
        return
    if method == "composer/get":
        return
    requirement = "EXT-2.19-composer-request"
    problems = list(_bounded_text(params, "text", requirement, limits.COMPOSER_TEXT_MAX_BYTES))
    yield from problems
    text = params.get("text")
    if problems or not isinstance(text, str):
        return
    if _lone_surrogates(text):
        yield Violation(requirement, "params.text holds a lone surrogate", ("text",))
    controls = _terminal_controls(text)
    if controls:
        shown = ", ".join(sorted({f"U+{ord(c):04X}" for c in controls})[:4])
        yield Violation(requirement, f"params.text holds terminal control characters ({shown})", ("text",))


@rule("EXT-2.20-shortcut-bounds")
def shortcut_bounds(params: object) -> Iterator[Violation]:
    """§2.20: id and key of at most 128 bytes, description of at most 4 KiB."""
    requirement = "EXT-2.20-shortcut-bounds"
    if not isinstance(params, dict):
        yield expected_object(params, requirement, "params")
        return
    yield from _bounded_text(params, "id", requirement, limits.SHORTCUT_ID_MAX_BYTES)
    yield from _bounded_text(params, "key", requirement, limits.SHORTCUT_KEY_MAX_BYTES)
    yield from _bounded_text(params, "description", requirement, limits.SHORTCUT_DESCRIPTION_MAX_BYTES, required=False)


@rule("EXT-2.21-session-entries-request")
def session_entries_request(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.21: with session_entries negotiated; every member within its bound."""
    requirement = "EXT-2.21-session-entries-request"
    yield from _gate(method, requirement, negotiated)
    if not isinstance(params, dict):
        yield expected_object(params, requirement, "params")
        return
    if method == "session/append_entry":
        yield from _bounded_text(params, "entry_type", requirement, limits.ENTRY_TYPE_MAX_BYTES)
        if "data" not in params:
            yield Violation(requirement, "params has no data; expected a bounded JSON value")
            return
        data = params["data"]
        size = encoded_size(data)
        if size > limits.ENTRY_DATA_MAX_BYTES:
            yield Violation(
                requirement, f"params.data is {size:,} bytes of JSON; limit {limits.ENTRY_DATA_MAX_BYTES:,}", ("data",)
            )
        nesting = depth(data)
        if nesting > limits.MAX_JSON_DEPTH:
            yield Violation(
                requirement, f"params.data nests {nesting} levels; limit {limits.MAX_JSON_DEPTH}", ("data",)
            )
    elif method == "session/set_name":
        yield from _bounded_text(params, "name", requirement, limits.SESSION_NAME_MAX_BYTES)
    else:  # session/set_label
        yield from _bounded_text(params, "entry_id", requirement, limits.ENTRY_ID_MAX_BYTES)
        yield from _bounded_text(params, "label", requirement, limits.SESSION_LABEL_MAX_BYTES)


@rule("EXT-2.22-message-injection-request")
def message_injection_request(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.22: with message_injection negotiated; an assistant or system role
    (never user) on send_message; text of at most 256 KiB."""
    requirement = "EXT-2.22-message-injection-request"
    yield from _gate(method, requirement, negotiated)
    if not isinstance(params, dict):
        yield expected_object(params, requirement, "params")
        return
    if method == "session/send_message":
        role = params.get("role")
        if role not in limits.INJECTED_ROLES:
            shown = excerpt(role) if "role" in params else "absent"
            yield Violation(
                requirement, f"params.role is {shown}; expected one of {', '.join(limits.INJECTED_ROLES)}", ("role",)
            )
    yield from _bounded_text(params, "text", requirement, limits.INJECTED_TEXT_MAX_BYTES)


@rule("EXT-2.23-set-active-request")
def set_active_request(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.23: with active_tools negotiated; at most 256 names of at most 128 bytes."""
    requirement = "EXT-2.23-set-active-request"
    yield from _gate(method, requirement, negotiated)
    if not isinstance(params, dict):
        yield expected_object(params, requirement, "params")
        return
    names = params.get("names")
    if not isinstance(names, list):
        yield Violation(requirement, f"params.names is {kind(names)}; expected an array of tool names", ("names",))
        return
    if len(names) > limits.ACTIVE_TOOLS_MAX_NAMES:
        yield Violation(
            requirement, f"params.names has {len(names)} names; limit {limits.ACTIVE_TOOLS_MAX_NAMES}", ("names",)
        )
    for index, name in enumerate(names):
        if not isinstance(name, str):
            yield Violation(requirement, f"params.names[{index}] is {kind(name)}; expected a string", ("names", index))
        elif utf8_len(name) > limits.ACTIVE_TOOL_NAME_MAX_BYTES:
            yield Violation(
                requirement,
                f"params.names[{index}] is {utf8_len(name)} UTF-8 bytes; limit {limits.ACTIVE_TOOL_NAME_MAX_BYTES}",
                ("names", index),
            )


@rule("EXT-2.24-terminal-request")
def terminal_request(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Violation]:
    """§2.24: with terminal_handoff negotiated; a numeric parent_request_id
    and never a grant_id (the frontend mints it)."""
    requirement = "EXT-2.24-terminal-request"
    yield from _gate(method, requirement, negotiated)
    if not isinstance(params, dict):
        yield expected_object(params, requirement, "params")
        return
    yield from integer_member(params, "parent_request_id", requirement, "params", required=True, minimum=0)
    if "grant_id" in params:
        yield Violation(requirement, f"{method} supplies grant_id; only the frontend mints it", ("grant_id",))


@rule("EXT-2-wave1-parent")
def wave1_parent(method: str, params: object, *, parent: ParentView | None) -> Iterator[Violation]:
    """§2 intro: a numeric parent_request_id naming a tool/call or
    command/execute (or, for session/append_entry, an awaited session
    hook) the host sent; a parent already answered needs an explicit
    resource_owner, and a resource_owner is the issued triple's shape."""
    requirement = "EXT-2-wave1-parent"
    if not isinstance(params, dict):
        return  # the section's own rule reports it
    where = ("parent_request_id",)
    pid = params.get("parent_request_id")
    owner = params.get("resource_owner")
    if owner is not None:
        yield from _owner_shape(owner)
    if not is_integer(pid) or (isinstance(pid, int | float) and pid < 0):
        got = excerpt(pid) if "parent_request_id" in params else "absent"
        yield Violation(requirement, f"{method} needs a numeric parent_request_id; got {got}", where)
        return
    if parent is None:
        yield Violation(requirement, f"{method} names parent_request_id {pid}, which the host never sent", where)
        return
    if not parent.active:
        # A deferred caller: the owner it names decides, whatever the parent was.
        if owner is None:
            yield Violation(
                requirement,
                f"{method} names parent_request_id {pid}, already answered, and carries no resource_owner",
                where,
            )
        return
    allowed = parent.method in WAVE1_PARENT_METHODS or (
        method == "session/append_entry" and parent.method == "hook/run" and parent.hook in APPEND_ENTRY_HOOKS
    )
    if not allowed:
        what = f"a {parent.method}" + (f" ({parent.hook})" if parent.hook else "")
        yield Violation(
            requirement,
            f"{method} names parent_request_id {pid}, {what} request; only tool/call and command/execute "
            "requests own Wave-1 requests (§1.2)",
            where,
        )


def _owner_shape(owner: object) -> Iterator[Violation]:
    requirement = "EXT-2-wave1-parent"
    where = ("resource_owner",)
    if not isinstance(owner, dict):
        yield Violation(requirement, f"params.resource_owner is {kind(owner)}; expected an object", where)
        return
    for key in OWNER_MEMBERS:
        yield from string_member(owner, key, requirement, "params.resource_owner", where, required=True)
    yield from integer_member(
        owner, "process_generation", requirement, "params.resource_owner", where, required=True, minimum=0
    )


ParamRule = Callable[..., Iterator[Finding]]  # (method, params, *, negotiated)
# method -> the rule judging its params (§2.19-§2.24); adding a method is one row.
WAVE1_PARAM_RULES: Mapping[str, ParamRule] = {
    "composer/get": composer_request,
    "composer/set": composer_request,
    "composer/insert": composer_request,
    "session/append_entry": session_entries_request,
    "session/set_name": session_entries_request,
    "session/set_label": session_entries_request,
    "session/send_message": message_injection_request,
    "session/send_user_message": message_injection_request,
    "tools/set_active": set_active_request,
    "terminal/acquire": terminal_request,
    "terminal/release": terminal_request,
}


def check_wave1_params(method: str, params: object, *, negotiated: Negotiated) -> Iterator[Finding]:
    """Judge a Wave-1 request's params, if ``method`` is one (API 0.2+ only)."""
    judge = WAVE1_PARAM_RULES.get(method)
    if judge is not None and not negotiated.is_legacy:
        yield from judge(method, params, negotiated=negotiated)
