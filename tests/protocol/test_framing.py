from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.framing import Frame, FrameDecoder, FrameEvent, OversizedFrame, encode_frame

LIMIT = 16


def feed_whole(data: bytes, limit: int = LIMIT) -> list[FrameEvent]:
    d = FrameDecoder(max_frame_bytes=limit)
    return d.feed(data) + d.close()


def feed_bytewise(data: bytes, limit: int = LIMIT) -> list[FrameEvent]:
    d = FrameDecoder(max_frame_bytes=limit)
    out: list[FrameEvent] = []
    for i in range(len(data)):
        out += d.feed(data[i : i + 1])
    return out + d.close()


FEEDERS = [feed_whole, feed_bytewise]


@pytest.mark.parametrize("feed", FEEDERS)
def test_lf_and_crlf(feed) -> None:  # type: ignore[no-untyped-def]
    events = feed(b'{"a":1}\n{"b":2}\r\n')
    assert events == [Frame(0, b'{"a":1}', "lf"), Frame(1, b'{"b":2}', "crlf")]


@pytest.mark.parametrize("feed", FEEDERS)
def test_line_separators_are_payload(feed) -> None:  # type: ignore[no-untyped-def]
    payload = '"a\u2028b\u2029c"'.encode()
    assert feed(payload + b"\n") == [Frame(0, payload, "lf")]


@pytest.mark.parametrize("feed", FEEDERS)
def test_utf8_survives_any_split(feed) -> None:  # type: ignore[no-untyped-def]
    payload = "☃é文😀".encode()
    events = feed(payload + b"\n", 64)
    assert isinstance(events[0], Frame) and events[0].payload.decode() == "☃é文😀"


@pytest.mark.parametrize("feed", FEEDERS)
def test_final_unterminated_frame_at_eof(feed) -> None:  # type: ignore[no-untyped-def]
    assert feed(b"{}\n{}") == [Frame(0, b"{}", "lf"), Frame(1, b"{}", "eof")]


@pytest.mark.parametrize("feed", FEEDERS)
@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_bound_at_n_minus_one_n_n_plus_one(feed, size: int) -> None:  # type: ignore[no-untyped-def]
    events = feed(b"x" * size + b"\n{}\n")
    if size <= LIMIT:
        assert events[0] == Frame(0, b"x" * size, "lf")
    else:
        assert events[0] == OversizedFrame(0, size, LIMIT, complete=True)
    # the decoder keeps working after a bad frame
    assert events[1] == Frame(1, b"{}", "lf")


@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_crlf_at_the_bound(size: int) -> None:
    events = feed_whole(b"x" * size + b"\r\n")
    expected: FrameEvent = Frame(0, b"x" * size, "crlf") if size <= LIMIT else OversizedFrame(0, size + 1, LIMIT, True)
    assert events == [expected]


def test_oversize_detected_without_buffering_past_the_bound() -> None:
    d = FrameDecoder(max_frame_bytes=LIMIT)
    # reported by the feed that passes the bound, with what it had seen...
    assert d.feed(b"y" * 1000) == [OversizedFrame(0, 1000, LIMIT, False)]
    for _ in range(999):
        assert d.feed(b"y" * 1000) == []  # ...and once only
        assert d.buffered <= LIMIT + 1
    events = d.feed(b"\n{}\n")
    assert events == [Frame(1, b"{}", "lf")]  # the terminator ends it silently; indexes go on


@pytest.mark.parametrize("extra", [1, 2, 3, 1000])
def test_endless_line_is_reported_as_soon_as_it_passes_the_bound(extra: int) -> None:
    """A line that never ends (no LF, no EOF) is reported by the feed that
    takes it past the bound: LIMIT + 1 bytes may still be a CRLF frame of
    LIMIT bytes, LIMIT + 2 cannot."""
    d = FrameDecoder(max_frame_bytes=LIMIT)
    assert d.feed(b"x" * LIMIT) == []
    events = d.feed(b"x" * extra)
    if extra == 1:
        assert events == []  # the last byte might be the CR of a CRLF
        assert d.feed(b"x") == [OversizedFrame(0, LIMIT + 2, LIMIT, False)]
    else:
        assert events == [OversizedFrame(0, LIMIT + extra, LIMIT, False)]
    assert d.feed(b"x" * 10_000) == [] and d.close() == []


def test_endless_line_byte_by_byte() -> None:
    d = FrameDecoder(max_frame_bytes=LIMIT)
    seen = [e for _ in range(LIMIT * 3) for e in d.feed(b"x")]
    assert seen == [OversizedFrame(0, LIMIT + 2, LIMIT, False)]
    assert d.feed(b"\n{}\n") == [Frame(1, b"{}", "lf")]


def test_oversize_split_across_feeds_then_terminated_in_a_later_one() -> None:
    d = FrameDecoder(max_frame_bytes=LIMIT)
    assert d.feed(b"x" * (LIMIT + 5)) == [OversizedFrame(0, LIMIT + 5, LIMIT, False)]
    assert d.feed(b"xx\r\n") == []
    assert d.feed(b"{}") == [] and d.close() == [Frame(1, b"{}", "eof")]


def test_oversize_then_eof_reports_lower_bound() -> None:
    assert feed_whole(b"z" * 40) == [OversizedFrame(0, 40, LIMIT, complete=False)]


@pytest.mark.parametrize("junk", [b"trailing junk", b"\xff\xfe", b"[1,2"])
def test_trailing_junk_is_its_own_frame(junk: bytes) -> None:
    for feed in FEEDERS:
        events = feed(b"{}\n" + junk)
        assert events == [Frame(0, b"{}", "lf"), Frame(1, junk, "eof")]


def test_empty_lines_are_frames() -> None:
    assert feed_whole(b"\n\n") == [Frame(0, b"", "lf"), Frame(1, b"", "lf")]


def test_encode_refuses_raw_lf() -> None:
    assert encode_frame(b"{}") == b"{}\n"
    with pytest.raises(ValueError):
        encode_frame(b"{\n}")


def test_bad_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_frame_bytes"):
        FrameDecoder(max_frame_bytes=0)


@given(
    frames=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_any_chunking_gives_the_same_frames(frames: list[bytes], cuts: list[int]) -> None:
    data = b"".join(f + b"\n" for f in frames)
    d = FrameDecoder(max_frame_bytes=LIMIT)
    out: list[FrameEvent] = []
    prev = 0
    for c in sorted(set(min(c, len(data)) for c in cuts)):
        out += d.feed(data[prev:c])
        prev = c
    out += d.feed(data[prev:]) + d.close()
    # Frames come out the same whatever the chunking; an oversized frame is
    # reported at the same index, but when (and so with how many bytes seen)
    # depends on the chunks: only its index and bound are compared.
    assert [_same_whatever_chunking(e) for e in out] == [_same_whatever_chunking(e) for e in feed_whole(data)]
    assert len(out) == len(frames)
    assert all(e.size > LIMIT for e in out if isinstance(e, OversizedFrame))


def _same_whatever_chunking(event: FrameEvent) -> object:
    return ("oversized", event.index, event.limit) if isinstance(event, OversizedFrame) else event
