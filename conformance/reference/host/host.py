"""The reference host: extensions by name, routing, reload, supervision, shutdown.

See the package docstring for the public API. One :class:`ReferenceHost`
holds one record per loaded extension (:class:`_Extension`): its manifest,
its current generation (a :class:`~.connection.Connection`), and its restart
budget. Calls are routed only to what the extension declared and negotiated;
anything else is refused without touching the child.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .calls import Call, CallOutcome, PendingCall
from .channel import Launcher, LaunchError, ProcessLauncher
from .config import HostConfig
from .connection import CRASHED, DEGRADED, ENDED, READY, Connection
from .diagnostics import Diagnostic
from .environment import sanitized_environment
from .frontend import Frontend, HostEvents, NonInteractive, Prompt
from .initialize import InitializeRejected
from .manifest import Discovered, Manifest, ManifestError, discover, load_manifest
from .menu import fallback_menu, menu_problem
from .requests import params_problem
from .runtime import HostRuntime, ThreadRuntime
from .supervisor import RestartBudget

HEALTH = {
    "starting": "starting",
    "initializing": "starting",
    "ready": "healthy",
    "draining": "draining",
    "stopped": "stopped",
    "degraded": "degraded",
    "crashed": "crashed",
}


class LoadError(RuntimeError):
    """A manifest was refused, or its process could not start or initialize.
    ``permanent`` follows §5 (manifest/version/re-registration errors)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class ExtensionStatus:
    """§5 inspection: generation, negotiated features, pending count, health, bounded last error."""

    name: str
    api_version: str
    generation: int
    state: str
    health: str
    features: tuple[str, ...]
    max_concurrent_requests: int | None
    pending: int
    last_error: str | None
    parked: bool
    failed_restarts: int
    pid: int | None
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(eq=False)
class _Extension:
    manifest: Manifest
    budget: RestartBudget
    connection: Connection | None = None
    generation: int = 0
    supervised: bool = True
    stopped: bool = False  # explicitly shut down (§5: supervision cancelled until a manual reload)
    reloading: bool = False  # between the candidate's success and the swap: new calls wait
    in_reload: bool = False  # the reload lock (§5): one reload at a time
    last_error: str | None = None
    instance_id: str = ""
    spawned: int = 0  # generations started so far; the next one gets spawned + 1
    retired: set[int] = field(default_factory=set)  # generations replaced on purpose


