"""§0, §1.1: manifests the host must refuse, environments and secrets it
must handle, and services an extension did not declare or negotiate."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import SSH_AUTH_SOCK_MARKER
from conformance.peers.host_rig import HostRig
from conformance.protocol import limits
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import offered_features
from conformance.scenarios.host_packaging import load_refused
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, TOOL, ready, start_call, tool_result

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

    return Scenario("manifest-read-bound", run)


def environment_invalid(api_version: str) -> Scenario:
    """§1.1: [capabilities].environment may name only SSH_AUTH_SOCK, and not at
    all on API 0.1."""

    def run(rig: HostRig) -> None:
        names = ["SSH_AUTH_SOCK"] if api_version == "0.1" else ["HOME"]
        what = f"an API {api_version} manifest declaring environment {names}"
        _refuses_manifest(
            rig, "EXT-1.1-host-environment-invalid", what, api_version, capabilities={"environment": names}
        )

    return Scenario("environment-invalid", run)


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

    return Scenario("secret-names", run)


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

    return Scenario("environment-handling", run)


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

    return Scenario("undeclared-services", run)


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

    return Scenario("headless-input", run)


def _child_answer(rig: HostRig, cid: str, method: str, params: dict[str, Any]) -> Any:
    """The probe sends a request to the host; its answer (None if none came; judged: it must come)."""
    return rig.ask(cid, method, params)


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

    return Scenario("secrets-not-injected", run)
