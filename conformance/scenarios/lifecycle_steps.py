"""Small readings and steps the §5 lifecycle scenarios share: the state
judge fed by driver events, a watch on reported states, crashing the probe
and rewriting its manifest."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.evidence import Recorder
from conformance.peers.host_driver import DriverEvent
from conformance.peers.host_rig import HostRequest, HostRig
from conformance.protocol.host_states import ReportedStates
from conformance.scenarios.host_steps import initialize_result

# The bounded drain of a reload, asked of a driver with ``timing`` (the text gives no number).
SCALED_DRAIN_MS = 300
DRAIN_S = 2.0  # the reference host's own default, assumed of a driver without ``timing``
# How long past the first restarts' ceiling a "no restart" is watched for (see the module text).
NO_RESTART_WINDOW_S = 0.5
# How long the idle scenario leaves a ready extension alone: on the virtual
# clock past the 30 s ready interval; on real time a second (a host that
# heartbeats less often is not caught, never is a good one failed).
IDLE_SIMULATED_S = 40.0
IDLE_S = 1.0
ENDS = ("stopped", "crashed", "degraded")


def state_judge(recorder: Recorder) -> Callable[[DriverEvent], None]:
    """A driver observer judging the order of every reported generation state."""
    states = ReportedStates()

    def observe(event: DriverEvent) -> None:
        params = event.params
        if event.method == "state" and isinstance(params.get("generation"), int):
            recorder.add(states.reported(str(params.get("extension")), params["generation"], str(params.get("state"))))

    return observe


# -- small readings -----------------------------------------------------------------------


def _text(req: HostRequest) -> Any:
    params = req.params if isinstance(req.params, dict) else {}
    arguments = params.get("arguments")
    return arguments.get("text") if isinstance(arguments, dict) else None


def _calls_with(requests: Any, texts: set[str]) -> list[HostRequest]:
    return [r for r in requests if r.method == "tool/call" and _text(r) in texts]


def _has_request(requests: Any, method: str) -> bool:
    return any(r.method == method for r in requests)


def _generation(rig: HostRig) -> Any:
    status = rig.op("inspect", {"extension": rig.handle})
    return status.get("generation") if isinstance(status, dict) else None


@dataclass
class Watch:
    """Driver events about this rig's extension from now on (a driver observer)."""

    rig: HostRig
    seen: list[DriverEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rig.driver.observers.append(self._take)

    def _take(self, event: DriverEvent) -> None:
        if event.params.get("extension") == self.rig.handle:
            self.seen.append(event)

    def close(self) -> None:
        if self._take in self.rig.driver.observers:
            self.rig.driver.observers.remove(self._take)

    def states(self, state: str, *, generation: Any = None, other_than: Any = None) -> list[DriverEvent]:
        return [
            e
            for e in self.seen
            if e.method == "state"
            and e.params.get("state") == state
            and (generation is None or e.params.get("generation") == generation)
            and (other_than is None or e.params.get("generation") != other_than)
        ]

    def ended(self, generation: Any) -> bool:
        return any(self.states(s, generation=generation) for s in ENDS)


def _answer_initialize(rig: HostRig, api_version: str, **changes: Any) -> bool:
    """Answer the current generation's initialize validly; False when none came."""
    init = rig.next_request("initialize")
    if init is None:
        return False
    rig.respond(init.wire_id, initialize_result(init.params, api_version, **changes))
    return True


def _crash(rig: HostRig) -> None:
    link = rig.link
    rig.command({"t": "crash"})
    if link is not None:
        rig.until(lambda: not link.connected)


def _rewrite_manifest(rig: HostRig, change: Callable[[str], str]) -> str | None:
    """Change the probe's manifest file; returns its old text (None: no manifest)."""
    if rig.manifest_path is None:
        return None
    text = rig.manifest_path.read_text(encoding="utf-8")
    rig.manifest_path.write_text(change(text), encoding="utf-8")
    return text


def _other_version(api_version: str) -> str:
    return "0.4" if api_version == "0.2" else "0.2"
