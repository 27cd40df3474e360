"""Hand-made run directories: small matrix.json files (and traces) written
the way a certification writes them, for report, baseline and diff tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.report.rundir import FORMAT
from conformance.requirements import by_id

MakeRun = Callable[..., Path]


def result(rid: str, verdict: str, evidence: str = "", trace: str | None = None) -> dict[str, Any]:
    req = by_id()[rid]
    return {
        "id": rid,
        "document": req.document,
        "section": req.section,
        "level": req.level,
        "verdict": verdict,
        "summary": req.summary,
        "evidence": evidence or f"{verdict} evidence",
        "trace": trace,
        "replay": f"octet-conformance replay {trace}" if trace else None,
    }


@pytest.fixture
def make_run(tmp_path: Path) -> MakeRun:
    def make(
        name: str,
        verdicts: dict[str, str],
        *,
        target: str = "t",
        evidence: dict[str, str] | None = None,
        traces: dict[str, list[dict[str, Any]]] | None = None,
        stderr: dict[str, str] | None = None,
    ) -> Path:
        directory = tmp_path / name
        (directory / "traces").mkdir(parents=True)
        results = []
        for rid, verdict in verdicts.items():
            trace = None
            if traces and rid in traces:
                trace = f"traces/{rid}.jsonl"
                lines = "".join(json.dumps(e) + "\n" for e in traces[rid])
                (directory / trace).write_text(lines, encoding="utf-8")
            results.append(result(rid, verdict, (evidence or {}).get(rid, ""), trace))
        stderr = stderr or {}
        observed = {rid: {"first_seen": "example 1, step 2", "stderr_tail": text} for rid, text in stderr.items()}
        document = {
            "format": FORMAT,
            "suite": {"version": "0.1.0", "profile": "quick", "seed": 1},
            "target": {"role": "extension", "name": target, "version": "1", "api_version": "0.2", "command": ["x"]},
            "results": results,
            "summary": {},
            "run": {"started": "", "duration_s": 0.0, "harness_errors": [], "strays": [], "observed": observed},
        }
        (directory / "matrix.json").write_text(json.dumps(document), encoding="utf-8")
        return directory

    return make
