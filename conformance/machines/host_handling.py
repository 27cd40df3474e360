"""Host scenarios for what a host does with what it is given (§0, §1.1-§1.8),
judged through the driver's view (load outcomes, settlements) and the probe's.

Each scenario loads a fresh probe generation (or asks the host to load a
manifest it must refuse), plays one situation and records findings under the
requirement id written in its body. Like :mod:`.host_scenarios`, they wait
for what the host must do (an answer, an event), never for silence.

How to use: :func:`handling_scenarios` lists them for an API version; each is
``fn(rig)``; the runner gives every one a fresh :class:`HostRig`.

No false positives (never stricter than the text):

* a manifest the host must refuse may be answered ``refused``, ``rejected``
  or with an operation error; only starting its process or reporting it
  ``ready`` fails;
* a tool result the host must refuse may settle as anything but ``result``
  (``failed`` is the contract's word, ``error`` also passes); a call that
  never settles is not these rules' concern;
* an API 0.1 tool error may settle as a ``result`` whose ``is_error`` is true
  or as an ``error``;
* a menu the host must discard passes when the host shows anything but that
  menu with only declared commands (its generated entries are its own);
* timing rules get :data:`~.host_scenarios.SLACK_S` on top of the host's bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.machines.host_scenarios import (
    CONTRIBUTES,
    LAST_ERROR_BYTES,
    SLACK_S,
    TOOL,
    TOOL_DEF,
    HostRejected,
    Scenario,
    initialize_result,
    judge_refused,
    load_refused,
    offered_features,
    ready,
    shutdown_with,
    start_call,
    tool_result,
)
from conformance.peers.host_driver import SSH_AUTH_SOCK_MARKER, DriverEvent, OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol import limits
from conformance.protocol.host_initialize import offer_from
from conformance.protocol.violations import Violation


def negotiating(
    api_version: str, wanted: tuple[str, ...], *, commands: list[dict[str, Any]] | None = None, **if_all: Any
) -> Callable[[Any], dict[str, Any]]:
    """An initialize answer (for ``ready``) that also negotiates each of
    ``wanted`` the host offered and, when it offered them all, carries
    ``if_all`` (say, tools only a negotiated feature makes acceptable)."""

    def answer(params: Any) -> dict[str, Any]:
        result = initialize_result(params, api_version)
        if commands is not None:
            result["commands"] = commands
        taken = [f for f in wanted if f in offer_from(params).optional_features]
        if taken:
            result["protocol"] = {**result["protocol"], "features": [*result["protocol"]["features"], *taken]}
        return {**result, **if_all} if len(taken) == len(wanted) else result

    return answer


def _offered(rig: HostRig, *features: str) -> bool:
    return all(f in offered_features(rig) for f in features)


# -- §0, §1.1: manifests the host must refuse --------------------------------------------------


def _refuses_manifest(
    rig: HostRig,
    requirement: str,
    what: str,
    api_version: str,
    *,
    capabilities: dict[str, Any] | None = None,
    pad_to: int = 0,
) -> None:
    """Ask the host to load a probe manifest it must refuse (with these
    ``capabilities``, or padded by a TOML comment to ``pad_to`` bytes): starting
    its process or reporting it ready fails ``requirement``."""
    token = rig.listener.new_token()
    manifest = rig.listener.write_manifest(
        token,
        api_version=api_version,
        contributes=CONTRIBUTES,
        capabilities={"filesystem": "none", **(capabilities or {})},
    )
    if pad_to:
        text = manifest.read_bytes()
        filler = max(0, pad_to - len(text) - 3)
        manifest.write_bytes(text + b"# " + b"x" * filler + b"\n")
    started, loaded = load_refused(rig, token, manifest)
    rig.recorder.exercise(requirement)
    outcome = loaded.get("outcome") if isinstance(loaded, dict) else None
    if started or outcome == "ready":
        done = "started its process" if started else "reported it ready"
        rig.recorder.violate(Violation(requirement, f"the host {done}: {what}"))


def manifest_read_bound(api_version: str) -> Scenario:
    """§0: product discovery reads a manifest through a 256 KiB bound; one byte
    more is not loaded."""

    def run(rig: HostRig) -> None:
        size = limits.MANIFEST_READ_BYTES + 1
        _refuses_manifest(
            rig, "EXT-0-host-manifest-read-bound", f"a manifest of {size} bytes", api_version, pad_to=size
        )

    run.__name__ = "manifest-read-bound"
    return run


def environment_invalid(api_version: str) -> Scenario:
    """§1.1: [capabilities].environment may name only SSH_AUTH_SOCK, and not at
    all on API 0.1."""

    def run(rig: HostRig) -> None:
        names = ["SSH_AUTH_SOCK"] if api_version == "0.1" else ["HOME"]
        what = f"an API {api_version} manifest declaring environment {names}"
        _refuses_manifest(
            rig, "EXT-1.1-host-environment-invalid", what, api_version, capabilities={"environment": names}
        )

    run.__name__ = "environment-invalid"
    return run


BAD_SECRET_NAMES: tuple[list[str], ...] = (
    ["1TOKEN"],  # a digit first
    ["T" * (limits.MAX_SECRET_NAME_BYTES + 1)],  # 65 bytes
    ["TOKEN", "TOKEN"],  # a duplicate
    ["TOKEN NAME"],  # a space
)


def secret_names(api_version: str) -> Scenario:
    """§1.1: a secrets allowlist with a duplicate, or a name that is not an
    identifier of at most 64 ASCII bytes, makes the manifest invalid."""

    def run(rig: HostRig) -> None:
        for names in BAD_SECRET_NAMES:
            shown = [n if len(n) < 20 else n[:8] + f"...({len(n)} bytes)" for n in names]
            _refuses_manifest(
                rig,
                "EXT-1.1-host-validates-secret-names",
                f"a manifest whose secrets allowlist is {shown}",
                api_version,
                capabilities={"secrets": names},
            )

    run.__name__ = "secret-names"
    return run


def environment_handling(api_version: str) -> Scenario:
    """§1.1 (API 0.2+): SSH_AUTH_SOCK (which the suite sets for the driver) is
    absent from an extension that does not declare it; declared or not, its
    value never appears in initialize."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-environment-handling"
        for declared in (False, True):
            ready(rig, api_version, capabilities={"environment": ["SSH_AUTH_SOCK"]} if declared else None)
            rig.recorder.exercise(requirement)
            env = rig.link.hello.get("env", []) if rig.link is not None else []
            if not declared and "SSH_AUTH_SOCK" in env:
                rig.recorder.violate(
                    Violation(requirement, "SSH_AUTH_SOCK reached an extension that did not declare it")
                )
            if SSH_AUTH_SOCK_MARKER in repr(rig.initialize_params):
                rig.recorder.violate(Violation(requirement, "the SSH_AUTH_SOCK value was sent in initialize"))
            shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "environment-handling"
    return run


