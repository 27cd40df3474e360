"""Checks on the requests a host writes to an extension (§1.2-§1.8).

How to use: ``check_host_request(method, params, view=...)`` yields every
rule that applies to one request frame (paths relative to ``params``), given
a :class:`HostView` of what was negotiated. Methods the document does not
define are not judged. :mod:`.host_session` calls this for every request the
probe receives after initialize; it can be called directly in tests.

Conventions (decisions where the text shows an example but states no rule):

* ``context.workspace`` may be a string or null, ``context.host`` must be an
  object; other context members are open (the examples grow them per API).
* A member the examples show but no sentence requires is not demanded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .describe import kind
from .ext_types import ManifestInfo, Negotiated
from .limits import MODEL_TURN_HOOKS
from .members import excerpt, is_integer
from .violations import Finding, Violation, rule

# method -> the rule that owns its frame shape (also used when a host sends
# one of these methods without an id: they are requests, §1).
SHAPE_RULES: Mapping[str, str] = {
    "initialize": "EXT-1.1-host-request-members",
    "tool/call": "EXT-1.2-host-tool-call-shape",
    "command/execute": "EXT-1.3-host-command-shape",
    "hook/run": "EXT-1.4-host-hook-set",
    "context/collect": "EXT-1.5-host-collect-shape",
    "status/collect": "EXT-1.6-host-surface-values",
    "menu/collect": "EXT-1.6b-host-menu-preconditions",
    "tool/render": "EXT-1.7-host-render-shape",
    "shutdown": "EXT-1.8-host-shutdown-shape",
}

# §1.4: hooks every API version knows, and the additions by API / feature.
LEGACY_HOOKS = ("before_prompt", "after_response", "before_tool_call", "after_tool_call")
API_0_2_HOOKS = ("provider_retry", "before_persistence", "post_mutation")
TURN_HOOKS = MODEL_TURN_HOOKS  # §1.4b: API 0.4 + session_entries
COMPACTION_HOOKS = ("session_before_compact", "session_compact")  # §1.11: API 0.4 + session_entries
# §1.4: the payload members each legacy hook carries, with their JSON types.
HOOK_PAYLOADS: Mapping[str, tuple[tuple[str, type | tuple[type, ...]], ...]] = {
    "before_prompt": (("prompt", str),),
    "after_response": (("response", str),),
    "before_tool_call": (("name", str), ("arguments", dict)),
    "after_tool_call": (("name", str), ("arguments", dict), ("output", str), ("is_error", bool)),
}
SURFACES = ("status", "header", "footer")  # §1.6
_TYPE_NAMES = {str: "a string", dict: "an object", bool: "a boolean", list: "an array"}


@dataclass(frozen=True)
class HostView:
    """What a request is judged against: the manifest, the negotiation and
    the catalog the probe answered initialize with."""

    manifest: ManifestInfo
    negotiated: Negotiated
    tools: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def legacy(self) -> bool:
        return self.negotiated.api_version == "0.1"


def check_host_request(method: str, params: object, *, view: HostView) -> Iterator[Finding]:
    check = _BY_METHOD.get(method)
    if check is not None:
        yield from check(params, view)


# --------------------------------------------------------------------------
# Shared: the execution context
# --------------------------------------------------------------------------


def _context_problems(params: Mapping[str, Any]) -> Iterator[Violation]:
    context = params.get("context")
    if not isinstance(context, dict):
        got = kind(context) if "context" in params else "absent"
        yield Violation("EXT-1.2-host-context-shape", f"params.context is {got}; expected an object", ("context",))
        return
    workspace = context.get("workspace")
    if workspace is not None and not isinstance(workspace, str):
        where = ("context", "workspace")
        yield Violation(
            "EXT-1.2-host-context-shape",
            f"params.context.workspace is {kind(workspace)}; expected a string or null",
            where,
        )
    if not isinstance(context.get("host"), dict):
        got = kind(context["host"]) if "host" in context else "absent"
        yield Violation(
            "EXT-1.2-host-context-shape", f"params.context.host is {got}; expected an object", ("context", "host")
        )


@rule("EXT-1.2-host-context-shape")
def context_shape(params: Mapping[str, Any]) -> Iterator[Violation]:
    """Every host request of §1.2-§1.7 carries a context object."""
    yield from _context_problems(params)


def _members(
    requirement: str, params: Mapping[str, Any], wanted: tuple[tuple[str, type | tuple[type, ...]], ...], *root: str
) -> Iterator[Violation]:
    for member, types in wanted:
        value = params.get(member)
        if not isinstance(value, types) or (types is not bool and isinstance(value, bool)):
            got = kind(value) if member in params else "absent"
            noun = _TYPE_NAMES.get(types if isinstance(types, type) else str, "a value")
            path = (*root, member)
            yield Violation(requirement, f"params.{'.'.join(path)} is {got}; expected {noun}", path)


def _object_params(requirement: str, params: object) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield Violation(requirement, f"params is {kind(params)}; expected an object")


# --------------------------------------------------------------------------
# §1.2 tool/call
# --------------------------------------------------------------------------


def _tool_call(params: object, view: HostView) -> Iterator[Finding]:
    yield from tool_call_shape(params)
    if not isinstance(params, dict):
        return
    yield from context_shape(params)
    if isinstance(params.get("name"), str) and not view.negotiated.has("dynamic_tools"):
        yield from known_tool(params["name"], view=view)
    yield from catalog_revision_presence(params, view=view)
    context = params.get("context")
    if isinstance(context, dict):
        yield from resource_owner_presence(context, view=view)
        if not view.legacy and isinstance(context.get("resource_owner"), dict):
            yield from resource_owner_shape(context["resource_owner"])


@rule("EXT-1.2-host-tool-call-shape")
def tool_call_shape(params: object) -> Iterator[Violation]:
    yield from _object_params("EXT-1.2-host-tool-call-shape", params)
    if isinstance(params, dict):
        yield from _members("EXT-1.2-host-tool-call-shape", params, (("name", str), ("arguments", dict)))


@rule("EXT-1.2-host-known-tool")
def known_tool(tool: str, *, view: HostView) -> Iterator[Violation]:
    """Without dynamic_tools the catalog is the initialize answer's (§1.1);
    a call names one of its tools. (With dynamic_tools, registrations change
    the catalog; the session does not track them, so the rule is not run.)"""
    if tool not in view.tools:
        yield Violation(
            "EXT-1.2-host-known-tool", f"tool/call names {excerpt(tool)}, which the extension never declared", ("name",)
        )


@rule("EXT-1.2-host-catalog-revision-presence")
def catalog_revision_presence(params: Mapping[str, Any], *, view: HostView) -> Iterator[Violation]:
    """catalog_revision is sent exactly when dynamic_tools was negotiated,
    as a non-negative integer (an epoch number, §1.1: the initialize list is
    epoch 0)."""
    wanted = view.negotiated.has("dynamic_tools")
    present = "catalog_revision" in params
    if wanted and not present:
        yield Violation(
            "EXT-1.2-host-catalog-revision-presence",
            "tool/call lacks catalog_revision although dynamic_tools was negotiated",
        )
    elif present and not wanted:
        yield Violation(
            "EXT-1.2-host-catalog-revision-presence",
            "tool/call carries catalog_revision without dynamic_tools",
            ("catalog_revision",),
        )
    elif present:
        value = params["catalog_revision"]
        if not is_integer(value) or not isinstance(value, int | float) or value < 0:
            shown = excerpt(value) if isinstance(value, int | float) else kind(value)
            message = f"params.catalog_revision is {shown}; expected an integer >= 0"
            yield Violation("EXT-1.2-host-catalog-revision-presence", message, ("catalog_revision",))


@rule("EXT-1.2-host-resource-owner-presence")
def resource_owner_presence(context: Mapping[str, Any], *, view: HostView) -> Iterator[Violation]:
    """API 0.2+ model-tool contexts carry resource_owner; API 0.1 omits it."""
    present = context.get("resource_owner") is not None
    where = ("context", "resource_owner")
    if view.legacy and "resource_owner" in context:
        yield Violation(
            "EXT-1.2-host-resource-owner-presence", "an API 0.1 tool/call context carries resource_owner", where
        )
    elif not view.legacy and not present:
        yield Violation(
            "EXT-1.2-host-resource-owner-presence", "an API 0.2+ tool/call context lacks resource_owner", ("context",)
        )


@rule("EXT-1.2-host-resource-owner-shape")
def resource_owner_shape(owner: Mapping[str, Any]) -> Iterator[Violation]:
    """The owner triple: two strings and an integer generation (§1.2)."""
    root = ("context", "resource_owner")
    yield from _members(
        "EXT-1.2-host-resource-owner-shape", owner, (("session_id", str), ("extension_instance_id", str)), *root
    )
    generation = owner.get("process_generation")
    if not is_integer(generation) or not isinstance(generation, int | float) or generation < 0:
        shown = excerpt(generation) if isinstance(generation, int | float) else kind(generation)
        path = (*root, "process_generation")
        message = f"params.context.resource_owner.process_generation is {shown}; expected an integer >= 0"
        yield Violation("EXT-1.2-host-resource-owner-shape", message, path)


# --------------------------------------------------------------------------
# §1.3 command/execute
# --------------------------------------------------------------------------


def _command(params: object, view: HostView) -> Iterator[Finding]:
    yield from command_shape(params)
    if not isinstance(params, dict):
        return
    yield from context_shape(params)
    if isinstance(params.get("name"), str):
        yield from declared_command(params["name"], view=view)


@rule("EXT-1.3-host-command-shape")
def command_shape(params: object) -> Iterator[Violation]:
    """name is a string; arguments is an array of strings."""
    yield from _object_params("EXT-1.3-host-command-shape", params)
    if not isinstance(params, dict):
        return
    yield from _members("EXT-1.3-host-command-shape", params, (("name", str), ("arguments", list)))
    arguments = params.get("arguments")
    if isinstance(arguments, list):
        for index, value in enumerate(arguments):
            if not isinstance(value, str):
                path = ("arguments", index)
                yield Violation(
                    "EXT-1.3-host-command-shape", f"params.arguments[{index}] is {kind(value)}; expected a string", path
                )


@rule("EXT-1.3-host-declared-command")
def declared_command(command: str, *, view: HostView) -> Iterator[Violation]:
    if command not in view.commands:
        message = f"command/execute names {excerpt(command)}, which the extension's command list lacks"
        yield Violation("EXT-1.3-host-declared-command", message, ("name",))


# --------------------------------------------------------------------------
# §1.4 / §1.4b hook/run
# --------------------------------------------------------------------------


def known_hooks(view: HostView) -> tuple[str, ...]:
    hooks: tuple[str, ...] = LEGACY_HOOKS
    if not view.legacy:
        hooks += API_0_2_HOOKS
    if view.negotiated.api_version == "0.4" and view.negotiated.has("session_entries"):
        hooks += TURN_HOOKS + COMPACTION_HOOKS
    return hooks


def _hook(params: object, view: HostView) -> Iterator[Finding]:
    yield from hook_set(params, view=view)
    if not isinstance(params, dict):
        return
    yield from context_shape(params)
    hook = params.get("hook")
    if hook in HOOK_PAYLOADS:
        yield from payload_shapes(params)
    elif hook in TURN_HOOKS and hook in known_hooks(view):
        yield from turn_hook_payload(params)


@rule("EXT-1.4-host-hook-set")
def hook_set(params: object, *, view: HostView) -> Iterator[Violation]:
    """hook names a hook the manifest declares and the API version knows."""
    yield from _object_params("EXT-1.4-host-hook-set", params)
    if not isinstance(params, dict):
        return
    hook = params.get("hook")
    if not isinstance(hook, str):
        yield Violation("EXT-1.4-host-hook-set", f"params.hook is {kind(hook)}; expected a hook name", ("hook",))
        return
    declared = view.manifest.declared_names("hooks")
    if hook not in declared:
        yield Violation(
            "EXT-1.4-host-hook-set", f"hook {excerpt(hook)} is not declared in contributes.hooks", ("hook",)
        )
    elif hook not in known_hooks(view):
        api = view.negotiated.api_version
        yield Violation(
            "EXT-1.4-host-hook-set", f"hook {excerpt(hook)} is not a hook of API {api} as negotiated", ("hook",)
        )


@rule("EXT-1.4-host-payload-shapes")
def payload_shapes(params: Mapping[str, Any]) -> Iterator[Violation]:
    payload = params.get("payload")
    if not isinstance(payload, dict):
        got = kind(payload) if "payload" in params else "absent"
        yield Violation("EXT-1.4-host-payload-shapes", f"params.payload is {got}; expected an object", ("payload",))
        return
    yield from _members("EXT-1.4-host-payload-shapes", payload, HOOK_PAYLOADS[params["hook"]], "payload")


@rule("EXT-1.4b-host-payload")
def turn_hook_payload(params: Mapping[str, Any]) -> Iterator[Violation]:
    """kind repeats the hook; run_id is "run:<entry id>"; turn_index and
    timestamp_ms are non-negative integers; end adds assistant_entry (object)
    and tool_result_entries (array)."""
    payload = params.get("payload")
    if not isinstance(payload, dict):
        yield Violation("EXT-1.4b-host-payload", f"params.payload is {kind(payload)}; expected an object", ("payload",))
        return
    if payload.get("kind") != params["hook"]:
        message = f"params.payload.kind is {excerpt(payload.get('kind'))}; expected {params['hook']!r}"
        yield Violation("EXT-1.4b-host-payload", message, ("payload", "kind"))
    run_id = payload.get("run_id")
    if not isinstance(run_id, str) or not run_id.startswith("run:"):
        message = f"params.payload.run_id is {excerpt(run_id)}; expected 'run:' and an entry id"
        yield Violation("EXT-1.4b-host-payload", message, ("payload", "run_id"))
    for member in ("turn_index", "timestamp_ms"):
        value = payload.get(member)
        if not is_integer(value) or not isinstance(value, int | float) or value < 0:
            message = f"params.payload.{member} is {excerpt(value)}; expected an integer >= 0"
            yield Violation("EXT-1.4b-host-payload", message, ("payload", member))
    if params["hook"] == "model_turn_end":
        ends = (("assistant_entry", dict), ("tool_result_entries", list))
        yield from _members("EXT-1.4b-host-payload", payload, ends, "payload")


# --------------------------------------------------------------------------
# §1.5-§1.7 collect and render
# --------------------------------------------------------------------------


def _collect(params: object, view: HostView) -> Iterator[Finding]:
    yield from collect_shape(params)
    if isinstance(params, dict):
        yield from context_shape(params)


@rule("EXT-1.5-host-collect-shape")
def collect_shape(params: object) -> Iterator[Violation]:
    """context/collect: prompt is a string or null."""
    yield from _object_params("EXT-1.5-host-collect-shape", params)
    if isinstance(params, dict) and params.get("prompt") is not None and not isinstance(params["prompt"], str):
        yield Violation(
            "EXT-1.5-host-collect-shape",
            f"params.prompt is {kind(params['prompt'])}; expected a string or null",
            ("prompt",),
        )


def _status(params: object, view: HostView) -> Iterator[Finding]:
    yield from surface_values(params)
    if isinstance(params, dict):
        yield from context_shape(params)


@rule("EXT-1.6-host-surface-values")
def surface_values(params: object) -> Iterator[Violation]:
    yield from _object_params("EXT-1.6-host-surface-values", params)
    if not isinstance(params, dict):
        return
    surface = params.get("surface")
    if surface not in SURFACES:
        shown = excerpt(surface) if isinstance(surface, str) else kind(surface)
        message = f"params.surface is {shown}; expected one of {', '.join(SURFACES)}"
        yield Violation("EXT-1.6-host-surface-values", message, ("surface",))


def _menu(params: object, view: HostView) -> Iterator[Finding]:
    yield from menu_preconditions(view=view)
    if isinstance(params, dict):
        yield from context_shape(params)


@rule("EXT-1.6b-host-menu-preconditions")
def menu_preconditions(*, view: HostView) -> Iterator[Violation]:
    """menu/collect only for API 0.2+, contributes.menu = true and at least
    one declared command (§1.6b)."""
    if view.legacy:
        yield Violation("EXT-1.6b-host-menu-preconditions", "menu/collect was sent to an API 0.1 extension")
    if view.manifest.contributes.get("menu") is not True:
        yield Violation("EXT-1.6b-host-menu-preconditions", "menu/collect was sent, but contributes.menu is not true")
    # A runtime_commands catalog counts as declared too (§1.1 makes it the
    # generation's command list).
    if not view.manifest.declared_names("commands") and not view.commands:
        yield Violation(
            "EXT-1.6b-host-menu-preconditions", "menu/collect was sent to an extension that declares no command"
        )


def _render(params: object, view: HostView) -> Iterator[Finding]:
    yield from render_shape(params)
    if isinstance(params, dict):
        yield from context_shape(params)


@rule("EXT-1.7-host-render-shape")
def render_shape(params: object) -> Iterator[Violation]:
    """name and output are strings, arguments an object, is_error a boolean."""
    yield from _object_params("EXT-1.7-host-render-shape", params)
    if isinstance(params, dict):
        wanted = (("name", str), ("arguments", dict), ("output", str), ("is_error", bool))
        yield from _members("EXT-1.7-host-render-shape", params, wanted)


# --------------------------------------------------------------------------
# §1.8 shutdown
# --------------------------------------------------------------------------


def _shutdown(params: object, view: HostView) -> Iterator[Finding]:
    yield from shutdown_shape(params)


@rule("EXT-1.8-host-shutdown-shape")
def shutdown_shape(params: object) -> Iterator[Violation]:
    """params is an object or absent (the example sends {})."""
    if params is not None and not isinstance(params, dict):
        yield Violation("EXT-1.8-host-shutdown-shape", f"shutdown params is {kind(params)}; expected an object")


_BY_METHOD = {
    "tool/call": _tool_call,
    "command/execute": _command,
    "hook/run": _hook,
    "context/collect": _collect,
    "status/collect": _status,
    "menu/collect": _menu,
    "tool/render": _render,
    "shutdown": _shutdown,
}
