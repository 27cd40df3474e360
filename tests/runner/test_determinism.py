"""Same seed, same target, same profile: the same matrix.json results and
byte-identical traces.

"Results" is everything in matrix.json but ``run`` (docs/matrix-format.md):
verdicts, evidence, trace and replay fields, summary. Each target is
certified twice into two different report directories -- once through the
command line, once through the Python API, one of them with ``--jobs 2`` --
so neither timing, the directory's name, the entry point nor the number of
workers may leak into the results or the traces (docs/trace-format.md, "One
seed, one trace": no header field needs normalizing). The faulty fixtures
are chosen for faults whose evidence used to carry timing: a second reply
whose count depends on when the generation ends, progress frames that arrive
after the result, an exit that never comes within the shutdown stage
timeout. Their traces are shrunk: what is compared is what a user gets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.evidence import Recorder, StepContext
from conformance.manifest import load_manifest
from conformance.protocol.violations import Violation
from conformance.report.matrix import RESULT_KEYS, results, write_matrix
from conformance.requirements import load_catalog
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.verdicts import decide

ROOT = Path(__file__).resolve().parents[2]
SEED = "7"
# name -> (manifest, the requirement it breaks, --jobs of the CLI run; the API run takes the other)
TARGETS = {
    "reference-0.2": (ROOT / "conformance/reference/extension/manifests/api-0.2/extension.toml", None, 1),
    "double-reply": (ROOT / "fixtures/extensions/double-reply/extension.toml", "JSONRPC-5-one-response", 2),
    "progress-after-result": (
        ROOT / "fixtures/extensions/progress-after-result/extension.toml",
        "EXT-2.6-progress-active-request",
        1,
    ),
    "lingers-after-shutdown": (
        ROOT / "fixtures/extensions/lingers-after-shutdown/extension.toml",
        "EXT-1.8-exit-after-shutdown",
        2,
    ),
}


def certify_cli(manifest: Path, report: Path, jobs: int) -> dict[str, Any]:
    argv = ["extension", str(manifest), "--profile", "quick", "--seed", SEED, "--report-dir", str(report)]
    code = main([*argv, "--jobs", str(jobs)])
    assert code in (0, 1), f"harness error (exit {code})"
    matrix: dict[str, Any] = json.loads((report / "matrix.json").read_text(encoding="utf-8"))
    return matrix


def certify_api(manifest: Path, report: Path, jobs: int) -> dict[str, Any]:
    run = certify_extension(
        load_manifest(manifest), PROFILES["quick"], int(SEED), trace_dir=report / "traces", jobs=jobs
    )
    matrix: dict[str, Any] = json.loads(write_matrix(run, report).read_text(encoding="utf-8"))
    return matrix


def traces(report: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((report / "traces").glob("*.jsonl"))}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_equal_seeds_give_identical_results_and_traces(name: str, tmp_path: Path) -> None:
    manifest, broken, jobs = TARGETS[name]
    first = certify_cli(manifest, tmp_path / "first", jobs)
    second = certify_api(manifest, tmp_path / "second-report-dir", 3 - jobs)
    failed = {r["id"] for r in first["results"] if r["verdict"] in ("fail", "warn", "error")}
    # Not vacuous: the reference is clean, each fixture's fault is found (with
    # a trace and a replay command that must not differ either).
    assert failed == ({broken} if broken else set())
    if broken:
        row = next(r for r in first["results"] if r["id"] == broken)
        assert row["trace"] == f"traces/{broken}.jsonl" and row["replay"].endswith(row["trace"])
        assert set(first["run"]["observed"]) == {broken}
    assert results(first) == results(second), _differences(first, second)
    # Results are everything but the run details, and nothing was left out.
    assert set(first) == {*RESULT_KEYS, "run"}
    written = traces(tmp_path / "first")
    assert set(written) == ({f"{broken}.jsonl"} if broken else set())
    assert written == traces(tmp_path / "second-report-dir")


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[Any]:
    out: list[Any] = [k for k in RESULT_KEYS if k != "results" and a[k] != b[k]]
    for x, y in zip(a["results"], b["results"], strict=True):
        out += [(x["id"], f, x[f], y[f]) for f in x if x[f] != y[f]]
    return out


def _evidence(arrivals: list[tuple[StepContext, str]], measured: float = 0.0) -> tuple[str, Any]:
    recorder = Recorder()
    for context, message in arrivals:
        recorder.context = context
        recorder.violate(Violation("JSONRPC-5-one-response", message), measured={"late_s": measured})
    verdict = next(v for v in decide(load_catalog(), recorder, role="extension", api_version="0.2") if v.observed)
    return verdict.evidence, verdict.observed


def test_arrival_order_within_a_step_does_not_choose_the_evidence() -> None:
    """Two concurrent calls break a rule in the same step: whichever reply the
    target happened to write first, the evidence names the same one."""
    a = [
        (StepContext(example=2, step=5), "request 10 answered a second time"),
        (StepContext(example=2, step=5), "request 9 answered twice"),
    ]
    later = [(StepContext(example=2, step=6), "request 1 answered a second time")]
    first, _ = _evidence(a + later)
    second, _ = _evidence(a[::-1] + later)
    assert first == second == "request 9 answered twice"


def test_measured_numbers_stay_out_of_the_evidence() -> None:
    arrivals = [(StepContext(example=1, step=1), "request 3 answered a second time")]
    (text_a, seen_a), (text_b, seen_b) = _evidence(arrivals, 0.125), _evidence(arrivals, 2.5)
    assert text_a == text_b
    assert dict(seen_a.measured) == {"late_s": 0.125} and dict(seen_b.measured) == {"late_s": 2.5}
