"""§5 lifecycle faults of the reference host, for the faulty-host fixtures (fixtures/hosts/lifecycle-*).

How to use: ``python -m conformance.reference.host.driver --fault lifecycle-NAME``
(the driver merges :data:`LIFECYCLE_FAULTS` into its ``FAULTS``). Each
function patches one behaviour of the reference host (the line marked
``# the fault``) and breaks one §5 rule; nothing here is used otherwise.
"""

from __future__ import annotations

from typing import Any

from .calls import Call, CallOutcome, PendingCall
from .connection import CRASHED, ENDED, READY, STOPPED, Connection
from .host import LoadError, ReferenceHost
from .supervisor import RestartBudget

HEARTBEAT_S = 0.2  # how often the heartbeat fault writes to an idle child
HELD_CALL_ID = 10**9  # the id a held call shows its caller until it is really sent


def _crashed_after_stopped() -> None:
    """§5: a generation that was stopped is reported crashed afterwards (an end after an end)."""
    original = Connection.terminate

    def terminate(self: Connection, state: str, reason: str) -> None:
        original(self, state, reason)
        if state == STOPPED:
            with self._cond:
                self._state_events.append(CRASHED)  # the fault: a second, different end
                if not self._state_pump_running:
                    self._state_pump_running = True
                    self.runtime.submit(self._pump_state_events, f"{self.name}-events")

    Connection.terminate = terminate  # type: ignore[method-assign]


def _reload_stop_first() -> None:
    """§5: a reload stops generation N before it starts the candidate N+1."""
    original = ReferenceHost._candidate

    def candidate(self: ReferenceHost, record: Any, old: Connection | None) -> Connection:
        if old is not None and old.state not in ENDED:
            old.shutdown(self.runtime.now() + 2 * self.config.shutdown_stage_s)  # the fault
        return original(self, record, old)

    ReferenceHost._candidate = candidate  # type: ignore[method-assign]


def _reload_kills_old() -> None:
    """§5: a reload ends generation N without its shutdown request (no ack, no exit stage)."""
    original = Connection.shutdown

    def shutdown(self: Connection, deadline: float, *, drain_s: float = 0.0) -> None:
        if drain_s > 0:  # only a reload drains
            self.terminate(STOPPED, "replaced")  # the fault
            return
        original(self, deadline, drain_s=drain_s)

    Connection.shutdown = shutdown  # type: ignore[method-assign]


def _failed_candidate_stops_old() -> None:
    """§5: when the candidate fails to negotiate, generation N is shut down too."""
    original = ReferenceHost._candidate

    def candidate(self: ReferenceHost, record: Any, old: Connection | None) -> Connection:
        try:
            return original(self, record, old)
        except LoadError:
            if old is not None and old.state not in ENDED:
                old.shutdown(self.runtime.now() + 2 * self.config.shutdown_stage_s)  # the fault
            raise

    ReferenceHost._candidate = candidate  # type: ignore[method-assign]


def _accepts_changes() -> None:
    """§5: a reload whose registration changed is taken as is (no re-registration required)."""
    ReferenceHost._registration_changed = staticmethod(lambda before, after: False)  # type: ignore[method-assign]  # the fault


_STASHED: dict[str, list[tuple[str, dict[str, Any]]]] = {}


def _replay_on_reload() -> None:
    """§5: calls that generation N left unresolved are sent again to N+1 after a reload."""
    original_shutdown = Connection.shutdown
    original_reload = ReferenceHost._reload

    def shutdown(self: Connection, deadline: float, *, drain_s: float = 0.0) -> None:
        if drain_s > 0:
            _STASHED[self.name] = [(c.method, dict(c.params or {})) for c in self._open_calls()]
        original_shutdown(self, deadline, drain_s=drain_s)

    def reload(self: ReferenceHost, name: str, *, manual: bool) -> Any:
        status = original_reload(self, name, manual=manual)
        connection = self._extensions[name].connection
        for method, params in _STASHED.pop(name, []):
            if connection is not None:
                inner = {k: v for k, v in params.items() if k != "context"}
                connection.request(method, self._with_context(connection, method, inner))  # the fault
        return status

    Connection.shutdown = shutdown  # type: ignore[method-assign]
    ReferenceHost._reload = reload  # type: ignore[method-assign]


def _keeps_dead_tools() -> None:
    """§5: a call to a generation that died is held and sent to its restart
    instead of refused (the dead generation's tools stay registered)."""
    original = ReferenceHost.start

    def start(self: ReferenceHost, name: str, method: str, params: dict[str, Any], **kw: Any) -> PendingCall:
        record = self._extensions.get(name)
        dead = record.connection if record is not None else None
        if record is None or dead is None or dead.state not in ENDED or record.stopped:
            return original(self, name, method, params, **kw)
        held = Call(HELD_CALL_ID, method, b"", self.runtime.event(), self.runtime.event(), False)

        def forward() -> None:
            for _ in range(1000):  # the fault: wait for the restart, then send it there
                current = record.connection
                if current is not dead and current is not None and current.state == READY:
                    held.finish(original(self, name, method, params).wait())
                    return
                self.runtime.sleep(0.01)
            held.finish(CallOutcome("lost", message="no restart"))

        self.runtime.submit(forward, f"{name}-held-call")
        return PendingCall(held, lambda *_: None)

    ReferenceHost.start = start  # type: ignore[method-assign]


