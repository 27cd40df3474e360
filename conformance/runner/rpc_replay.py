"""Replay a host RPC failure trace: a host-core's or a client's.

Like the host runner's replay, this re-runs what the trace came from -- the fixed
scenario named by the header's ``context`` (every client scenario, and the
host-core's handshake and oversized-line ones), else the certification of the
same host-core command (its header's ``target``) with the profile and seed in
its header -- and re-checks its requirement. The host-core
scenarios and the client script are fixed, and the state machine is seeded,
so the run makes the same writes in the same order as the one that recorded
the trace. The 64 MiB line is written only when the trace is about it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.peers.rpc_client import HostcoreCommand
from conformance.peers.rpc_hostcore import ClientCommand
from conformance.requirements import load_catalog
from conformance.scenarios.hostcore_handshake import handshake_scenario, oversized_scenario
from conformance.transport.trace import TraceError, load
from conformance.verdicts import Verdict, decide

from .client import MISMATCHES, mismatch_scenario, session_scenario
from .extension import _guarded
from .hostcore import API_VERSION, certify_hostcore
from .profiles import PROFILES
from .replay import NotReplayable, ReplayOutcome, check_header_requirement

ROLES = ("hostcore", "client")
OVERSIZED_CONTEXT = "scenario=oversized-line"
CLIENT_OVERSIZED = ("RPC-7-client-refuses-oversized", "RPC-0-client-oversized-not-retried")


def rpc_role(trace_path: Path) -> str | None:
    """``hostcore`` or ``client`` for a trace a host RPC certification wrote, else None."""
    try:
        header, _ = load(trace_path)
    except (OSError, ValueError):
        return None
    target = header.get("target")
    role = target.get("role") if isinstance(target, dict) else None
    return role if role in ROLES else None


def _target(header: dict[str, Any]) -> tuple[tuple[str, ...], Path]:
    target = header["target"]
    argv, cwd = target.get("argv"), target.get("cwd")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv) or not isinstance(cwd, str):
        raise TraceError("trace line 1: target.argv must be a non-empty list of strings and target.cwd a string")
    return tuple(argv), Path(cwd)


def replay_rpc(trace_path: Path, *, runs: int = 1, patience_s: float = 15.0) -> list[ReplayOutcome]:
    if runs < 1:
        raise ValueError(f"runs must be >= 1; got {runs}")
    header, _ = load(trace_path)
    requirement = check_header_requirement(header)
    role = header["target"]["role"]
    argv, cwd = _target(header)
    profile = PROFILES.get(str(header.get("profile", "quick")), PROFILES["quick"])
    seed_value = header.get("seed", profile.default_seed)
    if not isinstance(seed_value, int) or isinstance(seed_value, bool):
        raise TraceError("trace line 1: seed must be a whole number")
    context = str(header.get("context", ""))
    outcomes = []
    for _ in range(runs):
        errors: Sequence[str]
        verdicts: Sequence[Verdict]
        if role == "client":
            errors, verdicts = _client_scenario(ClientCommand(argv, cwd), context, requirement, patience_s)
        elif context.startswith("scenario="):
            errors, verdicts = _hostcore_scenario(HostcoreCommand(argv, cwd), context, patience_s)
        else:  # the state machine (or the scripted walk before it): the whole run, same seed
            hostcore = HostcoreCommand(argv, cwd)
            run = certify_hostcore(hostcore, profile, seed_value, response_s=patience_s, oversized=False)
            errors, verdicts = run.harness_errors, run.verdicts
        if errors:
            raise NotReplayable(f"the replay run failed: {errors[0]}")
        verdict = next((v for v in verdicts if v.requirement.id == requirement), None)
        hit = verdict is not None and verdict.verdict in ("fail", "warn")
        outcomes.append(ReplayOutcome(requirement, hit, verdict.evidence if verdict else "not judged"))
    return outcomes


def _hostcore_scenario(command: HostcoreCommand, context: str, patience_s: float) -> tuple[list[str], list[Verdict]]:
    """Only the fixed scenario the trace came from (the handshake scenario
    holds the transport checks; the oversized one needs nothing before it)."""
    recorder = Recorder()
    with tempfile.TemporaryDirectory(prefix="octet-replay-") as root:
        work = Path(root)
        if context == OVERSIZED_CONTEXT:
            _guarded(recorder, "oversized scenario", lambda: oversized_scenario(command, recorder, patience_s, work))
        else:
            _guarded(recorder, "handshake scenario", lambda: handshake_scenario(command, recorder, patience_s, work))
    verdicts = decide(load_catalog(), recorder, role="hostcore", api_version=API_VERSION)
    return recorder.harness_errors, verdicts


def _client_scenario(
    command: ClientCommand, context: str, requirement: str, patience_s: float
) -> tuple[list[str], list[Verdict]]:
    """Only the client scenario the trace came from (the session one when the
    context names none)."""
    recorder = Recorder()
    name = context.removeprefix("scenario=")
    if name in MISMATCHES:
        answer = MISMATCHES[name]
        _guarded(recorder, f"{name} scenario", lambda: mismatch_scenario(command, recorder, patience_s, name, answer))
    else:
        oversized = requirement in CLIENT_OVERSIZED
        _guarded(
            recorder, "session scenario", lambda: session_scenario(command, recorder, patience_s, oversized=oversized)
        )
    verdicts = decide(load_catalog(), recorder, role="client", api_version=API_VERSION)
    return recorder.harness_errors, verdicts
