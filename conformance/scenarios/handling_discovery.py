"""§1.1 discovery features: dynamic tools, command registration and its
reload, prompt metadata, composition authority and agent sessions."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_rig import HostRig
from conformance.protocol import limits
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.handling_commands import COMMAND_RESULT
from conformance.scenarios.handling_manifests import _child_answer
from conformance.scenarios.handling_results import COMMAND, COMMAND_DEF, _collected
from conformance.scenarios.handling_stages import _diagnostics
from conformance.scenarios.handling_steps import _offered, negotiating
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, TOOL_DEF, initialize_result, ready, start_call, tool_result

# -- §1.1 discovery features ----------------------------------------------------------------------

LATE_TOOL = "late-tool"  # in the initialize answer, not in the manifest
LATE_TOOL_DEF = {**TOOL_DEF, "name": LATE_TOOL}


def dynamic_tools_epoch_0(api_version: str) -> Scenario:
    """§1.1 (API 0.2+, when the host offers dynamic_tools): the probe
    negotiates it and answers initialize with a tool its manifest does not
    list; the host takes that list as the catalog at epoch 0 (ready, the tool
    routed, catalog_revision 0) instead of comparing it with contributes."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-dynamic-tools-epoch-0"

        answer = negotiating(api_version, ("dynamic_tools",), tools=[dict(TOOL_DEF), dict(LATE_TOOL_DEF)])
        loaded = rig.load(api_version, CONTRIBUTES, answer)
        if not _offered(rig, "dynamic_tools"):
            if loaded.get("outcome") == "ready":
                shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # never offered: the entry is skipped (feature not negotiated)
        rig.recorder.negotiated_features.add("dynamic_tools")
        rig.recorder.exercise(requirement)
        if loaded.get("outcome") != "ready":
            rig.recorder.violate(
                Violation(requirement, f"with dynamic_tools, an initialize tool list beyond contributes was {loaded}")
            )
            return
        started = _collected(rig, "tool/call", {"name": LATE_TOOL, "arguments": {}})
        if started is None:
            rig.recorder.violate(Violation(requirement, f"{LATE_TOOL}, from the initialize catalog, was not routed"))
        else:
            call, req = started
            revision = req.params.get("catalog_revision") if isinstance(req.params, dict) else None
            if revision not in (None, 0):
                rig.recorder.violate(Violation(requirement, f"a call on the initialize catalog names epoch {revision}"))
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("dynamic-tools-epoch-0", run)


def no_command_registration(api_version: str) -> Scenario:
    """§1.1 (API 0.2+): there are no commands/register or commands/unregister
    methods (runtime_commands fixes the list per generation); both requests,
    under an active call, must be refused."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-no-command-registration"
        ready(
            rig,
            api_version,
            contributes={**CONTRIBUTES, "commands": [COMMAND]},
            answer=lambda p: {**initialize_result(p, api_version), "commands": [COMMAND_DEF]},
        )
        call, req = start_call(rig)
        extra = {"name": "late-command", "description": "a command registered after initialize"}
        for cid, method, params in (
            ("register-1", "commands/register", {"parent_request_id": req.wire_id, "commands": [extra]}),
            ("unregister-1", "commands/unregister", {"parent_request_id": req.wire_id, "names": [COMMAND]}),
        ):
            answer = _child_answer(rig, cid, method, params)
            if answer is None:
                continue  # never answered: judged by the §2 rules, not here
            rig.recorder.exercise(requirement)
            if hasattr(answer, "result"):
                rig.recorder.violate(
                    Violation(requirement, f"the host accepted {method}, a method that does not exist")
                )
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("no-command-registration", run)


# Diagnostics a reload produces on its way whatever it decides (the first
# generation's shutdown stages); any other kind reports the decision.
ROUTINE_KINDS = ("shutdown", "exit", "stderr", "cancel-grace")
OTHER_COMMAND_DEF = {"name": "other", "description": "a command the first generation did not have"}


def runtime_commands_reload(api_version: str) -> Scenario:
    """§1.1 (API 0.2+, capability ``reload``, when the host offers
    runtime_commands): the probe negotiates it; on reload the candidate
    answers with one more command. The host must refuse that candidate: the
    first generation stays the live one."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-runtime-commands-reload"
        if not rig.driver.has("reload"):
            return  # unexercised: reported untested, never pass

        loaded = ready(
            rig,
            api_version,
            contributes={**CONTRIBUTES, "commands": [COMMAND]},
            answer=negotiating(api_version, ("runtime_commands",), commands=[COMMAND_DEF]),
        )
        handle = rig.handle
        if not _offered(rig, "runtime_commands"):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # never offered: the entry is skipped (feature not negotiated)
        noted = len(_diagnostics(rig))
        rig.op("reload", {"extension": handle})
        if rig.relaunched(rig.pace.patience_s) is None:
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # no candidate started: nothing to judge
        first = rig.next_request("initialize")
        if first is not None:
            changed = negotiating(api_version, ("runtime_commands",), commands=[COMMAND_DEF, OTHER_COMMAND_DEF])
            rig.respond(first.wire_id, changed(first.params))
        # Decided once the host diagnoses a refusal or inspect shows another
        # generation; meanwhile a candidate it lets go is acknowledged.
        deadline = rig.pace.clock() + rig.pace.patience_s
        status: Any = None
        while rig.pace.clock() < deadline:
            for req in [r for r in rig.requests if r.method == "shutdown"]:
                rig.requests.remove(req)
                rig.respond(req.wire_id, {})
                rig.command({"t": "exit", "code": 0})
            status = rig.op("inspect", {"extension": handle})
            swapped = isinstance(status, dict) and status.get("generation") != loaded.get("generation")
            refused = [d for d in _diagnostics(rig)[noted:] if d.params.get("kind") not in ROUTINE_KINDS]
            if swapped or refused:
                break
            rig.until(lambda: False, 0.05)  # pump both sides a moment
        status = rig.op("inspect", {"extension": handle})
        rig.recorder.exercise(requirement)
        if isinstance(status, dict) and status.get("generation") != loaded.get("generation"):
            rig.recorder.violate(
                Violation(requirement, "a reloaded generation with a different command catalog replaced the first")
            )
        rig.driver.wait_answer(rig.driver.start("shutdown", {"extension": handle}), 15.0, idle=lambda: rig.tick(0.0))

    return Scenario("runtime-commands-reload", run)


