"""Certification budgets. Fixed per profile, so equal seeds give equal runs.

A profile's budget is first a number of examples of a number of steps: how
far a run explores, the same on every machine. Each run also has a
wall-time budget derived from those numbers (:meth:`Profile.budget_s`): a
backstop, never a pace. It is :data:`BUDGET_FACTOR` times the wall time the
profile is sized for, a multiple large enough that a correct target never
comes near it, so for a correct target the results never depend on the
machine. It bounds the run against a target that would otherwise make it
last for hours (one that answers every request just inside the patience);
what such a run leaves is ``untested: run budget spent``
(conformance/verdicts.py), never ``pass``.
"""

from __future__ import annotations

from dataclasses import dataclass

# A wall-time budget is this many times what the profile is sized for. CI
# runs four certifications at once on two cores (about 2-3 times slower than
# alone, measured); the rest of the margin is for a correct target slower
# than the reference.
BUDGET_FACTOR = 8.0


@dataclass(frozen=True)
class RoleCost:
    """What a certification of one role costs the bundled reference, alone on
    a 2-core machine: a fixed part (scenarios, spawns) and a part per
    example-step of the profile (state machines). Rounded up."""

    fixed_s: float
    per_example_step_s: float
    patience_s: float  # the role's default patience; a longer one stretches the budget alike


ROLE_COSTS = {
    # quick 14 s, default 75 s measured (README: sized for 25 s / 75 s / 400 s)
    "extension": RoleCost(10.0, 0.075, 15.0),
    # quick 37.5 s, default 85 s: the fixed scenarios dominate
    "host": RoleCost(30.0, 0.06, 10.0),
    # quick 37 s, default 114 s
    "hostcore": RoleCost(15.0, 0.11, 15.0),
    # a fixed script (about 9-14 s): the profile changes nothing
    "client": RoleCost(15.0, 0.0, 15.0),
}


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
    # machines, shrinking included. Not a limit: see budget_s.
    seconds: float = 0.0

    def sized_for_s(self, role: str) -> float:
        """The wall time one certification of ``role`` under this profile is sized for."""
        cost = ROLE_COSTS[role]
        return cost.fixed_s + cost.per_example_step_s * self.examples * self.steps

    def budget_s(self, role: str, patience_s: float | None = None) -> float:
        """The wall-time budget of one certification of ``role``: a backstop
        (module docstring). A patience longer than the role's default says
        the target is slow, and stretches the budget in proportion."""
        stretch = max(1.0, (patience_s or 0.0) / ROLE_COSTS[role].patience_s)
        return round(BUDGET_FACTOR * self.sized_for_s(role) * stretch, 1)


PROFILES = {
    "quick": Profile("quick", examples=10, steps=20, shrink_s=15.0, shards=2, seconds=25.0),
    "default": Profile("default", examples=30, steps=30, shards=4, seconds=75.0),
    "thorough": Profile("thorough", examples=100, steps=50, shrink_s=120.0, shards=8, seconds=400.0),
}
