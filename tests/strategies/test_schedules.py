"""strategies.schedules: every frame once, dependencies kept, shrinks to plain."""

from __future__ import annotations

import pytest
from conformance.strategies.schedules import schedules
from hypothesis import find, given
from hypothesis import strategies as st

from conformance.transport.schedule import Outgoing, Schedule, Write

REQ1 = Outgoing(b'{"id":1}\n', "request", 1, "tool/call")
CANCEL1 = Outgoing(b'{"cancel":1}\n', "cancel", 1)
REQ2 = Outgoing(b'{"id":2}\n', "request", 2, "tool/call")
FRAMES = [REQ1, CANCEL1, REQ2]
DEPENDS = [(), (0,), ()]


@given(st.data())
def test_every_frame_once_and_cancel_never_before_its_request(data: st.DataObject) -> None:
    schedule = data.draw(schedules(FRAMES, depends=DEPENDS))
    order = list(schedule.frames)
    assert sorted(order, key=FRAMES.index) == FRAMES
    assert order.index(REQ1) < order.index(CANCEL1)
    for write in schedule.writes:
        assert b"".join(write.pieces()) == write.data
        assert 0 <= write.after <= 2 and len(write.split_at) <= 2
        earlier = {f.id for w in schedule.writes[: schedule.writes.index(write)] for f in w.frames}
        assert set(write.awaits) <= earlier  # only ever held for a request already written


def test_shrinks_to_the_plain_schedule() -> None:
    plain = find(schedules(FRAMES, depends=DEPENDS), lambda s: True)
    assert plain == Schedule(tuple(Write((f,)) for f in FRAMES))


def test_every_ordering_relation_is_reachable() -> None:
    strategy = schedules(FRAMES, depends=DEPENDS)
    find(strategy, lambda s: len(s.writes) == 1)  # coalesced
    find(strategy, lambda s: s.frames[0] is REQ2)  # reordered
    find(strategy, lambda s: any(w.after for w in s.writes))  # held until frame N
    find(strategy, lambda s: any(w.awaits for w in s.writes))  # held until answered
    find(strategy, lambda s: any(len(w.pieces()) > 1 for w in s.writes))  # split


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one frame"):
        schedules([])
    with pytest.raises(ValueError, match="2 entries for 3 frames"):
        schedules(FRAMES, depends=[(), ()])
    with pytest.raises(ValueError, match="cycle"):
        find(schedules([REQ1, REQ2], depends=[(1,), (0,)]), lambda s: True)
