"""§1.2 tool results the host must refuse (or take), §1.6 and §1.6b
collected results and menus, §1.1 lifecycle subscriptions."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import DriverEvent, OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol import limits
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.handling_steps import _offered, negotiating
from conformance.scenarios.host_events import judge_refused
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import (
    CONTRIBUTES,
    SLACK_S,
    TOOL,
    TOOL_DEF,
    HostRejected,
    initialize_result,
    ready,
    start_call,
    tool_result,
)

# -- §1.2: tool results the host must refuse (or take) ------------------------------------------

SHAPED = "shaped"  # a probe tool that declares an output_schema
SHAPED_DEF = {**TOOL_DEF, "name": SHAPED, "output_schema": {"type": "object"}}
SHAPED_CONTRIBUTES: dict[str, Any] = {**CONTRIBUTES, "tools": [TOOL, SHAPED]}


def _refuses_results(rig: HostRig, requirement: str, cases: list[tuple[str, dict[str, Any], str]]) -> None:
    """Each (tool, result, what): the probe answers a call of ``tool`` with
    ``result``; the host must not settle it as a result."""
    for tool, result, what in cases:
        call, answer = rig.call("tool/call", {"name": tool, "arguments": {}})
        if isinstance(answer, OperationError):
            raise HostRejected(f"the host refused a tool call of {tool!r}: {answer.code} {answer.message}")
        req = rig.next_request("tool/call")
        if req is None:
            raise HostRejected("the host never wrote the tool call to the extension")
        rig.respond(req.wire_id, result)
        judge_refused(rig, requirement, call, f"a tool result with {what}")


def structured_results(api_version: str) -> Scenario:
    """§1.2 (API 0.2+): a tool with output_schema needs structured_content
    (within 256 KiB); a tool without one may not carry it."""

    def run(rig: HostRig) -> None:
        ready(
            rig,
            api_version,
            contributes=SHAPED_CONTRIBUTES,
            answer=lambda p: {**initialize_result(p, api_version), "tools": [dict(TOOL_DEF), dict(SHAPED_DEF)]},
        )
        text = tool_result(api_version)
        big = {"blob": "x" * limits.MAX_STRUCTURED_CONTENT_BYTES}
        _refuses_results(
            rig,
            "EXT-1.2-host-validates-structured",
            [
                (SHAPED, text, "no structured_content for a tool with an output_schema"),
                (TOOL, {**text, "structured_content": {"a": 1}}, "structured_content for a tool without a schema"),
                (SHAPED, {**text, "structured_content": big}, "structured_content over 256 KiB"),
            ],
        )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("structured-results", run)


def unverified_media(api_version: str) -> Scenario:
    """§1.2 (API 0.2+): an image or audio part needs the artifacts feature; the
    probe never negotiates it, so such a part must be refused."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        text = {"type": "text", "text": "see the picture"}
        cases = [
            (TOOL, {"content": [text, {"type": kind, "artifact_id": "a1", "mime_type": mime}], "is_error": False},
             f"an {kind} part (artifacts not negotiated)")
            for kind, mime in (("image", "image/png"), ("audio", "audio/wav"))
        ]  # fmt: skip
        _refuses_results(rig, "EXT-1.2-host-verifies-media", cases)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("unverified-media", run)


