"""Shrinking a failure trace, on fake replays (no process): which guesses
come first, racy traces get retries, the budget and a trace that does not
reproduce are said in the header, relations survive dropped steps, and a
write's meanings are registered in the order its bytes hold them."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.runner import replay as replay_module
from conformance.runner.replay import ReplayOutcome, first_guesses, host_steps, meanings, shrink, without_steps
from conformance.transport.trace import HOST, TARGET, TRACE_FORMAT, Trace, load, write_trace

REQUIREMENT = "JSONRPC-5-one-response"
CLOSING = 99


def write(step: int, after: int, awaits: list[Any], **more: Any) -> dict[str, Any]:
    return {"dir": HOST, "step": step, "after": after, "awaits": awaits, **more}


def frame(step: int, index: int) -> dict[str, Any]:
    return {"dir": TARGET, "step": step, "index": index, "text": f'{{"id":{step}}}'}


def trace_with(steps: list[int], path: Path) -> Path:
    """Initialize, one request and its answer per step, the closing shutdown."""
    entries = [write(0, 0, [], text="init\n", requests=[{"id": 0, "method": "initialize"}]), frame(0, 0)]
    for n, s in enumerate(steps, start=1):
        entries += [write(s, n, [n - 1 if n > 1 else 0], text=f"{s}\n", requests=[{"id": s, "method": "m"}])]
        entries += [frame(s, n)]
    entries.append(write(CLOSING, len(steps) + 1, [steps[-1]], action="shutdown"))
    header = {"format": TRACE_FORMAT, "requirement": REQUIREMENT, "violation": "original", "context": "example 1"}
    write_trace(path, header, entries)
    return path


Reproduces = Callable[[set[int]], bool]


def fake_replays(monkeypatch: pytest.MonkeyPatch, reproduces: Reproduces) -> list[set[int]]:
    """Replace replay with a judge of the steps a candidate holds; its
    recording is the candidate itself. Returns the step sets replayed."""
    replayed: list[set[int]] = []

    def replay_entries(header: dict[str, Any], entries: list[dict[str, Any]], **_: Any) -> ReplayOutcome:
        steps = set(host_steps(entries))
        replayed.append(steps)
        recording = Trace({"format": TRACE_FORMAT})
        recording.entries = [dict(e) for e in entries]
        hit = reproduces(steps)
        return ReplayOutcome(REQUIREMENT, hit, "replayed" if hit else "not violated", recording=recording)

    monkeypatch.setattr(replay_module, "replay_entries", replay_entries)
    return replayed


def test_first_guesses_start_at_the_violation() -> None:
    steps = [1, 2, 3, 4, 5]
    assert first_guesses(steps, 3) == [{2, 3}, {1, 2, 3}]
    assert first_guesses(steps, 1) == [{1}]  # {0, 1} is {1}; every step up to 1 too
    # Seen in initialize (step 0) or the closing shutdown: no step may be needed at all.
    assert first_guesses(steps, 0) == [set()]
    assert first_guesses(steps, CLOSING) == [set()]
    assert first_guesses(steps, None) == []


def test_the_step_that_broke_the_rule_is_all_that_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replayed = fake_replays(monkeypatch, lambda steps: 5 in steps)
    path = trace_with([1, 2, 3, 4, 5, 6, 7, 8], tmp_path / "t.jsonl")
    assert shrink(path, violation_step=5) == 1
    header, entries = load(path)
    assert host_steps(entries) == [5]
    assert header["shrunk"] == {"steps_before": 8, "steps_after": 1, "replays": len(replayed)}
    assert header["context"] == "example 1" and "shrink" not in header
    # The first guess was right (and confirmed by a second replay); none was wasted on the long trace.
    assert replayed[:2] == [{4, 5}, {4, 5}] and all(len(s) <= 2 for s in replayed)


def test_a_late_violation_keeps_the_step_that_caused_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A second answer is judged in the step after the call that caused it.
    fake_replays(monkeypatch, lambda steps: 4 in steps)
    path = trace_with([1, 2, 3, 4, 5, 6], tmp_path / "t.jsonl")
    assert shrink(path, violation_step=5) == 1
    assert host_steps(load(path)[1]) == [4]


def test_a_racy_trace_gets_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    turns = itertools.count()
    # Reproduces every other replay, and only with steps 2 and 3 both kept.
    fake_replays(monkeypatch, lambda steps: {2, 3} <= steps and next(turns) % 2 == 1)
    path = trace_with([1, 2, 3, 4, 5, 6], tmp_path / "t.jsonl")
    # Without retries, a good guess whose first replay fell on an even turn
    # would be rejected and more steps kept.
    assert shrink(path, violation_step=6) == 2
    assert host_steps(load(path)[1]) == [2, 3]


def test_a_guess_that_reproduces_by_luck_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Steps 4 and 5 alone reproduce one replay in three (a race); steps 1 and
    # 5 always (step 1 sets up what step 5 trips over). The guess around the
    # violation must not win on its lucky replay: the trace would not replay.
    turns = itertools.count()
    fake_replays(monkeypatch, lambda steps: {1, 5} <= steps or ({4, 5} <= steps and next(turns) % 3 == 0))
    path = trace_with([1, 2, 3, 4, 5, 6], tmp_path / "t.jsonl")
    shrink(path, violation_step=5)
    assert host_steps(load(path)[1]) == [1, 5]


def test_when_the_budget_runs_out_the_header_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_replays(monkeypatch, lambda steps: 3 in steps)
    path = trace_with([1, 2, 3, 4], tmp_path / "t.jsonl")
    assert shrink(path, violation_step=3, max_replays=2) == 2  # the guess, its confirmation, then no more
    header, entries = load(path)
    assert header["shrink"] == "budget spent at 2 steps" and host_steps(entries) == [2, 3]
    fake_replays(monkeypatch, lambda steps: True)
    path = trace_with([1, 2, 3, 4], tmp_path / "u.jsonl")
    assert shrink(path, budget_s=0.0) == 4
    header, entries = load(path)
    assert header["shrink"] == "budget spent at 4 steps" and host_steps(entries) == [1, 2, 3, 4]


def test_a_trace_that_does_not_reproduce_is_cut_after_its_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed = fake_replays(monkeypatch, lambda steps: False)
    path = trace_with([1, 2, 3], tmp_path / "t.jsonl")
    # Nothing written after the step it was seen in can have caused it: those
    # steps go, unverified; the rest is the original run's record.
    assert shrink(path, violation_step=2) == 2
    header, entries = load(path)
    assert header["shrink"] == f"not reproduced in {len(replayed)} replays"
    assert header["shrunk"] == {"steps_before": 3, "steps_after": 2, "replays": len(replayed)}
    assert host_steps(entries) == [1, 2] and header["violation"] == "original"
    assert entries[-1]["action"] == "shutdown"
    path = trace_with([1, 2, 3], tmp_path / "u.jsonl")
    assert shrink(path) == 3  # the step is not known: nothing is cut


def test_dropping_steps_keeps_the_schedule_relations() -> None:
    entries = [
        write(0, 0, [], text="init\n"),
        frame(0, 0),
        write(1, 1, [0], text="a\n", requests=[{"id": 1, "method": "m"}]),
        frame(1, 1),
        write(1, 2, [], child_answer=True, text="child\n"),
        write(2, 2, [1], text="b\n", requests=[{"id": 2, "method": "m"}]),  # waited for 1's answer
        frame(2, 2),
        frame(2, 3),
        write(3, 4, [2], text="c\n", requests=[{"id": 3, "method": "m"}]),
    ]
    kept = without_steps(entries, {2})
    last = kept[-1]
    # Step 2's wait for request 1 now holds step 3; its two frames no longer count.
    assert last["awaits"] == [1, 2] and last["after"] == 2
    assert [e["step"] for e in kept] == [0, 0, 1, 1, 1, 3]
    # Step 1's wait for initialize carries to step 2 (a child answer is no performed write: it adds nothing).
    assert without_steps(entries, {1})[2]["awaits"] == [0, 1]


def test_a_writes_meanings_are_registered_in_the_order_of_its_bytes() -> None:
    request = b'{"jsonrpc":"2.0","id":8,"method":"tool/call","params":{}}\n'
    cancel = b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":8}}\n'
    probe = b'{"jsonrpc":"2.0","id":9,"method":"probe","params":{}}\n'
    entry = {
        "requests": [{"id": 8, "method": "tool/call", "params": {}}, {"id": 9, "method": "probe", "intent": "x"}],
        "cancels": [8],
    }
    # The probe behind the cancellation proves it was read only when it is registered after it.
    order = [(o.kind, o.id) for o in meanings(entry, request + cancel + probe)]
    assert order == [("request", 8), ("cancel", 8), ("request", 9)]
    # A piece of a split write shows no whole frame: the lists' order.
    assert [(o.kind, o.id) for o in meanings(entry, request[:5])] == [("request", 8), ("request", 9), ("cancel", 8)]
