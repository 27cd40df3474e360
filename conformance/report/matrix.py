"""``matrix.json`` (format octet-conformance/matrix@4, docs/matrix-format.md).

Everything outside ``run`` is the certification's *result* and is the same,
byte for byte, for two runs with the same suite version, target, profile and
seed; ``run`` holds what only this run measured (when, how long, where each
failure was first seen, how often, the target's stderr).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.outfiles import write_text
from conformance.requirements import revisions
from conformance.results import RunResult
from conformance.safe_text import scrub
from conformance.verdicts import ROLE_DOCUMENTS, Observation, Verdict, summary

from .rundir import FORMAT  # written here, read there: one constant

__all__ = ["FORMAT", "matrix", "results", "write_matrix"]
RESULT_KEYS = ("format", "suite", "catalog", "target", "results", "summary")  # compared; "run" is not


def relative_trace(trace: str | None, directory: Path | None) -> str | None:
    """Trace paths are given relative to the report directory (traces/<id>.jsonl);
    a trace outside it (a regression case) keeps the path it was given."""
    if trace is None or directory is None:
        return trace
    try:
        return Path(trace).resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        return trace


def _replay(v: Verdict, directory: Path | None) -> str | None:
    """The replay command, naming the trace as the ``trace`` field does (so it
    is run from the report directory) -- never an absolute path that would
    differ between two report directories."""
    trace = relative_trace(v.trace, directory)
    if v.replay is None or trace is None:
        return v.replay
    return f"octet-conformance replay {shlex.quote(trace)}"


def _observation(o: Observation) -> dict[str, Any]:
    return {
        "first_seen": o.first_seen,
        "frame_index": o.frame_index,
        "count": o.count,
        "after_s": o.after_s,
        "measured": dict(o.measured),
        "stderr_tail": o.stderr_tail,
    }


def judged_against(role: str) -> dict[str, str]:
    """The catalog revision of each document the role is certified against."""
    here = revisions()
    return {d: here[d] for d in sorted(ROLE_DOCUMENTS.get(role, ())) if d in here}


def matrix(run: RunResult, directory: Path | None = None) -> dict[str, Any]:
    m = run.manifest
    return {
        "format": FORMAT,
        "suite": {"version": __version__, "profile": run.profile.name, "seed": run.seed, "selection": run.selection},
        "catalog": {"revisions": judged_against(run.role)},
        "target": {
            "role": run.role,
            "name": m.name,
            "version": m.version,
            "api_version": m.api_version,
            "command": list(m.command),
        },
        "results": [
            {
                "id": v.requirement.id,
                "document": v.requirement.document,
                "section": v.requirement.section,
                "level": v.requirement.level,
                "verdict": v.verdict,
                "summary": v.requirement.summary,
                "evidence": v.evidence,
                "trace": relative_trace(v.trace, directory),
                "replay": _replay(v, directory),
            }
            for v in run.verdicts
        ],
        "summary": summary(run.verdicts),
        "run": {
            "started": run.started,
            "duration_s": round(run.duration_s, 3),
            "harness_errors": list(run.harness_errors),
            "strays": list(run.strays),
            "short_deadlines": dict(run.short_deadlines),
            "budget": {"seconds": run.budget_s, "spent": run.budget_spent},
            "observed": {v.requirement.id: _observation(v.observed) for v in run.verdicts if v.observed is not None},
        },
    }


def results(document: dict[str, Any]) -> dict[str, Any]:
    """The part of a matrix that equal seeds reproduce exactly."""
    return {k: document[k] for k in RESULT_KEYS if k in document}


def write_matrix(run: RunResult, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "matrix.json"
    # scrub: a lone surrogate from the target's frames would make the file
    # unencodable, or its \ud800 escape unreadable to strict parsers.
    document = scrub(matrix(run, directory))
    return write_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