# -- §0, §1.1: services an extension did not declare or negotiate --------------------------------

GENERIC_INTENT = {
    "kind": "external_side_effect",
    "operation": "probe.generic_operation",
    "target": {"origin": "https://example.invalid", "label": "the probe's generic operation"},
    "data_classes": ["user_text"],
    "adapter_hints": {"read_only": False, "destructive": False},
}


def undeclared_services(api_version: str) -> Scenario:
    """§0: a service is served only when declared and offered. The probe's
    manifest declares no confirmations and the host never offered secrets,
    so confirmation/request and secret/get under an active call must be
    refused (an error answer). §1.1 (API 0.2+): a generic policy/evaluate is
    denied (or refused: policy_intents was never negotiated), never allowed."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-0-host-capabilities-route-services"
        ready(rig, api_version, contributes={"tools": [TOOL]})
        call, req = start_call(rig)
        parent: dict[str, Any] = {} if api_version == "0.1" else {"parent_request_id": req.wire_id}
        asked = [("service-1", "confirmation/request", {**parent, "prompt": "Proceed?", "default": False})]
        if api_version != "0.1" and "secrets" not in offered_features(rig):
            asked.append(("service-2", "secret/get", {**parent, "name": "OCTET_PROBE_TOKEN"}))
        for cid, method, params in asked:
            answer = _child_answer(rig, cid, method, params)
            if answer is None:
                continue  # never answered: judged by the §2 rules, not here
            rig.recorder.exercise(requirement)
            if hasattr(answer, "result"):
                rig.recorder.violate(Violation(requirement, f"the host served {method}, which was never declared"))
        if api_version != "0.1":
            policy = "EXT-1.1-host-policy-generic-deny"
            answer = _child_answer(rig, "service-3", "policy/evaluate", {**parent, "intent": GENERIC_INTENT})
            if answer is not None:
                rig.recorder.exercise(policy)
                result = getattr(answer, "result", None)
                decision = result.get("decision") if isinstance(result, dict) else None
                if hasattr(answer, "result") and decision != "deny":
                    rig.recorder.violate(Violation(policy, f"a generic policy/evaluate was answered {decision!r}"))
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "undeclared-services"
    return run


def headless_input(api_version: str) -> Scenario:
    """§0 (API 0.2+): a service needs a bound frontend. The probe is loaded
    headless (no interactive frontend); its input/request under an active
    call is answered null (unavailable) or refused, never with a value."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-0-host-service-needs-binding"
        ready(rig, api_version)
        call, req = start_call(rig)
        answer = _child_answer(rig, "input-1", "input/request", {"parent_request_id": req.wire_id, "prompt": "Name?"})
        if answer is not None:
            rig.recorder.exercise(requirement)
            result = getattr(answer, "result", None)
            value = result.get("value") if isinstance(result, dict) else None
            if value is not None:
                rig.recorder.violate(Violation(requirement, f"a headless host answered input/request with {value!r}"))
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "headless-input"
    return run


