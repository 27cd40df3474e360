"""Certification budgets. Fixed per profile, so equal seeds give equal runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples = process generations driven by the machine
    steps: int  # steps per example
    # per failing requirement: time to shrink its trace (0: traces are kept as
    # recorded, as the fixture tests do; docs/trace-format.md, Shrinking)
    shrink_s: float = 30.0
    default_seed: int = 20261130
    # Exploration is cut into this many shards, each its own Hypothesis run
    # with its share of the examples (runner/parallel.py): --jobs runs them
    # side by side. Part of the budget: the same for any --jobs.
    shards: int = 1
    # Run the sweep generation before exploring (runner/search.py). Fuzz
    # rounds after the first leave it out: it is the same for every seed.
    sweep: bool = True
    # The wall time the budget is sized for: one certification of the
    # reference extension (API 0.2, one job) on this project's 2-core
    # machines, shrinking included. Stated, never enforced: a time limit
    # would make how far a run explores depend on the machine, and equal
    # seeds must give equal runs.
    seconds: float = 0.0


PROFILES = {
    "quick": Profile("quick", examples=10, steps=20, shrink_s=15.0, shards=2, seconds=25.0),
    "default": Profile("default", examples=30, steps=30, shards=4, seconds=75.0),
    "thorough": Profile("thorough", examples=100, steps=50, shrink_s=120.0, shards=8, seconds=400.0),
}
