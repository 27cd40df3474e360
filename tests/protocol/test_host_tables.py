"""The host-side transition tables: every state x input is either a step or
a harness misuse, and the steps the text decides are the ones listed."""

from __future__ import annotations

import itertools

import pytest
from host_frames import manifest

from conformance.protocol import host_tables as T
from conformance.protocol.host_session import ProbeSession
from conformance.protocol.host_tables import Call, CallInput, Child, ChildInput, Life, LifeInput, LocalProtocolError
from conformance.requirements import load_catalog

KNOWN = {r.id for r in load_catalog()}


def test_call_and_child_tables_are_total() -> None:
    assert set(T.CALL) == set(itertools.product(Call, CallInput))
    assert set(T.CHILD) == set(itertools.product(Child, ChildInput))


@pytest.mark.parametrize("table", [T.LIFECYCLE, T.CALL, T.CHILD])
def test_every_cited_requirement_is_in_the_catalog(table: dict) -> None:  # type: ignore[type-arg]
    cited = {broken for _, broken in table.values() if broken is not None}
    assert cited and cited <= KNOWN


@pytest.mark.parametrize(("state", "event"), list(itertools.product(Life, LifeInput)))
def test_every_lifecycle_pair_steps_or_is_a_local_error(state: Life, event: LifeInput) -> None:
    session = ProbeSession(manifest=manifest(), life=state)
    if (state, event) not in T.LIFECYCLE:
        with pytest.raises(LocalProtocolError):
            session.lifecycle_event(event)
        return
    findings = session.lifecycle_event(event)
    nxt, broken = T.LIFECYCLE[(state, event)]
    assert session.life is nxt
    assert [f.requirement for f in findings if type(f).__name__ == "Violation"] == ([broken] if broken else [])


def test_frames_in_live_states_never_raise() -> None:
    # A live state accepts every frame kind: only ends after an end are local errors.
    for state in (Life.STARTING, Life.INITIALIZING, Life.READY, Life.REJECTED, Life.DRAINING, Life.DEGRADED):
        for event in (LifeInput.INITIALIZE, LifeInput.REQUEST, LifeInput.NOTIFICATION, LifeInput.SHUTDOWN):
            assert (state, event) in T.LIFECYCLE


def test_ended_states_accept_no_frames() -> None:
    for state in (Life.STOPPED, Life.CRASHED):
        assert (state, LifeInput.REQUEST) not in T.LIFECYCLE


@pytest.mark.parametrize(
    ("state", "event", "expected"),
    [
        (Life.STARTING, LifeInput.REQUEST, "EXT-1.1-host-initialize-first"),
        (Life.INITIALIZING, LifeInput.NOTIFICATION, "EXT-1.1-host-awaits-initialize"),
        (Life.INITIALIZING, LifeInput.SHUTDOWN, None),
        (Life.READY, LifeInput.STDIN_CLOSED, "EXT-0-host-graceful-shutdown-request"),
        (Life.READY, LifeInput.HOST_GONE, None),
        (Life.DRAINING, LifeInput.STDIN_CLOSED, None),
        (Life.DRAINING, LifeInput.REQUEST, "EXT-1.8-host-nothing-after-shutdown"),
        (Life.DRAINING, LifeInput.NOTIFICATION, None),
        (Life.REJECTED, LifeInput.REQUEST, "EXT-1.1-host-rejected-child-isolated"),
        (Life.REJECTED, LifeInput.SHUTDOWN, None),
    ],
)
def test_decided_steps(state: Life, event: LifeInput, expected: str | None) -> None:
    assert T.LIFECYCLE[(state, event)][1] == expected


def test_a_second_cancel_is_a_violation_in_every_state_after_the_first() -> None:
    for state in (Call.CANCEL_SENT, Call.TOMBSTONED):
        assert T.CALL[(state, CallInput.CANCEL)][1] == "EXT-1.9-host-one-cancel-notification"
    assert T.CALL[(Call.PENDING, CallInput.CANCEL)][1] is None
    assert T.CALL[(Call.ANSWERED, CallInput.CANCEL)] == (Call.TOMBSTONED, None)  # raced the answer


def test_child_answered_twice_is_a_violation() -> None:
    assert T.CHILD[(Child.ANSWERED, ChildInput.ANSWER)][1] == "JSONRPC-5-host-one-response"
    assert T.CHILD[(Child.OUTSTANDING, ChildInput.PARENT_SETTLED)] == (Child.ORPHANED, None)
