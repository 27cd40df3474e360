from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import rpc_limits
from conformance.protocol.framing import Frame, FrameDecoder, FrameEvent, FrameTooLarge, OversizedFrame, encode_frame

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
    for _ in range(1000):
        assert d.feed(b"y" * 1000) == []
        assert d.buffered <= LIMIT + 1
    events = d.feed(b"\n{}\n")
    assert events == [OversizedFrame(0, 1_000_000, LIMIT, True), Frame(1, b"{}", "lf")]


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
    assert out == feed_whole(data)
    assert len(out) == len(frames)


# -- report_early: an endless line is reported once it passes the bound -----------------


def early() -> FrameDecoder:
    return FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=4, report_early=True)


@pytest.mark.parametrize("extra", [1, 2, 3, 1000])
def test_endless_line_is_reported_as_soon_as_it_passes_the_bound(extra: int) -> None:
    """A line that never ends (no LF, no EOF) is reported by the feed that
    takes it past the bound: LIMIT + 1 bytes may still be a CRLF frame of
    LIMIT bytes, LIMIT + 2 cannot."""
    d = early()
    assert d.feed(b"x" * LIMIT) == []
    events = d.feed(b"y" * extra)
    if extra == 1:
        assert events == []  # the last byte might be the CR of a CRLF
        assert d.feed(b"z") == [OversizedFrame(0, LIMIT + 2, LIMIT, False, b"xxxx")]
    else:
        assert events == [OversizedFrame(0, LIMIT + extra, LIMIT, False, b"xxxx")]
    assert d.feed(b"x" * 10_000) == [] and d.close() == []  # reported once, whatever follows


def test_endless_line_byte_by_byte() -> None:
    d = early()
    seen = [e for _ in range(LIMIT * 3) for e in d.feed(b"x")]
    assert seen == [OversizedFrame(0, LIMIT + 2, LIMIT, False, b"xxxx")]
    assert d.feed(b"\n{}\n") == [Frame(1, b"{}", "lf")]  # its terminator says nothing; indexes go on


def test_early_report_waits_for_a_terminator_in_the_same_feed() -> None:
    d = early()
    assert d.feed(b"x" * (LIMIT + 5) + b"\n{}\n") == [
        OversizedFrame(0, LIMIT + 5, LIMIT, True, b"xxxx"),
        Frame(1, b"{}", "lf"),
    ]
    assert d.feed(b"x" * (LIMIT + 5)) == [OversizedFrame(2, LIMIT + 5, LIMIT, False, b"xxxx")]
    assert d.feed(b"xx\r\n") == [] and d.feed(b"{}") == []
    assert d.close() == [Frame(3, b"{}", "eof")]


@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_early_changes_nothing_up_to_the_bound_plus_one(size: int) -> None:
    """Up to LIMIT + 1 bytes nothing is known yet (a CR may follow), so the
    report waits for the terminator as without report_early, byte by byte too."""
    d = early()
    events = [e for _ in range(size) for e in d.feed(b"x")] + d.feed(b"\n")
    expected = Frame(0, b"x" * size, "lf") if size <= LIMIT else OversizedFrame(0, size, LIMIT, True, b"xxxx")
    assert events == [expected]


@given(
    frames=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_early_reports_keep_index_and_bound_whatever_the_chunking(frames: list[bytes], cuts: list[int]) -> None:
    """Frames come out the same whatever the chunking; an oversized frame is
    reported at the same index, but when (and so with how many bytes seen)
    depends on the chunks: only its index, bound and prefix are compared."""
    data = b"".join(f + b"\n" for f in frames)
    d, whole = early(), early()
    out: list[FrameEvent] = []
    prev = 0
    for c in sorted(set(min(c, len(data)) for c in cuts)):
        out += d.feed(data[prev:c])
        prev = c
    out += d.feed(data[prev:]) + d.close()
    assert [_chunking_free(e) for e in out] == [_chunking_free(e) for e in whole.feed(data) + whole.close()]
    assert len(out) == len(frames)
    assert all(e.size > LIMIT for e in out if isinstance(e, OversizedFrame))


def _chunking_free(event: FrameEvent) -> object:
    return ("oversized", event.index, event.limit, event.prefix) if isinstance(event, OversizedFrame) else event


# -- the prefix of an oversized frame (host RPC §2/§7 peeks the id from it) ------------

PREFIX = 6


def feed_kept(data: bytes, feed_bytewise_: bool, limit: int = LIMIT) -> list[FrameEvent]:
    d = FrameDecoder(max_frame_bytes=limit, prefix_bytes=PREFIX)
    chunks = [data[i : i + 1] for i in range(len(data))] if feed_bytewise_ else [data]
    out: list[FrameEvent] = []
    for chunk in chunks:
        out += d.feed(chunk)
    return out + d.close()


@pytest.mark.parametrize("bytewise", [False, True])
@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_prefix_kept_only_for_oversized_frames(bytewise: bool, size: int) -> None:
    line = bytes(range(65, 65 + size))
    events = feed_kept(line + b"\n" + b"junk", bytewise)
    if size <= LIMIT:
        assert events[0] == Frame(0, line, "lf")
    else:
        assert events[0] == OversizedFrame(0, size, LIMIT, True, line[:PREFIX])
    assert events[1] == Frame(1, b"junk", "eof")  # trailing junk: its own frame, no prefix leaks into it


@pytest.mark.parametrize("bytewise", [False, True])
def test_prefix_of_an_oversized_crlf_frame_and_of_one_cut_by_eof(bytewise: bool) -> None:
    line = b"{" + b"x" * LIMIT
    assert feed_kept(line + b"\r\n", bytewise) == [OversizedFrame(0, LIMIT + 2, LIMIT, True, line[:PREFIX])]
    assert feed_kept(line, bytewise) == [OversizedFrame(0, LIMIT + 1, LIMIT, False, line[:PREFIX])]


def test_prefix_taken_across_the_chunk_that_crosses_the_bound() -> None:
    d = FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=PREFIX)
    assert d.feed(b"ab") == []
    assert d.feed(b"c" * 40 + b"\n") == [OversizedFrame(0, 42, LIMIT, True, b"abcccc")]
    assert d.feed(b"d" * 40 + b"\n") == [OversizedFrame(1, 40, LIMIT, True, b"dddddd")]


