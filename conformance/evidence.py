"""Findings gathered during a run, per requirement -- the raw material of
verdicts. Peers add to it; the runner turns it into verdicts; reports only
read the verdicts."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .protocol.violations import Exercise, Finding, Violation

MAX_KEPT_VIOLATIONS = 5  # per requirement: enough to act on, bounded in size


@dataclass(frozen=True)
class Observed:
    """A violation with where it happened."""

    violation: Violation
    context: str  # e.g. "offer=all example=3 step=7"
    stderr: str = ""


@dataclass
class Recorder:
    exercised: dict[str, int] = field(default_factory=dict)
    violations: dict[str, list[Observed]] = field(default_factory=dict)
    violation_counts: dict[str, int] = field(default_factory=dict)
    negotiated_features: set[str] = field(default_factory=set)
    api_versions: set[str] = field(default_factory=set)
    harness_errors: list[str] = field(default_factory=list)
    hung_initializations: int = 0
    started_at: float = field(default_factory=time.monotonic)
    # seconds from the start of the run to the first violation, per requirement
    # (benchmarks report it as time-to-detect)
    first_violation_after: dict[str, float] = field(default_factory=dict)
    trace_dir: Path | None = None  # where generations that first violate a requirement save their trace
    traces: dict[str, Path] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)  # profile, seed: stamped on traces
    context: str = ""

    def add(self, findings: Iterable[Finding], *, stderr: str = "") -> None:
        for f in findings:
            if isinstance(f, Exercise):
                self.exercised[f.requirement] = self.exercised.get(f.requirement, 0) + 1
            else:
                self.violate(f, stderr=stderr)

    def violate(self, v: Violation, *, stderr: str = "") -> None:
        self.exercised[v.requirement] = self.exercised.get(v.requirement, 0) + 1
        self.violation_counts[v.requirement] = self.violation_counts.get(v.requirement, 0) + 1
        self.first_violation_after.setdefault(v.requirement, time.monotonic() - self.started_at)
        kept = self.violations.setdefault(v.requirement, [])
        if len(kept) < MAX_KEPT_VIOLATIONS:
            kept.append(Observed(v, self.context, stderr))

    def exercise(self, *requirements: str) -> None:
        for r in requirements:
            self.exercised[r] = self.exercised.get(r, 0) + 1
