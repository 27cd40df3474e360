"""The reference host's driver: docs/host-driver.md (``octet-host-driver/1``) over stdio.

How to use: ``python -m conformance.reference.host.driver [--fault NAME]``
reads operations on stdin and writes answers and events on stdout, one JSON
object per line. ``octet-conformance host`` runs it when no ``--driver`` is
given. ``--fault`` switches on one deliberate fault for the faulty-host
fixtures (fixtures/hosts/); without it the host is the reference.

Written like any embedder of the reference host would write it: it uses the
host's public API (:class:`ReferenceHost`, :class:`HostEvents`,
:class:`Frontend`) and the standard library, nothing of the checker.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol.limits import LIFECYCLE_EVENTS

from . import children as children_module
from . import connection as connection_module
from . import host as host_module
from . import initialize as initialize_module
from . import jsonrpc as rpc
from . import lifecycle as lifecycle_module
from . import manifest as manifest_module
from . import results as results_module
from .calls import CallOutcome, PendingCall
from .channel import ProcessChannel
from .children import ChildRequests
from .config import HostConfig
from .connection import Connection
from .diagnostics import Diagnostic
from .frontend import Frontend, HostEvents, Prompt
from .host import LoadError, ReferenceHost
from .manifest import ManifestError, load_manifest
from .writer import SerialWriter

CONTRACT = "octet-host-driver/1"
CAPABILITIES = ["timing", "frontend", "collect", "reload", "lifecycle", "wave1", "exits", "menu"]
# Optional features this embedder adds to the host's defaults: shortcuts
# (§2.20 registration, §1.11 shortcut/trigger), which the host implements.
EXTRA_FEATURES = ("shortcuts",)
CALL_METHODS = ("tool/call", "command/execute", "hook/run", "context/collect", "status/collect", "menu/collect",
                "tool/render")  # fmt: skip
# The host's diagnostic tags -> the contract's kinds.
KINDS = {
    "bad-frame": "invalid-frame",
    "child-request-refused": "child-refused",
    "stale-response": "stale-response",
}
CONTRACT_KINDS = {
    "stderr", "stale-response", "progress-ignored", "child-refused", "invalid-frame", "oversized-frame",
    "cancel-grace", "initialize-rejected", "notification-refused", "exit", "shutdown", "supervisor",
}  # fmt: skip
TIMING = {  # contract member -> (HostConfig field, scale)
    "shutdown_timeout_ms": ("shutdown_stage_s", 1000.0),
    "shutdown_aggregate_ms": ("shutdown_aggregate_s", 1000.0),
    "cancel_grace_ms": ("cancel_grace_s", 1000.0),
    "backoff_base_ms": ("backoff_base_s", 1000.0),
    "backoff_cap_ms": ("backoff_cap_s", 1000.0),
    "ready_reset_ms": ("ready_reset_s", 1000.0),
    "park_after_failures": ("max_failed_restarts", 1.0),
    "drain_ms": ("drain_s", 1000.0),
    "menu_timeout_ms": ("menu_timeout_s", 1000.0),
}
OUTCOMES = {"ok": "result", "error": "error", "cancelled": "cancelled"}
MESSAGE_BYTES = 4096


class Wire:
    """Our stdout: one writer, whole lines."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False) + "\n"
        with self._lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def event(self, method: str, **params: Any) -> None:
        self.send({"method": method, "params": params})

    def answer(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"id": rid, "error": {"code": code, "message": message}})