class ReferenceHost:
    # The seam (docs/host-driver.md, "Seams"): the classes each extension's
    # connection and restart budget are made of; a subclass of the host -- a
    # test's, a faulty fixture's -- may name subclasses of its own.
    connection_class: type[Connection] = Connection
    budget_class: type[RestartBudget] = RestartBudget

    def __init__(
        self,
        *,
        config: HostConfig | None = None,
        runtime: HostRuntime | None = None,
        launcher: Launcher | None = None,
        frontend: Frontend | None = None,
        events: HostEvents | None = None,
        rng: random.Random | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.config = config or HostConfig()
        self.runtime: HostRuntime = runtime or ThreadRuntime()
        self.launcher: Launcher = launcher or ProcessLauncher()
        self.frontend = frontend or NonInteractive()
        self.events = events or HostEvents()
        self.rng = rng or random.Random()
        self.environ = environ
        self._lock = self.runtime.condition()
        self._extensions: dict[str, _Extension] = {}
        self._instances = 0
        self._closed = False

    # -- discovery and loading ------------------------------------------------------

    def discover(self, roots: list[tuple[Path, str]]) -> list[Discovered]:
        return discover(roots, octet_version=self.config.octet_version, read_bytes=self.config.manifest_read_bytes)

    def load(self, manifest: Manifest | str | Path, *, source: str = "explicit") -> ExtensionStatus:
        """Validate (before anything starts), spawn, initialize. Raises LoadError;
        a failed first start is kept as a generation-0 parked entry (§5)."""
        if not isinstance(manifest, Manifest):
            try:
                manifest = load_manifest(
                    manifest,
                    source=source,
                    octet_version=self.config.octet_version,
                    read_bytes=self.config.manifest_read_bytes,
                )
            except ManifestError as exc:
                raise LoadError(str(exc), permanent=True) from None
        with self._lock:
            self._closed = False  # a load after a product shutdown opens the host again
            if manifest.name in self._extensions and self._extensions[manifest.name].connection is not None:
                raise LoadError(f"extension {manifest.name!r} is already loaded")
            self._instances += 1
            record = _Extension(
                manifest, self.budget_class(self.config, self.rng), instance_id=f"instance-{self._instances}"
            )
            self._extensions[manifest.name] = record
        record.spawned = 1
        try:
            connection = self._spawn(record, generation=1)
        except LoadError as exc:
            record.budget.park(f"initial start failed: {exc}")  # not retried (§5)
            record.last_error = str(exc)
            self.events.supervisor_state(manifest.name, 0, "parked")  # a generation-0 parked entry
            raise
        with self._lock:
            record.connection, record.generation = connection, 1
        return self.inspect(manifest.name)

    def _spawn(self, record: _Extension, *, generation: int) -> Connection:
        manifest = record.manifest
        env = sanitized_environment(manifest.environment if manifest.api_version != "0.1" else (), source=self.environ)
        try:
            channel = self.launcher.launch(manifest.command, cwd=manifest.folder, env=env)
        except LaunchError as exc:
            raise LoadError(f"{manifest.name}: {exc}") from None
        connection = self.connection_class(
            manifest,
            generation,
            channel,
            config=self.config,
            runtime=self.runtime,
            events=self.events,
            frontend=self.frontend,
            on_end=self._ended,
        )
        try:
            connection.start(timeout=self.config.waits.initialize_timeout_s)
        except InitializeRejected as exc:
            raise LoadError(f"{manifest.name}: {exc}", permanent=exc.permanent) from None
        return connection

    # -- routing (§1.2-§1.7) ------------------------------------------------------------

    def _connection(self, name: str) -> Connection | None:
        with self._lock:
            self._lock.wait_for(lambda: not self._reloading(name))
            record = self._extensions.get(name)
            return record.connection if record is not None else None

    def _reloading(self, name: str) -> bool:
        record = self._extensions.get(name)
        return record is not None and record.reloading

    def start(
        self, name: str, method: str, params: dict[str, Any], *, issued: Callable[[int, int], None] | None = None
    ) -> PendingCall:
        """Send any routed host request; the outcome arrives on the handle.
        ``issued(generation, id)`` runs before the request's frame can be
        written (to file the id before the extension can answer or use it)."""
        connection = self._connection(name)
        refusal = self._refusal(connection, name, method, params)
        if refusal is not None or connection is None:
            return _refused(refusal or f"no extension {name!r}", self.runtime)
        generation = connection.generation
        filed = None if issued is None else (lambda wire_id: issued(generation, wire_id))
        pending = connection.request(method, self._with_context(connection, method, params), issued=filed)
        if method == "menu/collect":  # §1.6b: the host waits at most 5 s, whoever asked

            def deadline() -> None:
                pending.wait(self.config.waits.menu_timeout_s)

            self.runtime.submit(deadline, "menu-deadline")
        return pending

    def call(self, name: str, method: str, params: dict[str, Any], *, timeout: float | None = None) -> CallOutcome:
        return self.start(name, method, params).wait(
            timeout if timeout is not None else self.config.waits.request_timeout_s
        )

    def start_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> PendingCall:
        return self.start(name, "tool/call", {"name": tool, "arguments": arguments})

    def call_tool(
        self, name: str, tool: str, arguments: dict[str, Any], *, timeout: float | None = None
    ) -> CallOutcome:
        return self.call(name, "tool/call", {"name": tool, "arguments": arguments}, timeout=timeout)

    def execute_command(self, name: str, command: str, arguments: list[str], **kw: Any) -> CallOutcome:
        return self.call(name, "command/execute", {"name": command, "arguments": arguments}, **kw)

    def run_hook(self, name: str, hook: str, payload: dict[str, Any], **kw: Any) -> CallOutcome:
        return self.call(name, "hook/run", {"hook": hook, "payload": payload}, **kw)

    def collect_context(self, name: str, prompt: str | None = None, **kw: Any) -> CallOutcome:
        return self.call(name, "context/collect", {"prompt": prompt}, **kw)

    def collect_status(self, name: str, surface: str = "status", **kw: Any) -> CallOutcome:
        return self.call(name, "status/collect", {"surface": surface}, **kw)

    def collect_menu(self, name: str) -> CallOutcome:
        """§1.6b: the extension's menu if it answers within 5 s and meets every
        bound, else one generated entry per declared command (``message``
        then says why). Refused when the extension declares no menu."""
        return self.menu_shown(name, self.call(name, "menu/collect", {}, timeout=self.config.waits.menu_timeout_s))

    def menu_shown(self, name: str, outcome: CallOutcome) -> CallOutcome:
        """What the person sees for a menu/collect ``outcome`` (§1.6b): the
        menu when it meets every bound, else the generated entries."""
        if outcome.status == "refused":
            return outcome
        commands = self._extensions[name].manifest.declared("commands")
        problem = menu_problem(outcome.result, commands) if outcome.ok else f"menu/collect {outcome.status}"
        if problem is None:
            return outcome
        return CallOutcome("ok", fallback_menu(name, commands), message=f"generated menu: {problem}")

    def menu_action(self, name: str, item_id: str, *, issued: Callable[[int, int], None] | None = None) -> PendingCall:
        """§1.6b: the person chose the action ``item_id``. The menu is pulled
        afresh; a destructive action is confirmed with the person first, and
        its own first confirmation/request is then pre-approved; the action
        runs command/execute with exactly its command and literal arguments
        (``issued`` as for :meth:`start`). The caller pulls the menu again
        once the action settles."""
        shown = self.collect_menu(name)
        item = _find_action(shown.result if shown.ok else None, item_id)
        if item is None:
            return _refused(f"no action {item_id[:80]!r} in the menu of {name!r}", self.runtime)
        connection = self._connection(name)
        destructive = item.get("destructive") is True
        if destructive:
            generation = connection.generation if connection is not None else 0
            question = {"prompt": f"Run {str(item.get('label'))[:200]}? It is marked destructive."}
            if not self.frontend.confirm(Prompt(name, generation, None, "menu/action", question)):
                return _refused("the person declined the destructive action", self.runtime)
        params = {"name": item["command"], "arguments": list(item.get("arguments", []))}

        def filed(generation: int, wire_id: int) -> None:
            # Before the frame goes out: the action's first confirmation may follow it at once.
            if destructive and connection is not None and connection.generation == generation:
                connection.children.preapprove(wire_id)
            if issued is not None:
                issued(generation, wire_id)

        return self.start(name, "command/execute", params, issued=filed)

    def render_tool(
        self, name: str, tool: str, arguments: dict[str, Any], output: str, is_error: bool = False
    ) -> CallOutcome:
        params = {"name": tool, "arguments": arguments, "output": output, "is_error": is_error}
        return self.call(name, "tool/render", params)

    def notify_lifecycle(self, name: str, method: str, params: dict[str, Any]) -> bool:
        """§1.10: sent only when subscribed; returns whether it was queued."""
        connection = self._connection(name)
        return connection is not None and connection.notify_lifecycle(method, params)

    def notify_wave1(self, name: str, method: str, params: Any) -> bool:
        """§1.11: sent only when its gate was negotiated; else refused with a diagnostic."""
        connection = self._connection(name)
        return connection is not None and connection.notify_wave1(method, params)

    def _refusal(self, connection: Connection | None, name: str, method: str, params: dict[str, Any]) -> str | None:
        if connection is None:
            return f"no running extension {name!r}"
        negotiated, manifest = connection.negotiated, connection.manifest
        if negotiated is None or connection.state != READY:
            return f"extension {name!r} is {connection.state}"
        declared = {
            "tool/call": lambda: params.get("name") in negotiated.tools,
            "command/execute": lambda: params.get("name") in negotiated.commands,
            "hook/run": lambda: params.get("hook") in manifest.declared("hooks"),
            "context/collect": lambda: bool(manifest.contributes.get("context")),
            "status/collect": lambda: params.get("surface") in manifest.declared("ui"),
            "menu/collect": lambda: manifest.api_version != "0.1" and bool(manifest.contributes.get("menu")),
            "tool/render": lambda: params.get("name") in manifest.declared("tool_renderers"),
        }.get(method)
        if declared is None:
            return f"method {method!r} is not a host request this host routes"
        problem = params_problem(method, params, manifest.api_version, negotiated.features)
        if problem is not None:
            return problem
        if not declared():
            what = params.get("name") or params.get("hook") or params.get("surface") or ""
            return f"{method} {what} is not declared by {name!r}"
        return None

    def _with_context(self, connection: Connection, method: str, params: dict[str, Any]) -> dict[str, Any]:
        context: dict[str, Any] = {
            "workspace": self.config.workspace,
            "execution_scope": None,
            "host": dict(self.config.host_state),
        }
        if connection.manifest.api_version != "0.1" and method in (
            "tool/call",
            "command/execute",
            "hook/run",
            "context/collect",
            "menu/collect",
        ):
            context["resource_owner"] = self.resource_owner(connection)
        return {**params, "context": context}

    def resource_owner(self, connection: Connection) -> dict[str, Any]:
        record = self._extensions[connection.name]
        session = self.config.host_state.get("session_id") or "reference-session"
        return {
            "session_id": session,
            "extension_instance_id": record.instance_id,
            "process_generation": connection.generation,
        }

    # -- §5 inspection -----------------------------------------------------------------

    def inspect(self, name: str) -> ExtensionStatus:
        with self._lock:
            record = self._extensions.get(name)
        if record is None:
            raise KeyError(name)
        connection = record.connection
        if connection is None:
            return ExtensionStatus(
                name,
                record.manifest.api_version,
                0,
                "stopped",
                "parked" if record.budget.parked else "stopped",
                (),
                None,
                0,
                record.last_error,
                record.budget.parked,
                record.budget.failed,
                None,
            )
        negotiated = connection.negotiated
        return ExtensionStatus(
            name,
            record.manifest.api_version,
            connection.generation,
            connection.state,
            "parked" if record.budget.parked else HEALTH[connection.state],
            tuple(sorted(negotiated.features)) if negotiated else (),
            negotiated.max_concurrent_requests if negotiated else None,
            connection.pending_count(),
            connection.log.last_error or record.last_error,
            record.budget.parked,
            record.budget.failed,
            connection.channel.pid,
            tuple(connection.log.diagnostics.recent()),
        )

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._extensions)

    # -- §5 reload ----------------------------------------------------------------------

    def reload(self, name: str) -> ExtensionStatus:
        """Candidate N+1 fully negotiated while N stays ready; then N drained,
        cancelled and shut down; then new calls go to N+1. A failed candidate
        leaves N live (LoadError). A manual reload revives a parked watcher."""
        with self._lock:
            record = self._extensions.get(name)
            if record is not None:
                record.stopped = False  # a manual generation change starts it again
        return self._reload(name, manual=True)

    def _reload(self, name: str, *, manual: bool) -> ExtensionStatus:
        record = self._begin_reload(name)
        try:
            old = record.connection
            candidate = self._candidate(record, old)
            with self._lock:
                record.reloading = True  # new calls wait for the swap
                if old is not None:
                    record.retired.add(old.generation)
            if old is not None and old.state not in ENDED:
                budget = self.config.shutdown.drain_s + 2 * self.config.shutdown.stage_s
                # Unresolved calls are cancelled, never replayed on N+1 (§1.9, §5).
                old.shutdown(self.runtime.now() + budget, drain_s=self.config.shutdown.drain_s)
            with self._lock:
                record.connection, record.generation = candidate, candidate.generation
                if manual:
                    record.budget.revive()
                stopped_meanwhile = record.stopped
            if stopped_meanwhile:  # shut down while the candidate negotiated: it must not live on
                candidate.shutdown(self.runtime.now() + 2 * self.config.shutdown.stage_s)
        finally:
            with self._lock:
                record.reloading = False
                record.in_reload = False
                record.supervised = not self._closed and not record.stopped
                self._lock.notify_all()
        return self.inspect(name)

    def _begin_reload(self, name: str) -> _Extension:
        with self._lock:
            record = self._extensions.get(name)
            if record is None:
                raise KeyError(name)
            # The reload lock: one reload (manual or supervisor) at a time.
            self._lock.wait_for(lambda: not record.in_reload)
            record.in_reload = True
            record.supervised = False  # the supervisor must not race us
        return record

    def _candidate(self, record: _Extension, old: Connection | None) -> Connection:
        with self._lock:
            record.spawned += 1
            generation = record.spawned
        try:
            self._reread_manifest(record)
            candidate = self._spawn(record, generation=generation)
        except LoadError as exc:
            with self._lock:
                record.last_error = str(exc)
            raise
        if old is not None and old.negotiated is not None and candidate.negotiated is not None:
            before = (old.negotiated.tools, old.negotiated.commands)
            after = (candidate.negotiated.tools, candidate.negotiated.commands)
            if self._registration_changed(before, after) and not candidate.negotiated.has("dynamic_tools"):
                candidate.shutdown(self.runtime.now() + 2 * self.config.shutdown.stage_s)
                raise LoadError(f"{record.manifest.name}: changed catalog; re-registration required", permanent=True)
        return candidate

    def _reread_manifest(self, record: _Extension) -> None:
        """§5: a reload keeps the manifest's identity: a changed API version or
        contribution needs re-registration (a full rebuild), and a manifest
        that no longer loads is a permanent manifest error."""
        current = record.manifest
        try:
            fresh = load_manifest(
                current.path,
                source=current.source,
                octet_version=self.config.octet_version,
                read_bytes=self.config.manifest_read_bytes,
            )
        except ManifestError as exc:
            raise LoadError(str(exc), permanent=True) from None
        if self._registration_changed(
            (current.name, current.api_version, current.contributes), (fresh.name, fresh.api_version, fresh.contributes)
        ):
            raise LoadError(f"{current.name}: manifest contributions changed; re-registration required", permanent=True)
        record.manifest = fresh

    @staticmethod
    def _registration_changed(before: object, after: object) -> bool:
        """§5: what an extension registered (its manifest identity and
        contributions, its negotiated catalog) differs between generations."""
        return before != after

    # -- §5 supervisor -------------------------------------------------------------------

    def _ended(self, connection: Connection, state: str) -> None:
        """A generation ended. Unexpected ends of the live generation restart it."""
        with self._lock:
            record = self._extensions.get(connection.name)
            live = record is not None and record.connection is connection
            if record is None or not live or state not in (CRASHED, DEGRADED):
                return
            if connection.generation in record.retired or not record.supervised or self._closed:
                return
            record.last_error = connection.ending.reason
            record.budget.on_unexpected_end(connection.handshake.ready_since, self.runtime.now())
        self.runtime.submit(lambda: self._supervise(record), f"{connection.name}-supervisor")

    def _supervise(self, record: _Extension) -> None:
        while True:
            with self._lock:
                if not record.supervised or self._closed:
                    return
                delay = record.budget.next_delay()
            if delay is None:
                self._note(record, f"parked: {record.budget.park_reason}")
                self.events.supervisor_state(record.manifest.name, self._generation_of(record), "parked")
                return
            self._note(record, f"restarting in {delay * 1000:.0f} ms (attempt {record.budget.failed + 1})")
            self.events.supervisor_state(record.manifest.name, self._generation_of(record), "backoff", delay)
            self.runtime.sleep(delay)
            with self._lock:
                if not record.supervised or self._closed or record.reloading:
                    return
                record.budget.on_attempt()
            try:
                self._reload(record.manifest.name, manual=False)
            except LoadError as exc:
                with self._lock:
                    record.budget.on_attempt_failed(permanent=exc.permanent, reason=str(exc))
                continue
            return

    @staticmethod
    def _generation_of(record: _Extension) -> int:
        return record.connection.generation if record.connection else 0

    def _note(self, record: _Extension, message: str) -> None:
        generation = self._generation_of(record)
        self.events.diagnostic(Diagnostic(record.manifest.name, generation, "supervisor", message))

    # -- §1.8 shutdown --------------------------------------------------------------------

    def shutdown(self, name: str | None = None, *, coordinated: bool = False) -> None:
        """Shut down one extension (its two 2 s stages) or all of them,
        concurrently, within the aggregate deadline (3 s; 1.4 s for
        coordinated-signal exits), then kill whatever remains. Explicit
        shutdown cancels supervision."""
        with self._lock:
            names = [name] if name is not None else list(self._extensions)
            if name is None:
                self._closed = True
            targets: list[Connection] = []
            for each in names:
                record = self._extensions.get(each)
                if record is None:
                    continue
                record.supervised = False
                record.stopped = True
                if record.connection is not None:
                    targets.append(record.connection)
        if coordinated:
            cap = self.config.shutdown.coordinated_s
        elif name is None:
            cap = self.config.shutdown.aggregate_s  # product shutdown: one aggregate deadline
        else:
            cap = 2 * self.config.shutdown.stage_s  # one connection: its two stages
        deadline = self.runtime.now() + cap
        finished = self.runtime.condition()
        done: list[Connection] = []

        def one(connection: Connection) -> None:
            try:
                connection.shutdown(deadline)
            finally:
                with finished:
                    done.append(connection)
                    finished.notify_all()

        for connection in targets:
            self.runtime.submit(lambda c=connection: one(c), f"{connection.name}-shutdown")  # type: ignore[misc]
        with finished:
            finished.wait_for(lambda: len(done) == len(targets), max(0.0, deadline - self.runtime.now()))
        for connection in targets:  # past the aggregate deadline: force-kill the rest
            if connection not in done:
                connection.terminate("stopped", "aggregate shutdown deadline passed")


def _find_action(menu: Any, item_id: str) -> dict[str, Any] | None:
    """The action (an item without items) with this id, at any level of a menu."""
    stack = [menu]
    while stack:
        node = stack.pop()
        items = node.get("items") if isinstance(node, dict) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and "items" in item:
                stack.append(item)
            elif isinstance(item, dict) and item.get("id") == item_id and isinstance(item.get("command"), str):
                return item
    return None


def _refused(message: str, runtime: HostRuntime) -> PendingCall:
    call = Call(0, "", b"", runtime.event(), runtime.event(), False)
    call.finish(CallOutcome("refused", message=message))
    return PendingCall(call, lambda *_: None)
