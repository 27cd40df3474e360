"""Open-ended exploration (``octet-conformance fuzz``) and regression cases.

Certification uses fixed seeds and budgets; fuzzing draws fresh seeds until
its time box closes and keeps the shrunk trace of every requirement it sees
broken as a regression case. Certification replays those cases first
(``--regressions DIR``), so a bug found once is checked every time after.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from conformance.manifest import Manifest
from conformance.peers.ext_host import Launcher, Patience, spawn_process

from .extension import certify_extension
from .profiles import Profile

# One round: the time box is checked between rounds, so rounds stay short.
FUZZ_PROFILE = Profile("fuzz", examples=10, steps=40, shrink_s=60.0)


@dataclass(frozen=True)
class FuzzFinding:
    requirement: str
    seed: int
    case: Path


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
) -> list[FuzzFinding]:
    """Run certification rounds with fresh seeds until ``seconds`` pass."""
    rng = random.Random(first_seed)
    deadline = time.monotonic() + seconds
    known = {p.name.split("@")[0] for p in regressions.glob("*.jsonl")}
    found: list[FuzzFinding] = []
    while time.monotonic() < deadline:
        seed = rng.randrange(2**32)
        traces = work_dir / f"seed-{seed}"
        run = certify_extension(manifest, profile, seed, patience, trace_dir=traces, launcher=launcher)
        for v in run.verdicts:
            if v.verdict not in ("fail", "warn") or v.trace is None or v.requirement.id in known:
                continue
            regressions.mkdir(parents=True, exist_ok=True)
            case = regressions / f"{v.requirement.id}@{seed}.jsonl"
            shutil.copyfile(v.trace, case)
            known.add(v.requirement.id)
            found.append(FuzzFinding(v.requirement.id, seed, case))
    return found
