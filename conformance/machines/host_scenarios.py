"""Fixed host scenarios: the probe scripted through one situation each.

Each scenario loads a fresh probe generation through the driver, plays one
situation, and records findings with the requirement id it judges. Scenarios
wait for what the host must do (a frame, an event), never for silence: the
contract orders a host's events per extension (docs/host-driver.md), so "the
host handled frame A" is known once it reports on a later frame B.

How to use: :func:`scenarios_for` lists the scenarios for an API version;
each is ``fn(rig)``; the runner (:mod:`conformance.runner.host`) gives every
one a fresh :class:`HostRig` and guards it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import ErrorAnswer, HostRequest, HostRig, ProbeGone
from conformance.protocol import jsonrpc
from conformance.protocol.host_initialize import offer_from
from conformance.protocol.host_notifications import CancelWatch, cancel_sent
from conformance.protocol.limits import (
    MAX_CHILD_ID_BYTES,
    MAX_CHILD_IDS_PER_GENERATION,
    MAX_FRAME_BYTES,
    MAX_INITIALIZE_COMMANDS,
    MAX_OUTSTANDING_CHILDREN,
    MAX_SETTLED_REASON_BYTES,
    MESSAGE_BATCH_DELTAS,
)
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation

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

Scenario = Callable[[HostRig], None]


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


# -- §1.1 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BadInitialize:
    name: str
    requirement: str
    apis: tuple[str, ...]
    change: Callable[[dict[str, Any], str], dict[str, Any] | ErrorAnswer]
    contributes: dict[str, Any] | None = None  # the probe manifest's (CONTRIBUTES when None)


def _protocol(result: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**result, "protocol": {**result["protocol"], **changes}}


# §1.1: more command definitions than a host accepts; the manifest declares
# every one of them, so only the count is wrong.
TOO_MANY_COMMANDS = [f"c{index}" for index in range(MAX_INITIALIZE_COMMANDS + 1)]
# §1.1: approvals builds on policy_intents (limits.FEATURE_DEPENDENCIES).
DEPENDENT_FEATURE = "approvals"


BAD_INITIALIZE = (
    BadInitialize(
        "api-version-differs",
        "EXT-1.1-host-rejects-api-version-mismatch",
        ("0.1", "0.2", "0.4"),
        lambda r, api: {**r, "api_version": "0.2" if api == "0.1" else "0.1"},
    ),
    BadInitialize(
        "tools-differ", "EXT-1.1-host-rejects-bad-catalog", ("0.1", "0.2", "0.4"), lambda r, _: {**r, "tools": []}
    ),
    BadInitialize(
        "duplicate-tool",
        "EXT-1.1-host-rejects-duplicate-names",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "tools": [TOOL_DEF, TOOL_DEF]},
    ),
    BadInitialize(
        "empty-description",
        "EXT-1.1-host-rejects-bad-tool-definition",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "tools": [{**TOOL_DEF, "description": ""}]},
    ),
    BadInitialize(
        "missing-required-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=["request_cancellation"]),
    ),
    BadInitialize(
        "unknown-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*REQUIRED, "teleportation"]),
    ),
    BadInitialize(
        "duplicate-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*REQUIRED, "content_parts"]),
    ),
    BadInitialize(
        "subscription-without-feature",
        "EXT-1.1-host-rejects-bad-subscription",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, lifecycle_events=["session/started"]),
    ),
    BadInitialize(
        "zero-concurrency",
        "EXT-1.1-host-rejects-bad-concurrency",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, limits={"max_concurrent_requests": 0}),
    ),
    BadInitialize(
        "initialize-error",
        "EXT-1.1-host-rejected-child-isolated",
        ("0.1", "0.2", "0.4"),
        lambda r, _: ErrorAnswer(-32603, "the probe cannot start"),
    ),
    BadInitialize(
        "feature-without-base",
        "EXT-1.1-host-rejects-feature-dependencies",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*r["protocol"]["features"], DEPENDENT_FEATURE]),
    ),
    BadInitialize(
        "output-schema-outside-subset",
        "EXT-1.1-host-rejects-output-schema",
        ("0.2", "0.4"),
        lambda r, _: {**r, "tools": [{**TOOL_DEF, "output_schema": {"type": "object", "if": {"type": "object"}}}]},
    ),
    BadInitialize(
        "too-many-commands",
        "EXT-1.1-host-rejects-too-many-commands",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "commands": [{"name": c, "description": "a command"} for c in TOO_MANY_COMMANDS]},
        {**CONTRIBUTES, "commands": TOO_MANY_COMMANDS},
    ),
)


def bad_initialize(case: BadInitialize, api_version: str) -> Scenario:
    """§1.1: the host must reject the child, and route nothing to it. The
    session judges both (a ``ready`` report after an answer it must refuse;
    any routed frame); here the probe answers and a call is tried."""

    def run(rig: HostRig) -> None:
        contributes = CONTRIBUTES if case.contributes is None else case.contributes
        loaded = rig.load(
            api_version, contributes, lambda p: case.change(initialize_result(p, api_version), api_version)
        )
        session = rig.session
        if session is not None and session.negotiated is None and not session.rejections:
            # The host never had this answer judged as its initialize answer
            # (it wrote another request first, say): the session has already
            # judged that, and there is no rejection to exercise here.
            return
        if session is not None and case.requirement not in session.rejections:
            raise AssertionError(f"{case.name}: the session does not require rejecting it ({session.rejections})")
        if rig.handle is None:
            return
        _, refused = rig.call("tool/call", {"name": TOOL, "arguments": {}})
        if not isinstance(refused, OperationError) or loaded.get("outcome") == "ready":
            rig.next_request("tool/call", timeout=1.0)  # a routed frame, if any, goes through the session

    run.__name__ = f"bad-initialize[{case.name}]"
    return run


# -- §1.2, §1.8 -----------------------------------------------------------------------------


def call_and_shutdown(api_version: str) -> Scenario:
    """A valid tool result is delivered; shutdown is a request, acknowledged, then exit."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version, "hello"))
        settled = rig.settled(call)
        if settled is None or settled.params.get("outcome") != "result":
            raise HostRejected(f"a valid tool result was not delivered: {settled}")
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "call-and-shutdown"
    return run


def shutdown_with(rig: HostRig, *, ack: bool, exit_after_ack: bool, bound_s: float | None = None) -> bool:
    """Ask the host to shut the extension down; the probe acknowledges (or not)
    and exits (or not). With ``bound_s``: returns whether the probe was still
    running ``bound_s`` after the shutdown request arrived -- looked at once
    that time has passed, so a harness that falls behind on a loaded machine
    only looks later at a probe that can only have ended meanwhile. (A
    measured duration would be an upper bound, which cannot prove lateness.)"""
    if rig.link is None or not rig.link.running():
        raise ProbeGone("the extension ended before its shutdown")  # nothing to shut down: not judged
    rid = rig.driver.start("shutdown", {"extension": rig.handle})
    # Stop waiting as soon as the host closed stdin or ended the probe: a
    # shutdown request written after that could not be read anyway.
    rig.until(lambda: _has_request(rig, "shutdown") or rig.stdin_closed or not (rig.link and rig.link.connected))
    req = rig.next_request("shutdown", timeout=0.0)
    rig.recorder.exercise("EXT-0-host-graceful-shutdown-request")
    if req is None:
        closed = "closed the extension's stdin" if rig.eof_while_running else "ended the extension"
        rig.recorder.violate(
            Violation("EXT-0-host-graceful-shutdown-request", f"the host {closed} without a shutdown request")
        )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
        return False
    link = rig.link
    asked = rig.clock()
    if ack:
        rig.respond(req.wire_id, {})
        if exit_after_ack:
            rig.command({"t": "exit", "code": 0})
    late = False
    if bound_s is not None and link is not None:
        rig.until(lambda: not link.running(), max(0.0, asked + bound_s - rig.clock()))
        late = link.running()
    rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
    if link is not None:
        link.wait_exit(15.0)
    return late


