"""§1.11 wave-1 refusals, §1.8 draining and shutdown deadlines, §2.5 the
snapshot rate bound."""

from __future__ import annotations

from typing import Any

from conformance.peers.host_driver import DriverEvent, OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_packaging import LAST_ERROR_BYTES
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, SLACK_S, ready, start_call, tool_result

# -- §1.11 (driver capability ``wave1``) ---------------------------------------------------------


def wave1_refusal(api_version: str) -> Scenario:
    """§1.11 (API 0.2+): asked to send shortcut/trigger, which the probe never
    negotiated, the host refuses it with a diagnostic of at most 4 KiB (the
    session fails it if it reaches the probe); a call after it orders the events."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.11-host-refusal-diagnostic"
        if not rig.driver.has("wave1"):
            return  # unexercised: reported untested, never pass
        ready(rig, api_version)
        before = len(_diagnostics(rig))
        answer = rig.op("observe", {"extension": rig.handle, "event": "shortcut/trigger", "params": {"id": "s1"}})
        call, req = start_call(rig)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)  # a diagnostic about the refusal came before this (the contract's order)
        if not isinstance(answer, OperationError):
            rig.recorder.exercise(requirement)
            new = _diagnostics(rig)[before:]
            if not rig.notes("shortcut/trigger") and not new:
                rig.recorder.violate(Violation(requirement, "an unnegotiated shortcut/trigger was refused silently"))
            elif [d for d in new if len(str(d.params.get("message")).encode()) > LAST_ERROR_BYTES]:
                rig.recorder.violate(Violation(requirement, "the refusal's diagnostic is over 4 KiB"))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("wave1-refusal", run)


def _diagnostics(rig: HostRig) -> list[DriverEvent]:
    return [e for e in rig.events("diagnostic") if e.params.get("extension") == rig.handle]


# -- §1.8 ---------------------------------------------------------------------------------------


def draining(api_version: str) -> Scenario:
    """§1.8 (API 0.2+): a call still open when the extension is shut down is
    cancelled by the host's drain (it settles ``cancelled``), not left to die
    with the process."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-draining"
        ready(rig, api_version)
        call, _ = start_call(rig)  # never answered
        shutdown_with(rig, ack=True, exit_after_ack=True)
        settled = rig.settled(call)
        if settled is None:
            return  # never settled: not this rule's concern
        rig.recorder.exercise(requirement)
        outcome = settled.params.get("outcome")
        if outcome != "cancelled":
            rig.recorder.violate(
                Violation(requirement, f"a call open at shutdown settled as {outcome!r}, not cancelled by the drain")
            )

    return Scenario("draining", run)


# A long stage and a short aggregate: per-connection stages alone would take
# 2 x 2 s; the aggregate deadline ends the stubborn probe after 0.6 s.
AGGREGATE_STAGE_MS = 2000
AGGREGATE_MS = 600


def aggregate_deadline(api_version: str) -> Scenario:
    """§1.8 (driver capability ``timing``): product shutdown (``shutdown {}``)
    of a probe that never acknowledges ends its process group within the
    aggregate deadline (plus a slack), however long the per-connection stages."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-aggregate-deadline"
        if not rig.driver.has("timing"):
            return  # with the spec's 2 s stages and 3 s aggregate the two cannot be told apart
        rig.pace.timing = {
            **rig.pace.timing,
            "shutdown_timeout_ms": AGGREGATE_STAGE_MS,
            "shutdown_aggregate_ms": AGGREGATE_MS,
        }
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {})
        asked = link.now()
        bound = AGGREGATE_MS / 1000 + SLACK_S
        rig.until(lambda: not link.running(), bound)
        rig.recorder.exercise(requirement)
        if link.running():
            rig.recorder.violate(
                Violation(requirement, "product shutdown left a silent extension past the aggregate deadline"),
                measured={"aggregate_s": AGGREGATE_MS / 1000, "waited_s": round(link.now() - asked, 3)},
            )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))

    return Scenario("aggregate-deadline", run)


# The interactive exit's cap (§1.8) and stages long enough that only the cap
# can end a silent probe in time: the aggregate (4.5 s) and the stages (2 x 3 s) cannot.
INTERACTIVE_CAP_S = 1.4
INTERACTIVE_STAGE_MS = 3000
INTERACTIVE_AGGREGATE_MS = 4500


def interactive_cap(api_version: str) -> Scenario:
    """§1.8 (driver capabilities ``exits`` and ``timing``): an interactive exit
    (``shutdown {"exit": "interactive"}``) ends a probe that never
    acknowledges within 1.4 s (plus a slack), cutting its stages short."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-1.8-host-interactive-cap"
        if not (rig.driver.has("exits") and rig.driver.has("timing")):
            return  # unexercised: reported untested, never pass
        rig.pace.timing = {
            **rig.pace.timing,
            "shutdown_timeout_ms": INTERACTIVE_STAGE_MS,
            "shutdown_aggregate_ms": INTERACTIVE_AGGREGATE_MS,
        }
        ready(rig, api_version)
        link = rig.link
        assert link is not None
        rid = rig.driver.start("shutdown", {"exit": "interactive"})
        asked = link.now()
        rig.until(lambda: not link.running(), INTERACTIVE_CAP_S + SLACK_S)
        rig.recorder.exercise(requirement)
        if link.running():
            rig.recorder.violate(
                Violation(requirement, "an interactive exit left a silent extension running past 1.4 s"),
                measured={"cap_s": INTERACTIVE_CAP_S, "waited_s": round(link.now() - asked, 3)},
            )
        rig.driver.wait_answer(rid, 15.0, idle=lambda: rig.tick(0.0))

    return Scenario("interactive-cap", run)


