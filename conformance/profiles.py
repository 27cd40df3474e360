"""Certification budgets. Fixed per profile, so equal seeds give equal runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples = process generations driven by the machine
    steps: int  # steps per example
    shrink_s: float = 30.0  # per failing requirement: time to shrink its trace
    default_seed: int = 20261130


PROFILES = {
    "quick": Profile("quick", examples=10, steps=20, shrink_s=15.0),
    "default": Profile("default", examples=30, steps=30),
    "thorough": Profile("thorough", examples=100, steps=50, shrink_s=120.0),
}
