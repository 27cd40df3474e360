"""Host RPC §4 / §5.2 / §6 / §10: results of the app, workspace, projects and
shell methods, and the permission request/resolve shapes.

Sans-IO and stateless; paths are relative to the value handed in. Session,
notification and todo results live in :mod:`.rpc_session`.

Decisions where the text leaves room (never stricter than the text):
* app.health: the toolBudget object and its seven numbers are documented;
  "returns ok" (acceptance item 2) is read as: a result, and when it carries
  an ``ok`` member that member is true.
* app.getVersion and workspace.*: shapes are not documented; a result of the
  plausible kinds passes (object or string; object or null).
* projects.list: the records may come as an array or as an object holding a
  ``projects`` array; the order needs pin/open state the caller must set up,
  so it is not judged here.
* projects.create "returns the host-generated project id": a string result,
  or an object with a string ``id``/``projectId`` (directly or in a
  ``project`` object), passes.
* permissions.pending: entries are ordered oldest first; ``createdAt`` values
  are compared as ISO-8601 times, and equal times pass.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import rpc_limits
from .describe import kind
from .members import enum_member, excerpt, expected_object, name, string_member
from .rpc_shapes import array_member, non_objects, number_member, objects, parse_time, timestamp_member
from .violations import Violation, rule


@rule("RPC-4-app.health")
def health_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-4-app.health", "result")
        return
    budget = result.get("toolBudget")
    if not isinstance(budget, dict):
        shown = "absent" if "toolBudget" not in result else kind(budget)
        yield Violation("RPC-4-app.health", f"result.toolBudget is {shown}; expected an object", ("toolBudget",))
        return
    for key in rpc_limits.TOOL_BUDGET_FIELDS:
        yield from number_member(budget, key, "RPC-4-app.health", "result", ("toolBudget",), required=True)


@rule("RPC-10-02-health-ok")
def health_ok(response: object) -> Iterator[Violation]:
    """A whole app.health response (acceptance item 2)."""
    if not isinstance(response, dict) or "result" not in response:
        yield Violation("RPC-10-02-health-ok", "app.health did not answer with a result")
        return
    result = response["result"]
    if isinstance(result, dict) and "ok" in result and result["ok"] is not True:
        yield Violation("RPC-10-02-health-ok", f"result.ok is {excerpt(result['ok'])}; expected true", ("result", "ok"))


@rule("RPC-4-app.getVersion")
def version_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict | str):
        yield Violation("RPC-4-app.getVersion", f"result is {kind(result)}; expected an object or a string")


def _workspace(result: object, requirement: str) -> Iterator[Violation]:
    if result is not None and not isinstance(result, dict):
        yield Violation(requirement, f"result is {kind(result)}; expected an object or null")


@rule("RPC-4-workspace.get")
def workspace_get_result(result: object) -> Iterator[Violation]:
    yield from _workspace(result, "RPC-4-workspace.get")


@rule("RPC-4-workspace.set")
def workspace_set_result(result: object) -> Iterator[Violation]:
    yield from _workspace(result, "RPC-4-workspace.set")


@rule("RPC-4-workspace.clear")
def workspace_clear_result(result: object) -> Iterator[Violation]:
    yield from _workspace(result, "RPC-4-workspace.clear")


@rule("RPC-4-projects.list-order")
def projects_list_result(result: object) -> Iterator[Violation]:
    records, path = (result.get("projects"), ("projects",)) if isinstance(result, dict) else (result, ())
    if not isinstance(records, list):
        message = f"{name('result', path)} is {kind(records)}; expected an array of project records"
        yield Violation("RPC-4-projects.list-order", message, path)
        return
    yield from non_objects(records, "RPC-4-projects.list-order", "result", path)


def project_id(result: object) -> str | None:
    """The project id a projects.create result carries, if any."""
    if isinstance(result, str):
        return result
    if not isinstance(result, dict):
        return None
    for holder in (result, result.get("project")):
        if isinstance(holder, dict):
            for key in ("projectId", "id"):
                if isinstance(holder.get(key), str):
                    return str(holder[key])
    return None


@rule("RPC-4-projects.create")
def projects_create_result(result: object) -> Iterator[Violation]:
    if project_id(result) is None:
        shown = kind(result)
        yield Violation("RPC-4-projects.create", f"result is {shown} carrying no project id (id or projectId string)")


def _option_problems(option: object, path: tuple[str | int, ...]) -> Iterator[Violation]:
    if not isinstance(option, dict):
        yield expected_object(option, "RPC-5.2-catalog-shape", "result", path)
        return
    yield from enum_member(
        option, "id", rpc_limits.COMMAND_SHELL_IDS, "RPC-5.2-catalog-shape", "result", path, required=True
    )
    yield from string_member(option, "label", "RPC-5.2-catalog-shape", "result", path, required=True)
    yield from enum_member(
        option, "dialect", rpc_limits.SHELL_DIALECTS, "RPC-5.2-catalog-shape", "result", path, required=True
    )
    for key in ("available", "isDefault"):
        if not isinstance(option.get(key), bool):
            shown = "absent" if key not in option else kind(option[key])
            yield Violation(
                "RPC-5.2-catalog-shape", f"{name('result', (*path, key))} is {shown}; expected a boolean", (*path, key)
            )


@rule("RPC-5.2-catalog-shape")
def shell_catalog(result: object) -> Iterator[Violation]:
    """A commandShells.list result (§5.2 CommandShellCatalog)."""
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-5.2-catalog-shape", "result")
        return
    if "configuredId" not in result:
        yield Violation("RPC-5.2-catalog-shape", "result has no configuredId; expected a shell id or null")
    elif result["configuredId"] is not None:
        yield from enum_member(
            result, "configuredId", rpc_limits.COMMAND_SHELL_IDS, "RPC-5.2-catalog-shape", "result", required=True
        )
    if "effective" not in result:
        yield Violation("RPC-5.2-catalog-shape", "result has no effective; expected a shell option or null")
    elif result["effective"] is not None:
        yield from _option_problems(result["effective"], ("effective",))
    if not isinstance(result.get("fallback"), bool):
        shown = "absent" if "fallback" not in result else kind(result["fallback"])
        yield Violation("RPC-5.2-catalog-shape", f"result.fallback is {shown}; expected a boolean", ("fallback",))
    yield from array_member(result, "choices", "RPC-5.2-catalog-shape", "result", required=True)
    choices = result.get("choices")
    if isinstance(choices, list):
        for index, option in enumerate(choices):
            yield from _option_problems(option, ("choices", index))


# -- §6 permissions ----------------------------------------------------------------------------


def _request_problems(value: object, requirement: str, root: str, path: tuple[str | int, ...]) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, requirement, root, path)
        return
    for key in ("requestId", "sessionId", "toolCallId", "toolName", "reason"):
        yield from string_member(value, key, requirement, root, path, required=True)
    yield from enum_member(value, "risk", rpc_limits.PERMISSION_RISKS, requirement, root, path, required=True)
    if "argsPreview" not in value:
        yield Violation(requirement, f"{name(root, path)} has no argsPreview", path)


@rule("RPC-6-request-shape")
def permission_request_params(params: object) -> Iterator[Violation]:
    """The params of one permissions.request notification."""
    yield from _request_problems(params, "RPC-6-request-shape", "params", ())


@rule("RPC-6-resolve-params")
def permission_resolve_params(params: object) -> Iterator[Violation]:
    """permissions.resolve params (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-6-resolve-params", "params")
        return
    yield from string_member(params, "requestId", "RPC-6-resolve-params", "params", required=True)
    yield from enum_member(
        params, "decision", rpc_limits.PERMISSION_DECISIONS, "RPC-6-resolve-params", "params", required=True
    )


@rule("RPC-6-pending-list")
def permissions_pending_result(result: object, *, session_id: str | None = None) -> Iterator[Violation]:
    """A permissions.pending result; ``session_id`` when the call scoped it."""
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-6-pending-list", "result")
        return
    yield from array_member(result, "requests", "RPC-6-pending-list", "result", required=True)
    requests = result.get("requests")
    if not isinstance(requests, list):
        return
    for index, entry in enumerate(requests):
        path = ("requests", index)
        yield from _request_problems(entry, "RPC-6-pending-list", "result", path)
        if isinstance(entry, dict):
            yield from timestamp_member(entry, "createdAt", "RPC-6-pending-list", "result", path, required=True)
    yield from _scoped(requests, session_id)
    yield from _oldest_first(requests)


def _scoped(requests: list[object], session_id: str | None) -> Iterator[Violation]:
    if session_id is None:
        return
    for index, entry in objects(requests):
        if entry.get("sessionId") != session_id:
            where = ("requests", index, "sessionId")
            shown = excerpt(entry.get("sessionId"))
            yield Violation(
                "RPC-6-pending-list", f"{name('result', where)} is {shown}; the call asked for {session_id!r}", where
            )


def _oldest_first(requests: list[object]) -> Iterator[Violation]:
    stamps = [(i, e.get("createdAt")) for i, e in objects(requests)]
    times = [(i, parse_time(s)) for i, s in stamps if isinstance(s, str)]
    known = [(i, t) for i, t in times if t is not None]
    for (i, earlier), (j, later) in zip(known, known[1:], strict=False):
        try:
            out_of_order = later < earlier
        except TypeError:  # one time has an offset, the other none: not comparable, not judged
            continue
        if out_of_order:
            message = f"result.requests[{j}] was created before result.requests[{i}]; expected oldest first"
            yield Violation("RPC-6-pending-list", message, ("requests", j, "createdAt"))
