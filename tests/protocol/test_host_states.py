"""The order of reported generation states (§5), judged by host_states."""

from __future__ import annotations

import itertools

import pytest

from conformance.protocol.host_states import LINE, NOT_GENERATION_STATES, ReportedStates, allowed
from conformance.protocol.violations import Violation

RULE = "EXT-5-host-lifecycle-states"
STATES = (*LINE, "degraded", "crashed")


def _violations(*states: str) -> list[Violation]:
    judge = ReportedStates()
    out = []
    for state in states:
        out += [f for f in judge.reported("ext", 1, state) if isinstance(f, Violation)]
    return out


def test_the_documented_line_passes_and_is_exercised() -> None:
    judge = ReportedStates()
    findings = [f for s in LINE for f in judge.reported("ext", 1, s)]
    assert [f.requirement for f in findings] == [RULE] * len(LINE)
    assert not [f for f in findings if isinstance(f, Violation)]


@pytest.mark.parametrize(
    "states",
    [
        ("initializing", "stopped"),  # rejected while initializing
        ("ready", "stopped"),  # coalesced: draining not reported
        ("ready", "degraded", "stopped"),  # §1.9: degraded, then terminated
        ("initializing", "crashed"),  # died while initializing
        ("draining", "crashed"),
        ("ready", "ready"),  # a repeat
        ("ready", "backoff", "parked", "draining"),  # supervisor states are not a generation's
    ],
)
def test_allowed_sequences(states: tuple[str, ...]) -> None:
    assert not _violations(*states)


@pytest.mark.parametrize(
    "states",
    [
        ("draining", "ready"),
        ("ready", "initializing"),
        ("stopped", "crashed"),
        ("crashed", "ready"),
        ("degraded", "ready"),
        ("degraded", "draining"),
    ],
)
def test_going_back_or_leaving_an_end_fails(states: tuple[str, ...]) -> None:
    found = _violations(*states)
    assert [v.requirement for v in found] == [RULE]
    assert repr(states[-1]) in found[0].message and repr(states[-2]) in found[0].message


def test_every_pair_is_decided_and_ends_are_final() -> None:
    for before, after in itertools.product(STATES, STATES):
        result = allowed(before, after)
        if before in ("stopped", "crashed"):
            assert result == (before == after)
        if before == "degraded":
            assert result == (after in ("degraded", "stopped", "crashed"))


def test_generations_and_extensions_are_judged_apart() -> None:
    judge = ReportedStates()
    judge.reported("ext", 1, "stopped")
    assert not [f for f in judge.reported("ext", 2, "initializing") if isinstance(f, Violation)]
    assert not [f for f in judge.reported("other", 1, "ready") if isinstance(f, Violation)]


def test_supervisor_states_are_ignored() -> None:
    judge = ReportedStates()
    for state in NOT_GENERATION_STATES:
        assert judge.reported("ext", 1, state) == []
