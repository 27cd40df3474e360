"""fuzz keeps what it finds; certification replays it afterwards."""

from __future__ import annotations

from pathlib import Path

from conformance.manifest import load_manifest
from conformance.runner.extension import certify_extension
from conformance.runner.fuzz import fuzz
from conformance.runner.profiles import PROFILES, Profile

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "extensions" / "double-reply" / "extension.toml"
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"


def test_fuzz_saves_regression_cases_that_certify_replays(tmp_path: Path) -> None:
    regressions = tmp_path / "regressions"
    small = Profile("test-fuzz", examples=3, steps=12, shrink_s=10.0)
    result = fuzz(
        load_manifest(FIXTURE),
        seconds=1.5,  # room for one round of three examples (fuzz.round_profile)
        regressions=regressions,
        work_dir=tmp_path / "w",
        first_seed=3,
        profile=small,
    )
    assert not result.harness_errors and result.rounds >= 1
    found = result.found
    assert [f.requirement for f in found] == ["JSONRPC-5-one-response"]
    assert found[0].case.exists()

    quick = PROFILES["quick"]
    clean = certify_extension(load_manifest(REFERENCE), quick, 1, regressions=regressions)
    assert {v.requirement.id: v.verdict for v in clean.verdicts}["JSONRPC-5-one-response"] == "pass"
    saved = found[0].case.read_bytes()
    traces = tmp_path / "traces"
    broken = certify_extension(load_manifest(FIXTURE), quick, 1, regressions=regressions, trace_dir=traces)
    verdict = {v.requirement.id: v for v in broken.verdicts}["JSONRPC-5-one-response"]
    assert verdict.verdict == "fail" and "regression case reproduced" in verdict.evidence
    # the report keeps (and shrinks) its own copy; the user's case is left as it was
    assert verdict.trace == str(traces / "JSONRPC-5-one-response.jsonl")
    assert found[0].case.read_bytes() == saved
