"""A recorded failure replays deterministically against its target, and not
against a correct one."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.manifest import load_manifest
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.runner.replay import replay
from conformance.transport.trace import TARGET, load, marked_entries

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "extensions" / "double-reply" / "extension.toml"
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"


def test_failure_trace_replays(tmp_path: Path, no_leftover_processes: None, capsys: pytest.CaptureFixture[str]) -> None:
    run = certify_extension(
        load_manifest(FIXTURE), PROFILES["quick"], PROFILES["quick"].default_seed, trace_dir=tmp_path / "traces"
    )
    failed = [v for v in run.verdicts if v.verdict == "fail"]
    assert failed and all(v.trace and v.replay for v in failed)
    trace = Path(failed[0].trace or "")
    assert trace.exists() and failed[0].replay == f"octet-conformance replay {trace}"
    # Shrunk to the call answered twice, and written as the replay that reproduced
    # it recorded: both answers are in the trace, marked (issue 19: frame 4 was lost).
    header, entries = load(trace)
    assert header["shrunk"]["steps_after"] == 1 and "shrink" not in header
    answers = marked_entries(entries, header["evidence"])
    assert [e["dir"] for e in answers] == [TARGET, TARGET] and answers[0]["text"] == answers[1]["text"]
    outcomes = replay(trace, runs=3)
    assert all(o.reproduced for o in outcomes), outcomes
    assert [(e["dir"], e["index"]) for e in outcomes[0].marked] == [(e["dir"], e["index"]) for e in answers]
    capsys.readouterr()
    assert main(["replay", str(trace)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("JSONRPC-5-one-response: reproduced 1/1: request 2 (tool/call) answered a second time")
    assert [line.split(" (")[0] for line in printed[1:]] == [f"  evidence: target->host #{e['index']}" for e in answers]
    assert main(["replay", str(trace), "--target", str(REFERENCE)]) == 0


def test_passing_requirements_carry_no_trace() -> None:
    run = certify_extension(load_manifest(REFERENCE), PROFILES["quick"], 1)
    assert all(v.trace is None and v.replay is None for v in run.verdicts)


def test_unreadable_trace_is_a_harness_error(tmp_path: Path) -> None:
    bogus = tmp_path / "t.jsonl"
    bogus.write_text("not json\n")
    assert main(["replay", str(bogus)]) == 2