def _child_answer(rig: HostRig, cid: str, method: str, params: dict[str, Any]) -> Any:
    """The probe sends a request to the host; its answer (None if none came)."""
    rig.child_request(cid, method, params)
    return rig.answer_to(cid)


# A secret name the probe's manifest allows: the host may broker it (secret/get,
# with the secrets feature), never put it in the extension's environment.
ALLOWED_SECRET = "OCTET_PROBE_TOKEN"


def secrets_not_injected(api_version: str) -> Scenario:
    """§1.1 (API 0.2+): a manifest's secrets allowlist is for the broker only:
    no allowed name appears in the extension's environment."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.1-host-secrets-allowlist-exact"
        ready(rig, api_version, capabilities={"secrets": [ALLOWED_SECRET]})
        rig.recorder.exercise(requirement)
        env = rig.link.hello.get("env", []) if rig.link is not None else []
        if ALLOWED_SECRET in env:
            rig.recorder.violate(Violation(requirement, f"the allowed secret {ALLOWED_SECRET} was in the environment"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "secrets-not-injected"
    return run


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

    run.__name__ = "dynamic-tools-epoch-0"
    return run


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

    run.__name__ = "no-command-registration"
    return run


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
        if rig.relaunched(rig.patience_s) is None:
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # no candidate started: nothing to judge
        first = rig.next_request("initialize")
        if first is not None:
            changed = negotiating(api_version, ("runtime_commands",), commands=[COMMAND_DEF, OTHER_COMMAND_DEF])
            rig.respond(first.wire_id, changed(first.params))
        # Decided once the host diagnoses a refusal or inspect shows another
        # generation; meanwhile a candidate it lets go is acknowledged.
        deadline = rig.clock() + rig.patience_s
        status: Any = None
        while rig.clock() < deadline:
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

    run.__name__ = "runtime-commands-reload"
    return run


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

    run.__name__ = "prompt-metadata-registration"
    return run


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

    run.__name__ = "composition-authority"
    return run


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

    run.__name__ = "agent-sessions-unbound"
    return run


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

    run.__name__ = "structured-results"
    return run


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

    run.__name__ = "unverified-media"
    return run


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

    run.__name__ = "legacy-tool-error"
    return run


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

    run.__name__ = "null-status"
    return run


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

    run.__name__ = "menu-handling"
    return run


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
            rig.timing = {**rig.timing, "menu_timeout_ms": SCALED_MENU_TIMEOUT_MS}
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

    run.__name__ = "menu-timeout"
    return run


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

    run.__name__ = "lifecycle-default-all"
    return run


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

    run.__name__ = "command-result"
    return run


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

    run.__name__ = "hook-deny"
    return run


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

    run.__name__ = "placement-default"
    return run


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

    run.__name__ = "menu-action"
    return run


def menu_destructive(api_version: str) -> Scenario:
    """§1.6b (API 0.2+, capabilities ``menu`` and ``frontend``): a destructive
    action is confirmed with the person before it runs; its first
    confirmation/request is then pre-approved (answered yes, nobody asked),
    its second is asked again. Judged on the driver's ``prompt`` events."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.6b-host-menu-destructive"
        if not (rig.driver.has("menu") and rig.driver.has("frontend")):
            return  # unexercised: reported untested, never pass
        rig.frontend = dict(INTERACTIVE_YES)
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
            rig.patience_s,
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

    run.__name__ = "menu-destructive"
    return run


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
                rig.patience_s,
                idle=lambda: rig.tick(0.0),
            )
            if shown is None:
                rig.recorder.violate(Violation(requirement, "a menu action's progress was not shown"))
        rig.op("cancel", {"call": call, "reason": "user"})
        settled = rig.settled(call)
        if settled is not None and settled.params.get("outcome") != "cancelled":
            outcome = settled.params.get("outcome")
            rig.recorder.violate(Violation(requirement, f"a cancelled menu action settled as {outcome!r}"))
        _after_action(rig)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "menu-in-place"
    return run


