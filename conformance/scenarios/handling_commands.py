"""§1.3-§1.5 what the host makes of command, hook and context results, and
§1.6b menu actions."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.handling_manifests import _child_answer
from conformance.scenarios.handling_results import COMMAND, COMMAND_DEF, _collected, _menu_loaded
from conformance.scenarios.host_cancel import offered_features
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, REQUEST_CANCELLED, initialize_result, ready

# -- §1.3, §1.4, §1.5: what the host makes of command, hook and context results ------------------

HOOKS = ("before_prompt", "after_response")
HOOK_PAYLOADS: dict[str, dict[str, Any]] = {"before_prompt": {"prompt": "hello"}, "after_response": {"response": "hi"}}
COMMAND_RESULT: dict[str, Any] = {
    "text": "the probe's command ran",
    "notifications": [{"level": "info", "title": "probe", "message": "from the command"}],
    "context": [],
}


def command_result(api_version: str) -> Scenario:
    """§1.3: a command result's text, notifications and context are the
    command's outcome: the call settles as that result, its text intact."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.3-host-result-handling"
        ready(
            rig,
            api_version,
            contributes={**CONTRIBUTES, "commands": [COMMAND]},
            answer=lambda p: {**initialize_result(p, api_version), "commands": [COMMAND_DEF]},
        )
        started = _collected(rig, "command/execute", {"name": COMMAND, "arguments": []})
        if started is not None:
            call, req = started
            rig.respond(req.wire_id, COMMAND_RESULT)
            settled = rig.settled(call)
            if settled is not None:
                rig.recorder.exercise(requirement)
                outcome, result = settled.params.get("outcome"), settled.params.get("result")
                text = result.get("text") if isinstance(result, dict) else None
                if outcome != "result" or text != COMMAND_RESULT["text"]:
                    shown = outcome if outcome != "result" else f"a result with text {text!r}"
                    rig.recorder.violate(Violation(requirement, f"a valid command result settled as {shown}"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("command-result", run)


def hook_deny(api_version: str) -> Scenario:
    """§1.4: a deny disposition blocks before_prompt and lets after_response
    go on. Judged on the ``proceeds`` member of the hook's settlement, when
    the driver reports it (optional in the contract)."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.4-host-deny-scope"
        ready(rig, api_version, contributes={**CONTRIBUTES, "hooks": list(HOOKS)})
        for hook in HOOKS:
            started = _collected(rig, "hook/run", {"hook": hook, "payload": HOOK_PAYLOADS[hook]})
            if started is None:
                continue
            call, req = started
            rig.respond(req.wire_id, {"disposition": {"action": "deny", "reason": "the probe says no"}})
            settled = rig.settled(call)
            proceeds = settled.params.get("proceeds") if settled is not None else None
            if not isinstance(proceeds, bool):
                continue  # not reported: not judged
            rig.recorder.exercise(requirement)
            if proceeds != (hook not in ("before_prompt", "before_tool_call")):
                done = "went on" if proceeds else "was blocked"
                rig.recorder.violate(Violation(requirement, f"after a {hook} hook denied, the operation {done}"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("hook-deny", run)


def placement_default(api_version: str) -> Scenario:
    """§1.5 (driver capability ``collect``): a context contribution without
    placement goes to prompt_suffix. Judged on the placement the settled
    context/collect result carries, when the driver reports one."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.5-host-placement-default"
        if not rig.driver.has("collect"):
            return  # unexercised: reported untested, never pass
        ready(rig, api_version, contributes={**CONTRIBUTES, "context": True})
        started = _collected(rig, "context/collect", {"prompt": "hello"})
        if started is not None:
            call, req = started
            rig.respond(req.wire_id, [{"label": "probe", "content": "the probe's context"}])
            settled = rig.settled(call)
            result = settled.params.get("result") if settled is not None else None
            item = result[0] if isinstance(result, list) and result and isinstance(result[0], dict) else {}
            if "placement" in item:
                rig.recorder.exercise(requirement)
                if item["placement"] != "prompt_suffix":
                    rig.recorder.violate(
                        Violation(requirement, f"a contribution without placement was placed {item['placement']!r}")
                    )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("placement-default", run)


# -- §1.6b menu actions (driver capability ``menu``) -------------------------------------------

ACTION_ARGUMENTS = ["two words", "--flag", ""]  # literal: passed exactly, blanks and all
MENU: dict[str, Any] = {
    "title": "probe",
    "items": [
        {"id": "run", "label": "Run", "command": COMMAND, "arguments": ACTION_ARGUMENTS},
        {"id": "more", "label": "More", "items": [
            {"id": "wipe", "label": "Wipe", "command": COMMAND, "arguments": ["wipe"], "destructive": True},
        ]},
    ],
}  # fmt: skip
INTERACTIVE_YES = {"interactive": True, "confirm": True, "input": None}


def _choose(rig: HostRig, item: str) -> tuple[str, Any] | None:
    """The person chooses ``item``: the probe answers the fresh menu pull
    with :data:`MENU` and gets the action's command/execute. Returns (call
    id, that request), or None when the host refused or never ran it (a
    missing pull is recorded under EXT-1.6b-host-menu-action)."""
    call = rig.driver.new_call_id()
    answer = rig.op("menu_action", {"extension": rig.handle, "call": call, "item": item})
    if isinstance(answer, OperationError):
        return None
    first = rig.next_request()
    if first is None:
        return None
    if first.method == "menu/collect":
        rig.respond(first.wire_id, MENU)
        command = rig.next_request("command/execute")
    else:
        rig.recorder.violate(
            Violation("EXT-1.6b-host-menu-action", f"on selection the host sent {first.method}, not menu/collect")
        )
        command = first if first.method == "command/execute" else rig.next_request("command/execute")
    return None if command is None else (call, command)


def _after_action(rig: HostRig) -> None:
    """§1.6b: the menu is pulled again after every action; answer that pull."""
    requirement = "EXT-1.6b-host-menu-action"
    again = rig.next_request("menu/collect")
    if again is None:
        rig.recorder.violate(Violation(requirement, "the menu was not pulled again after an action"))
    else:
        rig.respond(again.wire_id, MENU)


def menu_action(api_version: str) -> Scenario:
    """§1.6b (API 0.2+): choosing a menu action pulls the menu afresh, runs
    command/execute with exactly the action's command and literal arguments,
    and pulls the menu again after it."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-action"
        if not rig.driver.has("menu"):
            return  # unexercised: reported untested, never pass
        _menu_loaded(rig, api_version)
        chosen = _choose(rig, "run")
        if chosen is not None:
            call, req = chosen
            rig.recorder.exercise(requirement)
            params = req.params if isinstance(req.params, dict) else {}
            if params.get("name") != COMMAND or params.get("arguments") != ACTION_ARGUMENTS:
                got = (params.get("name"), params.get("arguments"))
                rig.recorder.violate(
                    Violation(requirement, f"the action ran command/execute {got}, not {(COMMAND, ACTION_ARGUMENTS)}")
                )
            rig.respond(req.wire_id, COMMAND_RESULT)
            rig.settled(call)
            _after_action(rig)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("menu-action", run)


def menu_destructive(api_version: str) -> Scenario:
    """§1.6b (API 0.2+, capabilities ``menu`` and ``frontend``): a destructive
    action is confirmed with the person before it runs; its first
    confirmation/request is then pre-approved (answered yes, nobody asked),
    its second is asked again. Judged on the driver's ``prompt`` events."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-destructive"
        if not (rig.driver.has("menu") and rig.driver.has("frontend")):
            return  # unexercised: reported untested, never pass
        rig.pace.frontend = dict(INTERACTIVE_YES)
        _menu_loaded(rig, api_version)
        chosen = _choose(rig, "wipe")
        if chosen is None:
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return
        call, req = chosen
        rig.recorder.exercise(requirement)
        texts = ("first confirmation?", "second confirmation?")
        answers = [
            _child_answer(rig, f"wipe-{n}", "confirmation/request", {"parent_request_id": req.wire_id, "prompt": t})
            for n, t in enumerate(texts)
        ]
        asked = rig.driver.wait_event(  # the second is asked: once its prompt is reported, every earlier one is
            lambda e: e.method == "prompt" and e.params.get("text") == texts[1],
            rig.pace.patience_s,
            idle=lambda: rig.tick(0.0),
        )
        prompts = [e.params.get("text") for e in rig.events("prompt") if e.params.get("extension") == rig.handle]
        if not [t for t in prompts if t not in texts]:
            rig.recorder.violate(Violation(requirement, "a destructive menu action ran without asking the person"))
        first = getattr(answers[0], "result", None)
        if texts[0] in prompts or not (isinstance(first, dict) and first.get("confirmed") is True):
            rig.recorder.violate(
                Violation(
                    requirement, f"the action's first confirmation was not pre-approved (answered {answers[0]!r})"
                )
            )
        if asked is None:
            rig.recorder.violate(Violation(requirement, "the action's second confirmation was granted without asking"))
        rig.respond(req.wire_id, COMMAND_RESULT)
        rig.settled(call)
        _after_action(rig)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("menu-destructive", run)


def menu_in_place(api_version: str) -> Scenario:
    """§1.6b (API 0.2+, capability ``menu``): a running menu action shows its
    progress (a ``progress`` event for the action's call, when request_progress
    was negotiated) and the person can cancel it (it settles ``cancelled``)."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-long-deadline"
        if not rig.driver.has("menu"):
            return  # unexercised: reported untested, never pass
        _menu_loaded(rig, api_version)
        chosen = _choose(rig, "run")
        if chosen is None:
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return
        call, req = chosen
        rig.recorder.exercise(requirement)
        if "request_progress" in offered_features(rig):
            event = {"type": "status", "message": "1/2"}
            rig.send({"jsonrpc": "2.0", "method": "$/progress",
                      "params": {"request_id": req.wire_id, "sequence": 1, "event": event}})  # fmt: skip
            shown = rig.driver.wait_event(
                lambda e: e.method == "progress" and e.params.get("call") == call,
                rig.pace.patience_s,
                idle=lambda: rig.tick(0.0),
            )
            if shown is None:
                rig.recorder.violate(Violation(requirement, "a menu action's progress was not shown"))
        rig.op("cancel", {"call": call, "reason": "user"})
        settled = rig.settled(call)
        if settled is not None and settled.params.get("outcome") != "cancelled":
            outcome = settled.params.get("outcome")
            rig.recorder.violate(Violation(requirement, f"a cancelled menu action settled as {outcome!r}"))
        # A cooperative extension settles it (§1.9): a host may hold the action's
        # concurrency slot until then, and pull the menu again only after.
        rig.respond_error(req.wire_id, REQUEST_CANCELLED, "cancelled")
        _after_action(rig)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("menu-in-place", run)