def legacy_tool_error(api_version: str) -> Scenario:
    """§1.2 (API 0.1): is_error: true is a tool error, and metadata is accepted
    (then discarded): the call settles as a result with is_error true, or as
    an error; refusing it fails."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.2-host-0.1-result-handling"
        ready(rig, api_version)
        call, req = start_call(rig)
        rig.respond(req.wire_id, {"content": "it broke", "is_error": True, "metadata": {"trace": [1, 2]}})
        settled = rig.settled(call)
        if settled is not None:
            rig.recorder.exercise(requirement)
            outcome, result = settled.params.get("outcome"), settled.params.get("result")
            if outcome == "result" and not (isinstance(result, dict) and result.get("is_error") is True):
                rig.recorder.violate(Violation(requirement, f"an API 0.1 tool error was delivered as {result!r}"))
            elif outcome not in ("result", "error"):
                rig.recorder.violate(
                    Violation(requirement, f"an API 0.1 tool error with metadata settled as {outcome!r}")
                )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("legacy-tool-error", run)


# -- §1.6, §1.6b: collected results (driver capability ``collect``) -----------------------------

COMMAND = "greet"
COMMAND_DEF = {"name": COMMAND, "description": "the probe's command"}


def _collected(rig: HostRig, method: str, params: dict[str, Any]) -> tuple[str, Any] | None:
    """Start a collect call; (call id, the request the probe got), or None when refused."""
    call, answer = rig.call(method, params)
    if isinstance(answer, OperationError):
        return None
    req = rig.next_request(method)
    return None if req is None else (call, req)


def null_status(api_version: str) -> Scenario:
    """§1.6: a null status/collect result contributes nothing: it is taken
    (settled as a result), not refused, and no status contribution follows."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6-host-null-status"
        if not rig.driver.has("collect"):
            return  # unexercised: reported untested, never pass
        ready(rig, api_version, contributes={**CONTRIBUTES, "ui": ["status"]})
        started = _collected(rig, "status/collect", {"surface": "status"})
        if started is not None:
            call, req = started
            rig.respond(req.wire_id, None)
            settled = rig.settled(call)
            if settled is not None:
                rig.recorder.exercise(requirement)
                outcome = settled.params.get("outcome")
                shown = [e for e in rig.events("contribution") if e.params.get("kind") == "status"]
                if outcome != "result" or settled.params.get("result") is not None:
                    rig.recorder.violate(Violation(requirement, f"a null status result settled as {outcome!r}"))
                elif shown:
                    rig.recorder.violate(Violation(requirement, f"a null status result contributed {shown[0].params}"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("null-status", run)


def _menu_actions(menu: Any) -> list[dict[str, Any]]:
    """Every action (an item without items) of a menu, at every level."""
    found: list[dict[str, Any]] = []
    stack = [menu]
    while stack:
        node = stack.pop()
        items = node.get("items") if isinstance(node, dict) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and "items" in item:
                stack.append(item)
            elif isinstance(item, dict):
                found.append(item)
    return found


def _action(ident: str, **more: Any) -> dict[str, Any]:
    return {"id": ident, "label": ident, "command": COMMAND, "arguments": [], **more}


def _nested(depth: int) -> dict[str, Any]:
    item: dict[str, Any] = _action("leaf")
    for level in range(depth - 1):
        item = {"id": f"level-{level}", "label": "deeper", "items": [item]}
    return item


BAD_MENUS: tuple[tuple[str, list[dict[str, Any]]], ...] = (
    ("an action routed to an undeclared command", [_action("other", command="not-declared")]),
    ("5 levels", [_nested(5)]),
    ("a repeated id in one level", [_action("same"), _action("same")]),
    ("two recommended items in one level", [_action("a", recommended=True), _action("b", recommended=True)]),
    ("a submenu with arguments", [{"id": "sub", "label": "sub", "arguments": ["x"], "items": [_action("a")]}]),
    ("257 items", [_action(f"i{n}") for n in range(257)]),
)


def _menu_loaded(rig: HostRig, api_version: str) -> None:
    ready(
        rig,
        api_version,
        contributes={**CONTRIBUTES, "menu": True, "commands": [COMMAND]},
        answer=lambda p: {**initialize_result(p, api_version), "commands": [COMMAND_DEF]},
    )


def menu_handling(api_version: str) -> Scenario:
    """§1.6b (API 0.2+): a menu that breaks a bound or routes to an undeclared
    command is discarded whole: what the host shows (the settled result) is
    not that menu and runs only declared commands."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-handling"
        if not rig.driver.has("collect"):
            return  # unexercised: reported untested, never pass
        _menu_loaded(rig, api_version)
        for what, items in BAD_MENUS:
            started = _collected(rig, "menu/collect", {})
            if started is None:
                break
            call, req = started
            menu = {"title": "probe", "items": items}
            rig.respond(req.wire_id, menu)
            settled = rig.settled(call)
            if settled is None or settled.params.get("outcome") != "result":
                continue  # nothing shown from this menu
            rig.recorder.exercise(requirement)
            shown = settled.params.get("result")
            stray = [a.get("command") for a in _menu_actions(shown) if a.get("command") != COMMAND]
            if shown == menu or stray:
                rig.recorder.violate(Violation(requirement, f"the host showed a menu with {what}"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("menu-handling", run)


MENU_TIMEOUT_S = 5.0  # §1.6b
SCALED_MENU_TIMEOUT_MS = 300  # asked for with the driver's ``timing`` capability


def menu_timeout(api_version: str) -> Scenario:
    """§1.6b (API 0.2+): the probe never answers menu/collect; within the
    host's menu timeout (5 s, or the scaled ``menu_timeout_ms``) plus a slack
    the call settles with one generated entry per declared command."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-timeout"
        if not rig.driver.has("collect"):
            return  # unexercised: reported untested, never pass
        bound_s = MENU_TIMEOUT_S
        if rig.driver.has("timing"):
            rig.pace.timing = {**rig.pace.timing, "menu_timeout_ms": SCALED_MENU_TIMEOUT_MS}
            bound_s = SCALED_MENU_TIMEOUT_MS / 1000
        _menu_loaded(rig, api_version)
        started = _collected(rig, "menu/collect", {})
        if started is None:
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return
        call, _ = started
        rig.recorder.exercise(requirement)
        settled = rig.settled(call, bound_s + SLACK_S)
        if settled is None:
            rig.recorder.violate(
                Violation(requirement, "an unanswered menu/collect was still waited on after the menu timeout"),
                measured={"timeout_s": bound_s, "waited_s": bound_s + SLACK_S},
            )
            rig.op("cancel", {"call": call, "reason": "user"})
        else:
            commands = {a.get("command") for a in _menu_actions(settled.params.get("result"))}
            if settled.params.get("outcome") != "result" or commands != {COMMAND}:
                rig.recorder.violate(
                    Violation(
                        requirement,
                        f"after the menu timeout the host showed {settled.params.get('outcome')!r} "
                        f"{_short(settled)}, not one generated entry per declared command",
                    )
                )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("menu-timeout", run)


def _short(event: DriverEvent) -> str:
    text = repr(event.params.get("result", event.params.get("reason")))
    return text if len(text) <= 120 else text[:117] + "..."


# -- §1.1 lifecycle subscriptions (driver capability ``lifecycle``) -----------------------------

LIFECYCLE_PARAMS: dict[str, dict[str, Any]] = {
    "session": {"session_id": "s1"},
    "turn": {"session_id": "s1", "run_id": "r1", "turn_id": "t1"},
    "tool": {"session_id": "s1", "run_id": "r1", "turn_id": "t1", "tool_call_id": "k1", "tool_name": TOOL},
}
SETTLED_FIELDS = {"outcome": "completed", "duration_ms": 5}


def lifecycle_default_all(api_version: str) -> Scenario:
    """§1.1 (API 0.2+): the probe negotiates lifecycle_events without a
    subscription list; each of the six events the host is asked to observe
    then reaches it."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-lifecycle-default-all"
        if not rig.driver.has("lifecycle"):
            return  # unexercised: reported untested, never pass

        ready(rig, api_version, answer=negotiating(api_version, ("lifecycle_events",)))
        if not _offered(rig, "lifecycle_events"):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # never offered: the entry is skipped (feature not negotiated)
        for method in limits.LIFECYCLE_EVENTS:
            scope, _, phase = method.partition("/")
            params = {**LIFECYCLE_PARAMS[scope], **(SETTLED_FIELDS if phase == "settled" else {})}
            rig.op("observe", {"extension": rig.handle, "event": method, "params": params})
        call, req = start_call(rig)  # one writer: the host wrote every queued event before this
        rig.recorder.exercise(requirement)
        missing = [m for m in limits.LIFECYCLE_EVENTS if not rig.notes(m)]
        if missing:
            rig.recorder.violate(
                Violation(requirement, f"with no subscription list, {missing} never reached the extension")
            )
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("lifecycle-default-all", run)
