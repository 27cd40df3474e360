"""Certification budgets. Fixed per profile, so equal seeds give equal runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    examples: int  # Hypothesis examples = process generations driven by the machine
    steps: int  # steps per example
    default_seed: int = 20261130


PROFILES = {
    "quick": Profile("quick", examples=6, steps=14),
    "default": Profile("default", examples=25, steps=30),
    "thorough": Profile("thorough", examples=100, steps=50),
}