def _has_request(rig: HostRig, method: str) -> bool:
    return any(r.method == method for r in rig.requests)


def stubborn_shutdown(*, ack: bool) -> Callable[[str], Scenario]:
    """§1.8: a probe that never acknowledges (or acknowledges and never exits),
    ignores SIGTERM and has a SIGTERM-ignoring grandchild: the host must end
    the whole process group within its stages."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            rig.command({"t": "ignore_term"})
            rig.command({"t": "grandchild"})
            assert rig.link is not None
            rig.link.await_report("grandchild", rig.patience_s)
            stage = rig.stage_s
            bound = (1 if ack else 2) * stage + SLACK_S  # ack stage (unless acknowledged), then exit stage
            late = shutdown_with(rig, ack=ack, exit_after_ack=False, bound_s=bound)
            rig.recorder.exercise("EXT-1.8-host-shutdown-stages")
            if late:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-shutdown-stages",
                        "the extension was still running after both shutdown stages "
                        + ("(acknowledged, never exited)" if ack else "(never acknowledged)"),
                    ),
                    measured={"stage_s": stage, "still_running_after_s": round(bound, 3)},
                )
            # SIGKILL is delivered asynchronously: give a killed group a moment to die.
            pids = rig.link.pids()
            rig.until(lambda: not any(_alive(p) for p in pids), SLACK_S)
            leftover = [pid for pid in pids if _alive(pid)]
            rig.recorder.exercise("EXT-1.8-host-kills-process-group")
            if leftover:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-kills-process-group",
                        f"{len(leftover)} process(es) of the extension's group outlived its shutdown",
                    )
                )

        run.__name__ = "shutdown-ack-no-exit" if ack else "shutdown-no-ack"
        return run

    return make


def shutdown_exit_after_ack(api_version: str) -> Scenario:
    """§1.8: after the acknowledgement the host gives the extension its exit
    stage: the probe acknowledges and exits on its own a third of a stage
    later; a host that killed it before then did not wait. (The host's stage
    starts when it reads the acknowledgement, after the probe wrote it, so
    the probe's third of a stage is always shorter than the host's wait.)"""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {"extension": rig.handle})
        rig.until(lambda: _has_request(rig, "shutdown") or rig.stdin_closed or not link.connected)
        req = rig.next_request("shutdown", timeout=0.0)
        if req is not None:  # without one EXT-0-host-graceful-shutdown-request is judged by the other scenarios
            acked = rig.clock()  # before the bytes: the host's exit stage starts after it reads them
            rig.respond(req.wire_id, {})
            ended = rig.until(lambda: not link.running(), rig.stage_s / 3)
            rig.recorder.exercise("EXT-1.8-host-waits-for-exit")
            # Only an end seen within the third of a stage proves an early kill: a
            # harness that fell behind may look after the host rightly ended it.
            if ended and rig.clock() - acked < rig.stage_s / 3:
                rig.recorder.violate(
                    Violation(
                        "EXT-1.8-host-waits-for-exit",
                        "the extension was ended right after acknowledging shutdown, before its exit stage ran out",
                    ),
                    measured={"stage_s": rig.stage_s, "ended_within_s": round(rig.stage_s / 3, 3)},
                )
            elif link.running():
                rig.command({"t": "exit", "code": 0})
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))
        link.wait_exit(15.0)

    run.__name__ = "shutdown-exit-after-ack"
    return run


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped by its new parent counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


# -- §1.9 ---------------------------------------------------------------------------------


def cancel_then_late_response(api_version: str) -> Scenario:
    """Two calls; the first is cancelled: exactly one $/cancelRequest (API
    0.2+; on API 0.1 none at all), its waiter dropped, the late answer
    ignored and diagnosed, the second call intact. A host whose concurrency
    limit is 1 may write the second call only once the first frees its slot
    (at the cancel, or at the late answer): it is awaited after those."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        first, req1 = start_call(rig, "one")
        second, answer2 = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "two"}})
        if isinstance(answer2, OperationError):
            raise HostRejected(f"the host refused a tool call: {answer2.code} {answer2.message}")
        rig.op("cancel", {"call": first, "reason": "user"})
        rig.recorder.exercise("EXT-1.9-host-tombstone", "EXT-1.9-host-one-cancel-notification")
        if api_version != "0.1":
            cancel_told(rig, req1)
        settled = rig.settled(first)
        if settled is None or settled.params.get("outcome") != "cancelled":
            outcome = settled.params.get("outcome") if settled else "nothing"
            rig.recorder.violate(
                Violation("EXT-1.9-host-tombstone", f"a cancelled call settled as {outcome!r}, not cancelled")
            )
        rig.respond(req1.wire_id, tool_result(api_version, "late"))  # the late answer
        req2 = rig.until(lambda: _take(rig, "tool/call", {"text": "two"}))
        if req2 is None:
            raise HostRejected("the host never wrote the tool call to the extension")
        rig.respond(req2.wire_id, tool_result(api_version, "two"))
        other = rig.settled(second)
        rig.recorder.exercise("EXT-1.9-host-ignores-late-response")
        if other is None or other.params.get("outcome") != "result":
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-ignores-late-response", "a late answer to a cancelled call disturbed another call"
                )
            )
        if not [e for e in rig.events("diagnostic") if e.params.get("kind") == "stale-response"]:
            rig.recorder.violate(
                Violation("EXT-1.9-host-ignores-late-response", "a late answer to a cancelled call was not diagnosed")
            )
        # One serialized writer: once a later request arrives, every cancel
        # written for the first call has arrived before it (and every frame
        # the host wrote on its own since, such as a replay of the first call).
        third, answer3 = rig.call("tool/call", {"name": TOOL, "arguments": {"text": "three"}})
        if isinstance(answer3, OperationError):
            raise HostRejected(f"the host refused a tool call: {answer3.code} {answer3.message}")
        req3 = rig.until(lambda: _take(rig, "tool/call", {"text": "three"}))
        if req3 is None:
            raise HostRejected("the host never wrote the tool call to the extension")
        if api_version != "0.1":
            no_replay(rig, req1)
        if api_version == "0.1":  # API 0.1 has no $/cancelRequest: the session fails any that arrived
            rig.recorder.exercise("EXT-1.9-host-no-cancel-0.1")
        if len(_cancels_of(rig, req1.wire_id)) > 1:
            rig.recorder.violate(
                Violation("EXT-1.9-host-one-cancel-notification", "more than one $/cancelRequest for one call")
            )
        rig.respond(req3.wire_id, tool_result(api_version, "three"))
        rig.settled(third)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "cancel-then-late-response"
    return run


