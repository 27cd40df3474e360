"""Verdicts: what the matrix says per requirement and target (frozen data).

A verdict's ``verdict`` and ``evidence`` are *results*: for the same suite
version, target, profile and seed they are the same in every run (the
evidence names what was broken, never how long it took or how often a timing
race let it show). What only this run saw -- where the first violation was
observed, its frame index, how often it happened, measured durations, the
target's stderr -- is an :class:`Observation`, reported beside the results
as run detail (docs/matrix-format.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .evidence import BUDGET_SPENT, Observed, Recorder
from .requirements import Requirement

VERDICTS = ("pass", "fail", "warn", "skip", "untested", "error", "xfail")
TARGET_SIDES = {
    "extension": ("extension", "both"),
    "host": ("host", "both"),
    "hostcore": ("hostcore", "both"),
    "client": ("client", "both"),
}
# The documents a role is certified against: side "both" exists in more than
# one document, so the side alone must not pull host-rpc entries into an
# extension matrix (or the reverse).
ROLE_DOCUMENTS = {
    "extension": ("extension-wire-protocol", "jsonrpc-2.0"),
    "host": ("extension-wire-protocol", "jsonrpc-2.0"),
    "hostcore": ("host-rpc-protocol", "jsonrpc-2.0"),
    "client": ("host-rpc-protocol", "jsonrpc-2.0"),
}
STDERR_TAIL_CHARS = 600


@dataclass(frozen=True)
class Observation:
    """How this run saw a broken requirement (run detail, not a result)."""

    first_seen: str  # where in the run: example, step and offer of the first violation
    frame_index: int | None  # that violation's frame in the target's output, when one frame is to blame
    count: int  # violations seen in the whole run (late frames make this timing-dependent)
    after_s: float  # seconds from the start of the run to the first violation
    measured: tuple[tuple[str, float], ...] = ()  # e.g. (("settled_after_s", 3.01),)
    stderr_tail: str = ""


@dataclass(frozen=True)
class Verdict:
    requirement: Requirement
    verdict: str
    evidence: str
    trace: str | None = None
    replay: str | None = None
    observed: Observation | None = None  # for fail/warn


def decide(
    requirements: Iterable[Requirement],
    recorder: Recorder,
    *,
    role: str,
    api_version: str,
) -> list[Verdict]:
    """Turn findings into one verdict per requirement that concerns ``role``
    and that the run judges (``recorder.judged``: a selection, conformance/selection.py)."""
    judged = recorder.judged
    return [
        _one(req, recorder, api_version)
        for req in requirements
        if concerns(req, role) and (judged is None or req.id in judged)
    ]


def concerns(req: Requirement, role: str) -> bool:
    """Whether a certification of ``role`` judges ``req`` (its side and document)."""
    return req.side in TARGET_SIDES[role] and req.document in ROLE_DOCUMENTS[role]


def applies_to_api(req: Requirement, api_version: str) -> bool:
    return not req.api or api_version in req.api


def violation_evidence(first: Observed) -> str:
    """What was broken: the message and where in the frame (its JSON path).
    Nothing measured, counted or timed goes here."""
    where = first.violation.where()
    return f"{first.violation.message}{' at ' + where if where else ''}"


def harness_error_evidence(errors: list[str]) -> str:
    """Which parts of the run failed ("state machine", "stdin-EOF scenario"):
    the exception texts and tracebacks (paths, pids, timings) are run
    details, in the matrix's ``run.harness_errors``."""
    parts = list(dict.fromkeys(e.split(":", 1)[0] for e in errors))
    return f"harness error in {', '.join(parts)} (details in run.harness_errors)"


def observation(first: Observed, count: int, after_s: float) -> Observation:
    return Observation(
        first_seen=str(first.context),
        frame_index=first.violation.frame_index,
        count=count,
        after_s=round(after_s, 3),
        measured=first.measured,
        stderr_tail=first.stderr[-STDERR_TAIL_CHARS:],
    )


def _one(req: Requirement, rec: Recorder, api_version: str) -> Verdict:
    if not applies_to_api(req, api_version):
        return Verdict(req, "skip", f"applies to API {', '.join(req.api)}; target speaks {api_version}")
    missing = [f for f in req.features if f not in rec.negotiated_features]
    observed = rec.violations.get(req.id, [])
    if observed:
        first = observed[0]
        return Verdict(
            req,
            "fail" if req.level == "must" else "warn",
            violation_evidence(first),
            observed=observation(
                first,
                rec.violation_counts.get(req.id, len(observed)),
                rec.first_violation_after.get(req.id, first.after_s),
            ),
        )
    if rec.harness_errors and req.has_check:
        return Verdict(req, "error", harness_error_evidence(rec.harness_errors))
    if rec.budget_spent is not None and req.has_check:
        # The run was cut off: what it saw so far is no pass, and a feature
        # not negotiated yet might have been later.
        return Verdict(req, "untested", BUDGET_SPENT)
    if missing:
        return Verdict(req, "skip", f"needs feature(s) {', '.join(missing)}, never negotiated")
    if not req.has_check:
        return Verdict(req, "untested", f"no check yet: {req.reason}")
    if rec.exercised.get(req.id, 0):
        # No count here: how often a rule fires can depend on timing (progress
        # frames per call), and equal seeds must give equal matrices.
        return Verdict(req, "pass", "exercised, never violated")
    reason = rec.untested_reasons.get(req.id)
    if reason is not None:
        return Verdict(req, "untested", f"applicable, not judged: {reason}")
    return Verdict(req, "untested", "applicable, but the run never exercised it")


def summary(verdicts: Iterable[Verdict]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        counts[v.verdict] += 1
    return counts


def describe(v: Verdict) -> str:
    """Evidence plus this run's observation, for people (CLI, JUnit)."""
    if v.observed is None:
        return v.evidence
    o = v.observed
    frame = f", frame #{o.frame_index}" if o.frame_index is not None else ""
    measured = "".join(f", {name} {value:g}" for name, value in o.measured)
    text = f"{v.evidence} (first: {o.first_seen}{frame}{measured}; {o.count} time(s) in this run)"
    if o.stderr_tail:
        text += f"\nstderr tail: {o.stderr_tail}"
    return text
