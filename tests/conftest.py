from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from conformance.transport.process import SPAWNED_GROUPS, group_exists
from conformance.transport.trace import TARGET, load, marked_entries
from conformance.verdicts import Verdict

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fails the test if any process group the test started is still alive
    (grandchildren included: they share the group)."""
    start = len(SPAWNED_GROUPS)
    yield
    groups = SPAWNED_GROUPS[start:]
    deadline = time.monotonic() + 2.0  # killed members may take a moment to be reaped
    alive = [g for g in groups if group_exists(g)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [g for g in alive if group_exists(g)]
    assert groups, "the test started no target at all"
    assert not alive, f"process groups outlived the run: {alive}"


def check_trace_evidence(verdicts: Iterable[Verdict]) -> int:
    """Every fail/warn verdict's trace marks, in its header's ``evidence``,
    entries it holds: the frames the violation was judged on (both answers
    of a second one). Returns how many traces were checked."""
    checked = 0
    for v in verdicts:
        if v.verdict not in ("fail", "warn") or v.trace is None:
            continue
        header, entries = load(Path(v.trace))
        assert header["requirement"] == v.requirement.id
        evidence = header.get("evidence")
        assert isinstance(evidence, list), f"{v.trace}: no evidence in its header"
        checked += 1
        if not entries:  # a manifest rule: nothing ran, the header names the manifest
            assert evidence == [] and header.get("scenario") == "manifest", v.trace
            continue
        marked = marked_entries(entries, evidence)
        assert evidence and len(marked) == len(evidence), f"{v.trace}: evidence {evidence} names entries it lacks"
        if v.requirement.id == "JSONRPC-5-one-response":
            assert len([e for e in marked if e["dir"] == TARGET]) >= 2, f"{v.trace}: both answers are evidence"
    return checked


@pytest.fixture
def traces_show_their_evidence() -> Callable[[Iterable[Verdict]], int]:
    """:func:`check_trace_evidence`, for the fixture tests of every role."""
    return check_trace_evidence
