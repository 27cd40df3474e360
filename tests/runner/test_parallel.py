"""--jobs N (conformance/runner/parallel.py): the same units for any N,
merged in unit order, so the same seed gives the same matrix."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import default_manifest, main
from conformance.evidence import Recorder
from conformance.manifest import load_manifest
from conformance.peers.ext_host import spawn_process
from conformance.peers.simulated import simulated_reference
from conformance.protocol.violations import Violation
from conformance.report.matrix import matrix, results
from conformance.runner import parallel
from conformance.runner.extension import certify_extension, extension_units
from conformance.runner.parallel import exploration_shards, merge, shard_seed
from conformance.runner.profiles import PROFILES, Profile

SMALL = Profile("small", examples=4, steps=12, shards=2)
ROOT = Path(__file__).resolve().parents[2]
# Fails in every unit of the run (initialize echoes the wrong api_version), so
# with two jobs later units can finish first and still must not win the trace.
EVERYWHERE = ROOT / "fixtures" / "extensions" / "api-version-mismatch" / "extension.toml"


def certify(report: Path, jobs: int, manifest_path: Path | None = None) -> dict[str, Any]:
    manifest = load_manifest(manifest_path or default_manifest())
    launcher = simulated_reference if manifest_path is None else spawn_process
    run = certify_extension(manifest, SMALL, 7, trace_dir=report / "traces", launcher=launcher, jobs=jobs)
    matrix_: dict[str, Any] = json.loads(json.dumps(matrix(run, report)))
    return matrix_


def test_one_job_and_two_jobs_give_the_same_matrix(tmp_path: Path) -> None:
    one, two = certify(tmp_path / "one", 1), certify(tmp_path / "two", 2)
    assert results(one) == results(two)
    assert one["summary"]["pass"] > 50  # not vacuous: the reference was certified


@pytest.mark.slow
def test_a_failing_target_in_processes_gives_the_same_matrix_for_one_and_two_jobs(tmp_path: Path) -> None:
    one, two = certify(tmp_path / "one", 1, EVERYWHERE), certify(tmp_path / "two", 2, EVERYWHERE)
    assert results(one) == results(two)
    failed = {r["id"]: r for r in one["results"] if r["verdict"] == "fail"}
    assert "EXT-1.1-api-version-echo" in failed  # not vacuous: failures, evidence and traces were compared
    assert failed["EXT-1.1-api-version-echo"]["trace"]


def test_jobs_is_checked_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["extension", "--jobs", "0"])
    assert stop.value.code == 2
    assert "--jobs takes a whole number from 1 to 64 (got '0')" in capsys.readouterr().err


def test_units_are_fixed_by_the_profile() -> None:
    units = extension_units(PROFILES["default"])
    assert [u.label for u in units] == [
        "stdin-eof",
        "sweep",
        "frame-size",
        "wave1",
        "services",
        "explore 0",
        "explore 1",
        "explore 2",
        "explore 3",
    ]
    assert sum(u.examples for u in units) == PROFILES["default"].examples
    assert [(u.examples, u.numbered_before) for u in exploration_shards(10, 4)] == [(3, 1), (3, 4), (2, 7), (2, 9)]
    assert [u.examples for u in exploration_shards(2, 4)] == [1, 1]
    assert "sweep" not in [u.kind for u in extension_units(replace(PROFILES["quick"], sweep=False))]
    assert shard_seed(7, 0) == 7 and len({shard_seed(7, k) for k in range(8)}) == 8


def _unit(trace_dir: Path, message: str, *, trace: bool) -> Recorder:
    part = Recorder(trace_dir=trace_dir)
    part.context = f"example 1, step 2, from {message}"
    part.violate(Violation("JSONRPC-5-one-response", message))
    part.exercised["JSONRPC-5-id-echo"] = 2
    if trace:
        path = trace_dir / "JSONRPC-5-one-response.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(message, encoding="utf-8")
        part.traces["JSONRPC-5-one-response"] = path
    return part


def test_merge_takes_the_first_unit_in_order_not_the_first_to_finish(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    first, second = _unit(traces / ".unit-0", "first", trace=True), _unit(traces / ".unit-1", "second", trace=True)
    run = Recorder(trace_dir=traces)
    merge(run, [first, second])
    kept = run.violations["JSONRPC-5-one-response"]
    assert [o.violation.message for o in kept] == ["first", "second"]
    assert run.violation_counts["JSONRPC-5-one-response"] == 2 and run.exercised["JSONRPC-5-id-echo"] == 4
    assert run.traces["JSONRPC-5-one-response"] == traces / "JSONRPC-5-one-response.jsonl"
    assert run.traces["JSONRPC-5-one-response"].read_text(encoding="utf-8") == "first"
    assert sorted(p.name for p in traces.iterdir()) == ["JSONRPC-5-one-response.jsonl"]  # unit folders gone


def test_a_trace_comes_from_the_unit_that_broke_the_rule_first(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    run = Recorder(trace_dir=traces)
    merge(run, [_unit(traces / ".unit-0", "first", trace=False), _unit(traces / ".unit-1", "second", trace=True)])
    assert "JSONRPC-5-one-response" not in run.traces  # the second unit's trace shows another violation


def test_a_recorder_field_without_a_merge_rule_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = dict(parallel._MERGE_RULES)
    del rules["strays"]
    monkeypatch.setattr(parallel, "_MERGE_RULES", rules)
    with pytest.raises(TypeError, match="Recorder.strays has no merge rule"):
        merge(Recorder(), [Recorder()])
