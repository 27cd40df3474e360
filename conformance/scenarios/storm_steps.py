"""Crash storms and shaped writes, driven step by step: played by the host
state machine (machines/host.py) and by the fixed storm scenarios
(scenarios/host_storms.py).

§0 frame shapes: the probe answers one write at a time (a line, one byte
per write, CR LF, a frame one byte under the bound). §5 restarts: the
probe crashes and the host's backoff, its restart budget and parking are
measured against the driver's scaled timing."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.peers.host_rig import HostRequest, HostRig, ProbeGone
from conformance.protocol import limits
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation
from conformance.scenarios.host_events import padded
from conformance.scenarios.host_steps import SLACK_S, initialize_result, tool_result

SHAPES = ("line", "bytes", "crlf", "1mib-1")  # one answer per write; "coalesced" joins two
# A frame padded with JSON whitespace to one byte under the §0 bound: within
# it whether or not the line feed is counted, so it must be read. Exactly
# 1 MiB and 1 MiB + 1 are written too (frame-shapes) but not judged: whether
# the bound counts the line feed is not stated, and what a host does with a
# frame over the bound is left open.
SIZES = {"1mib-1": limits.MAX_FRAME_BYTES - 1}
SHAPE_WORDS = {"line": "in one write", "bytes": "one byte per write", "crlf": "with CR LF",
               "coalesced": "in one write with another", "1mib-1": "as a frame of 1 MiB - 1 bytes"}  # fmt: skip
SIM_SLACK_S = 0.1  # on the virtual clock only the harness's 10 ms poll adds to a delay
# Scaled §5 timing sent to a driver with the ``timing`` capability (runner/host.py).
# The cap stays above the subprocess slack, so a host that always waits the cap is told apart.
SCALED_BACKOFF = {"backoff_base_ms": 10, "backoff_cap_ms": 2000}


@dataclass(frozen=True)
class Backoff:
    base_s: float
    cap_s: float
    slack_s: float

    @classmethod
    def of(cls, rig: HostRig) -> Backoff:
        """The spec's values, or the scaled ones the rig sends with each load."""
        base = float(rig.pace.timing.get("backoff_base_ms", limits.RESTART_BACKOFF_BASE_S * 1000)) / 1000
        cap = float(rig.pace.timing.get("backoff_cap_ms", limits.RESTART_BACKOFF_CAP_S * 1000)) / 1000
        return cls(base, cap, SIM_SLACK_S if rig.pace.idle_wait is not None else SLACK_S)

    def ceiling(self, attempt: int) -> float:
        return min(self.cap_s, self.base_s * 2 ** min(attempt + 1, 32))


def storms_measurable(rig: HostRig) -> bool:
    """On the virtual clock, or with the backoff scaled by the driver: a storm
    at the spec's 30 s cap on real time would take minutes."""
    return rig.pace.idle_wait is not None or "backoff_base_ms" in rig.pace.timing


@dataclass
class Storm:
    rig: HostRig
    api_version: str
    backoff: Backoff
    attempts: int = 0  # restart attempts seen in this example (never reset: only lenient)

    def crash_and_follow(self, failures: int) -> bool:
        """Crash the ready probe and follow the restarts; True when a new
        generation is ready, False when the host stopped restarting."""
        events = self.rig.driver.events
        for stale in [e for e in events if e.method == "state"]:
            events.remove(stale)  # the next "ready" is the new generation's
        self._crash()
        failed = 0
        while True:
            ceiling = self.backoff.ceiling(self.attempts) + self.backoff.slack_s
            ended = self.rig.pace.clock()
            if self.rig.relaunched(ceiling) is None:
                self._no_restart(failed, ceiling)
                return False
            self._judge_restart(failed, self.rig.pace.clock() - ended, ceiling)
            self.attempts += 1
            request = self.rig.next_request("initialize")
            if request is None:
                return False  # the first-request rule is the session's; nothing to follow
            if failed < failures:
                self._crash()  # a failed restart attempt: it dies while initializing
                failed += 1
                continue
            self.rig.respond(request.wire_id, initialize_result(request.params, self.api_version))
            return self._ready()

    def _crash(self) -> None:
        link = self.rig.link
        self.rig.command({"t": "crash"})
        if link is not None:
            self.rig.until(lambda: not link.connected)

    def _judge_restart(self, failed: int, delay: float, ceiling: float) -> None:
        self.rig.recorder.exercise("EXT-5-host-backoff")
        if delay > ceiling:  # cannot happen while relaunched() waits only the ceiling; kept for clarity
            self.rig.recorder.violate(
                Violation("EXT-5-host-backoff", f"restart {self.attempts + 1} came after {delay:.3f} s")
            )
        if failed >= limits.FAILED_RESTARTS_BEFORE_PARK:
            self.rig.recorder.exercise("EXT-5-host-parks-after-failures")
            self.rig.recorder.violate(
                Violation(
                    "EXT-5-host-parks-after-failures",
                    f"the host restarted the extension after {failed} failed restart attempts in a row",
                ),
                measured={"failed_in_a_row": failed},
            )

    def _no_restart(self, failed: int, ceiling: float) -> None:
        if failed >= limits.FAILED_RESTARTS_BEFORE_PARK:
            self.rig.recorder.exercise("EXT-5-host-parks-after-failures")  # parked where it had to
            return
        state = self._state()
        if state is None or state == "parked":
            return  # parked early (allowed) or not observable
        self.rig.recorder.exercise("EXT-5-host-backoff")
        self.rig.recorder.violate(
            Violation(
                "EXT-5-host-backoff",
                f"no restart within {ceiling:.3f} s of restart attempt {self.attempts + 1}'s ceiling "
                f"and the extension is {state!r}, not parked",
            ),  # fmt: skip
            measured={"ceiling_s": round(ceiling, 3)},
        )

    def _state(self) -> str | None:
        if not self.rig.driver.has("lifecycle") or self.rig.handle is None:
            return None
        answer = self.rig.op("inspect", {"extension": self.rig.handle})
        return str(answer.get("state")) if isinstance(answer, dict) else None

    def _ready(self) -> bool:
        return reported_ready(self.rig)


