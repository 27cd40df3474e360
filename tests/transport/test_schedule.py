"""Schedules as data: pieces and frames."""

from __future__ import annotations

from conformance.transport.schedule import Outgoing, Schedule, Write

A = Outgoing(b'{"a":1}\n', "request", 1, "tool/call")
B = Outgoing(b'{"b":2}\n', "cancel", 1)


def test_pieces_cut_at_the_given_offsets_and_join_back() -> None:
    write = Write((A, B), split_at=(3, 8))
    assert write.pieces() == [A.data[:3], A.data[3:], B.data]
    assert b"".join(write.pieces()) == A.data + B.data


def test_offsets_outside_the_data_are_ignored() -> None:
    assert Write((A,), split_at=(0, len(A.data), 99)).pieces() == [A.data]


def test_a_schedule_lists_its_frames_in_write_order() -> None:
    assert Schedule((Write((A, B)),)).frames == (A, B)
    assert Schedule((Write((B,)), Write((A,), after=1))).frames == (B, A)