class OpError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Reporter(HostEvents, Frontend):
    """The host's events and frontend, reported as contract events."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.wire = driver.wire
        self.answers: dict[str, dict[str, Any]] = {}  # extension -> frontend options

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        kind = KINDS.get(diagnostic.kind, diagnostic.kind)
        self.wire.event(
            "diagnostic",
            extension=diagnostic.extension,
            generation=diagnostic.generation,
            kind=kind if kind in CONTRACT_KINDS else "other",
            message=diagnostic.message.encode("utf-8")[:MESSAGE_BYTES].decode("utf-8", "ignore"),
        )

    def contribution(self, extension: str, generation: int, method: str, params: Any) -> None:
        if method == "notification" and isinstance(params, dict):
            fields = {"level": "info"}  # §2.1: a notification without level is level info
            fields.update({k: params[k] for k in ("level", "title", "message") if k in params})
            self.wire.event("notification", extension=extension, **fields)
            return
        kind = {"context/contribution": "context", "status/contribution": "status"}.get(method, "presentation")
        self.wire.event("contribution", extension=extension, kind=kind, value=params)

    def progress(self, extension: str, generation: int, request_id: int, sequence: int, event: Any) -> None:
        call = self.driver.call_of(extension, generation, request_id)
        if call is not None:
            self.wire.event("progress", extension=extension, call=call, sequence=sequence, event=event)

    def state_changed(self, extension: str, generation: int, state: str) -> None:
        self.wire.event("state", extension=extension, generation=generation, state=state)

    def supervisor_state(self, extension: str, generation: int, state: str, delay_s: float | None = None) -> None:
        extra = {} if delay_s is None else {"delay_ms": round(delay_s * 1000)}
        self.wire.event("state", extension=extension, generation=generation, state=state, **extra)

    # -- frontend ----------------------------------------------------------------
    @property
    def interactive(self) -> bool:  # type: ignore[override]
        return any(o.get("interactive") for o in self.answers.values())

    def confirm(self, prompt: Prompt) -> bool:
        options = self.answers.get(prompt.extension, {})
        answer = bool(options.get("interactive") and options.get("confirm"))
        if self.driver.fault == "headless-confirms":
            answer = True  # the fault: a non-interactive frontend confirms
        self._prompt(prompt, "confirmation", answer)
        return answer

    def input(self, prompt: Prompt) -> str | None:
        options = self.answers.get(prompt.extension, {})
        value = options.get("input") if options.get("interactive") else None
        answer = value if isinstance(value, str) else None
        self._prompt(prompt, "input", answer)
        return answer

    def _prompt(self, prompt: Prompt, kind: str, answer: Any) -> None:
        parent = prompt.params.get("parent_request_id")
        call = self.driver.call_of(prompt.extension, prompt.generation, parent) if isinstance(parent, int) else None
        text = prompt.params.get("prompt")
        self.wire.event(
            "prompt",
            extension=prompt.extension,
            call=call,
            kind=kind,
            text=text if isinstance(text, str) else "",
            answer=answer,
        )


class Driver:
    # §2.10: the secret broker the driver's hosts use; none, like the coding
    # product, so secrets are never offered (a fixture may set one).
    secret_broker: Any = None
    # The seam (docs/host-driver.md, "Seams"): the class of every host this
    # driver makes; a wrapper or a test names a subclass of its own.
    host_class: type[ReferenceHost] = ReferenceHost

    def __init__(self, fault: str | None = None, *, host_class: type[ReferenceHost] | None = None) -> None:
        self.wire = Wire()
        self.fault = fault
        if host_class is not None:
            self.host_class = host_class
        self.reporter = Reporter(self)
        self.hosts: dict[tuple[tuple[str, float], ...], ReferenceHost] = {}
        self.host_of: dict[str, ReferenceHost] = {}  # extension -> its host
        self.calls: dict[str, PendingCall] = {}
        self.wire_calls: dict[tuple[str, int, int], str] = {}  # (extension, generation, wire id) -> call
        self.generation_of_call: dict[str, tuple[str, int]] = {}
        self.choosing: set[str] = set()  # menu_action calls whose command has not started yet
        self.cancel_while_choosing: dict[str, str] = {}  # such calls the suite cancelled meanwhile -> reason
        self.lock = threading.Lock()

    # -- plumbing -------------------------------------------------------------------
    def call_of(self, extension: str, generation: int, wire_id: int) -> str | None:
        with self.lock:
            return self.wire_calls.get((extension, generation, wire_id))

    def host_for(self, timing: dict[str, Any]) -> ReferenceHost:
        """One host per distinct timing (the contract sets timing per load)."""
        overrides = {TIMING[k][0]: float(v) / TIMING[k][1] for k, v in timing.items() if k in TIMING}
        if "max_failed_restarts" in overrides:
            overrides["max_failed_restarts"] = int(overrides["max_failed_restarts"])
        key = tuple(sorted(overrides.items()))
        if key not in self.hosts:
            optional = (*HostConfig().optional_features, *EXTRA_FEATURES)
            options: dict[str, Any] = {**overrides, "secret_broker": self.secret_broker, "optional_features": optional}
            config = HostConfig(**options)
            self.hosts[key] = self.host_class(config=config, events=self.reporter, frontend=self.reporter)
        return self.hosts[key]

    def host(self, params: dict[str, Any]) -> tuple[str, ReferenceHost]:
        name = params.get("extension")
        if not isinstance(name, str) or name not in self.host_of:
            raise OpError(-32001, f"unknown extension {name!r}")
        return name, self.host_of[name]

    def background(self, job: Any, *args: Any) -> None:
        threading.Thread(target=job, args=args, daemon=True).start()

    # -- operations -------------------------------------------------------------------
    def dispatch(self, rid: Any, method: str, params: dict[str, Any]) -> bool:
        """Answer one operation (long ones answer from a thread). False: exit."""
        handler = getattr(self, "op_" + method.replace("/", "_"), None)
        if handler is None:
            self.wire.error(rid, -32601, f"operation {method!r} is not implemented")
            return True
        try:
            result = handler(rid, params)
        except OpError as exc:
            self.wire.error(rid, exc.code, str(exc))
            return True
        if result is not None:
            self.wire.answer(rid, result)
        return method != "exit"

    def op_hello(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("contract") != CONTRACT:
            raise OpError(-32602, f"this driver speaks {CONTRACT}")
        config = HostConfig()
        features = [
            "request_cancellation", "content_parts", *config.optional_features, *EXTRA_FEATURES,
            *config.optional_features_0_4,
        ]  # fmt: skip
        return {
            "contract": CONTRACT,
            "host": {"name": "octet-reference-host", "version": "0.1.0"},
            "api_versions": ["0.1", "0.2", "0.4"],
            "features": features,
            "capabilities": CAPABILITIES,
        }

    def op_load(self, rid: Any, params: dict[str, Any]) -> None:
        path = params.get("manifest")
        if not isinstance(path, str):
            raise OpError(-32602, "manifest must be a path")
        host = self.host_for(params.get("timing") or {})
        self.background(self._load, rid, host, path, params.get("frontend") or {})

    def _load(self, rid: Any, host: ReferenceHost, path: str, frontend: dict[str, Any]) -> None:
        try:
            manifest = load_manifest(
                path, source="explicit", octet_version=host.config.octet_version,
                read_bytes=host.config.manifest_read_bytes,
            )  # fmt: skip
        except ManifestError as exc:
            self.wire.answer(rid, {"extension": None, "outcome": "refused", "reason": str(exc)})
            return
        self.host_of[manifest.name] = host
        self.reporter.answers[manifest.name] = frontend
        try:
            status = host.load(manifest)
        except LoadError as exc:
            generation = 1
            self.wire.answer(
                rid, {"extension": manifest.name, "outcome": "rejected", "generation": generation, "reason": str(exc)}
            )
            return
        self.wire.answer(rid, {"extension": manifest.name, "outcome": "ready", "generation": status.generation})

    def op_call(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        name, host = self.host(params)
        call, method, inner = params.get("call"), params.get("method"), params.get("params")
        if not isinstance(call, str) or call in self.calls:
            raise OpError(-32602, f"call id {call!r} is missing or reused")
        if method not in CALL_METHODS or not isinstance(inner, dict):
            raise OpError(-32602, f"cannot call {method!r}")
        pending = host.start(name, method, dict(inner))
        if pending.id == 0:  # never sent: the host refused it (not ready, not declared)
            outcome = pending.wait(0)
            raise OpError(-32003, outcome.message or "refused")
        generation = host.inspect(name).generation
        with self.lock:
            self.calls[call] = pending
            self.wire_calls[(name, generation, pending.id)] = call
        self.background(self._settle, call, pending, (host, name) if method == "menu/collect" else None, inner)
        return {}

    def _settle(
        self,
        call: str,
        pending: PendingCall,
        menu: tuple[ReferenceHost, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        if menu is None:
            outcome: CallOutcome = pending.wait()
        else:  # §1.6b: what the person is shown, after the menu timeout and the bounds
            host, name = menu
            early = pending.poll(host.config.menu_timeout_s)
            if early is not None and early.status == "cancelled":
                outcome = early  # the suite cancelled it
            else:
                outcome = host.menu_shown(name, early if early is not None else pending.wait(0))
        kind = OUTCOMES.get(outcome.status, "failed")
        if kind == "result" and pending.method == "hook/run":  # §1.4: does the hooked operation go on?
            hook = str((params or {}).get("hook"))
            proceeds = results_module.hook_proceeds(hook, outcome.result)
            self.wire.event("settled", call=call, outcome="result", result=outcome.result, proceeds=proceeds)
        elif kind == "result" and pending.method == "context/collect":  # §1.5: as the host places them
            self.wire.event("settled", call=call, outcome="result", result=results_module.placed(outcome.result))
        elif kind == "result":
            self.wire.event("settled", call=call, outcome="result", result=outcome.result)
        elif kind == "error":
            self.wire.event("settled", call=call, outcome="error", error=outcome.error or {"code": 0, "message": ""})
        elif kind == "cancelled":
            self.wire.event("settled", call=call, outcome="cancelled")
        else:
            self.wire.event("settled", call=call, outcome="failed", reason=outcome.message or outcome.status)

    def op_menu_action(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Capability menu (§1.6b): the person chooses a menu item; it runs as call ``call``."""
        name, host = self.host(params)
        call, item = params.get("call"), params.get("item")
        if not isinstance(call, str) or call in self.calls or call in self.choosing or not isinstance(item, str):
            raise OpError(-32602, f"call id {call!r} is missing or reused, or item {item!r} is not a string")
        with self.lock:
            self.choosing.add(call)
        self.background(self._menu_action, call, host, name, item)
        return {}

    def _menu_action(self, call: str, host: ReferenceHost, name: str, item: str) -> None:
        def issued(generation: int, wire_id: int) -> None:
            # Filed before the frame is written: the extension's progress or
            # prompts under it may arrive before menu_action returns.
            with self.lock:
                self.wire_calls[(name, generation, wire_id)] = call

        pending = host.menu_action(name, item, issued=issued)
        with self.lock:
            self.calls[call] = pending
            self.choosing.discard(call)
            reason = self.cancel_while_choosing.pop(call, None)
        if reason is not None:
            pending.cancel(reason)  # the suite cancelled it while the menu was being pulled
        self._settle(call, pending)
        if pending.id:
            host.collect_menu(name)  # §1.6b: the menu is pulled again after every action

    def op_cancel(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        reason = params.get("reason") if isinstance(params.get("reason"), str) else "user"
        with self.lock:
            if params.get("call") in self.choosing:
                # Not started yet (the menu is still being pulled): cancelled as soon as it starts.
                self.cancel_while_choosing[str(params.get("call"))] = str(reason)
                return {}
            pending = self.calls.get(str(params.get("call")))
        if pending is None:
            raise OpError(-32002, f"unknown call {params.get('call')!r}")
        pending.cancel(str(reason))
        return {}

    def op_inspect(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        name, host = self.host(params)
        status = host.inspect(name)
        return {
            "extension": name,
            "generation": status.generation,
            "state": "parked" if status.parked else status.state,
            "api_version": status.api_version,
            "features": list(status.features),
            "max_concurrent_requests": status.max_concurrent_requests,
            "pending": status.pending,
            "health": status.health,
            "last_error": status.last_error,
            "restarts": status.failed_restarts,
        }

    def op_reload(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        name, host = self.host(params)
        self.background(self._reload, host, name)
        return {}

    def _reload(self, host: ReferenceHost, name: str) -> None:
        try:
            host.reload(name)
        except LoadError as exc:
            generation = host.inspect(name).generation
            self.wire.event("diagnostic", extension=name, generation=generation, kind="other", message=str(exc))

    def op_observe(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        name, host = self.host(params)
        event, payload = params.get("event"), params.get("params")
        if not isinstance(event, str) or "params" not in params:
            raise OpError(-32602, "observe needs an event name and params")
        if event in LIFECYCLE_EVENTS:
            if not isinstance(payload, dict):
                raise OpError(-32602, "a lifecycle observation's params are an object")
            host.notify_lifecycle(name, event, payload)
        else:  # capability wave1: the host sends it when negotiated, else refuses it (§1.11)
            host.notify_wave1(name, event, payload)
        return {}

    def op_shutdown(self, rid: Any, params: dict[str, Any]) -> None:
        name = params.get("extension")
        coordinated = params.get("exit") == "interactive"  # capability exits: the 1.4 s exit path (§1.8)
        if name is not None:
            name, host = self.host(params)
            self.background(self._shutdown, rid, [host], name, coordinated)
        else:
            self.background(self._shutdown, rid, list(self.hosts.values()), None, coordinated)

    def _shutdown(self, rid: Any, hosts: list[ReferenceHost], name: str | None, coordinated: bool = False) -> None:
        threads = [
            threading.Thread(target=h.shutdown, args=(name,), kwargs={"coordinated": coordinated}, daemon=True)
            for h in hosts
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.wire.answer(rid, {})

    def op_exit(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        for host in self.hosts.values():
            host.shutdown(coordinated=True)
        return {}


# -- faults for the faulty-host fixtures (fixtures/hosts/); each breaks one rule ------------------


def _fault_accept_api_mismatch() -> None:
    """§1.1: takes any api_version in the initialize answer as the manifest's."""
    original = connection_module.accept

    def accept(result: Any, offer: Any, manifest: Any) -> Any:
        if isinstance(result, dict):
            result = {**result, "api_version": manifest.api_version}  # the fault
        return original(result, offer, manifest)

    connection_module.accept = accept


def _fault_accept_any_catalog() -> None:
    """§1.1: never compares the returned tools/commands with the manifest
    (duplicates are still refused)."""
    original = initialize_module._check_catalog

    def check(tools: Any, commands: Any, manifest: Any, features: frozenset[str]) -> None:
        original(tools, commands, manifest, features | {"dynamic_tools", "runtime_commands"})  # the fault

    initialize_module._check_catalog = check


def _fault_accept_duplicate_features() -> None:
    """§1.1: drops repeated feature names instead of rejecting them."""
    original = initialize_module._protocol

    def protocol(value: Any, offer: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("features"), list):
            value = {**value, "features": list(dict.fromkeys(value["features"]))}  # the fault
        return original(value, offer)

    initialize_module._protocol = protocol  # type: ignore[assignment]


def _fault_accept_zero_concurrency() -> None:
    """§1.1: treats max_concurrent_requests <= 0 as 1 instead of rejecting it."""
    original = initialize_module._limit

    def limit(value: Any, offer: Any) -> int:
        if isinstance(value, dict) and isinstance(value.get("max_concurrent_requests"), int):
            value = {**value, "max_concurrent_requests": max(1, value["max_concurrent_requests"])}  # the fault
        return original(value, offer)

    initialize_module._limit = limit  # type: ignore[assignment]


def _fault_double_cancel() -> None:
    """§1.9: writes $/cancelRequest twice for one cancelled call."""
    original = Connection._tombstone

    def tombstone(self: Connection, call: Any, reason: str) -> None:
        original(self, call, reason)
        if self.negotiated is not None and self.negotiated.cancellation:
            self._enqueue(rpc.frame(rpc.notification("$/cancelRequest", {"id": call.id, "reason": reason})), None)

    Connection._tombstone = tombstone  # type: ignore[method-assign]


def _fault_silent_stale_response() -> None:
    """§1.9: ignores a late response to a tombstone without diagnosing it."""
    original = Connection.diagnose

    def diagnose(self: Connection, kind: str, message: str) -> None:
        if kind != "stale-response":  # the fault
            original(self, kind, message)

    Connection.diagnose = diagnose  # type: ignore[method-assign]


def _fault_progress_repeats() -> None:
    """§2.6: accepts a progress sequence equal to the last one."""
    original = Connection._accept_progress

    def accept(self: Connection, params: Any) -> str | None:
        problem = original(self, params)
        if problem is not None and "does not increase" in problem and "(last " + str(params.get("sequence")) in problem:
            with self._cond:
                self._progress[params["request_id"]] = params["sequence"]
            return None  # the fault: an equal sequence passes
        return problem

    Connection._accept_progress = accept  # type: ignore[method-assign]


def _fault_no_shutdown_request() -> None:
    """§1.8/§0: ends a child by closing its stdin instead of a shutdown request."""

    def shutdown(self: Connection, deadline: float, *, drain_s: float = 0.0) -> None:
        with self._cond:
            if self.state in connection_module.ENDED:
                return
            self._move(connection_module.DRAINING)
        self.channel.close_stdin()  # the fault
        self.channel.wait_exit(min(self.config.shutdown_stage_s, max(0.0, deadline - self.runtime.now())))
        self.terminate("stopped", "shut down")

    Connection.shutdown = shutdown  # type: ignore[method-assign]


def _fault_kill_leader_only() -> None:
    """§1.8: kills only the child, not its process group (a grandchild survives)."""

    def kill_group(self: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)  # the fault: not killpg
        with contextlib.suppress(Exception):
            self.proc.wait(5)

    ProcessChannel.kill_group = kill_group  # type: ignore[method-assign]


def _fault_stderr_not_drained() -> None:
    """§0: never reads the child's stderr, so a flood blocks the child."""
    Connection._drain_stderr = lambda self: None  # type: ignore[method-assign]


def _patch_initialize_params(change: Any) -> None:
    original = connection_module.initialize_params

    def params(manifest: Any, config: Any, *, source: str | None = None) -> Any:
        built, offer = original(manifest, config, source=source)
        return change(built, manifest), offer

    connection_module.initialize_params = params


def _fault_bogus_source() -> None:
    """§1.1: sends extension.source "bundled" (one of project/global/explicit is required)."""
    _patch_initialize_params(lambda p, m: {**p, "extension": {**p["extension"], "source": "bundled"}})  # the fault


def _fault_requires_octet_in_initialize() -> None:
    """§0: puts the packaging field requires_octet into the initialize request."""
    _patch_initialize_params(lambda p, m: {**p, "requires_octet": m.requires_octet})  # the fault


def _fault_protocol_in_0_1() -> None:
    """§1.1: adds a protocol member to an API 0.1 initialize request."""

    def change(p: Any, m: Any) -> Any:
        if m.api_version != "0.1":
            return p
        protocol = {"version": "0.2", "required_features": [], "optional_features": []}
        return {**p, "protocol": protocol}  # the fault

    _patch_initialize_params(change)


def _fault_no_resource_owner() -> None:
    """§1.2: omits context.resource_owner from API 0.2 tool calls."""
    original = ReferenceHost._with_context

    def with_context(self: ReferenceHost, connection: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        built = original(self, connection, method, params)
        context = {k: v for k, v in built["context"].items() if k != "resource_owner"}  # the fault
        return {**built, "context": context}

    ReferenceHost._with_context = with_context  # type: ignore[method-assign]


def _fault_cancel_wrong_id() -> None:
    """§1.9: the $/cancelRequest names an id the host never sent."""
    original = Connection._enqueue

    def enqueue(self: Connection, data: bytes, call: Any) -> None:
        if call is None and b'"$/cancelRequest"' in data:
            message = json.loads(data)
            message["params"]["id"] = message["params"]["id"] + 1_000_000  # the fault
            data = rpc.frame(message)
        original(self, data, call)

    Connection._enqueue = enqueue  # type: ignore[method-assign]


def _fault_stale_response_fails_others() -> None:
    """§1.9: a late response to a tombstone makes the host give up on every other pending call."""
    original = Connection.diagnose

    def diagnose(self: Connection, kind: str, message: str) -> None:
        original(self, kind, message)
        if kind == "stale-response":
            with self._cond:
                for call in list(self._calls.values()):
                    if call.outcome is None:
                        call.finish(CallOutcome("lost", message="confused by a stale response"))  # the fault

    Connection.diagnose = diagnose  # type: ignore[method-assign]


def _fault_admit_reused_child_id() -> None:
    """§2: admits a child request whose id this generation already used."""
    original = ChildRequests._admit

    def admit(self: ChildRequests, key: Any, message: Any) -> Any:
        self._used.discard(key)  # the fault: the id's earlier use is forgotten
        return original(self, key, message)

    ChildRequests._admit = admit  # type: ignore[method-assign]


@dataclass
class _SettledParent:
    id: int
    children: set[Any] = field(default_factory=set)


def _fault_admit_settled_parent() -> None:
    """§2: takes a parent_request_id naming an already settled request as active."""
    original = Connection.active_parent

    def active_parent(self: Connection, request_id: Any, methods: tuple[str, ...]) -> Any:
        found = original(self, request_id, methods)
        if found is None and isinstance(request_id, int) and 0 < request_id < self._next_id:
            return _SettledParent(request_id)  # the fault
        return found

    Connection.active_parent = active_parent  # type: ignore[method-assign]


# -- faults on the frames the host writes (one method's frames, one change each) -------------------


def _rewrite_frames(change: Any) -> None:
    """Every frame passes the serialized writer's queue: ``change(message)``
    returns the bytes to write instead, or None to leave the frame alone."""
    original = SerialWriter.enqueue

    def enqueue(self: SerialWriter, data: bytes, call: Any, *, expires_at: float | None = None) -> None:
        replaced = change(json.loads(data))
        original(self, data if replaced is None else replaced, call, expires_at=expires_at)

    SerialWriter.enqueue = enqueue  # type: ignore[method-assign]


def _on_method(method: str, change: Any) -> Any:
    """A frame change for requests/notifications of ``method`` only (the message is re-encoded)."""

    def apply(message: dict[str, Any]) -> bytes | None:
        if message.get("method") != method:
            return None
        changed = change(message)
        return changed if isinstance(changed, bytes) else rpc.frame(changed)

    return apply


def _on_child_answers(change: Any) -> Any:
    """A frame change for the host's answers to the extension's requests."""

    def apply(message: dict[str, Any]) -> bytes | None:
        if "method" in message or not isinstance(message.get("id"), str):
            return None  # the host's own ids are integers; the probe's children use strings
        return rpc.frame(change(message))

    return apply


def _with_params(message: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**message, "params": {**message["params"], **changes}}


def _with_context(message: dict[str, Any], change: Any) -> dict[str, Any]:
    return _with_params(message, context=change(dict(message["params"]["context"])))


def _fault_duplicate_member_name() -> None:
    """§0: tool/call frames repeat the jsonrpc member."""
    twice = b'"jsonrpc":"2.0","jsonrpc":"2.0"'
    _rewrite_frames(_on_method("tool/call", lambda m: rpc.frame(m).replace(b'"jsonrpc":"2.0"', twice, 1)))  # the fault


def _fault_fractional_shutdown_id() -> None:
    """JSON-RPC §4: the shutdown request's id carries a fraction."""
    _rewrite_frames(_on_method("shutdown", lambda m: {**m, "id": m["id"] + 0.5}))  # the fault


def _fault_tool_call_twice() -> None:
    """§0: every tool/call frame is written twice, so one id is outstanding twice."""
    _rewrite_frames(_on_method("tool/call", lambda m: rpc.frame(m) * 2))  # the fault


def _fault_arguments_not_object() -> None:
    """§1.2: tool/call arguments sent as an array."""
    _rewrite_frames(_on_method("tool/call", lambda m: _with_params(m, arguments=[])))  # the fault


def _fault_context_without_host() -> None:
    """§1.2: the execution context of a tool/call lacks its host object."""

    def change(context: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in context.items() if k != "host"}  # the fault

    _rewrite_frames(_on_method("tool/call", lambda m: _with_context(m, change)))


def _fault_owner_generation_text() -> None:
    """§1.2: resource_owner.process_generation written as a string."""

    def change(context: dict[str, Any]) -> dict[str, Any]:
        owner = dict(context["resource_owner"])
        owner["process_generation"] = str(owner["process_generation"])  # the fault
        return {**context, "resource_owner": owner}

    _rewrite_frames(_on_method("tool/call", lambda m: _with_context(m, change)))


def _fault_unknown_tool_name() -> None:
    """§1.2: tool/call names a tool the extension never declared."""
    renamed = _on_method("tool/call", lambda m: _with_params(m, name=m["params"]["name"] + "-renamed"))  # the fault
    _rewrite_frames(renamed)


def _fault_shutdown_params_array() -> None:
    """§1.8: shutdown params sent as an array."""
    _rewrite_frames(_on_method("shutdown", lambda m: {**m, "params": []}))  # the fault


def _fault_cancel_reason_number() -> None:
    """§1.9: the $/cancelRequest reason is a number."""
    _rewrite_frames(_on_method("$/cancelRequest", lambda m: _with_params(m, reason=7)))  # the fault


def _fault_text_before_shutdown() -> None:
    """§0: a line of plain text precedes the shutdown frame on the extension's stdin."""
    _rewrite_frames(_on_method("shutdown", lambda m: b"stopping now\n" + rpc.frame(m)))  # the fault


def _fault_torn_frame() -> None:
    """§0: half of the shutdown frame is written, ended by a newline, before the whole one
    (what two unsynchronized writers produce)."""

    def change(message: dict[str, Any]) -> bytes:
        data = rpc.frame(message)
        return data[: len(data) // 2] + b"\n" + data  # the fault

    _rewrite_frames(_on_method("shutdown", change))


def _fault_notify_before_initialize() -> None:
    """§1.1: a notification is written before the initialize request."""
    hello = rpc.frame(rpc.notification("host/hello", {}))
    _rewrite_frames(_on_method("initialize", lambda m: hello + rpc.frame(m)))  # the fault


def _fault_request_before_ready() -> None:
    """§1.1: a status/collect request follows initialize before its answer."""
    extra = rpc.frame(rpc.request(1_000_000, "status/collect", {}))
    _rewrite_frames(_on_method("initialize", lambda m: rpc.frame(m) + extra))  # the fault


def _fault_no_octet_version() -> None:
    """§1.1: the initialize request lacks octet_version."""
    _patch_initialize_params(lambda p, m: {k: v for k, v in p.items() if k != "octet_version"})  # the fault


def _fault_wrong_api_version() -> None:
    """§1.1: the initialize request names an API version the manifest did not select."""
    _patch_initialize_params(lambda p, m: {**p, "api_version": "0.4" if m.api_version != "0.4" else "0.2"})  # the fault


def _fault_optional_features_object() -> None:
    """§1.1: protocol.optional_features sent as an object, not an array of names."""
    _patch_initialize_params(lambda p, m: {**p, "protocol": {**p["protocol"], "optional_features": {}}})  # the fault


def _fault_confirmed_text() -> None:
    """§2.2: a confirmation is answered with confirmed as the string "no"."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        return {**m, "result": {"confirmed": "no"}} if "result" in m else m  # the fault

    _rewrite_frames(_on_child_answers(change))


def _fault_refusal_without_message() -> None:
    """JSON-RPC §5.1: refusals of child requests carry no error message."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        return {**m, "error": {"code": m["error"]["code"]}} if "error" in m else m  # the fault

    _rewrite_frames(_on_child_answers(change))


def _fault_reserved_refusal_code() -> None:
    """JSON-RPC §5.1: refusals of child requests use -32500, reserved and undefined."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        return {**m, "error": {**m["error"], "code": -32500}} if "error" in m else m  # the fault

    _rewrite_frames(_on_child_answers(change))


def _fault_result_and_error() -> None:
    """JSON-RPC §5: answers to child requests carry both result and error."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        return {**m, "error": {"code": -32603, "message": "also"}} if "result" in m else m  # the fault

    _rewrite_frames(_on_child_answers(change))


def _fault_answers_progress() -> None:
    """JSON-RPC §4.1: the host answers every $/progress notification (with id null)."""
    original = Connection._on_progress

    def on_progress(self: Connection, params: Any) -> None:
        original(self, params)
        self.send_frame(rpc.result(None, {}))  # the fault

    Connection._on_progress = on_progress  # type: ignore[method-assign]


def _fault_shutdown_twice() -> None:
    """§1.8: the shutdown request is written twice (a retry), so a request follows shutdown."""
    retry = _on_method("shutdown", lambda m: rpc.frame(m) + rpc.frame({**m, "id": m["id"] + 1_000}))  # the fault
    _rewrite_frames(retry)


def _fault_reuse_settled_id() -> None:
    """§0: the shutdown request reuses the id of the request before it."""
    original = Connection._new_call

    def new_call(self: Connection, method: str, params: Any, *, counts: bool) -> Any:
        call = original(self, method, params, counts=counts)
        if method == "shutdown" and call.id > 1:
            call.id -= 1  # the fault
            call.frame = rpc.frame(rpc.request(call.id, method, params))
        return call

    Connection._new_call = new_call  # type: ignore[method-assign]


def _fault_reuse_tombstone_id() -> None:
    """§1.9: the next tool/call after a cancellation reuses the cancelled (tombstoned) id."""
    original = Connection._new_call

    def new_call(self: Connection, method: str, params: Any, *, counts: bool) -> Any:
        call = original(self, method, params, counts=counts)
        if method == "tool/call" and self._tombstones:
            call.id = self._tombstones.popleft()  # the fault
            call.frame = rpc.frame(rpc.request(call.id, method, params))
        return call

    Connection._new_call = new_call  # type: ignore[method-assign]


def _fault_admit_missing_parent() -> None:
    """§2: admits a confirmation/request that names no parent_request_id."""
    original = Connection.active_parent

    def active_parent(self: Connection, request_id: Any, methods: tuple[str, ...]) -> Any:
        if request_id is None:
            return _SettledParent(0)  # the fault
        return original(self, request_id, methods)

    Connection.active_parent = active_parent  # type: ignore[method-assign]


# -- faults in what the initialize request offers ------------------------------------------------


def _offering(change: Any) -> None:
    """Patch protocol.optional_features of the initialize request: ``change(offered)`` -> the new list."""

    def params(p: Any, m: Any) -> Any:
        protocol = p["protocol"]
        return {**p, "protocol": {**protocol, "optional_features": change(list(protocol["optional_features"]))}}

    _patch_initialize_params(params)


def _fault_offer_0_4_feature() -> None:
    """§1.1: an API 0.2 offer includes tool_prompt_metadata_v1, an API 0.4 feature."""
    _offering(lambda offered: [*offered, "tool_prompt_metadata_v1"])  # the fault


def _fault_no_prompt_metadata_offer() -> None:
    """§1.1: an API 0.4 offer leaves out tool_prompt_metadata_v1."""
    _offering(lambda offered: [f for f in offered if f != "tool_prompt_metadata_v1"])  # the fault


def _fault_agent_sessions_alone() -> None:
    """§1.1: agent_sessions is offered without agent_model_selection_v1."""
    _offering(lambda offered: [*(f for f in offered if f != "agent_model_selection_v1"), "agent_sessions"])  # the fault


def _fault_compaction_without_control() -> None:
    """§1.1: session_compaction_v1 is offered without session_control_v1 (API 0.4)."""
    _offering(
        lambda offered: [*(f for f in offered if f != "session_control_v1"), "session_compaction_v1"]
    )  # the fault


def _fault_secrets_without_allowlist() -> None:
    """§1.1: secrets is offered although the manifest allows no secret."""
    _offering(lambda offered: [*offered, "secrets"])  # the fault


def _fault_credentials_undeclared() -> None:
    """§1.1: provider_credentials is offered although the manifest does not declare it."""
    _offering(lambda offered: [*offered, "provider_credentials"])  # the fault


def _fault_empty_secrets_sent() -> None:
    """§1.1: capabilities.secrets is sent as [] although the allowlist is empty (it is omitted then)."""
    _patch_initialize_params(lambda p, m: {**p, "capabilities": {**p["capabilities"], "secrets": []}})  # the fault


def _fault_credentials_echo_undeclared() -> None:
    """§1.1: capabilities.provider_credentials is true for a manifest that never declared it."""
    _patch_initialize_params(
        lambda p, m: {**p, "capabilities": {**p["capabilities"], "provider_credentials": True}}  # the fault
    )


def _fault_accept_duplicate_tools() -> None:
    """§1.1: a repeated tool name of the initialize answer is dropped instead of rejected."""
    original = initialize_module._check_catalog

    def check(tools: Any, commands: Any, manifest: Any, features: frozenset[str]) -> None:
        original(list(dict.fromkeys(tools)), commands, manifest, features)  # the fault

    initialize_module._check_catalog = check


def _fault_accept_empty_description() -> None:
    """§1.1: a tool with an empty description is accepted."""
    original = initialize_module._check_tools

    def check(tools: Any, api_version: str, features: frozenset[str]) -> None:
        original([{**t, "description": t.get("description") or "-"} for t in tools], api_version, features)  # the fault

    initialize_module._check_tools = check


def _fault_cancel_wrong_version() -> None:
    """JSON-RPC §4: $/cancelRequest frames carry jsonrpc "2.1"."""
    _rewrite_frames(_on_method("$/cancelRequest", lambda m: {**m, "jsonrpc": "2.1"}))  # the fault


def _fault_cancel_keeps_waiting() -> None:
    """§1.9: cancelling a written call leaves its waiter in place: the caller sees the
    extension's late answer instead of the cancellation."""
    original = Connection.cancel

    def cancel(self: Connection, call: Any, reason: str = "user") -> None:
        finish, call.finish = call.finish, lambda outcome: None  # the fault: the waiter is not dropped
        try:
            original(self, call, reason)
        finally:
            call.finish = finish

    Connection.cancel = cancel  # type: ignore[method-assign]


def _fault_no_cancel_grace() -> None:
    """§1.9: a cancelled call the extension never settles is waited on forever
    (no grace, the generation is never terminated)."""
    Connection._grace = lambda self, call: None  # type: ignore[method-assign]  # the fault


def _fault_inspect_pending_zero() -> None:
    """§5: status inspection always shows zero pending requests."""
    original = Driver.op_inspect

    def op_inspect(self: Driver, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {**original(self, rid, params), "pending": 0}  # the fault

    Driver.op_inspect = op_inspect  # type: ignore[method-assign]


def _fault_kill_after_ack() -> None:
    """§1.8: kills the extension as soon as it acknowledged shutdown, without the exit stage."""
    original = Connection.shutdown

    def shutdown(self: Connection, deadline: float, *, drain_s: float = 0.0) -> None:
        wait_exit = self.channel.wait_exit
        self.channel.wait_exit = lambda timeout: wait_exit(0.0)  # type: ignore[method-assign]  # the fault
        try:
            original(self, deadline, drain_s=drain_s)
        finally:
            self.channel.wait_exit = wait_exit  # type: ignore[method-assign]

    Connection.shutdown = shutdown  # type: ignore[method-assign]


def _fault_notification_level_unset() -> None:
    """§2.1: a notification without level is reported as a warning, not as info."""
    original = Reporter.contribution

    def contribution(self: Reporter, extension: str, generation: int, method: str, params: Any) -> None:
        if method == "notification" and isinstance(params, dict) and "level" not in params:
            params = {**params, "level": "warning"}  # the fault
        original(self, extension, generation, method, params)

    Reporter.contribution = contribution  # type: ignore[method-assign]


def _fault_accept_empty_content() -> None:
    """§1.2: a tool result with an empty content array is accepted."""
    original = results_module._content

    def content(value: Any, negotiated: Any) -> str | None:
        return None if value == [] else original(value, negotiated)  # the fault

    results_module._content = content  # type: ignore[assignment]


def _fault_progress_without_feature() -> None:
    """§2.6: progress is delivered even when request_progress was not negotiated."""
    original = Connection._accept_progress

    def accept(self: Connection, params: Any) -> str | None:
        problem = original(self, params)
        if problem is not None and "without negotiated request_progress" in problem:
            with self._cond:
                self._progress[params["request_id"]] = params["sequence"]
            return None  # the fault
        return problem

    Connection._accept_progress = accept  # type: ignore[method-assign]


def _fault_ignore_requires_octet() -> None:
    """§0: the manifest's requires_octet is never compared with the host's version."""
    original = manifest_module.parse_manifest

    def parse(data: dict[str, Any], path: Any, *, source: str, octet_version: str) -> Any:
        data = {**data, "requires_octet": octet_version}  # the fault
        return original(data, path, source=source, octet_version=octet_version)

    manifest_module.parse_manifest = parse


def _fault_accept_bad_subscription() -> None:
    """§1.1: a lifecycle_events subscription without the negotiated feature is ignored, not rejected."""
    original = initialize_module._subscriptions

    def subscriptions(protocol: Any, features: frozenset[str]) -> frozenset[str]:
        if "lifecycle_events" not in features:
            return frozenset()  # the fault
        return original(protocol, features)

    initialize_module._subscriptions = subscriptions


def _fault_command_arguments_numbers() -> None:
    """§1.3: command/execute arguments are sent as numbers, not strings."""
    _rewrite_frames(_on_method("command/execute", lambda m: _with_params(m, arguments=[1, 2])))  # the fault


def _fault_command_renamed() -> None:
    """§1.3: command/execute names a command the extension never returned."""
    renamed = _on_method("command/execute", lambda m: _with_params(m, name=m["params"]["name"] + "-x"))  # the fault
    _rewrite_frames(renamed)


def _fault_hook_renamed() -> None:
    """§1.4: hook/run names a hook the manifest never declared."""
    _rewrite_frames(_on_method("hook/run", lambda m: _with_params(m, hook="on_everything")))  # the fault


def _fault_hook_payload_text() -> None:
    """§1.4: a before_prompt payload carries its prompt as a number."""
    _rewrite_frames(_on_method("hook/run", lambda m: _with_params(m, payload={"prompt": 42})))  # the fault


def _fault_collect_prompt_number() -> None:
    """§1.5: context/collect carries its prompt as a number."""
    _rewrite_frames(_on_method("context/collect", lambda m: _with_params(m, prompt=7)))  # the fault


def _fault_status_surface_sidebar() -> None:
    """§1.6: status/collect names a surface that does not exist."""
    _rewrite_frames(_on_method("status/collect", lambda m: _with_params(m, surface="sidebar")))  # the fault


def _fault_render_error_flag_text() -> None:
    """§1.7: tool/render carries is_error as a string."""
    _rewrite_frames(_on_method("tool/render", lambda m: _with_params(m, is_error="no")))  # the fault


def _fault_no_admission_limit() -> None:
    """§0: requests are written as they come; the negotiated max_concurrent_requests is never applied."""
    Connection.limit = property(lambda self: None)  # type: ignore[assignment,method-assign]  # the fault


def _fault_no_concurrency_cap() -> None:
    """§1.1: the accepted max_concurrent_requests is used as is, not capped at the value offered."""
    original = initialize_module._limit

    def limit(value: Any, offer: Any) -> int:
        original(value, offer)  # still rejects a value <= 0
        return int(value["max_concurrent_requests"])  # the fault

    initialize_module._limit = limit  # type: ignore[assignment]


def _fault_cancel_on_0_1() -> None:
    """§1.9: $/cancelRequest is written to API 0.1 extensions too."""
    original = Connection._tombstone

    def tombstone(self: Connection, call: Any, reason: str) -> None:
        original(self, call, reason)
        if self.negotiated is not None and not self.negotiated.cancellation:
            cancel = rpc.notification("$/cancelRequest", {"id": call.id, "reason": reason})
            self._enqueue(rpc.frame(cancel), None)  # the fault

    Connection._tombstone = tombstone  # type: ignore[method-assign]


def _fault_slow_stages() -> None:
    """§1.8: each shutdown stage lasts eight times the shutdown timeout the host was given."""
    TIMING["shutdown_timeout_ms"] = ("shutdown_stage_s", 1000.0 / 8)  # the fault


# -- faults on what the host does with what it is given (§0, §1.1-§1.8; conformance.machines.host_handling) --


def _fault_0_manifest_read_unbounded() -> None:
    """§0: manifests are read through four times the 256 KiB bound."""
    original = manifest_module.read_bounded

    def read_bounded(path: Any, limit: int) -> str:
        return original(path, limit * 4)  # the fault

    manifest_module.read_bounded = read_bounded


def _fault_1_1_environment_any_name() -> None:
    """§1.1: [capabilities].environment is never validated (any name, any API version)."""
    original = manifest_module._check_capabilities

    def check(capabilities: dict[str, Any], api: str, path: Any) -> None:
        original({k: v for k, v in capabilities.items() if k != "environment"}, api, path)  # the fault

    manifest_module._check_capabilities = check


def _fault_1_1_secret_names_unchecked() -> None:
    """§1.1: the secrets allowlist is never validated (duplicates, non-identifiers)."""
    original = manifest_module._check_capabilities

    def check(capabilities: dict[str, Any], api: str, path: Any) -> None:
        original({k: v for k, v in capabilities.items() if k != "secrets"}, api, path)  # the fault

    manifest_module._check_capabilities = check


def _fault_1_1_ssh_agent_passed() -> None:
    """§1.1: SSH_AUTH_SOCK is passed to every extension, declared or not."""
    original = host_module.sanitized_environment

    def sanitized(declared: tuple[str, ...] = (), **kw: Any) -> dict[str, str]:
        return original((*declared, "SSH_AUTH_SOCK"), **kw)  # the fault

    host_module.sanitized_environment = sanitized


def _fault_1_1_lifecycle_default_none() -> None:
    """§1.1: lifecycle_events negotiated without a subscription list subscribes to nothing."""
    original = initialize_module._subscriptions

    def subscriptions(protocol: Any, features: frozenset[str]) -> frozenset[str]:
        if protocol.get("lifecycle_events") in (None, []):
            return frozenset()  # the fault
        return original(protocol, features)

    initialize_module._subscriptions = subscriptions


def _fault_1_2_structured_without_schema() -> None:
    """§1.2: structured_content is accepted from a tool that declared no output_schema."""
    original = results_module._structured

    def structured(result: dict[str, Any], schema: dict[str, Any] | None) -> str | None:
        return None if schema is None else original(result, schema)  # the fault

    results_module._structured = structured


def _fault_1_2_media_unverified() -> None:
    """§1.2: image and audio parts are accepted without the artifacts feature."""
    original = results_module._content

    def content(value: Any, negotiated: Any) -> str | None:
        if isinstance(value, list):
            value = [p for p in value if not (isinstance(p, dict) and p.get("type") in ("image", "audio"))]  # the fault
        return original(value, negotiated)

    results_module._content = content  # type: ignore[assignment]


def _fault_1_2_legacy_metadata_refused() -> None:
    """§1.2: an API 0.1 tool result carrying metadata is refused instead of accepted."""
    original = results_module._tool_result_0_1

    def legacy(result: Any) -> str | None:
        if isinstance(result, dict) and "metadata" in result:
            return "metadata is not accepted"  # the fault
        return original(result)

    results_module._tool_result_0_1 = legacy


def _fault_1_6_null_status_refused() -> None:
    """§1.6: a null status/collect result is refused instead of contributing nothing."""
    original = results_module.result_problem

    def problem(method: str, params: dict[str, Any], result: Any, negotiated: Any) -> str | None:
        if method == "status/collect" and result is None:
            return "null status"  # the fault
        return original(method, params, result, negotiated)

    connection_module.result_problem = problem


def _fault_1_6b_menu_unchecked() -> None:
    """§1.6b: a menu/collect result is shown as it came, whatever bound it breaks."""
    host_module.menu_problem = lambda menu, commands: None  # the fault


def _fault_1_6b_menu_no_timeout() -> None:
    """§1.6b: the host waits a hundred times the menu timeout it was given."""
    TIMING["menu_timeout_ms"] = ("menu_timeout_s", 1000.0 / 100)  # the fault


def _fault_1_8_no_drain() -> None:
    """§1.8: calls still open at shutdown are not cancelled; they die with the process."""
    Connection._open_calls = lambda self: []  # type: ignore[method-assign]  # the fault


def _fault_1_8_no_aggregate_deadline() -> None:
    """§1.8: product shutdown waits a hundred times the aggregate deadline it was given."""
    TIMING["shutdown_aggregate_ms"] = ("shutdown_aggregate_s", 1000.0 / 100)  # the fault


def _fault_1_3_command_notifications_refused() -> None:
    """§1.3: a command result that carries notifications is refused."""
    original = results_module.result_problem

    def problem(method: str, params: dict[str, Any], result: Any, negotiated: Any) -> str | None:
        if method == "command/execute" and isinstance(result, dict) and result.get("notifications"):
            return "command notifications are not supported"  # the fault
        return original(method, params, result, negotiated)

    connection_module.result_problem = problem


def _fault_1_4_deny_blocks_every_hook() -> None:
    """§1.4: a deny disposition blocks the operation of every hook, not only before_prompt/before_tool_call."""
    results_module.VETO_HOOKS = ("before_prompt", "before_tool_call", "after_response", "after_tool_call")  # the fault


def _fault_1_5_default_placement_system() -> None:
    """§1.5: a context contribution without placement goes to system_suffix."""
    results_module.DEFAULT_PLACEMENT = "system_suffix"  # the fault


def _fault_1_11_refusal_silent() -> None:
    """§1.11: an unnegotiated Wave-1 notification is dropped without a diagnostic."""
    original = Connection.diagnose

    def diagnose(self: Connection, kind: str, message: str) -> None:
        if kind != "notification-refused":  # the fault
            original(self, kind, message)

    Connection.diagnose = diagnose  # type: ignore[method-assign]


def _fault_1_8_interactive_uncapped() -> None:
    """§1.8: interactive exits run the normal product shutdown, without the 1.4 s cap."""
    original = ReferenceHost.shutdown

    def shutdown(self: ReferenceHost, name: str | None = None, *, coordinated: bool = False) -> None:
        original(self, name)  # the fault: coordinated is ignored

    ReferenceHost.shutdown = shutdown  # type: ignore[method-assign]


def _fault_0_undeclared_confirmations_served() -> None:
    """§0: confirmation/request is served to extensions that never declared confirmations."""
    original = ChildRequests._served

    def served(self: ChildRequests, method: str) -> bool:
        return method == "confirmation/request" or original(self, method)  # the fault

    ChildRequests._served = served  # type: ignore[method-assign]


def _fault_1_1_policy_allows() -> None:
    """§1.1: a generic policy/evaluate request is answered allow."""
    original = ChildRequests.on_request

    def on_request(self: ChildRequests, message: Any) -> None:
        if message.method == "policy/evaluate":
            self._conn.send_frame(rpc.result(message.id, {"decision": "allow"}))  # the fault
            return
        original(self, message)

    ChildRequests.on_request = on_request  # type: ignore[method-assign]


def _fault_1_1_secrets_in_environment() -> None:
    """§1.1: the manifest's allowed secrets are put into the extension's environment."""
    original = ReferenceHost._spawn

    def spawn(self: ReferenceHost, record: Any, *, generation: int) -> Any:
        launch = self.launcher.launch

        def launch_with_secrets(command: Any, *, cwd: Any, env: dict[str, str]) -> Any:
            secrets = {name: "from-the-secret-store" for name in record.manifest.secrets}  # the fault
            return launch(command, cwd=cwd, env={**env, **secrets})

        self.launcher.launch = launch_with_secrets  # type: ignore[method-assign,assignment]
        try:
            return original(self, record, generation=generation)
        finally:
            self.launcher.launch = launch  # type: ignore[method-assign]

    ReferenceHost._spawn = spawn  # type: ignore[method-assign]


def _fault_1_6b_action_arguments_joined() -> None:
    """§1.6b: a menu action runs its command with its arguments joined into one string."""
    original = host_module._find_action

    def find(menu: Any, item_id: str) -> dict[str, Any] | None:
        item = original(menu, item_id)
        if item is None:
            return None
        return {**item, "arguments": [" ".join(item.get("arguments", []))]}  # the fault

    host_module._find_action = find


def _fault_1_6b_destructive_unasked() -> None:
    """§1.6b: destructive menu actions run without asking the person (and nothing is pre-approved)."""
    original = host_module._find_action

    def find(menu: Any, item_id: str) -> dict[str, Any] | None:
        item = original(menu, item_id)
        return None if item is None else {k: v for k, v in item.items() if k != "destructive"}  # the fault

    host_module._find_action = find


def _fault_1_6b_action_progress_hidden() -> None:
    """§1.6b: a menu action's progress and prompts are not shown in place (not tied to the action)."""
    actions: set[str] = set()
    original_op, original_call_of = Driver.op_menu_action, Driver.call_of

    def op_menu_action(self: Driver, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        actions.add(str(params.get("call")))
        return original_op(self, rid, params)

    def call_of(self: Driver, extension: str, generation: int, wire_id: int) -> str | None:
        call = original_call_of(self, extension, generation, wire_id)
        return None if call in actions else call  # the fault

    Driver.op_menu_action = op_menu_action  # type: ignore[method-assign]
    Driver.call_of = call_of  # type: ignore[method-assign]


def _fault_1_1_dynamic_tools_compared() -> None:
    """§1.1: offers dynamic_tools, yet still compares the initialize tool list with contributes.tools."""
    offered, check_catalog = initialize_module.offered_features, initialize_module._check_catalog

    def offer(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*offered(api_version, config), "dynamic_tools")

    def check(tools: Any, commands: Any, manifest: Any, features: frozenset[str]) -> None:
        check_catalog(tools, commands, manifest, features - {"dynamic_tools"})  # the fault

    initialize_module.offered_features = offer
    initialize_module._check_catalog = check


def _fault_1_1_command_register_accepted() -> None:
    """§1.1: answers commands/register and commands/unregister as if they existed."""
    original = ChildRequests.on_request

    def on_request(self: ChildRequests, message: Any) -> None:
        if message.method in ("commands/register", "commands/unregister"):
            self._conn.send_frame(rpc.result(message.id, {}))  # the fault
            return
        original(self, message)

    ChildRequests.on_request = on_request  # type: ignore[method-assign]


def _fault_0_headless_input_guessed() -> None:
    """§0: with no interactive frontend bound, input/request is answered with a guess instead of null."""
    original = Reporter.input

    def input_(self: Reporter, prompt: Prompt) -> str | None:
        answer = original(self, prompt)
        return "a guess" if answer is None else answer  # the fault

    Reporter.input = input_  # type: ignore[method-assign]


def _fault_1_1_runtime_commands_reloaded() -> None:
    """§1.1: offers runtime_commands and, like dynamic_tools, lets a reload change the command catalog."""
    offered, has = initialize_module.offered_features, initialize_module.Negotiated.has

    def offer(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*offered(api_version, config), "runtime_commands")

    def negotiated_has(self: Any, feature: str) -> bool:
        return has(self, feature) or (feature == "dynamic_tools" and has(self, "runtime_commands"))  # the fault

    initialize_module.offered_features = offer
    initialize_module.Negotiated.has = negotiated_has  # type: ignore[method-assign]


def _fault_1_1_registration_unchecked() -> None:
    """§1.1: offers dynamic_tools and accepts every tools/register as it comes (no metadata validation)."""
    offered, on_request = initialize_module.offered_features, ChildRequests.on_request

    def offer(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*offered(api_version, config), "dynamic_tools")

    def accept(self: ChildRequests, message: Any) -> None:
        if message.method == "tools/register":
            tools = [t.get("name") for t in message.params.get("tools", []) if isinstance(t, dict)]
            self._conn.send_frame(rpc.result(message.id, {"revision": 1, "tools": tools}))  # the fault
            return
        on_request(self, message)

    initialize_module.offered_features = offer
    ChildRequests.on_request = accept  # type: ignore[method-assign]


def _fault_1_1_composition_unguarded() -> None:
    """§1.1: offers tool_composition_v1 and serves composition/context under any parent."""
    offered, on_request = initialize_module.offered_features, ChildRequests.on_request

    def offer(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*offered(api_version, config), "tool_composition_v1")

    def serve(self: ChildRequests, message: Any) -> None:
        if message.method == "composition/context":
            frozen = {"tools": [], "store": {}, "limits": {"timeout_ms": 30000, "max_calls": 256}}
            self._conn.send_frame(rpc.result(message.id, frozen))  # the fault: no live parent is required
            return
        on_request(self, message)

    initialize_module.offered_features = offer
    ChildRequests.on_request = serve  # type: ignore[method-assign]


def _fault_1_1_agent_sessions_unserved() -> None:
    """§1.1: offers agent_sessions (and its model selection) with no child-session service:
    agent calls are answered -32601, not the -32002 an unbound owner gets."""
    offered = initialize_module.offered_features

    def offer(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*offered(api_version, config), "agent_sessions", "agent_model_selection_v1")  # the fault

    initialize_module.offered_features = offer


HANDLING_FAULTS: dict[str, Any] = {
    "1.1-agent-sessions-unserved": _fault_1_1_agent_sessions_unserved,
    "1.1-composition-unguarded": _fault_1_1_composition_unguarded,
    "1.1-registration-unchecked": _fault_1_1_registration_unchecked,
    "1.1-runtime-commands-reloaded": _fault_1_1_runtime_commands_reloaded,
    "0-headless-input-guessed": _fault_0_headless_input_guessed,
    "1.1-dynamic-tools-compared": _fault_1_1_dynamic_tools_compared,
    "1.1-command-register-accepted": _fault_1_1_command_register_accepted,
    "1.6b-action-arguments-joined": _fault_1_6b_action_arguments_joined,
    "1.6b-destructive-unasked": _fault_1_6b_destructive_unasked,
    "1.6b-action-progress-hidden": _fault_1_6b_action_progress_hidden,
    "0-undeclared-confirmations-served": _fault_0_undeclared_confirmations_served,
    "1.1-policy-allows": _fault_1_1_policy_allows,
    "1.1-secrets-in-environment": _fault_1_1_secrets_in_environment,
    "1.3-command-notifications-refused": _fault_1_3_command_notifications_refused,
    "1.4-deny-blocks-every-hook": _fault_1_4_deny_blocks_every_hook,
    "1.5-default-placement-system": _fault_1_5_default_placement_system,
    "1.11-refusal-silent": _fault_1_11_refusal_silent,
    "1.8-interactive-uncapped": _fault_1_8_interactive_uncapped,
    "0-manifest-read-unbounded": _fault_0_manifest_read_unbounded,
    "1.1-environment-any-name": _fault_1_1_environment_any_name,
    "1.1-secret-names-unchecked": _fault_1_1_secret_names_unchecked,
    "1.1-ssh-agent-passed": _fault_1_1_ssh_agent_passed,
    "1.1-lifecycle-default-none": _fault_1_1_lifecycle_default_none,
    "1.2-structured-without-schema": _fault_1_2_structured_without_schema,
    "1.2-media-unverified": _fault_1_2_media_unverified,
    "1.2-legacy-metadata-refused": _fault_1_2_legacy_metadata_refused,
    "1.6-null-status-refused": _fault_1_6_null_status_refused,
    "1.6b-menu-unchecked": _fault_1_6b_menu_unchecked,
    "1.6b-menu-no-timeout": _fault_1_6b_menu_no_timeout,
    "1.8-no-drain": _fault_1_8_no_drain,
    "1.8-no-aggregate-deadline": _fault_1_8_no_aggregate_deadline,
}


# -- faults of fixtures/hosts/<section>-*: §0, §1.1, §1.2, §1.6b, §1.9, §1.10, §2, §2.2, §2.7, §3 --------
# (one block, names prefixed by their section; each breaks one rule)


def _fault_0_no_frame_bound() -> None:
    """§0: the host writes a request frame of any size (the 1 MiB bound is never applied)."""
    Connection._oversized = lambda self, frame: False  # type: ignore[method-assign]  # the fault


def _fault_1_1_accept_initialize_error() -> None:
    """§1.1: an initialize answered with an error is taken as a success with the manifest's catalog."""
    original = Connection._outcome

    def outcome(self: Connection, call: Any, reply: Any) -> CallOutcome:
        if call.method != "initialize" or reply.error is None:
            return original(self, call, reply)
        params = call.params if isinstance(call.params, dict) else {}
        contributes = params.get("contributes", {})
        tools = [{"name": t, "description": t, "parameters": {"type": "object"}} for t in contributes.get("tools", [])]
        commands = [{"name": c, "description": c} for c in contributes.get("commands", [])]
        result: dict[str, Any] = {"api_version": params.get("api_version"), "tools": tools, "commands": commands}
        protocol = params.get("protocol")
        if isinstance(protocol, dict):
            limits = {"max_concurrent_requests": 1}
            result["protocol"] = {"version": protocol.get("version"), "features": list(REQUIRED), "limits": limits}
        return CallOutcome("ok", result)  # the fault: the error is replaced by defaults

    Connection._outcome = outcome  # type: ignore[method-assign]


REQUIRED = ("request_cancellation", "content_parts")


def _fault_1_1_accept_feature_without_base() -> None:
    """§1.1: offers policy_intents and approvals, and accepts approvals without policy_intents."""
    original = initialize_module.offered_features

    def offered(api_version: str, config: HostConfig) -> tuple[str, ...]:
        return (*original(api_version, config), "policy_intents", "approvals")

    initialize_module.offered_features = offered
    initialize_module.FEATURE_DEPENDENCIES = ()  # the fault: dependencies are never checked


def _fault_1_1_accept_output_schema() -> None:
    """§1.1: a tool's output_schema is accepted whatever keywords it uses."""
    initialize_module.output_schema_problem = lambda schema, depth=1: None  # the fault


def _fault_1_1_accept_too_many_commands() -> None:
    """§1.1: an initialize answer with more than 256 commands is accepted."""
    initialize_module.MAX_INITIALIZE_COMMANDS = 1_000_000  # the fault


def _fault_1_2_owner_generation_per_call() -> None:
    """§1.2: resource_owner.process_generation takes a new value on every tool/call."""

    def change(message: dict[str, Any]) -> dict[str, Any]:
        def owner(context: dict[str, Any]) -> dict[str, Any]:
            return {**context, "resource_owner": {**context["resource_owner"], "process_generation": message["id"]}}

        return _with_context(message, owner)  # the fault

    _rewrite_frames(_on_method("tool/call", change))


def _fault_1_2_catalog_revision_unnegotiated() -> None:
    """§1.2: tool/call carries catalog_revision although dynamic_tools was not negotiated."""
    _rewrite_frames(_on_method("tool/call", lambda m: _with_params(m, catalog_revision=0)))  # the fault


def _fault_2_string_call_ids() -> None:
    """§2/§1.2: tool/call ids are written as strings (children could not name them as parents);
    answers naming the string are matched to the call."""
    _rewrite_frames(_on_method("tool/call", lambda m: {**m, "id": str(m["id"])}))  # the fault
    original = Connection._on_reply

    def on_reply(self: Connection, reply: rpc.Reply) -> None:
        if isinstance(reply.id, str) and reply.id.isdigit():
            reply = rpc.Reply(int(reply.id), reply.result, reply.error)
        original(self, reply)

    Connection._on_reply = on_reply  # type: ignore[method-assign]


def _fault_1_6b_menu_undeclared() -> None:
    """§1.6b: menu/collect is routed to an extension that does not declare a menu."""
    original = ReferenceHost._refusal

    def refusal(self: ReferenceHost, connection: Any, name: str, method: str, params: dict[str, Any]) -> str | None:
        if method == "menu/collect" and connection is not None and connection.state == "ready":
            return None  # the fault
        return original(self, connection, name, method, params)

    ReferenceHost._refusal = refusal  # type: ignore[method-assign]


def _fault_1_2_hook_is_parent() -> None:
    """§1.2: a hook/run (or context/collect) request is taken as an active parent of child requests."""
    original = Connection.active_parent

    def active_parent(self: Connection, request_id: Any, methods: tuple[str, ...]) -> Any:
        return original(self, request_id, (*methods, "hook/run", "context/collect"))  # the fault

    Connection.active_parent = active_parent  # type: ignore[method-assign]


def _fault_1_10_unsubscribed_events() -> None:
    """§1.10: lifecycle events are sent whether or not the extension subscribed to them."""
    original = Connection.notify_lifecycle

    def notify(self: Connection, method: str, params: dict[str, Any]) -> bool:
        if original(self, method, params):
            return True
        checked = lifecycle_module.lifecycle_params(method, params)
        if isinstance(checked, str) or self.negotiated is None or not self.negotiated.has("lifecycle_events"):
            return False
        return self._send(rpc.notification(method, checked), best_effort=True)  # the fault

    Connection.notify_lifecycle = notify  # type: ignore[method-assign]


def _fault_1_10_turn_without_run_id() -> None:
    """§1.10: turn/started is sent without its run_id."""
    change = _on_method(
        "turn/started", lambda m: {**m, "params": {k: v for k, v in m["params"].items() if k != "run_id"}}
    )
    _rewrite_frames(change)  # the fault


def _fault_1_10_settled_outcome_done() -> None:
    """§1.10: turn/settled carries the outcome "done", which is not one of the seven."""
    _rewrite_frames(_on_method("turn/settled", lambda m: _with_params(m, outcome="done")))  # the fault


def _fault_1_10_reason_uncut() -> None:
    """§1.10: a settled event's reason is sent whole, however long."""
    lifecycle_module.MAX_SETTLED_REASON_BYTES = 1 << 40  # the fault


def _fault_2_bad_child_id_admitted() -> None:
    """§2: a child request id that is neither a u64 nor a string of at most 256 bytes is admitted."""
    rpc.valid_child_id = lambda value: True  # the fault


def _fault_3_refusal_decorated() -> None:
    """§3: refusals of child requests start their message with a symbol, not a contract name."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        if "error" not in m:
            return m
        return {**m, "error": {**m["error"], "message": "\u00bb " + str(m["error"].get("message"))}}  # the fault

    _rewrite_frames(_on_child_answers(change))


def _fault_2_wave1_owner_refused() -> None:
    """§2: a Wave-1 request carrying resource_owner is refused with -32002 although its parent is live."""
    original = ChildRequests._admit

    def admit(self: ChildRequests, key: Any, message: Any) -> Any:
        params = message.params if isinstance(message.params, dict) else {}
        if message.method in WAVE1_METHODS and "resource_owner" in params:
            return rpc.NOT_AVAILABLE, "not_foreground_owner: an explicit resource_owner is not accepted"  # the fault
        return original(self, key, message)

    ChildRequests._admit = admit  # type: ignore[method-assign]


WAVE1_METHODS = (
    "composer/get", "composer/set", "composer/insert", "shortcut/register", "session/append_entry",
    "session/set_name", "session/set_label", "session/send_message", "session/send_user_message", "tools/set_active",
)  # fmt: skip


def _fault_2_2_0_1_needs_parent() -> None:
    """§2.2: an API 0.1 confirmation/request without parent_request_id is refused."""
    original = ChildRequests._admit

    def admit(self: ChildRequests, key: Any, message: Any) -> Any:
        params = message.params if isinstance(message.params, dict) else {}
        if message.method == "confirmation/request" and "parent_request_id" not in params:
            return rpc.NOT_AVAILABLE, "parent_request_id is required"  # the fault
        return original(self, key, message)

    ChildRequests._admit = admit  # type: ignore[method-assign]


def _fault_2_7_input_extra_member() -> None:
    """§2.7: input/request answers carry a cancelled member beside value."""

    def change(m: dict[str, Any]) -> dict[str, Any]:
        result = m.get("result")
        if isinstance(result, dict) and "value" in result:
            return {**m, "result": {**result, "cancelled": result["value"] is None}}  # the fault
        return m

    _rewrite_frames(_on_child_answers(change))


def _fault_2_children_outlive_parent() -> None:
    """§2/§1.9: when a parent settles or is cancelled, its unresolved children are left pending
    (seen with a frontend that takes a few seconds to answer a confirmation, which is allowed)."""
    ChildRequests.cancel_owned_by = lambda self, call: None  # type: ignore[method-assign]  # the fault
    original = Reporter.confirm

    def confirm(self: Reporter, prompt: Prompt) -> bool:
        threading.Event().wait(SLOW_FRONTEND_S)  # a user who takes a while (allowed)
        return original(self, prompt)

    Reporter.confirm = confirm  # type: ignore[method-assign]


SLOW_FRONTEND_S = 3.0


def _fault_1_9_replay_cancelled() -> None:
    """§1.9: a cancelled tool call (its outcome unknown) is sent again."""
    original = Connection.cancel

    def cancel(self: Connection, call: Any, reason: str = "user") -> None:
        written = call.state in ("writing", "written") and call.outcome is None
        original(self, call, reason)
        if written and call.method == "tool/call" and reason == "user":
            self.request(call.method, call.params)  # the fault

    Connection.cancel = cancel  # type: ignore[method-assign]


def _fault_1_9_no_cancel_sent() -> None:
    """§1.9: a cancelled request already on the wire is tombstoned and its waiter dropped,
    but no $/cancelRequest tells the extension (its grace still runs)."""
    original = Connection._enqueue

    def enqueue(self: Connection, data: bytes, call: Any) -> None:
        if call is None and b'"$/cancelRequest"' in data:
            return  # the fault
        original(self, data, call)

    Connection._enqueue = enqueue  # type: ignore[method-assign]


def _fault_jsonrpc_5_answers_twice() -> None:
    """JSON-RPC §5: every answer to a request of the extension is written twice."""

    def twice(message: dict[str, Any]) -> bytes | None:
        if "method" in message or not isinstance(message.get("id"), str):
            return None
        return rpc.frame(message) * 2  # the fault

    _rewrite_frames(twice)


def _fault_jsonrpc_5_ids_as_strings() -> None:
    """JSON-RPC §5: an answer to a request with a numeric id carries that id as a string."""

    def stringly(message: dict[str, Any]) -> bytes | None:
        rid = message.get("id")
        if "method" in message or isinstance(rid, bool) or not isinstance(rid, int):
            return None  # the host's own requests carry methods; its answers do not
        return rpc.frame({**message, "id": str(rid)})  # the fault

    _rewrite_frames(stringly)


def _fault_jsonrpc_5_input_unanswered() -> None:
    """JSON-RPC §5: an input/request from the extension is dropped: never answered, never cancelled."""
    original = ChildRequests.on_request

    def on_request(self: ChildRequests, message: Any) -> None:
        if message.method == "input/request":
            return  # the fault
        original(self, message)

    ChildRequests.on_request = on_request  # type: ignore[method-assign]


def _fault_5_reload_cancels_at_once() -> None:
    """§5: a reload cancels generation N's in-flight calls as soon as N+1 is negotiated (no drain)."""
    original = Connection.shutdown

    def shutdown(self: Connection, deadline: float, *, drain_s: float = 0.0) -> None:
        original(self, deadline, drain_s=0.0)  # the fault: whatever drain the reload asked for

    Connection.shutdown = shutdown  # type: ignore[method-assign]


def _fault_5_no_restart() -> None:
    """§5: a generation that dies unexpectedly is never restarted (no backoff, no attempt, not parked)."""
    host_module.ReferenceHost._supervise = lambda self, record: None  # type: ignore[method-assign]  # the fault


def _fault_5_replay_after_restart() -> None:
    """§5: after an unexpected exit, the calls the dead generation left unresolved are sent
    again to the generation the supervisor restarts."""
    lost: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    original_fail, original_supervise = Connection._fail_all, host_module.ReferenceHost._supervise

    def fail_all(self: Connection, reason: str) -> None:
        with self._cond:
            open_calls = [
                (c.method, dict(c.params or {})) for c in self._calls.values() if c.outcome is None and c.counts
            ]
        lost.setdefault(self.name, []).extend(open_calls)
        original_fail(self, reason)

    def supervise(self: ReferenceHost, record: Any) -> None:
        original_supervise(self, record)
        connection = record.connection
        for method, params in lost.pop(record.manifest.name, []):
            if connection is not None and connection.state == connection_module.READY:
                inner = {k: v for k, v in params.items() if k != "context"}
                connection.request(method, self._with_context(connection, method, inner))  # the fault

    Connection._fail_all = fail_all  # type: ignore[method-assign]
    host_module.ReferenceHost._supervise = supervise  # type: ignore[method-assign]


_LATEST: dict[str, Connection] = {}  # extension name -> its newest generation (faults below)


def _track_latest() -> None:
    original = Connection.__init__

    def init(self: Connection, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _LATEST[self.name] = self

    Connection.__init__ = init  # type: ignore[method-assign]


def _fault_5_cancel_across_restart() -> None:
    """§5: after a restart, the calls the crashed generation lost are cancelled on the new one."""
    _track_latest()
    lost: dict[str, list[int]] = {}
    fail_all = Connection._fail_all

    def record(self: Connection, reason: str) -> None:
        with self._cond:
            written = [c.id for c in self._calls.values() if c.counts and c.state == "written"]
        lost.setdefault(self.name, []).extend(written)
        fail_all(self, reason)

    Connection._fail_all = record  # type: ignore[method-assign]
    spawn = ReferenceHost._spawn

    def respawn(self: ReferenceHost, record: Any, *, generation: int) -> Connection:
        connection = spawn(self, record, generation=generation)
        for call_id in lost.pop(connection.name, []) if generation > 1 else []:
            cancel = rpc.notification("$/cancelRequest", {"id": call_id, "reason": "restart"})
            connection.send_frame(cancel)  # the fault: an id of the crashed generation
        return connection

    ReferenceHost._spawn = respawn  # type: ignore[method-assign]


def _fault_2_2_confirmation_across_restart() -> None:
    """§2.2: a confirmation the frontend answers after its generation crashed is answered to the
    replacement (seen with a frontend that takes a few seconds to answer, which is allowed)."""
    _track_latest()
    original = ChildRequests._answer

    def answer(self: ChildRequests, key: Any, response: Any) -> None:
        conn, latest = self._conn, _LATEST.get(self._conn.name)
        if conn.state in connection_module.ENDED and latest is not None and latest is not conn:
            latest.send_frame(response)  # the fault
            return
        original(self, key, response)

    ChildRequests._answer = answer  # type: ignore[method-assign]
    slow = Reporter.confirm

    def confirm(self: Reporter, prompt: Prompt) -> bool:
        threading.Event().wait(SLOW_FRONTEND_S)  # a user who takes a while (allowed)
        return slow(self, prompt)

    Reporter.confirm = confirm  # type: ignore[method-assign]


def _fault_2_10_secret_unbounded() -> None:
    """§2.10: secret values are passed on whatever their size (seen with a broker, which a host may
    configure, whose value is one byte over 64 KiB)."""
    value = "s" * (children_module.MAX_SECRET_BYTES + 1)
    Driver.secret_broker = staticmethod(lambda *_: value)
    children_module.MAX_SECRET_BYTES = 1 << 40  # the fault


def _fault_1_11_trigger_unregistered() -> None:
    """§1.11: shortcut/trigger is sent for a shortcut no registration admitted."""
    original = Connection.notify_wave1

    def notify(self: Connection, method: str, params: Any) -> bool:
        if method == "shortcut/trigger" and isinstance(params, dict):
            self.children.shortcuts.add(str(params.get("id")))  # the fault: any id counts as registered
        return original(self, method, params)

    Connection.notify_wave1 = notify  # type: ignore[method-assign]


def _fault_1_11_wave1_ungated() -> None:
    """§1.11: Wave-1 notifications are sent without their negotiated feature (or a registration)."""

    def notify(self: Connection, method: str, params: Any) -> bool:
        return self._send(rpc.notification(method, params), best_effort=True)  # the fault

    Connection.notify_wave1 = notify  # type: ignore[method-assign]


def _fault_1_11_trigger_with_id() -> None:
    """§1.11: shortcut/trigger is written with an id, as a request."""
    counter = iter(range(1_000_000, 2_000_000))
    _rewrite_frames(_on_method("shortcut/trigger", lambda m: {**m, "id": next(counter)}))  # the fault


def _fault_1_11_batch_unchecked() -> None:
    """§1.11: message/updated (gated here on request_cancellation, an embedder's choice) is sent
    with whatever delta count the embedder reports, past the 64 of one batch."""
    original = Driver.host_for

    def host_for(self: Driver, timing: dict[str, Any]) -> ReferenceHost:
        host = original(self, timing)
        host.config.wave1_gates["message/updated"] = "request_cancellation"  # the gate (allowed)
        return host

    Driver.host_for = host_for  # type: ignore[method-assign]
    connection_module.batch_problem = lambda params: None  # the fault


def _fault_1_11_batch_after_settled() -> None:
    """§1.11: message/updated is sent after its message/settled (both gated on request_cancellation,
    an embedder's choice)."""
    original = Driver.host_for

    def host_for(self: Driver, timing: dict[str, Any]) -> ReferenceHost:
        host = original(self, timing)
        host.config.wave1_gates.update(
            {"message/updated": "request_cancellation", "message/settled": "request_cancellation"}
        )
        return host

    Driver.host_for = host_for  # type: ignore[method-assign]
    Connection._settled_message = lambda self, params: None  # type: ignore[method-assign]  # the fault


def _fault_2_late_register_unknown() -> None:
    """§2: a shortcut/register after initialize settled, without resource_owner, is refused as an
    unknown method (-32601), not with -32002 not_foreground_owner."""
    original = ChildRequests._admit

    def admit(self: ChildRequests, key: Any, message: Any) -> Any:
        refusal = original(self, key, message)
        if message.method == "shortcut/register" and refusal is not None and refusal[0] == rpc.NOT_AVAILABLE:
            return rpc.METHOD_NOT_FOUND, "shortcut/register is not available"  # the fault
        return refusal

    ChildRequests._admit = admit  # type: ignore[method-assign]


def _fault_2_no_outstanding_limit() -> None:
    """§2: child requests are admitted however many are outstanding (seen with a frontend that takes
    a few seconds per confirmation, which is allowed, so 128 of them stay outstanding)."""
    original = Driver.host_for

    def host_for(self: Driver, timing: dict[str, Any]) -> ReferenceHost:
        host = original(self, timing)
        object.__setattr__(host.config, "max_outstanding_children", 1 << 30)  # the fault
        return host

    Driver.host_for = host_for  # type: ignore[method-assign]
    slow = Reporter.confirm

    def confirm(self: Reporter, prompt: Prompt) -> bool:
        threading.Event().wait(SLOW_FRONTEND_S)  # a user who takes a while (allowed)
        return slow(self, prompt)

    Reporter.confirm = confirm  # type: ignore[method-assign]


def _offer_session_entries() -> None:
    """The embedder offers session_entries at API 0.4 (allowed: it routes model-turn hooks)."""
    original = Driver.host_for

    def host_for(self: Driver, timing: dict[str, Any]) -> ReferenceHost:
        host = original(self, timing)
        features = (*host.config.optional_features_0_4, "session_entries")
        object.__setattr__(host.config, "optional_features_0_4", features)  # the embedder's choice
        return host

    Driver.host_for = host_for  # type: ignore[method-assign]


def _fault_1_4b_turn_run_id() -> None:
    """§1.4b: model_turn_start payloads carry the bare entry id as run_id, without "run:" (seen
    with session_entries offered at API 0.4, its embedder's choice)."""
    _offer_session_entries()

    def change(message: dict[str, Any]) -> dict[str, Any]:
        payload = message["params"].get("payload")
        if message["params"].get("hook") != "model_turn_start" or not isinstance(payload, dict):
            return message
        return _with_params(message, payload={**payload, "run_id": str(payload.get("run_id")).removeprefix("run:")})

    _rewrite_frames(_on_method("hook/run", change))  # the fault


_SECTION_FAULTS: dict[str, Any] = {
    "1.4b-turn-run-id": _fault_1_4b_turn_run_id,
    "2-no-outstanding-limit": _fault_2_no_outstanding_limit,
    "1.11-batch-after-settled": _fault_1_11_batch_after_settled,
    "2-late-register-unknown": _fault_2_late_register_unknown,
    "1.11-trigger-unregistered": _fault_1_11_trigger_unregistered,
    "1.11-wave1-ungated": _fault_1_11_wave1_ungated,
    "1.11-trigger-with-id": _fault_1_11_trigger_with_id,
    "1.11-batch-unchecked": _fault_1_11_batch_unchecked,
    "2.10-secret-unbounded": _fault_2_10_secret_unbounded,
    "5-cancel-across-restart": _fault_5_cancel_across_restart,
    "2.2-confirmation-across-restart": _fault_2_2_confirmation_across_restart,
    "0-no-frame-bound": _fault_0_no_frame_bound,
    "1.1-accept-initialize-error": _fault_1_1_accept_initialize_error,
    "1.1-accept-feature-without-base": _fault_1_1_accept_feature_without_base,
    "1.1-accept-output-schema": _fault_1_1_accept_output_schema,
    "1.1-accept-too-many-commands": _fault_1_1_accept_too_many_commands,
    "1.2-owner-generation-per-call": _fault_1_2_owner_generation_per_call,
    "1.2-catalog-revision-unnegotiated": _fault_1_2_catalog_revision_unnegotiated,
    "1.2-hook-is-parent": _fault_1_2_hook_is_parent,
    "1.6b-menu-undeclared": _fault_1_6b_menu_undeclared,
    "1.9-replay-cancelled": _fault_1_9_replay_cancelled,
    "1.9-no-cancel-sent": _fault_1_9_no_cancel_sent,
    "5-no-restart": _fault_5_no_restart,
    "jsonrpc-5-answers-twice": _fault_jsonrpc_5_answers_twice,
    "jsonrpc-5-ids-as-strings": _fault_jsonrpc_5_ids_as_strings,
    "jsonrpc-5-input-unanswered": _fault_jsonrpc_5_input_unanswered,
    "5-reload-cancels-at-once": _fault_5_reload_cancels_at_once,
    "5-replay-after-restart": _fault_5_replay_after_restart,
    "1.10-unsubscribed-events": _fault_1_10_unsubscribed_events,
    "1.10-turn-without-run-id": _fault_1_10_turn_without_run_id,
    "1.10-settled-outcome-done": _fault_1_10_settled_outcome_done,
    "1.10-reason-uncut": _fault_1_10_reason_uncut,
    "2-string-call-ids": _fault_2_string_call_ids,
    "2-bad-child-id-admitted": _fault_2_bad_child_id_admitted,
    "2-wave1-owner-refused": _fault_2_wave1_owner_refused,
    "2-children-outlive-parent": _fault_2_children_outlive_parent,
    "2.2-0.1-needs-parent": _fault_2_2_0_1_needs_parent,
    "2.7-input-extra-member": _fault_2_7_input_extra_member,
    "3-refusal-decorated": _fault_3_refusal_decorated,
}


# -- faults of fixtures/hosts/1.4b-* and 2-id-budget-*: the last host entries of issue 9 ------------


def _fault_1_4b_decisions_accepted() -> None:
    """§1.4b: a model-turn hook answer is taken like any hook's (deny, session_operation cancel or
    replace_compaction, prompt context all accepted), with session_entries offered at API 0.4."""
    _offer_session_entries()
    results_module.turn_hook_problem = lambda result: None if isinstance(result, dict) else "not an object"  # the fault


def _fault_1_4b_oversize_accepted() -> None:
    """§1.4b: frames from the extension are read whatever their size, so a model-turn answer over
    the 1 MiB bound is taken (with session_entries offered at API 0.4)."""
    _offer_session_entries()
    decoder = connection_module.FrameDecoder

    def unbounded(*, max_frame_bytes: int, prefix_bytes: int = 0) -> Any:
        return decoder(max_frame_bytes=64 * max_frame_bytes, prefix_bytes=prefix_bytes)  # the fault

    connection_module.FrameDecoder = unbounded  # type: ignore[assignment,misc]


def _fault_2_no_id_budget() -> None:
    """§2: child requests are admitted however many distinct ids the generation has used."""
    original = Driver.host_for

    def host_for(self: Driver, timing: dict[str, Any]) -> ReferenceHost:
        host = original(self, timing)
        object.__setattr__(host.config, "max_child_ids", 1 << 30)  # the fault
        return host

    Driver.host_for = host_for  # type: ignore[method-assign]


def _fault_2_5_snapshots_unthrottled() -> None:
    """§2.5: every presentation snapshot is shown as it comes, however many arrive in a second."""
    connection_module.PRESENTATION_PER_WINDOW = 1 << 30  # the fault


def _fault_2_owner_coerced() -> None:
    """§2: a late shortcut/register that names any resource_owner is admitted as if the owner were valid."""
    original = ChildRequests._admit

    def admit(self: ChildRequests, key: Any, message: Any) -> Any:
        refusal = original(self, key, message)
        params = message.params if isinstance(message.params, dict) else {}
        if message.method == "shortcut/register" and refusal is not None and "resource_owner" in params:
            self._conn._enqueue(rpc.frame(rpc.result(message.id, {})), None)  # the fault
            return None
        return refusal

    ChildRequests._admit = admit  # type: ignore[method-assign]


_LAST_FAULTS: dict[str, Any] = {
    "2-owner-coerced": _fault_2_owner_coerced,
    "2.5-snapshots-unthrottled": _fault_2_5_snapshots_unthrottled,
    "2-no-id-budget": _fault_2_no_id_budget,
    "1.4b-decisions-accepted": _fault_1_4b_decisions_accepted,
    "1.4b-oversize-accepted": _fault_1_4b_oversize_accepted,
}


FAULTS: dict[str, Any] = {
    "slow-stages": _fault_slow_stages,
    "cancel-on-0.1": _fault_cancel_on_0_1,
    "no-admission-limit": _fault_no_admission_limit,
    "no-concurrency-cap": _fault_no_concurrency_cap,
    "collect-prompt-number": _fault_collect_prompt_number,
    "status-surface-sidebar": _fault_status_surface_sidebar,
    "render-error-flag-text": _fault_render_error_flag_text,
    "command-arguments-numbers": _fault_command_arguments_numbers,
    "command-renamed": _fault_command_renamed,
    "hook-renamed": _fault_hook_renamed,
    "hook-payload-text": _fault_hook_payload_text,
    "accept-bad-subscription": _fault_accept_bad_subscription,
    "ignore-requires-octet": _fault_ignore_requires_octet,
    "notification-level-unset": _fault_notification_level_unset,
    "accept-empty-content": _fault_accept_empty_content,
    "progress-without-feature": _fault_progress_without_feature,
    "kill-after-ack": _fault_kill_after_ack,
    "inspect-pending-zero": _fault_inspect_pending_zero,
    "no-cancel-grace": _fault_no_cancel_grace,
    "cancel-keeps-waiting": _fault_cancel_keeps_waiting,
    "offer-0.4-feature": _fault_offer_0_4_feature,
    "no-prompt-metadata-offer": _fault_no_prompt_metadata_offer,
    "agent-sessions-alone": _fault_agent_sessions_alone,
    "compaction-without-control": _fault_compaction_without_control,
    "secrets-without-allowlist": _fault_secrets_without_allowlist,
    "credentials-undeclared": _fault_credentials_undeclared,
    "empty-secrets-sent": _fault_empty_secrets_sent,
    "credentials-echo-undeclared": _fault_credentials_echo_undeclared,
    "accept-duplicate-tools": _fault_accept_duplicate_tools,
    "accept-empty-description": _fault_accept_empty_description,
    "cancel-wrong-version": _fault_cancel_wrong_version,
    "duplicate-member-name": _fault_duplicate_member_name,
    "fractional-shutdown-id": _fault_fractional_shutdown_id,
    "tool-call-twice": _fault_tool_call_twice,
    "arguments-not-object": _fault_arguments_not_object,
    "context-without-host": _fault_context_without_host,
    "owner-generation-text": _fault_owner_generation_text,
    "unknown-tool-name": _fault_unknown_tool_name,
    "shutdown-params-array": _fault_shutdown_params_array,
    "cancel-reason-number": _fault_cancel_reason_number,
    "text-before-shutdown": _fault_text_before_shutdown,
    "torn-frame": _fault_torn_frame,
    "notify-before-initialize": _fault_notify_before_initialize,
    "request-before-ready": _fault_request_before_ready,
    "no-octet-version": _fault_no_octet_version,
    "wrong-api-version": _fault_wrong_api_version,
    "optional-features-object": _fault_optional_features_object,
    "confirmed-text": _fault_confirmed_text,
    "refusal-without-message": _fault_refusal_without_message,
    "reserved-refusal-code": _fault_reserved_refusal_code,
    "result-and-error": _fault_result_and_error,
    "answers-progress": _fault_answers_progress,
    "shutdown-twice": _fault_shutdown_twice,
    "reuse-settled-id": _fault_reuse_settled_id,
    "reuse-tombstone-id": _fault_reuse_tombstone_id,
    "admit-missing-parent": _fault_admit_missing_parent,
    "admit-reused-child-id": _fault_admit_reused_child_id,
    "admit-settled-parent": _fault_admit_settled_parent,
    "stale-response-fails-others": _fault_stale_response_fails_others,
    "bogus-source": _fault_bogus_source,
    "requires-octet-in-initialize": _fault_requires_octet_in_initialize,
    "protocol-in-0.1": _fault_protocol_in_0_1,
    "no-resource-owner": _fault_no_resource_owner,
    "cancel-wrong-id": _fault_cancel_wrong_id,
    "accept-api-mismatch": _fault_accept_api_mismatch,
    "accept-any-catalog": _fault_accept_any_catalog,
    "accept-duplicate-features": _fault_accept_duplicate_features,
    "accept-zero-concurrency": _fault_accept_zero_concurrency,
    "double-cancel": _fault_double_cancel,
    "silent-stale-response": _fault_silent_stale_response,
    "progress-repeats": _fault_progress_repeats,
    "no-shutdown-request": _fault_no_shutdown_request,
    "kill-leader-only": _fault_kill_leader_only,
    "stderr-not-drained": _fault_stderr_not_drained,
    "headless-confirms": lambda: None,  # in Reporter.confirm
    **HANDLING_FAULTS,
    **_SECTION_FAULTS,
    **_LAST_FAULTS,
}


def main(argv: Sequence[str] | None = None, *, host_class: type[ReferenceHost] = ReferenceHost) -> int:
    """Serve the driver contract on stdin/stdout. ``host_class`` is the seam a
    wrapper (a faulty fixture, a test) uses to run every host this driver
    makes as a subclass of its own (docs/host-driver.md, "Seams")."""
    parser = argparse.ArgumentParser(prog="conformance.reference.host.driver", description=__doc__)
    parser.add_argument("--fault", choices=sorted(FAULTS), default=None, help="one deliberate fault (fixtures only)")
    args = parser.parse_args(argv)
    if args.fault is not None:
        FAULTS[args.fault]()
    driver = Driver(args.fault, host_class=host_class)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            driver.wire.error(None, -32700, "parse error")
            continue
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            driver.wire.error(message.get("id") if isinstance(message, dict) else None, -32600, "invalid request")
            continue
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if not driver.dispatch(message.get("id"), message["method"], params):
            return 0
    for host in driver.hosts.values():
        host.shutdown(coordinated=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
