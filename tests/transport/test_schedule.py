"""Schedules as data: pieces, coalescing, descriptions."""

from __future__ import annotations

from conformance.transport.schedule import Outgoing, Schedule, Write, coalesced, one_by_one

A = Outgoing(b'{"a":1}\n', "request", 1, "tool/call")
B = Outgoing(b'{"b":2}\n', "cancel", 1)


def test_pieces_cut_at_the_given_offsets_and_join_back() -> None:
    write = Write((A, B), split_at=(3, 8))
    assert write.pieces() == [A.data[:3], A.data[3:], B.data]
    assert b"".join(write.pieces()) == A.data + B.data


def test_offsets_outside_the_data_are_ignored() -> None:
    assert Write((A,), split_at=(0, len(A.data), 99)).pieces() == [A.data]


def test_coalesced_is_one_write_and_one_by_one_is_one_each() -> None:
    assert coalesced([A, B]) == Schedule((Write((A, B)),))
    assert one_by_one([A, B]) == Schedule((Write((A,)), Write((B,))))
    assert coalesced([A, B]).frames == (A, B)


def test_descriptions_name_every_ordering_relation() -> None:
    schedule = Schedule((Write((A,)), Write((B,), after=1, awaits=(1,), split_at=(2,))))
    assert schedule.describe() == "tool/call#1 | after answers to [1]: after 1 frame(s): cancel#1 split at [2]"