def cancel_told(rig: HostRig, req: HostRequest) -> None:
    """§1.9: after the driver's cancel of ``req`` (read by the probe, not
    answered), wait for the ``$/cancelRequest`` naming it -- until it comes,
    the host ends the probe, or patience runs out -- and judge what came."""
    link = rig.link

    def over() -> str | None:
        if _cancels_of(rig, req.wire_id):
            return "cancel"
        return "ended" if link is None or not link.connected or rig.stdin_closed else None

    ended = rig.until(over, rig.recorder.deadline_s("EXT-1.9-host-sends-cancel", rig.patience_s)) or "patience"
    watch = CancelWatch(req.method, req.wire_id, len(_cancels_of(rig, req.wire_id)), ended)
    rig.recorder.add(cancel_sent(watch))
    if ended == "patience":
        rig.recorder.missed_deadline("EXT-1.9-host-sends-cancel")  # later waits for it need not be long


def _take(rig: HostRig, method: str, arguments: Any) -> HostRequest | None:
    """The first queued request of ``method`` with these arguments, removed from the queue."""
    for req in rig.requests:
        if req.method == method and isinstance(req.params, dict) and req.params.get("arguments") == arguments:
            rig.requests.remove(req)
            return req
    return None


def no_replay(rig: HostRig, cancelled: HostRequest) -> None:
    """§1.9: a cancelled call's outcome is unknown to the host (the probe never
    settled it in time), so the operation is ambiguous; the probe tool declares
    no safety, so it may be unsafe: the host must not send it again on its own.
    Judged once a later request arrived (one serialized writer orders them)."""
    rig.recorder.exercise("EXT-1.9-host-no-replay")
    params = cancelled.params if isinstance(cancelled.params, dict) else {}
    replays = [
        r
        for r in rig.requests
        if r.method == cancelled.method and isinstance(r.params, dict)
        and r.params.get("name") == params.get("name") and r.params.get("arguments") == params.get("arguments")
    ]  # fmt: skip
    if replays:
        rig.recorder.violate(
            Violation(
                "EXT-1.9-host-no-replay",
                f"the cancelled {cancelled.method} {cancelled.wire_id!r} was sent again as {replays[0].wire_id!r}",
            )
        )


# Cancellation grace the probe asks for when the driver offers ``timing``
# (the spec's 2 s otherwise): short, so the scenario costs well under a second.
SCALED_GRACE_MS = 400
GRACE_S = 2.0  # §1.9 default


def cancel_grace(api_version: str) -> Scenario:
    """§1.9: a cancelled call the probe never settles. Within the grace plus
    a slack the host marks the generation degraded (a ``state`` event, which
    the contract requires for every transition) and ends the probe; ending it
    sooner than the grace is not judged here (the rule only bounds the wait)."""

    def run(rig: HostRig) -> None:
        grace_s = GRACE_S
        if rig.driver.has("timing"):
            rig.timing = {**rig.timing, "cancel_grace_ms": SCALED_GRACE_MS}
            grace_s = SCALED_GRACE_MS / 1000
        ready(rig, api_version)
        call, req = start_call(rig)
        rig.op("cancel", {"call": call, "reason": "user"})
        rig.recorder.exercise("EXT-1.9-host-terminates-after-grace")
        link, handle = rig.link, rig.handle
        assert link is not None
        rig.until(lambda: not link.running(), grace_s + SLACK_S)
        if link.running():
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-terminates-after-grace",
                    "the extension still ran after ignoring a cancellation for the whole grace",
                ),
                measured={"grace_s": grace_s, "waited_s": grace_s + SLACK_S},
            )
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return
        rig.until(lambda: _reported(rig, handle, "degraded"), SLACK_S)
        if not _reported(rig, handle, "degraded"):
            rig.recorder.violate(
                Violation(
                    "EXT-1.9-host-terminates-after-grace",
                    "the generation was ended after the cancel grace without being reported degraded",
                )
            )

    run.__name__ = "cancel-grace"
    return run


def _reported(rig: HostRig, handle: str | None, state: str) -> bool:
    return any(e.params.get("extension") == handle and e.params.get("state") == state for e in rig.events("state"))


def _cancels_of(rig: HostRig, wire_id: Any) -> list[Any]:
    return [n for n in rig.notes("$/cancelRequest") if isinstance(n.params, dict) and n.params.get("id") == wire_id]


# -- §2.6 ---------------------------------------------------------------------------------


def progress_sequences(api_version: str) -> Scenario:
    """Repeated, decreasing and after-settlement progress is ignored; the
    host never reports it as accepted."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        if "request_progress" not in offered_features(rig):
            shutdown_with(rig, ack=True, exit_after_ack=True)
            return  # the host never offers progress: nothing to judge (the verdict stays untested)
        call, req = start_call(rig)
        for sequence in (1, 1, 0, 2):
            rig.send(_progress(req.wire_id, sequence))
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        rig.send(_progress(req.wire_id, 3))  # after settlement
        later, req2 = start_call(rig)  # the host handled the frame above once this settles
        rig.respond(req2.wire_id, tool_result(api_version))
        rig.settled(later)
        rig.recorder.exercise("EXT-2.6-host-ignores-invalid")
        seen = [e.params.get("sequence") for e in rig.events("progress") if e.params.get("call") == call]
        numbers = [s for s in seen if isinstance(s, int)]
        if numbers != seen or numbers != sorted(set(numbers)) or not set(numbers) <= {1, 2}:
            rig.recorder.violate(
                Violation(
                    "EXT-2.6-host-ignores-invalid", f"the host accepted progress sequences {seen} (sent 1, 1, 0, 2, 3)"
                )
            )
        if not [e for e in rig.events("diagnostic") if e.params.get("kind") == "progress-ignored"]:
            rig.recorder.violate(Violation("EXT-2.6-host-ignores-invalid", "ignored progress was not diagnosed"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "progress-sequences"
    return run


def offered_features(rig: HostRig) -> list[str]:
    params = rig.initialize_params
    protocol = params.get("protocol") if isinstance(params, dict) else None
    offered = protocol.get("optional_features") if isinstance(protocol, dict) else None
    return [f for f in offered if isinstance(f, str)] if isinstance(offered, list) else []


def _progress(wire_id: Any, sequence: int) -> dict[str, Any]:
    event = {"type": "status", "message": f"step {sequence}"}
    return {
        "jsonrpc": "2.0",
        "method": "$/progress",
        "params": {"request_id": wire_id, "sequence": sequence, "event": event},
    }


# -- §1.3, §1.4 ---------------------------------------------------------------------------

COMMAND = "greet"
HOOK = "before_prompt"
ROUTED_CONTRIBUTES: dict[str, Any] = {**CONTRIBUTES, "commands": [COMMAND], "hooks": [HOOK]}


def command_and_hook(api_version: str) -> Scenario:
    """§1.3/§1.4: a declared command and a declared hook are routed; the
    session judges each request the host builds (shape, declared names,
    payload). The probe answers both with an error, which any host may get."""

    def run(rig: HostRig) -> None:
        command = {"name": COMMAND, "description": "the probe's command"}
        loaded = rig.load(
            api_version, ROUTED_CONTRIBUTES, lambda p: {**initialize_result(p, api_version), "commands": [command]}
        )
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        for method, params in (
            ("command/execute", {"name": COMMAND, "arguments": ["you"]}),
            ("hook/run", {"hook": HOOK, "payload": {"prompt": "hello"}}),
        ):
            call, answer = rig.call(method, params)
            if isinstance(answer, OperationError):
                continue  # not routed by this host: nothing on the wire to judge
            req = rig.next_request(method)
            if req is not None:
                if method == "hook/run" and api_version != "0.1":
                    # §1.2: a prompt handler is not an active parent; the session
                    # requires the host to refuse this child.
                    _confirm(rig, "confirm-under-hook", req.wire_id)
                rig.respond_error(req.wire_id, -32603, "the probe declines")
                rig.settled(call)
        if api_version != "0.1" and rig.driver.has("collect"):
            # §1.6b: this extension declares no menu; a host routes no menu/collect
            # to it (the session judges a request that arrives).
            call, answer = rig.call("menu/collect", {})
            if isinstance(answer, OperationError):
                rig.recorder.exercise("EXT-1.6b-host-menu-preconditions")  # refused: the rule held
            else:
                req = rig.next_request("menu/collect", timeout=1.0)
                if req is not None:
                    rig.respond_error(req.wire_id, -32603, "the probe declines")
                rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "command-and-hook"
    return run


def collects(api_version: str) -> Scenario:
    """§1.5-§1.7 (driver capability ``collect``): context/collect,
    status/collect and tool/render (and menu/collect from API 0.2) to an
    extension declaring them; the session judges each request's shape and
    preconditions. The probe answers each with an error."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("collect"):
            return  # the checks stay unexercised: reported skip/untested, never pass
        contributes: dict[str, Any] = {**CONTRIBUTES, "context": True, "ui": ["status"], "tool_renderers": [TOOL]}
        calls: list[tuple[str, dict[str, Any]]] = [
            ("context/collect", {"prompt": "hello"}),
            ("status/collect", {"surface": "status"}),
            ("tool/render", {"name": TOOL, "arguments": {}, "output": "ok", "is_error": False}),
        ]
        commands: list[dict[str, Any]] = []
        if api_version != "0.1":
            contributes |= {"menu": True, "commands": [COMMAND]}
            commands = [{"name": COMMAND, "description": "the probe's command"}]
            calls.append(("menu/collect", {}))
        loaded = rig.load(
            api_version, contributes, lambda p: {**initialize_result(p, api_version), "commands": commands}
        )
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        for method, params in calls:
            call, answer = rig.call(method, params)
            if isinstance(answer, OperationError):
                continue
            req = rig.next_request(method)
            if req is not None:
                rig.respond_error(req.wire_id, -32603, "the probe declines")
                rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "collects"
    return run