# -- §1.11 (driver capability ``wave1``) ---------------------------------------------------------


def wave1_refusal(api_version: str) -> Scenario:
    """§1.11 (API 0.2+): asked to send shortcut/trigger, which the probe never
    negotiated, the host refuses it with a diagnostic of at most 4 KiB (the
    session fails it if it reaches the probe); a call after it orders the events."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.11-host-refusal-diagnostic"
        if not rig.driver.has("wave1"):
            return  # unexercised: reported untested, never pass
        ready(rig, api_version)
        before = len(_diagnostics(rig))
        answer = rig.op("observe", {"extension": rig.handle, "event": "shortcut/trigger", "params": {"id": "s1"}})
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)  # a diagnostic about the refusal came before this (the contract's order)
        if not isinstance(answer, OperationError):
            rig.recorder.exercise(requirement)
            new = _diagnostics(rig)[before:]
            if not rig.notes("shortcut/trigger") and not new:
                rig.recorder.violate(Violation(requirement, "an unnegotiated shortcut/trigger was refused silently"))
            elif [d for d in new if len(str(d.params.get("message")).encode()) > LAST_ERROR_BYTES]:
                rig.recorder.violate(Violation(requirement, "the refusal's diagnostic is over 4 KiB"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "wave1-refusal"
    return run


def _diagnostics(rig: HostRig) -> list[DriverEvent]:
    return [e for e in rig.events("diagnostic") if e.params.get("extension") == rig.handle]


# -- §1.8 ---------------------------------------------------------------------------------------


def draining(api_version: str) -> Scenario:
    """§1.8 (API 0.2+): a call still open when the extension is shut down is
    cancelled by the host's drain (it settles ``cancelled``), not left to die
    with the process."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-draining"
        ready(rig, api_version)
        call, _ = start_call(rig)  # never answered
        shutdown_with(rig, ack=True, exit_after_ack=True)
        settled = rig.settled(call)
        if settled is None:
            return  # never settled: not this rule's concern
        rig.recorder.exercise(requirement)
        outcome = settled.params.get("outcome")
        if outcome != "cancelled":
            rig.recorder.violate(
                Violation(requirement, f"a call open at shutdown settled as {outcome!r}, not cancelled by the drain")
            )

    run.__name__ = "draining"
    return run


# A long stage and a short aggregate: per-connection stages alone would take
# 2 x 2 s; the aggregate deadline ends the stubborn probe after 0.6 s.
AGGREGATE_STAGE_MS = 2000
AGGREGATE_MS = 600


def aggregate_deadline(api_version: str) -> Scenario:
    """§1.8 (driver capability ``timing``): product shutdown (``shutdown {}``)
    of a probe that never acknowledges ends its process group within the
    aggregate deadline (plus a slack), however long the per-connection stages."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-aggregate-deadline"
        if not rig.driver.has("timing"):
            return  # with the spec's 2 s stages and 3 s aggregate the two cannot be told apart
        rig.timing = {**rig.timing, "shutdown_timeout_ms": AGGREGATE_STAGE_MS, "shutdown_aggregate_ms": AGGREGATE_MS}
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {})
        asked = link.now()
        bound = AGGREGATE_MS / 1000 + SLACK_S
        rig.until(lambda: not link.running(), bound)
        rig.recorder.exercise(requirement)
        if link.running():
            rig.recorder.violate(
                Violation(requirement, "product shutdown left a silent extension past the aggregate deadline"),
                measured={"aggregate_s": AGGREGATE_MS / 1000, "waited_s": round(link.now() - asked, 3)},
            )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))

    run.__name__ = "aggregate-deadline"
    return run


# The interactive exit's cap (§1.8) and stages long enough that only the cap
# can end a silent probe in time: the aggregate (4.5 s) and the stages (2 x 3 s) cannot.
INTERACTIVE_CAP_S = 1.4
INTERACTIVE_STAGE_MS = 3000
INTERACTIVE_AGGREGATE_MS = 4500


def interactive_cap(api_version: str) -> Scenario:
    """§1.8 (driver capabilities ``exits`` and ``timing``): an interactive exit
    (``shutdown {"exit": "interactive"}``) ends a probe that never
    acknowledges within 1.4 s (plus a slack), cutting its stages short."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-interactive-cap"
        if not (rig.driver.has("exits") and rig.driver.has("timing")):
            return  # unexercised: reported untested, never pass
        rig.timing = {
            **rig.timing,
            "shutdown_timeout_ms": INTERACTIVE_STAGE_MS,
            "shutdown_aggregate_ms": INTERACTIVE_AGGREGATE_MS,
        }
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {"exit": "interactive"})
        asked = link.now()
        rig.until(lambda: not link.running(), INTERACTIVE_CAP_S + SLACK_S)
        rig.recorder.exercise(requirement)
        if link.running():
            rig.recorder.violate(
                Violation(requirement, "an interactive exit left a silent extension running past 1.4 s"),
                measured={"cap_s": INTERACTIVE_CAP_S, "waited_s": round(link.now() - asked, 3)},
            )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))

    run.__name__ = "interactive-cap"
    return run