def reported_ready(rig: HostRig) -> bool:
    """Wait for the restarted (or reloaded) generation to be reported
    ``ready`` (the session judges that report) and to become the one calls
    go to; False when no ``ready`` came."""
    wanted = {"extension": rig.handle, "state": "ready"}
    event = rig.driver.wait_event(
        lambda e: e.method == "state" and all(e.params.get(k) == v for k, v in wanted.items()),
        rig.pace.patience_s,
        idle=lambda: rig.tick(0.0),
    )
    if event is None:
        return False
    rig._judge(lambda s: s.host_reported_ready())
    swapped(rig, event.params.get("generation"))
    return True


def swapped(rig: HostRig, generation: object) -> bool:
    """Wait until ``inspect`` shows ``generation`` as the extension's current
    one. A generation is reported ``ready`` once negotiated, which may come
    before the host routes calls to it (§5: the swap follows the old
    generation's drain); a call made in between may rightly be held, sent to
    the old generation or refused. False when it never showed (bounded)."""

    def shown() -> bool:
        status = rig.op("inspect", {"extension": rig.handle})
        return isinstance(status, dict) and status.get("generation") == generation and status.get("state") == "ready"

    return bool(rig.until(shown))


def crash_quietly(storm: Storm, failures: int) -> bool:
    """:meth:`Storm.crash_and_follow`, where a probe that vanishes early ends the storm."""
    try:
        return storm.crash_and_follow(failures)
    except ProbeGone:
        return False


# -- §0: shaped writes ---------------------------------------------------------------------


def answer_shaped(rig: HostRig, calls: list[tuple[str, HostRequest]], shape: str, api_version: str) -> None:
    """Answer ``calls`` validly, written in ``shape``; each must settle with its result."""
    result = tool_result(api_version)
    frames = [rig.answering(req.wire_id, result) for _, req in calls]
    end = b"\r\n" if shape == "crlf" else b"\n"
    data = b"".join(padded(dumps(frame), SIZES.get(shape)) + end for frame in frames)
    if shape == "bytes":
        for index in range(len(data)):
            rig.write(data[index : index + 1], {"shape": shape})
    else:
        rig.write(data, {"shape": shape})
    for call, _ in calls:
        _delivered(rig, call, shape)


def unjudged_then_answered(rig: HostRig, call: str, req: HostRequest, size: int, api_version: str) -> None:
    """An answer padded to ``size`` bytes (exactly 1 MiB, or 1 MiB + 1), then
    the same answer at a normal size. Not judged (see SIZES); the frames the
    host writes meanwhile are still judged by the session."""
    result = tool_result(api_version)
    frame = padded(dumps({"jsonrpc": "2.0", "id": req.wire_id, "result": result}), size)
    rig.write(frame + b"\n", {"shape": f"padded to {size}"})
    rig.respond(req.wire_id, result)
    rig.settled(call)


def _delivered(rig: HostRig, call: str, shape: str) -> None:
    """EXT-0-host-reads-frames: however the bytes arrived, the answer is the call's result."""
    settled = rig.settled(call)
    rig.recorder.exercise("EXT-0-host-reads-frames")
    outcome = settled.params.get("outcome") if settled is not None else "nothing"
    if outcome != "result":
        rig.recorder.violate(
            Violation(
                "EXT-0-host-reads-frames",
                f"a valid answer written {SHAPE_WORDS[shape]} settled the call as {outcome!r}",
            )
        )