# -- §0/§1.1 concurrency -------------------------------------------------------------------


BURST_S = 0.5  # how long a breach of the limit may trail the calls the host wrote at once


def concurrency(*, over_offer: bool) -> Callable[[str], Scenario]:
    """§0/§1.1 (API 0.2+): the probe accepts a max_concurrent_requests (4, or
    two more than the host offered), then the driver starts one call more
    than the effective limit, min(offered, accepted). The session counts the
    requests outstanding on each one the host writes; the probe answers them
    as they come, so a queued call is written once a slot frees."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            def answer(params: Any) -> dict[str, Any]:
                offered = offer_from(params).max_concurrent_requests or 4
                accepted = offered + 2 if over_offer else 4
                return _protocol(initialize_result(params, api_version), limits={"max_concurrent_requests": accepted})

            loaded = rig.load(api_version, CONTRIBUTES, answer)
            if loaded.get("outcome") != "ready":
                raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
            offered = offer_from(rig.initialize_params).max_concurrent_requests or 4
            limit = min(offered, offered + 2 if over_offer else 4)
            calls = []
            for index in range(limit + 1):
                call, refused = rig.call("tool/call", {"name": TOOL, "arguments": {"text": str(index)}})
                if not isinstance(refused, OperationError):
                    calls.append(call)

            # Answer nothing before the host wrote what it will at once: the
            # limit's worth, and (a breach) one more right behind them.
            def written() -> int:
                return sum(r.method == "tool/call" for r in rig.requests)

            rig.until(lambda: written() >= min(limit, len(calls)))
            rig.until(lambda: written() > limit, BURST_S)
            for _ in calls:
                req = rig.next_request("tool/call")
                if req is None:
                    break
                rig.respond(req.wire_id, tool_result(api_version))
            for call in calls:
                rig.settled(call)
            shutdown_with(rig, ack=True, exit_after_ack=True)

        run.__name__ = "concurrency[over-offer]" if over_offer else "concurrency[accepted-4]"
        return run

    return make


# -- §1.2 results, §2.1, §2.6 features: what the host delivers, seen through the driver ------

BAD_CONTENT: tuple[tuple[str, list[dict[str, str]]], ...] = (
    ("empty-content", []),
    ("unknown-part-only", [{"type": "hologram", "text": "x"}]),
)


def result_content(api_version: str) -> Scenario:
    """§1.2 (API 0.2+): a tool result whose content is empty, or holds no
    known part with text, is refused: the call must not settle as a result
    (the contract's ``failed`` is the usual outcome; ``error`` also passes)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        for name, content in BAD_CONTENT:
            call, req = start_call(rig, name)
            rig.respond(req.wire_id, {"content": content, "is_error": False})
            settled = rig.settled(call)
            if settled is None:
                continue  # never settled: not this rule's concern
            rig.recorder.exercise("EXT-1.2-host-validates-content")
            if settled.params.get("outcome") == "result":
                rig.recorder.violate(
                    Violation("EXT-1.2-host-validates-content", f"a tool result with content {content!r} was accepted")
                )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "result-content"
    return run


def notification_level(api_version: str) -> Scenario:
    """§2.1: a notification without level is delivered as level info (when
    the host delivers it at all; the call after it orders the events)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        note = {"title": "probe", "message": "no level given"}
        rig.send({"jsonrpc": "2.0", "method": "notification", "params": note})
        call, req = start_call(rig)  # the host read the notification before this request
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shown = [e for e in rig.events("notification") if e.params.get("extension") == rig.handle]
        if shown:
            rig.recorder.exercise("EXT-2.1-host-notification-handling")
            level = shown[0].params.get("level")
            if level != "info":
                rig.recorder.violate(
                    Violation(
                        "EXT-2.1-host-notification-handling",
                        f"a notification without level was delivered with level {level!r}, not info",
                    )
                )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "notification-level"
    return run


def progress_unnegotiated(api_version: str) -> Scenario:
    """§2.6: the probe answers initialize without request_progress (only the
    required features), then sends progress for an active call: the host
    must not deliver it."""

    def run(rig: HostRig) -> None:
        loaded = rig.load(
            api_version,
            CONTRIBUTES,
            lambda p: _protocol(initialize_result(p, api_version), features=list(REQUIRED)),
        )
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        call, req = start_call(rig)
        rig.send(_progress(req.wire_id, 1))
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)  # the host read the progress before the answer
        rig.recorder.exercise("EXT-2.6-host-progress-needs-feature")
        if [e for e in rig.events("progress") if e.params.get("call") == call]:
            rig.recorder.violate(
                Violation(
                    "EXT-2.6-host-progress-needs-feature",
                    "progress was delivered from an extension that did not negotiate request_progress",
                )
            )
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "progress-unnegotiated"
    return run


# -- §2.2 ---------------------------------------------------------------------------------


def headless_confirmation(api_version: str) -> Scenario:
    """A confirmation under an active parent is answered on its id; a
    non-interactive frontend denies it."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        params: dict[str, Any] = {"prompt": "Proceed?", "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        answer = rig.ask("confirm-1", "confirmation/request", params)
        rig.recorder.exercise("EXT-2.2-host-answer")
        # Denying is {"confirmed": false}; a refusal (an error answer) also
        # leaves the action unconfirmed, so both pass. Only a confirmation fails.
        result = getattr(answer, "result", None)
        if answer is None or (isinstance(result, dict) and result.get("confirmed") is True):
            rig.recorder.violate(
                Violation("EXT-2.2-host-answer", f"a headless host answered a confirmation with {answer!r}")
            )
        if api_version == "0.1":
            no_parent_0_1(rig, answer)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "headless-confirmation"
    return run


def under_a_call(name: str, play: Callable[[HostRig, HostRequest], None]) -> Callable[[str], Scenario]:
    """A scenario that plays ``play`` while one tool call is active, then settles it and shuts down."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            call, req = start_call(rig)
            play(rig, req)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
            shutdown_with(rig, ack=True, exit_after_ack=True)

        run.__name__ = name
        return run

    return make


def no_parent_0_1(rig: HostRig, answer: Any) -> None:
    """§2.2: API 0.1 confirmations carry no parent_request_id; a host does not
    refuse one for lacking it (the probe declares confirmations, the id is
    fresh and legal, so nothing else can justify a refusal)."""
    if answer is None:
        return  # unanswered: judged by EXT-2.2-host-answer
    rig.recorder.exercise("EXT-2.2-host-0.1-no-parent")
    if isinstance(answer, jsonrpc.ErrorResponse):
        rig.recorder.violate(
            Violation(
                "EXT-2.2-host-0.1-no-parent",
                f"an API 0.1 confirmation without parent_request_id was refused ({answer.code}: "
                f"{str(answer.message)[:80]})",
            )
        )


def headless_input(rig: HostRig, parent: HostRequest) -> None:
    """§2.7: a headless host answers input/request with value null: headless
    input is cancelled, never guessed (the session judges the answer's shape;
    a refusal is not judged here)."""
    answer = _child(rig, "input-1", "input/request", {"parent_request_id": parent.wire_id, "prompt": "Name?"})
    result = getattr(answer, "result", None)
    if not isinstance(answer, jsonrpc.Response) or not isinstance(result, dict) or "value" not in result:
        return
    rig.recorder.exercise("EXT-2.7-host-input-answer")
    if result["value"] is not None:
        rig.recorder.violate(
            Violation("EXT-2.7-host-input-answer", f"a headless host answered input/request with {result['value']!r}")
        )


def child_parents(api_version: str) -> Scenario:
    """§2: confirmations under an active parent, no parent, a never-issued
    parent and a settled parent, and one reusing a finished child's id; the
    session judges every answer (refusals by the §2 rules, the §2.2 shape)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        # §2: a child id is a u64 or a string; the number is echoed as a number (JSON-RPC §5).
        cases: list[tuple[Any, Any]] = [("confirm-1", req.wire_id), (7, req.wire_id)]
        if api_version != "0.1":
            cases += [("confirm-2", None), ("confirm-3", 9_000_000)]
        for cid, parent in cases:
            _confirm(rig, cid, parent)
        _confirm(rig, BAD_CHILD_ID, req.wire_id)  # §2: neither a u64 nor a string of at most 256 bytes
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        if api_version != "0.1":
            _confirm(rig, "confirm-4", req.wire_id)  # its parent settled
        later, req2 = start_call(rig)
        _confirm(rig, "confirm-1", req2.wire_id)  # the id of a finished child, reused
        rig.respond(req2.wire_id, tool_result(api_version))
        rig.settled(later)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "child-parents"
    return run


# §2: one byte over the 256-byte bound of a string child id.
BAD_CHILD_ID = "b" * (MAX_CHILD_ID_BYTES + 1)


def _confirm(rig: HostRig, cid: Any, parent: Any) -> Any:
    params: dict[str, Any] = {"prompt": "Proceed?", "default": False}
    if parent is not None:
        params["parent_request_id"] = parent
    return _child(rig, cid, "confirmation/request", params)


def _child(rig: HostRig, cid: Any, method: str, params: dict[str, Any]) -> Any:
    """Send one child request and wait for its answer (judged: it must come)."""
    return rig.ask(cid, method, params)


def _answer_kind(answer: Any) -> str:
    code = getattr(answer, "code", None)
    return "nothing" if answer is None else ("result" if code is None else f"error {code}")


def wave1_owner_optional(rig: HostRig, parent: HostRequest) -> None:
    """§2: a Wave-1 request (composer/get) under a live parent, once without and
    once with a resource_owner (the one the host issued on the parent): the
    live parent's owner wins and the explicit field is ignored, so both get
    the same kind of answer (both admitted, or both refused with one code).
    Only the kind is compared: composer text may change between the two."""
    context = parent.params.get("context") if isinstance(parent.params, dict) else None
    owner = context.get("resource_owner") if isinstance(context, dict) else None
    plain = _child(rig, "composer-1", "composer/get", {"parent_request_id": parent.wire_id})
    if not isinstance(owner, dict):
        return  # no owner was issued on the parent: nothing to repeat
    owned = _child(rig, "composer-2", "composer/get", {"parent_request_id": parent.wire_id, "resource_owner": owner})
    if plain is None or owned is None:
        return  # an unanswered request is judged elsewhere
    rig.recorder.exercise("EXT-2-host-wave1-owner-optional")
    if _answer_kind(plain) != _answer_kind(owned):
        rig.recorder.violate(
            Violation(
                "EXT-2-host-wave1-owner-optional",
                f"composer/get under a live parent got {_answer_kind(plain)} without resource_owner "
                f"and {_answer_kind(owned)} with the owner the host issued",
            )
        )


# -- §5 -----------------------------------------------------------------------------------

LAST_ERROR_BYTES = 4096  # the contract's bound on inspect's last_error (§5 asks for a bounded one)


def inspection(api_version: str) -> Scenario:
    """§5: inspect shows the generation the load reported, the features the
    probe negotiated, the pending count (one call outstanding, then none), a
    health state and a bounded last error."""

    def run(rig: HostRig) -> None:
        loaded = ready(rig, api_version)
        call, req = start_call(rig)
        problems = _inspection_problems(rig, loaded.get("generation"), pending=1)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        problems += _inspection_problems(rig, loaded.get("generation"), pending=0)
        rig.recorder.exercise("EXT-5-host-inspection")
        for problem in dict.fromkeys(problems):
            rig.recorder.violate(Violation("EXT-5-host-inspection", problem))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "inspection"
    return run


def _inspection_problems(rig: HostRig, generation: Any, *, pending: int) -> list[str]:
    status = rig.op("inspect", {"extension": rig.handle})
    if isinstance(status, OperationError):
        return [f"inspect of a ready extension failed: {status.code} {status.message}"]
    negotiated = rig.session.negotiated if rig.session is not None else None
    features = sorted(negotiated.features) if negotiated is not None and not negotiated.is_legacy else []
    shown = status.get("features")
    last_error = status.get("last_error")
    checks = [
        (status.get("generation") == generation, f"generation {status.get('generation')!r}; load said {generation!r}"),
        (status.get("state") == "ready", f"state {status.get('state')!r} while the extension is ready"),
        (isinstance(shown, list) and sorted(map(str, shown)) == features, f"features {shown!r}; negotiated {features}"),
        (status.get("pending") == pending, f"pending {status.get('pending')!r} with {pending} call(s) outstanding"),
        (isinstance(status.get("health"), str), f"health {status.get('health')!r} is not a state name"),
        (
            last_error is None or (isinstance(last_error, str) and len(last_error.encode()) <= LAST_ERROR_BYTES),
            "last_error is not null nor a string of at most 4 KiB",
        ),
    ]
    return [f"inspect: {text}" for ok, text in checks if not ok]


# -- §0 packaging -------------------------------------------------------------------------

UNSATISFIABLE_OCTET = "=99.0.0"  # no host is this version


def unsatisfied_requires_octet(api_version: str) -> Scenario:
    """§0: a manifest whose exact requires_octet no host satisfies is refused
    by ``load`` and its process never starts (the probe would connect)."""

    def run(rig: HostRig) -> None:
        token = rig.listener.new_token()
        manifest = rig.listener.write_manifest(token, api_version=api_version, contributes=CONTRIBUTES)
        text = manifest.read_text(encoding="utf-8")
        line = f'requires_octet = "{UNSATISFIABLE_OCTET}"'
        changed = re.sub(r"(?m)^requires_octet\s*=.*$", line, text)
        manifest.write_text(changed if changed != text else f"{line}\n{text}", encoding="utf-8")
        started, loaded = load_refused(rig, token, manifest)
        rig.recorder.exercise("EXT-0-host-requires-octet-before-spawn")
        if started:
            rig.recorder.violate(
                Violation(
                    "EXT-0-host-requires-octet-before-spawn",
                    f"the host started an extension whose requires_octet is {UNSATISFIABLE_OCTET}",
                )
            )
        outcome = loaded.get("outcome") if isinstance(loaded, dict) else None
        if outcome not in (None, "refused"):  # an operation error is a refusal too
            rig.recorder.violate(
                Violation(
                    "EXT-0-host-requires-octet-before-spawn",
                    f"load of a manifest requiring octet {UNSATISFIABLE_OCTET} answered {outcome!r}, not refused",
                )
            )

    run.__name__ = "unsatisfied-requires-octet"
    return run


def load_refused(rig: HostRig, token: str, manifest: Path) -> tuple[bool, dict[str, Any] | OperationError]:
    """``load`` a manifest the host must refuse. Returns whether the host
    started its process (the probe connected; it is killed at once, which
    ends a load waiting for its initialize) and the load answer."""
    rid = rig.driver.start("load", {"manifest": str(manifest)})
    started: list[Any] = []

    def spawned() -> bool:
        # A refusing host answers at once; one that spawned the probe waits
        # for its initialize: ending the probe lets that load end too.
        link = None if started else rig.listener.accept(token, 0.0)
        if link is not None:
            started.append(link)
            link.kill_group()
        return bool(started)

    def idle() -> None:
        rig.tick(0.0)
        spawned()

    loaded = rig.driver.wait_answer(rid, rig.patience_s + 5.0, idle=idle)
    rig.until(spawned, 0.2)  # a spawn right behind the answer
    return bool(started), loaded


# -- §0 -----------------------------------------------------------------------------------


def stderr_flood(*, newlines: bool) -> Callable[[str], Scenario]:
    """The host drains stderr: a flood finishes, and the extension still answers."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            rig.command({"t": "flood", "bytes": FLOOD_BYTES, "newlines": newlines})
            assert rig.link is not None
            report = rig.until(lambda: rig.link.report("flooded") if rig.link else None)
            rig.recorder.exercise("EXT-0-host-drains-stderr")
            if report is None:
                rig.recorder.violate(
                    Violation(
                        "EXT-0-host-drains-stderr",
                        f"a {FLOOD_BYTES // 1024} KiB stderr flood "
                        f"{'of lines' if newlines else 'without newlines'} never drained",
                    )
                )
                return
            call, req = start_call(rig)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
            shutdown_with(rig, ack=True, exit_after_ack=True)

        run.__name__ = f"stderr-flood[{'lines' if newlines else 'no-newlines'}]"
        return run

    return make


# -- §0 frame bound ------------------------------------------------------------------------

# A tool argument this long makes the tool/call frame longer than §0's 1 MiB.
OVERSIZED_TEXT = "o" * (1024 * 1024)


def oversized_call(api_version: str) -> Scenario:
    """§0: a call whose frame would pass the 1 MiB bound. The host refuses it
    (or fails it) without writing it; the session judges any oversized frame
    that arrives. A later call orders the frames."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        big, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": OVERSIZED_TEXT}})
        if not isinstance(answer, OperationError):
            rig.settled(big, 1.0)  # settled as failed, or never: only the frame is judged
        call, req = start_call(rig, "small")
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "oversized-call"
    return run


