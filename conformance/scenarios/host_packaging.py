"""§5 inspection, §0 packaging (requires_octet), a flooding stderr and an
oversized call."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import HostRig
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, FLOOD_BYTES, TOOL, ready, start_call, tool_result

# -- §5 -----------------------------------------------------------------------------------

LAST_ERROR_BYTES = 4096  # the contract's bound on inspect's last_error (§5 asks for a bounded one)


def inspection(api_version: str) -> Scenario:
    """§5: inspect shows the generation the load reported, the features the
    probe negotiated, the pending count (one call outstanding, then none), a
    health state and a bounded last error."""

    def run(rig: HostRig) -> None:
        loaded = ready(rig, api_version)
        call, req = start_call(rig)
        problems = _inspection_problems(rig, loaded.get("generation"), pending=1)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        problems += _inspection_problems(rig, loaded.get("generation"), pending=0)
        rig.recorder.exercise("EXT-5-host-inspection")
        for problem in dict.fromkeys(problems):
            rig.recorder.violate(Violation("EXT-5-host-inspection", problem))
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("inspection", run)


def _inspection_problems(rig: HostRig, generation: Any, *, pending: int) -> list[str]:
    status = rig.op("inspect", {"extension": rig.handle})
    if isinstance(status, OperationError):
        return [f"inspect of a ready extension failed: {status.code} {status.message}"]
    negotiated = rig.session.negotiated if rig.session is not None else None
    features = sorted(negotiated.features) if negotiated is not None and not negotiated.is_legacy else []
    shown = status.get("features")
    last_error = status.get("last_error")
    checks = [
        (status.get("generation") == generation, f"generation {status.get('generation')!r}; load said {generation!r}"),
        (status.get("state") == "ready", f"state {status.get('state')!r} while the extension is ready"),
        (isinstance(shown, list) and sorted(map(str, shown)) == features, f"features {shown!r}; negotiated {features}"),
        (status.get("pending") == pending, f"pending {status.get('pending')!r} with {pending} call(s) outstanding"),
        (isinstance(status.get("health"), str), f"health {status.get('health')!r} is not a state name"),
        (
            last_error is None or (isinstance(last_error, str) and len(last_error.encode()) <= LAST_ERROR_BYTES),
            "last_error is not null nor a string of at most 4 KiB",
        ),
    ]
    return [f"inspect: {text}" for ok, text in checks if not ok]


# -- §0 packaging -------------------------------------------------------------------------

UNSATISFIABLE_OCTET = "=99.0.0"  # no host is this version


def unsatisfied_requires_octet(api_version: str) -> Scenario:
    """§0: a manifest whose exact requires_octet no host satisfies is refused
    by ``load`` and its process never starts (the probe would connect)."""

    def run(rig: HostRig) -> None:
        token = rig.listener.new_token()
        manifest = rig.listener.write_manifest(token, api_version=api_version, contributes=CONTRIBUTES)
        text = manifest.read_text(encoding="utf-8")
        line = f'requires_octet = "{UNSATISFIABLE_OCTET}"'
        changed = re.sub(r"(?m)^requires_octet\s*=.*$", line, text)
        manifest.write_text(changed if changed != text else f"{line}\n{text}", encoding="utf-8")
        started, loaded = load_refused(rig, token, manifest)
        rig.recorder.exercise("EXT-0-host-requires-octet-before-spawn")
        if started:
            rig.recorder.violate(
                Violation(
                    "EXT-0-host-requires-octet-before-spawn",
                    f"the host started an extension whose requires_octet is {UNSATISFIABLE_OCTET}",
                )
            )
        outcome = loaded.get("outcome") if isinstance(loaded, dict) else None
        if outcome not in (None, "refused"):  # an operation error is a refusal too
            rig.recorder.violate(
                Violation(
                    "EXT-0-host-requires-octet-before-spawn",
                    f"load of a manifest requiring octet {UNSATISFIABLE_OCTET} answered {outcome!r}, not refused",
                )
            )

    return Scenario("unsatisfied-requires-octet", run)


def load_refused(rig: HostRig, token: str, manifest: Path) -> tuple[bool, dict[str, Any] | OperationError]:
    """``load`` a manifest the host must refuse. Returns whether the host
    started its process (the probe connected; it is killed at once, which
    ends a load waiting for its initialize) and the load answer."""
    rid = rig.driver.start("load", {"manifest": str(manifest)})
    started: list[Any] = []

    def spawned() -> bool:
        # A refusing host answers at once; one that spawned the probe waits
        # for its initialize: ending the probe lets that load end too.
        link = None if started else rig.listener.accept(token, 0.0)
        if link is not None:
            started.append(link)
            link.kill_group()
        return bool(started)

    def idle() -> None:
        rig.tick(0.0)
        spawned()

    loaded = rig.driver.wait_answer(rid, rig.pace.patience_s + 5.0, idle=idle)
    rig.until(spawned, 0.2)  # a spawn right behind the answer
    return bool(started), loaded


# -- §0 -----------------------------------------------------------------------------------


def stderr_flood(*, newlines: bool) -> Callable[[str], Scenario]:
    """The host drains stderr: a flood finishes, and the extension still answers."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            rig.command({"t": "flood", "bytes": FLOOD_BYTES, "newlines": newlines})
            assert rig.link is not None
            report = rig.until(lambda: rig.link.report("flooded") if rig.link else None)
            rig.recorder.exercise("EXT-0-host-drains-stderr")
            if report is None:
                rig.recorder.violate(
                    Violation(
                        "EXT-0-host-drains-stderr",
                        f"a {FLOOD_BYTES // 1024} KiB stderr flood "
                        f"{'of lines' if newlines else 'without newlines'} never drained",
                    )
                )
                return
            call, req = start_call(rig)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
            shutdown_with(rig, ack=True, exit_after_ack=True)

        return Scenario(f"stderr-flood[{'lines' if newlines else 'no-newlines'}]", run)

    return make


# -- §0 frame bound ------------------------------------------------------------------------

# A tool argument this long makes the tool/call frame longer than §0's 1 MiB.
OVERSIZED_TEXT = "o" * (1024 * 1024)


def oversized_call(api_version: str) -> Scenario:
    """§0: a call whose frame would pass the 1 MiB bound. The host refuses it
    (or fails it) without writing it; the session judges any oversized frame
    that arrives. A later call orders the frames."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        big, answer = rig.call("tool/call", {"name": TOOL, "arguments": {"text": OVERSIZED_TEXT}})
        if not isinstance(answer, OperationError):
            rig.settled(big, 1.0)  # settled as failed, or never: only the frame is judged
        call, req = start_call(rig, "small")
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("oversized-call", run)