def test_prefix_size_is_validated() -> None:
    with pytest.raises(ValueError, match="prefix_bytes"):
        FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=LIMIT + 1)
    with pytest.raises(ValueError, match="prefix_bytes"):
        FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=-1)


@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_encode_with_a_bound_at_n_minus_one_n_n_plus_one(size: int) -> None:
    payload = b"x" * size
    if size <= LIMIT:
        assert encode_frame(payload, max_frame_bytes=LIMIT) == payload + b"\n"
    else:
        with pytest.raises(FrameTooLarge, match=f"{size:,} bytes; limit {LIMIT:,}") as caught:
            encode_frame(payload, max_frame_bytes=LIMIT)
        assert (caught.value.size, caught.value.limit) == (size, LIMIT)


def test_the_host_rpc_bound_itself_with_one_shared_block() -> None:
    # The behaviour at N-1/N/N+1 is proved at small bounds above; this runs the
    # real 64 MiB bound once, crossing it with a single reused 1 MiB block so
    # the test allocates no second copy of the line.
    bound = rpc_limits.MAX_LINE_BYTES
    block = b"{" + b"x" * (rpc_limits.MIB - 1)
    d = FrameDecoder(max_frame_bytes=bound, prefix_bytes=rpc_limits.ID_PEEK_PREFIX_BYTES)
    for _ in range(bound // len(block)):
        assert d.feed(block) == []
    assert d.buffered == bound  # exactly at the bound: still a frame in the making
    assert d.feed(b"y") == [] and d.buffered == bound + 1  # one more byte: it might be a CR
    assert d.feed(b"z") == [] and d.buffered == 0  # crossed: nothing more is buffered
    assert d.feed(b"\n{}\n") == [
        OversizedFrame(0, bound + 2, bound, True, block[: rpc_limits.ID_PEEK_PREFIX_BYTES]),
        Frame(1, b"{}", "lf"),
    ]


# -- a supplied frame buffer (a peer may spill a large frame to disk) ------------------


class ChunkBuffer:
    """A FrameBuffer other than the default: a list of chunks."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.peak = 0

    def __len__(self) -> int:
        return sum(len(c) for c in self.chunks)

    def extend(self, data: bytes) -> None:
        self.chunks.append(bytes(data))
        self.peak = max(self.peak, len(self))

    def head(self, size: int) -> bytes:
        return b"".join(self.chunks)[:size]

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks = []
        return data

    def clear(self) -> None:
        self.chunks = []


@given(
    frames=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=10),
    final_lf=st.booleans(),
)
def test_a_supplied_buffer_gives_the_same_events(frames: list[bytes], cuts: list[int], final_lf: bool) -> None:
    data = b"\n".join(frames) + (b"\n" if final_lf else b"")
    buffer = ChunkBuffer()
    d = FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=4, buffer=buffer)
    out: list[FrameEvent] = []
    prev = 0
    for c in sorted(set(min(c, len(data)) for c in cuts)):
        out += d.feed(data[prev:c])
        prev = c
    out += d.feed(data[prev:]) + d.close()
    plain = FrameDecoder(max_frame_bytes=LIMIT, prefix_bytes=4)
    assert out == plain.feed(data) + plain.close()
    assert buffer.peak <= LIMIT + 1 and len(buffer) == 0