# -- §1.10 ----------------------------------------------------------------------------------

LIFECYCLE_SUBSCRIBED = ["turn/started", "turn/settled"]
LIFECYCLE_IDS = {"session_id": "session-1", "run_id": "run-1", "turn_id": "turn-1"}
# Longer than the 4 KiB a settled reason may carry: a host cuts it or drops the event.
LONG_REASON = "r" * (MAX_SETTLED_REASON_BYTES + 100)


def lifecycle_events(api_version: str) -> Scenario:
    """§1.10 (driver capability ``lifecycle``, API 0.2+): the probe negotiates
    lifecycle_events subscribed to turn events only; the driver reports a turn
    start, a session start (not subscribed: never sent) and a turn settlement
    with an over-long reason. The session judges every event frame (identifiers,
    settled fields, reason bound, subscription); a later call orders them."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("lifecycle"):
            return  # the checks stay unexercised: reported skip/untested, never pass

        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "lifecycle_events" not in offer_from(params).offered:
                return result
            features = [*result["protocol"]["features"], "lifecycle_events"]
            return _protocol(result, features=features, lifecycle_events=LIFECYCLE_SUBSCRIBED)

        loaded = rig.load(api_version, CONTRIBUTES, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        if "lifecycle_events" in offered_features(rig):
            settled = {**LIFECYCLE_IDS, "outcome": "completed", "duration_ms": 12, "reason": LONG_REASON}
            for event, params in (
                ("turn/started", LIFECYCLE_IDS),
                ("session/started", {"session_id": LIFECYCLE_IDS["session_id"]}),
                ("turn/settled", settled),
            ):
                rig.op("observe", {"extension": rig.handle, "event": event, "params": params})
            if rig.driver.has("wave1"):  # §1.11: shortcuts is not negotiated here, so no trigger is sent
                rig.op("observe", {"extension": rig.handle, "event": "shortcut/trigger", "params": {"id": SHORTCUT}})
            call, req = start_call(rig)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "lifecycle-events"
    return run


# -- §1.11 ----------------------------------------------------------------------------------

SHORTCUT = "probe.shortcut"
# An owner no host issued to the probe (§2): a made-up instance id.
FORGED_OWNER = {"extension_instance_id": "probe-forged-instance", "process_generation": 1, "session_id": "forged"}
SHORTCUT_REGISTER = {"id": SHORTCUT, "key": "ctrl+shift+p", "description": "the probe's shortcut"}
# One past the 64 deltas a coalesced batch may represent (limits.MESSAGE_BATCH_DELTAS).
OVERFULL_BATCH = {"message_id": "message-1", "delta": "x", "deltas": MESSAGE_BATCH_DELTAS + 1}


def wave1_notifications(api_version: str) -> Scenario:
    """§1.11 (driver capability ``wave1``, API 0.2+): when the host offers
    shortcuts the probe registers one inside the initialize request (§2.20)
    and accepts the feature; the driver then reports a press of it, a press
    of an unknown shortcut (never delivered) and an over-full message batch
    (never delivered as such). The session judges every Wave-1 frame (a
    notification, negotiated, an admitted registration, the batch shape); a
    later call orders them."""

    def run(rig: HostRig) -> None:
        if not rig.driver.has("wave1"):
            return  # the checks stay unexercised: reported skip/untested, never pass

        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "shortcuts" not in offer_from(params).offered or rig.session is None:
                return result
            init = next(c.id for c in rig.session.calls.values() if c.method == "initialize")
            # Awaited, not judged: a host may answer it only once initialize is answered.
            rig.child_request("shortcut-1", "shortcut/register", {"parent_request_id": init, **SHORTCUT_REGISTER})
            rig.until(lambda: rig.answers.get("shortcut-1"))
            return _protocol(result, features=[*result["protocol"]["features"], "shortcuts"])

        loaded = rig.load(api_version, CONTRIBUTES, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        for event, params in (
            ("shortcut/trigger", {"id": SHORTCUT}),
            ("shortcut/trigger", {"id": "probe.unknown"}),
            ("message/updated", OVERFULL_BATCH),
            ("message/settled", {"message_id": "message-2"}),
            ("message/updated", {"message_id": "message-2", "delta": "x", "deltas": 1}),  # after it settled
        ):
            rig.op("observe", {"extension": rig.handle, "event": event, "params": params})
        if rig.session is not None and rig.session.negotiated is not None and rig.session.negotiated.has("shortcuts"):
            # §2: the initialize request (the registrations' parent) has settled and
            # no resource_owner is given: refused with -32002 (the session judges it).
            init = next(c.id for c in rig.session.calls.values() if c.method == "initialize")
            late = {"parent_request_id": init, **SHORTCUT_REGISTER, "id": "probe.late"}
            _child(rig, "shortcut-2", "shortcut/register", late)
            # §2: an owner this generation never issued is refused, never coerced
            # into a valid one (the session judges it).
            forged = {**late, "id": "probe.forged", "resource_owner": FORGED_OWNER}
            _child(rig, "shortcut-3", "shortcut/register", forged)
        call, req = start_call(rig)
        # Every frame the observations caused arrived before this call and was
        # judged: a refused over-full or late batch held the batch rules too.
        rig.recorder.exercise("EXT-1.11-host-message-batch-shape", "EXT-1.11-host-batches-before-settled")
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "wave1-notifications"
    return run


# -- §1.4b ----------------------------------------------------------------------------------

TURN_HOOK = "model_turn_start"
TURN_PAYLOAD = {"kind": TURN_HOOK, "run_id": "run:001", "turn_index": 0, "timestamp_ms": 1791129600000}
CONTINUE = {"action": "continue"}
# §1.4b: answers both model-turn observations refuse (the ordinary envelope
# with session_operation continue is all they take). "Unrelated hook effects"
# are not sent: the text names none of them.
BAD_TURN_DECISIONS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"disposition": {"action": "deny", "reason": "the probe objects"}}, "a deny disposition"),
    ({"disposition": CONTINUE, "session_operation": {"action": "cancel"}}, "session_operation cancel"),
    (
        {"disposition": CONTINUE, "session_operation": {"action": "replace_compaction"}},
        "session_operation replace_compaction",
    ),
    (
        {"disposition": CONTINUE, "context": [{"label": "probe", "content": "x", "placement": "system_suffix"}]},
        "a prompt-context contribution",
    ),
)
# §1.4b: an answer over the §0 frame bound (by more than the line feed whose
# counting the text leaves open) makes the invocation fail.
OVERSIZED_TURN_BYTES = MAX_FRAME_BYTES + 64 * 1024


def model_turn_hooks(api_version: str) -> Scenario:
    """§1.4b (API 0.4): the manifest declares model_turn_start; when the host
    offers session_entries the probe accepts it and the driver runs the hook
    with a valid payload (the session judges the payload the host writes:
    kind, run_id, turn_index, timestamp_ms). Then the hook is run once per
    decision the host must refuse (deny, session_operation cancel or
    replace_compaction, prompt context) and once more, answered with a frame
    over the bound: none of these may settle as a result. A host that never
    offers session_entries leaves the rules untested."""

    def run(rig: HostRig) -> None:
        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "session_entries" not in offer_from(params).offered:
                return result
            return _protocol(result, features=[*result["protocol"]["features"], "session_entries"])

        loaded = rig.load(api_version, {**CONTRIBUTES, "hooks": [TURN_HOOK]}, answer)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        if "session_entries" in offered_features(rig) and (turn := _turn_hook(rig)) is not None:
            rig.respond_error(turn[1].wire_id, -32603, "the probe declines")
            rig.settled(turn[0])
            for result, what in BAD_TURN_DECISIONS:
                if (turn := _turn_hook(rig)) is None:
                    break
                rig.respond(turn[1].wire_id, result)
                judge_refused(rig, "EXT-1.4b-host-rejects-bad-decisions", turn[0], f"a model-turn answer with {what}")
            if (turn := _turn_hook(rig)) is not None:
                frame = dumps(rig.answering(turn[1].wire_id, {"disposition": CONTINUE}))
                rig.write(padded(frame, OVERSIZED_TURN_BYTES) + b"\n", {"shape": f"padded to {OVERSIZED_TURN_BYTES}"})
                what = f"a model-turn answer of {OVERSIZED_TURN_BYTES:,} bytes (bound {MAX_FRAME_BYTES:,})"
                judge_refused(rig, "EXT-1.4b-host-oversize-fails", turn[0], what)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "model-turn-hooks"
    return run


def _turn_hook(rig: HostRig) -> tuple[str, HostRequest] | None:
    """Run model_turn_start through the driver: (call id, the frame the probe got), or None."""
    call, refused = rig.call("hook/run", {"hook": TURN_HOOK, "payload": dict(TURN_PAYLOAD)})
    req = None if isinstance(refused, OperationError) else rig.next_request("hook/run")
    return None if req is None else (call, req)


def judge_refused(rig: HostRig, requirement: str, call: str, what: str) -> None:
    """An answer the host must refuse: ``call`` may settle as anything but a
    ``result`` (``failed`` is the contract's word; ``error`` passes too). A
    call that never settles is not these rules' concern."""
    settled = rig.settled(call)
    if settled is None:
        return
    rig.recorder.exercise(requirement)
    if settled.params.get("outcome") == "result":
        rig.recorder.violate(Violation(requirement, f"the host accepted {what}"))


def padded(payload: bytes, size: int | None) -> bytes:
    """``payload`` (a JSON object) grown to ``size`` bytes with spaces before its last brace."""
    if size is None or size <= len(payload):
        return payload
    return payload[:-1] + b" " * (size - len(payload)) + payload[-1:]


# -- §2 outstanding children -----------------------------------------------------------------


def outstanding_children(api_version: str) -> Scenario:
    """§2 (API 0.2+): 128 confirmations under one active call, then an
    input/request. A host whose frontend still holds 128 of them refuses the
    input; one that answered some already may admit it. The session judges
    the input's answer against the children still unanswered when it arrives
    (those were outstanding when the host admitted it)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        held = [f"hold-{index}" for index in range(MAX_OUTSTANDING_CHILDREN)]
        for cid in held:
            rig.child_request(cid, "confirmation/request", {"prompt": "Hold?", "parent_request_id": req.wire_id})
        _child(rig, "one-more", "input/request", {"parent_request_id": req.wire_id, "prompt": "One more?"})
        rig.respond(req.wire_id, tool_result(api_version))  # the held ones are answered or cancelled now
        rig.settled(call)
        rig.until(lambda: all(cid in rig.answers or _cancels_of(rig, cid) for cid in held), SLACK_S)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "outstanding-children"
    return run


# -- §2 distinct child ids ---------------------------------------------------------------------

# At most this many of the budget's children are unanswered at once: well
# under §2's 128 outstanding, so only the id budget is ever at stake.
BUDGET_WINDOW = 64


def child_id_budget(api_version: str) -> Scenario:
    """§2: one generation uses all 65,536 distinct child ids (a method no host
    serves, answered at once with an error; written in pipelined batches, at
    most :data:`BUDGET_WINDOW` unanswered), then a confirmation the host would
    otherwise admit, under an active call: it is the 65,537th id, so the host
    refuses it (the session judges the answer). Costs tens of thousands of
    frames: played only when selected (:data:`ON_REQUEST`)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        session = rig.session
        assert session is not None
        for start in range(0, MAX_CHILD_IDS_PER_GENERATION, BUDGET_WINDOW // 2):
            rig.until(lambda: session.unresolved <= BUDGET_WINDOW // 2)
            if session.unresolved > BUDGET_WINDOW // 2:
                raise HostRejected(f"the host stopped answering child requests after {start:,} of them")
            end = min(start + BUDGET_WINDOW // 2, MAX_CHILD_IDS_PER_GENERATION)
            rig.child_requests((f"id-{n}", SYNC_METHOD, {}) for n in range(start, end))
        rig.until(lambda: session.unresolved == 0)
        params: dict[str, Any] = {"prompt": "One id too many?", "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        _child(rig, "id-over-budget", "confirmation/request", params)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "child-id-budget"
    return run


# Scenarios that cost far more than the rest: played by a certification with
# the thorough profile, or when a run names them (``only``, a fixture's
# ``scenarios``); otherwise their requirements stay untested, never pass.
ON_REQUEST = ("child-id-budget",)


# -- §1.9, §2: children of a settled or cancelled parent ------------------------------------


# A method no host serves: any host answers it at once (an error), which tells
# the probe that every frame it wrote before has been read.
SYNC_METHOD = "probe/sync"


def orphaned_children(*, cancel: bool) -> Callable[[str], Scenario]:
    """§2 (parent answered) / §1.9 (parent cancelled), API 0.2+: a confirmation
    under an active tool call, then the parent ends. Once the driver reports
    the parent settled, the child must be answered or named by a
    ``$/cancelRequest`` within a slack: the host cancels unresolved children
    when their parent ends. (A host that answered the child first is fine.)"""
    requirement = "EXT-1.9-host-cancels-children" if cancel else "EXT-2-host-cancels-children-on-settle"

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            call, req = start_call(rig)
            cid = "orphan-1"
            rig.child_request(cid, "confirmation/request", {"prompt": "Go?", "parent_request_id": req.wire_id})
            if cancel:
                # The cancel goes through the driver, not the probe's pipe: first
                # make sure the host read the child (it answered a later frame).
                _child(rig, "sync-1", SYNC_METHOD, {})
                rig.op("cancel", {"call": call, "reason": "user"})
            else:
                rig.respond(req.wire_id, tool_result(api_version))
            if rig.settled(call) is None:
                shutdown_with(rig, ack=True, exit_after_ack=True)
                return  # never settled: judged by the §1.9/§1.2 rules
            if cancel:  # a cooperative extension settles the cancelled call (no grace expires)
                rig.respond_error(req.wire_id, REQUEST_CANCELLED, "cancelled")
            rig.recorder.exercise(requirement)

            def resolved() -> bool:
                return cid in rig.answers or bool(_cancels_of(rig, cid))

            if not rig.until(resolved, SLACK_S):
                ended = "was cancelled" if cancel else "settled"
                rig.recorder.violate(
                    Violation(requirement, f"the parent {ended}, but its confirmation {cid!r} was neither answered "
                              "nor cancelled"),
                    measured={"waited_s": SLACK_S},
                )  # fmt: skip
            shutdown_with(rig, ack=True, exit_after_ack=True)

        run.__name__ = "orphaned-children[cancelled]" if cancel else "orphaned-children[settled]"
        return run

    return make


# -- §2.10 ----------------------------------------------------------------------------------

SECRET_NAME = "probe_token"
UNDECLARED_SECRET = "not_declared"


def secrets(api_version: str) -> Scenario:
    """§2.10 (API 0.2+): the manifest allowlists one secret; when the host
    offers secrets the probe accepts it and asks, under an active call, for
    the declared name (the session judges the answer: a bounded value or one
    of the three refusals) and for an undeclared one, which is refused with
    -32602. A host that never offers secrets leaves the rule untested."""

    def run(rig: HostRig) -> None:
        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "secrets" not in offer_from(params).offered:
                return result
            return _protocol(result, features=[*result["protocol"]["features"], "secrets"])

        capabilities = {"filesystem": "none", "secrets": [SECRET_NAME]}
        loaded = rig.load(api_version, CONTRIBUTES, answer, capabilities=capabilities)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        if "secrets" in offered_features(rig):
            call, req = start_call(rig)
            _child(rig, "secret-1", "secret/get", {"parent_request_id": req.wire_id, "name": SECRET_NAME})
            undeclared_secret(rig, req)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "secrets"
    return run


def undeclared_secret(rig: HostRig, parent: HostRequest) -> None:
    """§2.10: a name outside the manifest's allowlist is refused with -32602."""
    params = {"parent_request_id": parent.wire_id, "name": UNDECLARED_SECRET}
    answer = _child(rig, "secret-2", "secret/get", params)
    if answer is None:
        return
    rig.recorder.exercise("EXT-2.10-host-secret-answers")
    if not isinstance(answer, jsonrpc.ErrorResponse) or answer.code != -32602:
        rig.recorder.violate(
            Violation(
                "EXT-2.10-host-secret-answers",
                f"secret/get for the undeclared name {UNDECLARED_SECRET!r} got {_answer_kind(answer)}, "
                "not error -32602",
            )
        )


def scenarios_for(api_version: str) -> list[Scenario]:
    makers: list[Callable[[str], Scenario]] = [
        call_and_shutdown,
        inspection,
        notification_level,
        unsatisfied_requires_octet,
        command_and_hook,
        collects,
        headless_confirmation,
        child_parents,
        stderr_flood(newlines=True),
        stderr_flood(newlines=False),
        stubborn_shutdown(ack=False),
        stubborn_shutdown(ack=True),
        shutdown_exit_after_ack,
        cancel_then_late_response,  # on API 0.1 too: no $/cancelRequest may reach it
        oversized_call,
        child_id_budget,  # ON_REQUEST
    ]
    if api_version != "0.1":
        makers += [
            concurrency(over_offer=False),
            concurrency(over_offer=True),
            cancel_grace,
            progress_sequences,
            progress_unnegotiated,
            result_content,
            under_a_call("headless-input", headless_input),
            under_a_call("wave1-owner", wave1_owner_optional),
            lifecycle_events,
            wave1_notifications,
            secrets,
            outstanding_children,
            orphaned_children(cancel=False),
            orphaned_children(cancel=True),
        ]
    if api_version == "0.4":
        makers.append(model_turn_hooks)
    out = [make(api_version) for make in makers]
    out += [bad_initialize(case, api_version) for case in BAD_INITIALIZE if api_version in case.apis]
    return out