def _retries_permanent() -> None:
    """§5: a permanent (manifest/version) error does not park: the supervisor keeps retrying."""
    RestartBudget.on_attempt_failed = lambda self, *, permanent, reason: None  # type: ignore[method-assign]  # the fault


def _no_ready_reset() -> None:
    """§5: staying ready for the ready interval does not restore the restart budget."""
    RestartBudget.on_unexpected_end = lambda self, ready_since, now: None  # type: ignore[method-assign]  # the fault


def _revive_ignored() -> None:
    """§5: a manual reload does not revive a parked extension's watcher."""
    RestartBudget.revive = lambda self: None  # type: ignore[method-assign]  # the fault


def _restarts_after_shutdown() -> None:
    """§5: after an explicit shutdown of one extension the supervisor restarts it."""
    original = ReferenceHost.shutdown

    def shutdown(self: ReferenceHost, name: str | None = None, *, coordinated: bool = False) -> None:
        record = self._extensions.get(name) if name is not None else None
        ended = record.connection if record is not None else None
        original(self, name, coordinated=coordinated)
        if record is not None and ended is not None:
            record.supervised, record.stopped = True, False  # the fault: supervision goes on
            self._ended(ended, CRASHED)

    ReferenceHost.shutdown = shutdown  # type: ignore[method-assign]


def _retries_initial_failure() -> None:
    """§5: a first start that fails to initialize is retried by the supervisor."""
    original = ReferenceHost.load

    def load(self: ReferenceHost, manifest: Any, *, source: str = "explicit") -> Any:
        try:
            return original(self, manifest, source=source)
        except LoadError:
            record = self._extensions.get(getattr(manifest, "name", ""))
            if record is not None:
                record.budget.parked = False
                self.runtime.submit(lambda: self._supervise(record), "retry-initial")  # the fault
            raise

    ReferenceHost.load = load  # type: ignore[method-assign]


def _heartbeat() -> None:
    """§5: an idle, live child gets a tool call every HEARTBEAT_S as a liveness check."""
    original = ReferenceHost.load

    def load(self: ReferenceHost, manifest: Any, *, source: str = "explicit") -> Any:
        status = original(self, manifest, source=source)

        def beat() -> None:
            while not self._closed:
                self.runtime.sleep(HEARTBEAT_S)
                connection = self._extensions[status.name].connection
                if connection is None or connection.state != READY or connection.negotiated is None:
                    return
                tool = connection.negotiated.tools[0]
                self.start(status.name, "tool/call", {"name": tool, "arguments": {}})  # the fault

        self.runtime.submit(beat, f"{status.name}-heartbeat")
        return status

    ReferenceHost.load = load  # type: ignore[method-assign]


def _cancel_grace_on_0_1() -> None:
    """§5/§1.9: the cancellation grace is applied to API 0.1 too: a cancelled call the
    child never answers (it cannot be told) ends the resident generation."""
    original = Connection._tombstone

    def tombstone(self: Connection, call: Any, reason: str) -> None:
        original(self, call, reason)
        if self.negotiated is not None and not self.negotiated.cancellation:
            self.runtime.submit(lambda: self._grace(call), f"{self.name}-grace")  # the fault

    Connection._tombstone = tombstone  # type: ignore[method-assign]


LIFECYCLE_FAULTS: dict[str, Any] = {
    "lifecycle-crashed-after-stopped": _crashed_after_stopped,
    "lifecycle-reload-stop-first": _reload_stop_first,
    "lifecycle-reload-kills-old": _reload_kills_old,
    "lifecycle-failed-candidate-stops-old": _failed_candidate_stops_old,
    "lifecycle-accepts-changes": _accepts_changes,
    "lifecycle-replay-on-reload": _replay_on_reload,
    "lifecycle-keeps-dead-tools": _keeps_dead_tools,
    "lifecycle-retries-permanent": _retries_permanent,
    "lifecycle-revive-ignored": _revive_ignored,
    "lifecycle-no-ready-reset": _no_ready_reset,
    "lifecycle-restarts-after-shutdown": _restarts_after_shutdown,
    "lifecycle-retries-initial-failure": _retries_initial_failure,
    "lifecycle-heartbeat": _heartbeat,
    "lifecycle-0.1-cancel-grace": _cancel_grace_on_0_1,
}
