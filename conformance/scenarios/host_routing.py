"""§1.3-§1.4 commands and hooks, collected results, the negotiated concurrency
limit, and what the host delivers of results and notifications (§1.2,
§2.1, §2.6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol.host_initialize import offer_from
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import _progress
from conformance.scenarios.host_children import _confirm
from conformance.scenarios.host_initialize import _protocol
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import (
    CONTRIBUTES,
    REQUIRED,
    TOOL,
    HostRejected,
    initialize_result,
    ready,
    start_call,
    tool_result,
)

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

    return Scenario("command-and-hook", run)


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

    return Scenario("collects", run)


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

        return Scenario("concurrency[over-offer]" if over_offer else "concurrency[accepted-4]", run)

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

    return Scenario("result-content", run)


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

    return Scenario("notification-level", run)


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

    return Scenario("progress-unnegotiated", run)
