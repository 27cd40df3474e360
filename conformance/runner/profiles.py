"""Certification budgets: defined in :mod:`conformance.profiles` (below the
runner, so reports can name a run's profile without importing the runner)."""

from __future__ import annotations

from conformance.profiles import PROFILES, Profile

__all__ = ["PROFILES", "Profile"]
