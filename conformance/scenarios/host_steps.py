"""What every host scenario starts from: the probe's contributions, a valid
initialize answer, loading a ready generation and starting a tool call.

Scenarios wait for what the host must do (a frame, a driver event), never
for silence: the driver contract orders a host's events per extension
(docs/host-driver.md), so "the host handled frame A" is known once it
reports on a later frame B. The state machine (machines/host.py) uses the
same steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRequest, HostRig

TOOL = "probe"
CONTRIBUTES: dict[str, Any] = {"tools": [TOOL], "confirmations": True}
TOOL_DEF = {"name": TOOL, "description": "the suite's probe tool", "parameters": {"type": "object"}}
REQUIRED = ("request_cancellation", "content_parts")
# How much longer than the host's own stage the probe waits to see it act
# (a loaded machine must never turn into a verdict).
SLACK_S = 1.5
REQUEST_CANCELLED = -32800  # §1.9: how a cooperative extension settles a cancelled request
# Sixteen times a Linux pipe buffer: a host that does not drain stderr
# blocks the probe long before the end.
FLOOD_BYTES = 1024 * 1024


class HostRejected(RuntimeError):
    """The host rejected a valid initialize answer: nothing else can be certified."""


class HostQueued(RuntimeError):
    """The host holds a call back while others are outstanding (§0, §1.1: it
    admits requests through its own concurrency limit, which may be lower
    than a scenario needs). Not a fault: the scenario ends there, and what it
    has not judged stays untested."""


def room(rig: HostRig) -> int | None:
    """How many requests the host may have outstanding to the probe at once:
    the negotiated max_concurrent_requests (the smaller of the host's offer
    and the probe's answer, §1.1); None when nothing on the wire bounds it
    (API 0.1, or before negotiation)."""
    negotiated = rig.session.negotiated if rig.session is not None else None
    if negotiated is None or negotiated.is_legacy:
        return None
    return negotiated.max_concurrent_requests


def initialize_result(params: Any, api_version: str, **changes: Any) -> dict[str, Any]:
    """A valid answer to the host's initialize (optionally changed). API 0.2+:
    the required features plus request_progress when offered, concurrency 4."""
    result: dict[str, Any] = {"api_version": api_version, "tools": [dict(TOOL_DEF)], "commands": []}
    if api_version != "0.1":
        protocol = params.get("protocol", {}) if isinstance(params, dict) else {}
        offered = protocol.get("optional_features", []) if isinstance(protocol, dict) else []
        features = [*REQUIRED, *(["request_progress"] if "request_progress" in offered else [])]
        version = protocol.get("version", api_version) if isinstance(protocol, dict) else api_version
        result["protocol"] = {"version": version, "features": features, "limits": {"max_concurrent_requests": 4}}
    result.update(changes)
    return result


def tool_result(api_version: str, text: str = "ok") -> dict[str, Any]:
    if api_version == "0.1":
        return {"content": text, "is_error": False}
    return {"content": [{"type": "text", "text": text}], "is_error": False}


def ready(
    rig: HostRig,
    api_version: str,
    *,
    contributes: dict[str, Any] | None = None,
    answer: Callable[[Any], Any] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Load the probe with a valid answer (or ``answer(params)``, which the
    host must accept); returns the driver's load answer."""
    loaded = rig.load(
        api_version,
        CONTRIBUTES if contributes is None else contributes,
        answer or (lambda p: initialize_result(p, api_version)),
        capabilities=capabilities,
    )
    if loaded.get("outcome") != "ready":
        raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
    # Entries gated on a feature (request_cancellation, ...) are judged only
    # once the recorder knows the probe negotiated it, as on the extension side.
    if rig.session is not None and rig.session.negotiated is not None:
        rig.recorder.negotiated_features.update(rig.session.negotiated.features)
    return loaded


def start_call(rig: HostRig, text: str = "x") -> tuple[str, HostRequest]:
    """Start a tool call and wait for its frame. A host that holds it back
    while other requests are outstanding (a concurrency limit, §0/§1.1)
    raises :class:`HostQueued`; one that never writes it, HostRejected."""
    call, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": text}})
    if isinstance(answer, OperationError):
        raise HostRejected(f"the host refused a tool call: {answer.code} {answer.message}")
    req = rig.next_request("tool/call")
    if req is None:
        # A cancelled call the probe has not settled may still hold its slot (§1.9 leaves it open).
        busy = len(rig.session.open_calls()) + len(rig.session.cancelled_unanswered()) if rig.session else 0
        if busy:
            raise HostQueued(f"the host held a tool call back while {busy} request(s) were outstanding")
        raise HostRejected("the host never wrote the tool call to the extension")
    return call, req
