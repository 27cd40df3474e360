"""The reference host's driver: docs/host-driver.md (``octet-host-driver/1``) over stdio.

How to use: ``python -m conformance.reference.host.driver`` reads
operations on stdin and writes answers and events on stdout, one JSON
object per line. ``octet-conformance host`` runs it when no ``--driver`` is
given. It carries no deliberate faults: the faulty-host fixtures wrap it
(fixtures/hosts/_faults; docs/host-driver.md, "Seams of the reference host").

Written like any embedder of the reference host would write it: it uses the
host's public API (:class:`ReferenceHost`, :class:`HostEvents`,
:class:`Frontend`) and the standard library, nothing of the checker.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence
from typing import Any

from conformance.protocol.limits import LIFECYCLE_EVENTS

from . import results as results_module
from .calls import CallOutcome, PendingCall
from .config import HostConfig, grouped
from .diagnostics import Diagnostic
from .frontend import Frontend, HostEvents, Prompt
from .host import LoadError, ReferenceHost
from .manifest import ManifestError, load_manifest

CONTRACT = "octet-host-driver/1"
CAPABILITIES = ["timing", "frontend", "collect", "reload", "lifecycle", "wave1", "exits", "menu", "secrets"]
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
TIMING = {  # contract member -> (HostConfig group, its field, scale)
    "shutdown_timeout_ms": ("shutdown", "stage_s", 1000.0),
    "shutdown_aggregate_ms": ("shutdown", "aggregate_s", 1000.0),
    "cancel_grace_ms": ("waits", "cancel_grace_s", 1000.0),
    "backoff_base_ms": ("restarts", "backoff_base_s", 1000.0),
    "backoff_cap_ms": ("restarts", "backoff_cap_s", 1000.0),
    "ready_reset_ms": ("restarts", "ready_reset_s", 1000.0),
    "park_after_failures": ("restarts", "max_failed_restarts", 1.0),
    "drain_ms": ("shutdown", "drain_s", 1000.0),
    "menu_timeout_ms": ("waits", "menu_timeout_s", 1000.0),
}
PARK_AFTER = ("restarts", "max_failed_restarts")  # a count, not seconds


def timing_overrides(timing: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The contract's ``timing`` of a load as (group, field) -> value in the host's units."""
    overrides: dict[tuple[str, str], float] = {}
    for member, value in timing.items():
        if member in TIMING:
            group, name, scale = TIMING[member]
            overrides[group, name] = float(value) / scale
    if PARK_AFTER in overrides:
        overrides[PARK_AFTER] = int(overrides[PARK_AFTER])
    return overrides


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


class SecretBroker:
    """§2.10: the deterministic in-process broker of loads that carry the
    contract's ``secrets`` member: per extension, the values it holds and
    the names whose provider fails. Any other name has no value."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, str]] = {}
        self.failing: dict[str, frozenset[str]] = {}

    def add(self, extension: str, spec: dict[str, Any]) -> None:
        self.values[extension] = dict(spec.get("values") or {})
        self.failing[extension] = frozenset(spec.get("failing") or ())

    def __call__(self, extension: str, generation: int, parent: int, name: str) -> str | None:
        if name in self.failing.get(extension, ()):
            # Provider detail on purpose: the host must keep it to itself.
            raise RuntimeError(f"secret provider timed out looking up {name}")
        return self.values.get(extension, {}).get(name)


def secrets_spec(value: Any) -> dict[str, Any] | None:
    """The ``secrets`` member of ``load`` (docs/host-driver.md), checked; None when absent."""
    if value is None:
        return None
    values, failing = (value.get("values", {}), value.get("failing", [])) if isinstance(value, dict) else (0, 0)
    ok = isinstance(values, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())
    if not ok or not isinstance(failing, list) or not all(isinstance(n, str) for n in failing):
        raise OpError(-32602, "secrets must be {values: {name: string}, failing: [name]}")
    return {"values": values, "failing": failing}


class Driver:
    # §2.10: the secret broker the driver's hosts use; none, like the coding
    # product, so secrets are never offered (a fixture may set one) -- except
    # to loads that carry the contract's ``secrets`` member, whose host gets
    # the driver's deterministic broker (``brokered``).
    secret_broker: Any = None
    # The seam (docs/host-driver.md, "Seams"): the class of every host this
    # driver makes; a wrapper or a test names a subclass of its own.
    host_class: type[ReferenceHost] = ReferenceHost

    def __init__(self, *, host_class: type[ReferenceHost] | None = None) -> None:
        self.wire = Wire()
        if host_class is not None:
            self.host_class = host_class
        self.reporter = Reporter(self)
        # (timing as ((group, field), value)..., (("driver", "brokered"), 0 or 1)) -> host
        self.hosts: dict[tuple[tuple[tuple[str, str], float], ...], ReferenceHost] = {}
        self.host_of: dict[str, ReferenceHost] = {}  # extension -> its host
        self.calls: dict[str, PendingCall] = {}
        self.wire_calls: dict[tuple[str, int, int], str] = {}  # (extension, generation, wire id) -> call
        self.generation_of_call: dict[str, tuple[str, int]] = {}
        self.choosing: set[str] = set()  # menu_action calls whose command has not started yet
        self.cancel_while_choosing: dict[str, str] = {}  # such calls the suite cancelled meanwhile -> reason
        self.lock = threading.Lock()
        self.brokered = SecretBroker()

    # -- plumbing -------------------------------------------------------------------
    def call_of(self, extension: str, generation: int, wire_id: int) -> str | None:
        with self.lock:
            return self.wire_calls.get((extension, generation, wire_id))

    def host_for(self, timing: dict[str, Any], *, brokered: bool = False) -> ReferenceHost:
        """One host per distinct timing (the contract sets timing per load),
        and per broker: loads with a ``secrets`` member get a host that has one."""
        overrides = timing_overrides(timing)
        broker = self.secret_broker or (self.brokered if brokered else None)
        key = (*sorted(overrides.items()), (("driver", "brokered"), float(brokered)))
        if key not in self.hosts:
            optional = (*HostConfig().optional_features, *EXTRA_FEATURES)
            options: dict[str, Any] = {**grouped(overrides), "secret_broker": broker, "optional_features": optional}
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
        secrets = secrets_spec(params.get("secrets"))
        host = self.host_for(params.get("timing") or {}, brokered=secrets is not None)
        self.background(self._load, rid, host, path, params.get("frontend") or {}, secrets)

    def _load(
        self, rid: Any, host: ReferenceHost, path: str, frontend: dict[str, Any], secrets: dict[str, Any] | None = None
    ) -> None:
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
        if secrets is not None:
            self.brokered.add(manifest.name, secrets)
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
            early = pending.poll(host.config.waits.menu_timeout_s)
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


def main(argv: Sequence[str] | None = None, *, host_class: type[ReferenceHost] = ReferenceHost) -> int:
    """Serve the driver contract on stdin/stdout. ``host_class`` is the seam a
    wrapper (a faulty fixture, a test) uses to run every host this driver
    makes as a subclass of its own (docs/host-driver.md, "Seams")."""
    parser = argparse.ArgumentParser(prog="conformance.reference.host.driver", description=__doc__)
    parser.parse_args(argv)  # no options: --help only
    driver = Driver(host_class=host_class)
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
