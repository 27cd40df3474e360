"""Shrunk traces keep what makes a late frame visible, and replay it every time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Patience, spawn_process
from conformance.runner.extension import certify_extension, run_unit
from conformance.runner.parallel import Unit
from conformance.runner.profiles import PROFILES, Profile
from conformance.runner.replay import _reserve_ids, closing_step, host_steps, replay, shrink, without_steps
from conformance.transport.trace import load, marked_entries

ROOT = Path(__file__).resolve().parents[2]
LATE_PROGRESS = ROOT / "fixtures" / "extensions" / "progress-after-result" / "extension.toml"
REFERENCE = ROOT / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"
WRONG_CANCEL_CODE = ROOT / "fixtures" / "extensions" / "wrong-cancel-code" / "extension.toml"


def write(step: int, **more: Any) -> dict[str, Any]:
    return {"dir": "host->target", "step": step, "after": 0, "awaits": [], **more}


def seen(step: int) -> dict[str, Any]:
    return {"dir": "target->host", "step": step, "index": 0, "text": "{}"}


def test_the_closing_shutdown_is_not_a_shrinkable_step() -> None:
    entries = [write(0, text="init"), seen(0), write(3, text="call"), seen(3), write(5, action="shutdown")]
    assert closing_step(entries) == 5
    assert host_steps(entries) == [3]
    assert [e for e in without_steps(entries, {3}) if e["dir"] == "host->target"][-1]["action"] == "shutdown"
    # A last step that also wrote something else is an ordinary step.
    mixed = [*entries[:-1], write(5, text="call"), write(5, action="shutdown")]
    assert closing_step(mixed) is None
    assert host_steps(mixed) == [3, 5]
    # Answers to the target's own requests may come with the closing shutdown.
    answered = [*entries, write(5, child_answer=True, text="answer")]
    assert closing_step(answered) == 5


def test_step_context_is_typed_and_reads_as_before() -> None:
    step = StepContext(example=4, step=17, offer="request_progress")
    assert step.step == 17 and str(step) == "example 4, step 17, offer [request_progress]"
    scenario = StepContext(scenario="frame-size")
    assert scenario.step is None and str(scenario) == "scenario=frame-size"
    assert str(StepContext(scenario="bad_initialize", api="0.2")) == "scenario=bad_initialize, api 0.2"
    assert str(StepContext("manifest")) == "manifest"


def test_replay_numbers_its_own_requests_above_the_traces_ids() -> None:
    # In the original run the closing shutdown (or a reload's initialize) got
    # the next id; in replay it must not reuse one of the trace's ids.
    peer = ExtensionHostPeer(load_manifest(REFERENCE), Recorder())
    _reserve_ids(peer, {"requests": [{"id": 7, "method": "tool/call"}, {"id": 2**53 + 1, "method": "x"}]})
    _reserve_ids(peer, {"requests": [{"id": 3, "method": "tool/call"}, {"id": "text-id", "method": "x"}]})
    assert peer.new_id() == 8


def test_late_frame_trace_replays_every_time_and_not_against_the_reference(
    tmp_path: Path, no_leftover_processes: None
) -> None:
    # The extra progress event follows the answer: only the shutdown kept at
    # the end of the shrunk trace (with an id of its own) makes replay see it.
    small = Profile("test-race", examples=6, steps=16, shrink_s=20.0)
    run = certify_extension(
        load_manifest(LATE_PROGRESS), small, PROFILES["quick"].default_seed, Patience.of(10.0), trace_dir=tmp_path
    )
    verdict = {v.requirement.id: v for v in run.verdicts}["EXT-2.6-progress-active-request"]
    assert verdict.verdict == "fail" and verdict.trace
    trace = tmp_path / "EXT-2.6-progress-active-request.jsonl"
    header, entries = load(trace)
    writes = [e for e in entries if e["dir"] == "host->target"]
    assert writes[-1].get("action") == "shutdown"
    assert len(host_steps(entries)) <= 2, header.get("shrunk")
    outcomes = replay(trace, runs=3, patience=Patience.of(10.0))
    assert all(o.reproduced for o in outcomes), outcomes
    against_reference = replay(trace, target=REFERENCE, patience=Patience.of(10.0))
    assert not any(o.reproduced for o in against_reference), against_reference


def test_the_sweep_trace_of_a_cancel_fault_shrinks_to_its_step_and_replays(
    tmp_path: Path, no_leftover_processes: None
) -> None:
    # Issue 19: the sweep's trace (55 steps) of an extension answering a
    # cancelled call with -32603 stayed whole and replayed 0 of 5 times. Its
    # cancel and the probe behind it go in one write; replay registered the
    # probe first, so its answer never proved the cancel read.
    manifest = load_manifest(WRONG_CANCEL_CODE)
    patience = Patience.of(10.0)
    unit = run_unit(manifest, PROFILES["quick"], 1, patience, spawn_process, None, Unit("sweep"), tmp_path)
    requirement = "EXT-1.9-cancel-reply-code"
    trace = unit.traces[requirement]
    steps_before = len(host_steps(load(trace)[1]))
    step = unit.violations[requirement][0].context.step
    # 1 step on a quiet machine; under CI's load a racy 1-step guess may miss one of its two confirming
    # replays and a 2-step trace is kept (seen once at -n 4 on two cores). Issue 19's bar is 3 steps.
    assert shrink(trace, patience=patience, budget_s=60.0, violation_step=step) <= 3
    header, entries = load(trace)
    assert header["shrunk"]["steps_before"] == steps_before > 40
    (judged,) = marked_entries(entries, header["evidence"])
    assert judged["dir"] == "target->host" and '"code":-32603' in judged["text"]
    assert all(o.reproduced for o in replay(trace, runs=3, patience=patience))
