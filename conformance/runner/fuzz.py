"""Open-ended exploration (``octet-conformance fuzz``) and regression cases.

Certification uses fixed seeds and budgets; fuzzing draws fresh seeds until
its time box closes and keeps the shrunk trace of every requirement it sees
broken as a regression case. Certification replays those cases first
(``--regressions DIR``), so a bug found once is checked every time after.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from pathlib import Path

from conformance.manifest import Manifest
from conformance.outfiles import copy_file
from conformance.peers.ext_host import Launcher, Patience, spawn_process
from conformance.verdicts import Verdict

from .extension import certify_extension
from .profiles import Profile
from .reportdir import locked, staged

# One round: the time box is checked between rounds, so rounds stay short.
# Each round is a certification with the wall-time budget of its (cut-down)
# profile (Profile.budget_s): a target that stalls every step cannot hold a
# round, and so the fuzz run, past it.
FUZZ_PROFILE = Profile("fuzz", examples=10, steps=40, shrink_s=60.0)


@dataclass(frozen=True)
class FuzzFinding:
    requirement: str
    seed: int
    case: Path


@dataclass(frozen=True)
class FuzzResult:
    found: tuple[FuzzFinding, ...]
    harness_errors: tuple[str, ...]  # of the round that ended the run early; empty otherwise
    rounds: int  # rounds completed


# What one example of a round costs at least (spawn, initialize, a few steps):
# a short time box gets a round small enough to end near it.
EXAMPLE_COST_S = 0.5


def round_profile(profile: Profile, remaining_s: float) -> Profile:
    """The budget of the next round: the profile's, cut down when less time is left."""
    examples = max(1, min(profile.examples, int(remaining_s / EXAMPLE_COST_S)))
    return replace(profile, examples=examples, shrink_s=min(profile.shrink_s, max(remaining_s, 1.0)))


def fuzz(
    manifest: Manifest,
    *,
    seconds: float,
    regressions: Path,
    work_dir: Path,
    patience: Patience | None = None,
    first_seed: int | None = None,
    profile: Profile = FUZZ_PROFILE,
    launcher: Launcher = spawn_process,
) -> FuzzResult:
    """Run certification rounds with fresh seeds until ``seconds`` pass, or
    until a round hits a harness error (it judged nothing; more rounds would
    only repeat it). Each round's traces go to ``work_dir/seed-N``, written
    whole when the round ends; an interrupted round leaves nothing, and no
    regression case."""
    rng = random.Random(first_seed)
    deadline = time.monotonic() + seconds
    found: list[FuzzFinding] = []
    rounds = 0
    with locked(work_dir, what="fuzz work directory"), locked(regressions, what="regressions directory"):
        known = {p.name.split("@")[0] for p in regressions.glob("*.jsonl")}
        while time.monotonic() < deadline:
            seed = rng.randrange(2**32)
            budget = round_profile(profile, deadline - time.monotonic())
            if rounds:  # the sweep is the same at every seed: the first round ran it
                budget = replace(budget, sweep=False)
            final = work_dir / f"seed-{seed}"
            with staged(final, what="fuzz round directory") as stage:
                run = certify_extension(manifest, budget, seed, patience, trace_dir=stage, launcher=launcher)
            rounds += 1
            if run.harness_errors:
                return FuzzResult(tuple(found), run.harness_errors, rounds)
            found.extend(_keep_cases(run.verdicts, stage, final, regressions, known, seed))
    return FuzzResult(tuple(found), (), rounds)


def _keep_cases(
    verdicts: tuple[Verdict, ...], stage: Path, final: Path, regressions: Path, known: set[str], seed: int
) -> list[FuzzFinding]:
    """Copy the committed trace of each newly failing requirement into ``regressions``."""
    kept: list[FuzzFinding] = []
    for v in verdicts:
        if v.verdict not in ("fail", "warn") or v.trace is None or v.requirement.id in known:
            continue
        trace = Path(v.trace)
        committed = final / trace.relative_to(stage) if trace.is_relative_to(stage) else trace
        case = regressions / f"{v.requirement.id}@{seed}.jsonl"
        copy_file(committed, case)
        known.add(v.requirement.id)
        kept.append(FuzzFinding(v.requirement.id, seed, case))
    return kept
