"""``HostMachine``: Hypothesis drives a host (through its driver) and the probe.

Each example is one probe generation: the host loads the probe, which
answers initialize validly; then a generated sequence of steps -- start tool
calls, answer them validly, cancel them, answer cancelled ones late, send
progress with fresh, repeated or decreasing sequences, and make child
requests (confirmation/request) with an active, a settled, a never-issued or
a missing parent, under fresh or reused ids, crash the probe, reload with the
open calls in flight -- then shutdown. Every frame the
host writes, and every answer it gives the probe, goes through the sans-IO
:class:`ProbeSession` (via :class:`HostRig`), so rules never assert; a
requirement that breaks is recorded and exploration goes on.

Preconditions depend only on the model (never on the host's timing); a
step that makes no sense right now is a no-op.

How to use: ``run_state_machine_as_test(machine_for(driver, listener, recorder, "0.2", ...))``
(see :mod:`conformance.runner.host`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.evidence import Recorder, StepContext
from conformance.peers.host_driver import HostDriver
from conformance.peers.host_rig import HostRequest, HostRig, ProbeGone, RigPace, save_traces
from conformance.peers.probe import ProbeListener
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import ready as load_ready
from conformance.scenarios.host_steps import room, start_call, tool_result
from conformance.scenarios.lifecycle_reload import Reload
from conformance.scenarios.storm_steps import SHAPES, Backoff, Storm, answer_shaped, crash_quietly, storms_measurable

MAX_OPEN = 3  # calls the machine keeps in flight (under the probe's negotiated 4, and the host's limit)
PARENTS = ("active", "settled", "never-issued", "missing")


@dataclass
class Model:
    open: dict[str, HostRequest] = field(default_factory=dict)  # call id -> its request
    settled: list[HostRequest] = field(default_factory=list)  # answered by the probe
    child_ids: list[str] = field(default_factory=list)
    progress: dict[str, int] = field(default_factory=dict)  # call id -> last sequence sent


class HostMachine(RuleBasedStateMachine):
    """Bound to one driver by :func:`machine_for`."""

    driver: ClassVar[HostDriver]
    listener: ClassVar[ProbeListener]
    recorder: ClassVar[Recorder]
    api_version: ClassVar[str]
    rig_options: ClassVar[dict[str, Any]]
    example_counter: ClassVar[list[int]]

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.example_counter[0] += 1
        self.recorder.context = StepContext("machine", example=self.example_counter[0], api=self.api_version)
        self.rig = HostRig(self.driver, self.listener, self.recorder, pace=RigPace(**self.rig_options))
        self.live = False
        self.violated_before = frozenset(self.recorder.violations)
        self.storm: Storm | None = None  # one storm per example bounds its cost
        self.max_open = MAX_OPEN

    @initialize()
    def load(self) -> None:
        load_ready(self.rig, self.api_version)
        self.live = True
        # A host may negotiate fewer concurrent requests (§1.1) and queue the rest: never more in
        # flight than it takes. The limit is the host's, the same in every example: no timing.
        limit = room(self.rig)
        self.max_open = MAX_OPEN if limit is None else min(MAX_OPEN, limit)

    def _step(self) -> None:
        self.rig.step += 1

    # -- host requests ----------------------------------------------------------------
    @precondition(lambda self: len(self.model.open) < self.max_open)
    @rule()
    def call(self) -> None:
        self._step()
        if self.live:
            call, req = start_call(self.rig)
            self.model.open[call] = req

    @precondition(lambda self: bool(self.model.open))
    @rule(data=st.data(), shape=st.sampled_from(SHAPES))
    def answer(self, data: st.DataObject, shape: str) -> None:
        self._step()
        call = data.draw(st.sampled_from(sorted(self.model.open)))
        self._answer([call], shape)

    @precondition(lambda self: len(self.model.open) >= 2)
    @rule(data=st.data())
    def answer_coalesced(self, data: st.DataObject) -> None:
        """Two answers in one write: the host must split them into two frames."""
        self._step()
        calls = data.draw(st.lists(st.sampled_from(sorted(self.model.open)), min_size=2, max_size=2, unique=True))
        self._answer(calls, "coalesced")

    def _answer(self, calls: list[str], shape: str) -> None:
        reqs = [self.model.open.pop(call) for call in calls]
        for call in calls:
            self.model.progress.pop(call, None)
        self.model.settled.extend(reqs)
        if self.live:
            answer_shaped(self.rig, list(zip(calls, reqs, strict=True)), shape, self.api_version)

    @precondition(lambda self: self.live and self.storm is None and storms_measurable(self.rig))
    @rule(failures=st.integers(0, 3))  # parking after a long storm: the fixed scenario restart-storm
    def crash(self, failures: int) -> None:
        """§5: the probe crashes at this (generated) moment, with whatever calls are open;
        the first ``failures`` restarts die while initializing (a restart storm)."""
        self._step()
        self.storm = Storm(self.rig, self.api_version, Backoff.of(self.rig))
        self.model.settled.extend(self.model.open.values())  # the host fails them: their ids are spent
        self.model.open.clear()
        self.model.progress.clear()
        self.live = crash_quietly(self.storm, failures)

    @precondition(lambda self: self.live and bool(self.model.open))
    @rule()
    def reload(self) -> None:
        """§5: a reload with the open calls in flight, followed on both generations
        (:class:`Reload`): what crosses the boundary, and in which order."""
        self._step()
        if not self.driver.has("reload"):
            return
        in_flight = sorted(self.model.open.items())
        self.model.settled.extend(self.model.open.values())  # drained, cancelled or lost: their ids are spent
        self.model.open.clear()
        self.model.progress.clear()
        try:
            self.live = Reload(self.rig, self.api_version).run(in_flight)
        except ProbeGone:
            self.live = False

    @precondition(lambda self: bool(self.model.open) and self.api_version != "0.1")
    @rule(data=st.data(), late_result=st.booleans())
    def cancel(self, data: st.DataObject, late_result: bool) -> None:
        """§1.9: cancel, then the probe settles the id at once (within the
        grace: a slower probe would rightly get its generation terminated),
        either with -32800 or with a result that lost the race (a late answer)."""
        self._step()
        call = data.draw(st.sampled_from(sorted(self.model.open)))
        req = self.model.open.pop(call)
        self.model.progress.pop(call, None)
        if self.live:
            self.rig.op("cancel", {"call": call, "reason": "user"})
            self.rig.settled(call)
            if late_result:
                self.rig.respond(req.wire_id, tool_result(self.api_version, "late"))
            else:
                self.rig.respond_error(req.wire_id, -32800, "cancelled")
        self.model.settled.append(req)

    # -- probe requests and notifications -------------------------------------------------
    @precondition(lambda self: bool(self.model.open) and self.api_version != "0.1")
    @rule(data=st.data(), delta=st.sampled_from((1, 0, -1)))
    def progress(self, data: st.DataObject, delta: int) -> None:
        """Fresh (+1), repeated (0) or decreasing (-1) sequences (§2.6)."""
        self._step()
        call = data.draw(st.sampled_from(sorted(self.model.open)))
        sequence = self.model.progress.get(call, 0) + delta
        self.model.progress[call] = max(sequence, self.model.progress.get(call, 0))
        if self.live:
            event = {"type": "status", "message": f"step {sequence}"}
            params = {"request_id": self.model.open[call].wire_id, "sequence": sequence, "event": event}
            self.rig.send({"jsonrpc": "2.0", "method": "$/progress", "params": params})

    @rule(data=st.data(), parent=st.sampled_from(PARENTS), reuse=st.booleans())
    def confirm(self, data: st.DataObject, parent: str, reuse: bool) -> None:
        """§2, §2.2: a confirmation under an active, settled, never-issued or no parent,
        with a fresh or (when one exists) reused id; the session judges the answer."""
        self._step()
        if reuse and self.model.child_ids:
            cid = data.draw(st.sampled_from(self.model.child_ids))
        else:
            cid = f"confirm-{len(self.model.child_ids) + 1}"
            self.model.child_ids.append(cid)
        params: dict[str, Any] = {"prompt": "Proceed?", "default": False}
        parent_id = self._parent(data, parent)
        if parent_id is not None:
            params["parent_request_id"] = parent_id
        if self.live:
            self.rig.ask(cid, "confirmation/request", params)

    def _parent(self, data: st.DataObject, parent: str) -> Any:
        if parent == "active" and self.model.open:
            return self.model.open[data.draw(st.sampled_from(sorted(self.model.open)))].wire_id
        if parent == "settled" and self.model.settled:
            return data.draw(st.sampled_from(self.model.settled)).wire_id
        if parent == "never-issued":
            return 9_000_000
        return None

    def teardown(self) -> None:
        try:
            if self.live and self.rig.link is not None:
                for call, req in sorted(self.model.open.items()):
                    self.rig.respond(req.wire_id, tool_result(self.api_version))
                    self.rig.settled(call)
                shutdown_with(self.rig, ack=True, exit_after_ack=True)
        except ProbeGone:
            pass
        finally:
            save_traces(self.rig, self.violated_before)
            self.rig.close()


def machine_for(
    driver: HostDriver, listener: ProbeListener, recorder: Recorder, api_version: str, **rig_options: Any
) -> type[HostMachine]:
    """A machine class bound to one driver (Hypothesis instantiates it per example)."""
    bound = {
        "driver": driver,
        "listener": listener,
        "recorder": recorder,
        "api_version": api_version,
        "rig_options": rig_options,
        "example_counter": [0],
    }
    return type("BoundHostMachine", (HostMachine,), bound)