# -- §2.5: the snapshot rate bound ---------------------------------------------------------------

SNAPSHOTS_PER_WINDOW = 32  # §2.5: one generation, one one-second window
SNAPSHOT_BURST = 100


def presentation_rate(api_version: str) -> Scenario:
    """§2.5 (API 0.2+): under an active call the probe writes 100 valid
    snapshots (revisions 1-100) in one write. A host shows at most 32 per
    one-second window and coalesces the rest, last wins, showing the newest
    when the next window opens. Judged on the driver's presentation
    contributions: the burst may straddle a window boundary, so up to
    2 x 32 + 1 may be shown; more fails, and so does never showing revision
    100 within two windows and a slack (the excess was dropped, not coalesced)."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-2.5-host-rate-bound"
        ready(rig, api_version, contributes={**CONTRIBUTES, "presentation": True})
        call, req = start_call(rig)
        status = {"state": "active", "label": "probe"}
        for revision in range(1, SNAPSHOT_BURST + 1):
            snapshot = {"revision": revision, "status": status, "activities": [], "actions": []}
            rig.send({"jsonrpc": "2.0", "method": "presentation/update",
                      "params": {"parent_request_id": req.wire_id, "snapshot": snapshot}})  # fmt: skip

        def revisions() -> list[Any]:
            events = rig.events("contribution")
            shown = [e.params.get("value") for e in events if e.params.get("kind") == "presentation"]
            return [v.get("snapshot", {}).get("revision") if isinstance(v, dict) else None for v in shown]

        newest = rig.until(lambda: SNAPSHOT_BURST in revisions(), 2 * 1.0 + SLACK_S)
        shown = revisions()
        if shown:  # a host that shows no snapshot at all (a refusal) is not judged here
            rig.recorder.exercise(requirement)
            if len(shown) > 2 * SNAPSHOTS_PER_WINDOW + 1:
                rig.recorder.violate(
                    Violation(requirement, f"{len(shown)} of {SNAPSHOT_BURST} snapshots written at once were shown"),
                    measured={"shown": len(shown)},
                )
            elif not newest:
                rig.recorder.violate(
                    Violation(requirement, f"the newest snapshot (revision {SNAPSHOT_BURST}) was never shown"),
                    measured={"waited_s": 2 + SLACK_S},
                )
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "presentation-rate"
    return run


def handling_scenarios(api_version: str) -> list[Scenario]:
    makers: list[Callable[[str], Scenario]] = [
        manifest_read_bound,
        environment_invalid,
        null_status,
        command_result,
        hook_deny,
        placement_default,
        undeclared_services,
    ]
    if api_version == "0.1":
        makers += [legacy_tool_error]
    else:
        makers += [
            secret_names,
            environment_handling,
            secrets_not_injected,
            headless_input,
            dynamic_tools_epoch_0,
            no_command_registration,
            runtime_commands_reload,
            structured_results,
            unverified_media,
            menu_handling,
            menu_timeout,
            menu_action,
            menu_destructive,
            menu_in_place,
            lifecycle_default_all,
            wave1_refusal,
            draining,
            presentation_rate,
        ]
    if api_version == "0.2":
        makers += [agent_sessions_unbound]  # API 0.4 adds a retained-owner contract this does not model
    if api_version == "0.4":
        makers += [prompt_metadata_registration, composition_authority]
    makers += [aggregate_deadline, interactive_cap]  # last: product shutdowns end every extension of the host
    return [make(api_version) for make in makers]
