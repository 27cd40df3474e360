"""Verdicts: what the matrix says per requirement and target (frozen data)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .evidence import Recorder
from .requirements import Requirement

VERDICTS = ("pass", "fail", "warn", "skip", "untested", "error", "xfail")
TARGET_SIDES = {"extension": ("extension", "both")}


@dataclass(frozen=True)
class Verdict:
    requirement: Requirement
    verdict: str
    evidence: str
    trace: str | None = None
    replay: str | None = None


def decide(
    requirements: Iterable[Requirement],
    recorder: Recorder,
    *,
    role: str,
    api_version: str,
) -> list[Verdict]:
    """Turn findings into one verdict per requirement that concerns ``role``."""
    sides = TARGET_SIDES[role]
    out = []
    for req in requirements:
        if req.side not in sides:
            continue
        out.append(_one(req, recorder, api_version))
    return out


def _one(req: Requirement, rec: Recorder, api_version: str) -> Verdict:
    if req.api and api_version not in req.api:
        return Verdict(req, "skip", f"applies to API {', '.join(req.api)}; target speaks {api_version}")
    missing = [f for f in req.features if f not in rec.negotiated_features]
    observed = rec.violations.get(req.id, [])
    if observed:
        count = rec.violation_counts.get(req.id, len(observed))
        first = observed[0]
        where = first.violation.where()
        frame = f" frame #{first.violation.frame_index}" if first.violation.frame_index is not None else ""
        evidence = (
            f"{first.violation.message}{' at ' + where if where else ''}{frame} ({first.context}); {count} time(s)"
        )
        if first.stderr:
            evidence += f"\nstderr tail: {first.stderr[-600:]}"
        return Verdict(req, "fail" if req.level == "must" else "warn", evidence)
    if rec.harness_errors and req.has_check:
        return Verdict(req, "error", "harness error: " + "; ".join(rec.harness_errors[:3]))
    if missing:
        return Verdict(req, "skip", f"needs feature(s) {', '.join(missing)}, never negotiated")
    if not req.has_check:
        return Verdict(req, "untested", f"no check yet: {req.reason}")
    if rec.exercised.get(req.id, 0):
        # No count here: how often a rule fires can depend on timing (progress
        # frames per call), and equal seeds must give equal matrices.
        return Verdict(req, "pass", "exercised, never violated")
    return Verdict(req, "untested", "applicable, but the run never exercised it")


def summary(verdicts: Iterable[Verdict]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        counts[v.verdict] += 1
    return counts