# -- §2.5: the snapshot rate bound ---------------------------------------------------------------

SNAPSHOTS_PER_WINDOW = 32  # §2.5: one generation, one one-second window
SNAPSHOT_BURST = 100


def presentation_rate(api_version: str) -> Scenario:
    """§2.5 (API 0.2+): under an active call the probe writes 100 valid
    snapshots (revisions 1-100) in one write. A host shows at most 32 per
    one-second window and coalesces the rest, last wins, showing the newest
    when the next window opens. Judged on the driver's presentation
    contributions: the burst may straddle a window boundary, so up to
    2 x 32 + 1 may be shown; more fails, and so does never showing revision
    100 within two windows and a slack (the excess was dropped, not coalesced)."""

    def run(rig: HostRig) -> None:
        requirement = "EXT-2.5-host-rate-bound"
        ready(rig, api_version, contributes={**CONTRIBUTES, "presentation": True})
        call, req = start_call(rig)
        status = {"state": "active", "label": "probe"}
        written = rig.pace.clock()
        for revision in range(1, SNAPSHOT_BURST + 1):
            snapshot = {"revision": revision, "status": status, "activities": [], "actions": []}
            rig.send({"jsonrpc": "2.0", "method": "presentation/update",
                      "params": {"parent_request_id": req.wire_id, "snapshot": snapshot}})  # fmt: skip

        def shown_events() -> list[Any]:
            return [e for e in rig.events("contribution") if e.params.get("kind") == "presentation"]

        def revisions() -> list[Any]:
            return [_revision(e.params.get("value")) for e in shown_events()]

        newest = rig.until(lambda: SNAPSHOT_BURST in revisions(), 2 * 1.0 + SLACK_S)
        events = shown_events()
        shown = revisions()
        if shown:  # a host that shows no snapshot at all (a refusal) is not judged here
            rig.recorder.exercise(requirement)
            # The host showed them between the burst and their events' arrival: at most
            # that many one-second windows (two at least: the burst may straddle one).
            windows = max(2, int(max(e.at for e in events) - written) + 2)
            if len(shown) > windows * SNAPSHOTS_PER_WINDOW + 1:
                rig.recorder.violate(
                    Violation(requirement, f"{len(shown)} of {SNAPSHOT_BURST} snapshots written at once were shown"),
                    measured={"shown": len(shown), "windows": windows},
                )
            elif not newest:
                rig.recorder.violate(
                    Violation(requirement, f"the newest snapshot (revision {SNAPSHOT_BURST}) was never shown"),
                    measured={"waited_s": 2 + SLACK_S},
                )
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("presentation-rate", run)


def _revision(value: Any) -> Any:
    """The revision a ``presentation`` contribution shows: its value is the
    notification's params (``{"snapshot": {...}, ...}``, docs/host-driver.md);
    a driver that reports the snapshot object itself is read as well."""
    if not isinstance(value, dict):
        return None
    snapshot = value.get("snapshot", value)
    return snapshot.get("revision") if isinstance(snapshot, dict) else None