def prompt_metadata_registration(api_version: str) -> Scenario:
    """§1.1 (API 0.4, when the host offers dynamic_tools and
    tool_prompt_metadata_v1): dynamic registration validates prompt metadata
    as initialize does, so a tools/register whose tool carries 17 guidelines
    (the bound is 16) must be refused."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-prompt-metadata-budget"
        both = ("dynamic_tools", "tool_prompt_metadata_v1")
        ready(rig, api_version, answer=negotiating(api_version, both))
        if not _offered(rig, *both):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # not both offered: dynamic registration cannot be exercised
        guidelines = ["keep it short"] * (limits.MAX_PROMPT_GUIDELINES + 1)
        tool = {**TOOL_DEF, "name": "registered-tool", "prompt_guidelines": guidelines}
        reply = _child_answer(rig, "catalog-1", "tools/register", {"tools": [tool]})
        if reply is not None:
            rig.recorder.exercise(requirement)
            if hasattr(reply, "result"):
                rig.recorder.violate(
                    Violation(requirement, f"tools/register accepted a tool with {len(guidelines)} prompt guidelines")
                )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("prompt-metadata-registration", run)


def composition_authority(api_version: str) -> Scenario:
    """§1.1 (API 0.4, when the host offers tool_composition_v1): negotiating
    it grants nothing by itself: composition/context naming a settled
    tool/call, or a command/execute, must be refused."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-composition-no-implicit-authority"
        ready(
            rig,
            api_version,
            contributes={**CONTRIBUTES, "commands": [COMMAND]},
            answer=negotiating(api_version, ("tool_composition_v1",), commands=[COMMAND_DEF]),
        )
        if not _offered(rig, "tool_composition_v1"):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # never offered: the entry is skipped (feature not negotiated)
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        parents = [("a settled tool/call", req.wire_id)]
        started = _collected(rig, "command/execute", {"name": COMMAND, "arguments": []})
        if started is not None:
            parents.append(("a command/execute", started[1].wire_id))
        for n, (what, parent) in enumerate(parents):
            reply = _child_answer(rig, f"context-{n}", "composition/context", {"parent_request_id": parent})
            if reply is None:
                continue
            rig.recorder.exercise(requirement)
            if hasattr(reply, "result"):
                rig.recorder.violate(Violation(requirement, f"composition/context was served under {what}"))
        if started is not None:
            rig.respond(started[1].wire_id, COMMAND_RESULT)
            rig.settled(started[0])
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("composition-authority", run)


def agent_sessions_unbound(api_version: str) -> Scenario:
    """§1.1 (API 0.2, when the host offers agent_sessions): an agent call
    whose resource owner is not bound -- its parent tool/call has settled --
    fails with -32002."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-agent-sessions-unbound"
        ready(rig, api_version, answer=negotiating(api_version, ("agent_sessions",)))
        if not _offered(rig, "agent_sessions"):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # never offered: the entry is skipped (feature not negotiated)
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        reply = _child_answer(rig, "agents-1", "agent/list", {"parent_request_id": req.wire_id})
        if reply is not None:
            rig.recorder.exercise(requirement)
            code = getattr(reply, "code", None)
            if code != -32002:
                shown = "a result" if hasattr(reply, "result") else f"error {code!r}"
                rig.recorder.violate(Violation(requirement, f"agent/list with no bound owner was answered {shown}"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("agent-sessions-unbound", run)
