"""``matrix.json`` (format octet-conformance/matrix@1, docs/matrix-format.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.runner.extension import RunResult
from conformance.verdicts import summary

FORMAT = "octet-conformance/matrix@1"


def _relative(trace: str | None, directory: Path | None) -> str | None:
    """Trace paths are given relative to the report directory (traces/<id>.jsonl)."""
    if trace is None or directory is None:
        return trace
    try:
        return str(Path(trace).resolve().relative_to(directory.resolve()))
    except ValueError:
        return trace


def matrix(run: RunResult, directory: Path | None = None) -> dict[str, Any]:
    m = run.manifest
    return {
        "format": FORMAT,
        "suite": {"version": __version__, "profile": run.profile.name, "seed": run.seed},
        "target": {
            "role": "extension",
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
                "trace": _relative(v.trace, directory),
                "replay": v.replay,
            }
            for v in run.verdicts
        ],
        "summary": summary(run.verdicts),
    }


def write_matrix(run: RunResult, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "matrix.json"
    path.write_text(json.dumps(matrix(run, directory), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
