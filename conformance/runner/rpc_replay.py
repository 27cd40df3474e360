"""Replay a host RPC failure trace: a host-core's or a client's.

Like the host runner's replay, this re-runs what the trace came from -- the
certification of the same command (its header's ``target``), with the
profile and seed in its header -- and re-checks its requirement. The
host-core scenarios and the client script are fixed, and the state machine
is seeded, so the run makes the same writes in the same order as the one
that recorded the trace. Only the 64 MiB line is left out unless the trace
is about it (it costs a host-core a 64 MiB drain per run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.peers.rpc_client import HostcoreCommand
from conformance.peers.rpc_hostcore import ClientCommand
from conformance.results import RunResult
from conformance.transport.trace import TraceError, load

from .client import certify_client
from .hostcore import certify_hostcore
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
    outcomes = []
    for _ in range(runs):
        run: RunResult
        if role == "hostcore":
            oversized = header.get("context") == OVERSIZED_CONTEXT
            run = certify_hostcore(
                HostcoreCommand(argv, cwd), profile, seed_value, response_s=patience_s, oversized=oversized
            )
        else:
            oversized = requirement in CLIENT_OVERSIZED
            run = certify_client(
                ClientCommand(argv, cwd), profile, seed_value, response_s=patience_s, oversized=oversized
            )
        if run.harness_errors:
            raise NotReplayable(f"the replay run failed: {run.harness_errors[0]}")
        verdict = next((v for v in run.verdicts if v.requirement.id == requirement), None)
        hit = verdict is not None and verdict.verdict in ("fail", "warn")
        outcomes.append(ReplayOutcome(requirement, hit, verdict.evidence if verdict else "not judged"))
    return outcomes
