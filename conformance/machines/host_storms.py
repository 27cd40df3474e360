"""Shaped probe writes (§0) and probe crashes with restart storms (§5), for
:class:`conformance.machines.host.HostMachine` and as two fixed scenarios.

How to use::

    answer_shaped(rig, [(call, req)], "bytes", api_version)   # one byte per write, then judged
    storm = Storm(rig, api_version, Backoff.of(rig))
    live = storm.crash_and_follow(failures=3)   # False: the host parked (or stopped restarting)
    for scenario in machine_scenarios(api_version): scenario(rig)   # "frame-shapes", "restart-storm"

Shapes: an answer written in one write, one byte per write, with CR LF, or
two answers in one write (coalesced). A stream has no write boundaries and
CR is JSON whitespace, so every shape must settle its call with the result
(EXT-0-host-reads-frames).

The probe crashes (an unexpected exit of a ready generation); the host's
supervisor restarts it. The first ``failures`` restarts crash again while
initializing -- unambiguous failed restart attempts -- and the next one
answers initialize validly. Each restart's delay, from the harness seeing the
probe end to the next probe connecting, is held against the full-jitter
ceiling (EXT-5-host-backoff); a restart after eight failed ones in a row
breaks EXT-5-host-parks-after-failures.

No false positives (the readings are in docs/catalog.md's host decisions):

* the ceiling of attempt k (0-based, counted over the whole example) is taken
  as ``min(cap, base * 2**(k + 1))`` -- one doubling more than the usual
  ``base * 2**k``, so either convention of where the exponent starts passes;
  a host that reset its budget after a long ready spell only waits less;
* jitter itself (the spread of the delays) is not judged: a handful of
  samples cannot tell a uniform draw from a fixed one;
* parking *earlier* than eight failures in a row is not flagged: a host may
  count a restart that became ready and then died as failed (the reference
  host does), so its budget can be partly used before the storm begins;
* no restart within the ceiling is a fail only when the driver can say the
  extension is not parked (capability ``lifecycle``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.machines.host_scenarios import (
    SLACK_S,
    HostRejected,
    initialize_result,
    padded,
    ready,
    room,
    shutdown_with,
    start_call,
    tool_result,
)
from conformance.peers.host_rig import HostRequest, HostRig, ProbeGone
from conformance.protocol import limits
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation

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
        base = float(rig.timing.get("backoff_base_ms", limits.RESTART_BACKOFF_BASE_S * 1000)) / 1000
        cap = float(rig.timing.get("backoff_cap_ms", limits.RESTART_BACKOFF_CAP_S * 1000)) / 1000
        return cls(base, cap, SIM_SLACK_S if rig.idle_wait is not None else SLACK_S)

    def ceiling(self, attempt: int) -> float:
        return min(self.cap_s, self.base_s * 2 ** min(attempt + 1, 32))


def storms_measurable(rig: HostRig) -> bool:
    """On the virtual clock, or with the backoff scaled by the driver: a storm
    at the spec's 30 s cap on real time would take minutes."""
    return rig.idle_wait is not None or "backoff_base_ms" in rig.timing


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
            ended = self.rig.clock()
            if self.rig.relaunched(ceiling) is None:
                self._no_restart(failed, ceiling)
                return False
            self._judge_restart(failed, self.rig.clock() - ended, ceiling)
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
        rig.patience_s,
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


# -- fixed scenarios (played by the runner after host_scenarios') ----------------------------


def frame_shapes(api_version: str) -> Callable[[HostRig], None]:
    """Every shape; two answers in one write need two calls outstanding at
    once, so they come last, and not at all when the host negotiated a
    limit of one (§1.1 lets it)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        for shape in SHAPES:
            answer_shaped(rig, [start_call(rig)], shape, api_version)
        for size in (limits.MAX_FRAME_BYTES, limits.MAX_FRAME_BYTES + 1):
            unjudged_then_answered(rig, *start_call(rig), size, api_version)
        limit = room(rig)
        if limit is None or limit >= 2:
            answer_shaped(rig, [start_call(rig), start_call(rig)], "coalesced", api_version)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "frame-shapes"
    return run


def restart_storm(api_version: str) -> Callable[[HostRig], None]:
    """A call in flight, the probe crashes, and every restart dies while
    initializing: each delay within the ceiling, and no ninth restart."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return  # real time at the spec's 30 s cap: left to the virtual clock or a timing driver
        ready(rig, api_version)
        start_call(rig)
        storm = Storm(rig, api_version, Backoff.of(rig))
        if storm.crash_and_follow(limits.FAILED_RESTARTS_BEFORE_PARK + 1):
            shutdown_with(rig, ack=True, exit_after_ack=True)  # it never parked: end the live generation

    run.__name__ = "restart-storm"
    return run


# -- §5 generation boundary, §2.2 confirmation fence (one restart) -------------------------

CROSSING_PROMPT = "Proceed across the restart?"


def restart_boundary(api_version: str) -> Callable[[HostRig], None]:
    """§5/§2.2: generation 1 has a call in flight and a confirmation under it
    when the probe crashes; the host restarts it once. Whatever the host does
    with what generation 1 left (the lost call, the confirmation its frontend
    may still be answering), none of it may reach generation 2: the session
    judges every frame of generation 2 against generation 1's ids. A later
    call orders the frames, once the frontend answered (its ``prompt`` event)."""

    def run(rig: HostRig) -> None:
        if not storms_measurable(rig):
            return  # real time at the spec's 30 s cap: left to the virtual clock or a timing driver
        ready(rig, api_version)
        _, req = start_call(rig)
        params: dict[str, object] = {"prompt": CROSSING_PROMPT, "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        rig.child_request("confirm-crossing", "confirmation/request", params)
        storm = Storm(rig, api_version, Backoff.of(rig))
        if not crash_quietly(storm, 0):
            return  # no restart: nothing crosses (backoff and parking are judged by restart-storm)
        rig.driver.wait_event(
            lambda e: e.method == "prompt" and e.params.get("text") == CROSSING_PROMPT,
            rig.patience_s,
            idle=lambda: rig.tick(0.0),
        )
        try:
            call, later = start_call(rig, "after-restart")
        except HostRejected:
            # A host may refuse a call while it holds the extension crashed or
            # restarting (say, a second crash under load): the frames of
            # generation 2 were judged as they came, but with no later call to
            # order them the boundary is not claimed exercised here.
            return
        # Every frame generation 2 got so far went through the session, which
        # fails any that names generation 1's ids: the boundary was exercised.
        rig.recorder.exercise("EXT-5-host-generation-boundary", "EXT-2.2-host-generation-fence")
        rig.respond(later.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    run.__name__ = "restart-boundary"
    return run


def machine_scenarios(api_version: str) -> list[Callable[[HostRig], None]]:
    return [frame_shapes(api_version), restart_storm(api_version), restart_boundary(api_version)]
