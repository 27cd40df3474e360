from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.protocol.framing import pad_frame
from conformance.transport.trace import (
    INLINE_BYTES,
    MAX_ENTRIES,
    TRACE_FORMAT,
    Trace,
    decode_bytes,
    encode_bytes,
    load,
    padded_recipe,
)


@pytest.mark.parametrize("data", [b'{"a":1}\n', "é☃\u2028".encode(), b"\xff\xfe\x00", b""])
def test_small_bytes_round_trip(data: bytes) -> None:
    assert decode_bytes(encode_bytes(data)) == data


@pytest.mark.parametrize("size", [INLINE_BYTES - 1, INLINE_BYTES, INLINE_BYTES + 1])
def test_large_bytes_become_a_digest(size: int) -> None:
    entry = encode_bytes(b"x" * size)
    if size <= INLINE_BYTES:
        assert decode_bytes(entry) == b"x" * size
    else:
        assert entry["size"] == size and len(entry["sha256"]) == 64 and decode_bytes(entry) is None


@pytest.mark.parametrize("size", [1_048_575, 1_048_576, 1_048_577])
def test_padded_frames_regenerate_from_their_recipe(size: int) -> None:
    frame = b'{"jsonrpc":"2.0","id":3,"method":"m","params":{"pad":""}}\n'
    data = pad_frame(frame, size)
    assert len(data) == size + 1
    entry = encode_bytes(data, {"kind": "padded", "frame": frame.decode(), "size": size})
    assert decode_bytes(entry) == data
    entry["sha256"] = "0" * 64  # a recipe that no longer matches is refused, not trusted
    assert decode_bytes(entry) is None


@pytest.mark.parametrize(("filler", "size"), [("x", 5000), ("é", 5001), ("☃", 5002), ("\u2028", 4100), ("𝄞", 4099)])
def test_a_named_member_padded_with_any_filler_regenerates(filler: str, size: int) -> None:
    frame = b'{"jsonrpc":"2.0","method":"turn/settled","params":{"outcome":"failed","reason":""}}\n'
    data = pad_frame(frame, size, member="reason", filler=filler)
    reason = json.loads(data)["params"]["reason"]
    assert len(data) == size + 1 and set(reason) <= {filler, "x"}
    recipe = padded_recipe(frame, size, member="reason", filler=filler)
    assert decode_bytes(encode_bytes(data, recipe)) == data
    assert padded_recipe(frame, size) == {
        "kind": "padded",
        "frame": frame.decode(),
        "size": size,
    }  # old traces unchanged


def test_pad_refuses_impossible_sizes() -> None:
    with pytest.raises(ValueError):
        pad_frame(b'{"pad":""}', 3)


def test_trace_records_order_and_dumps_readable_jsonl(tmp_path: Path) -> None:
    t = Trace({"format": TRACE_FORMAT, "target": {"manifest": "x"}})
    t.wrote(b'{"id":1}\n', step=0, meta={"requests": [{"id": 1, "method": "m", "params": {}}]})
    t.saw(0, b'{"id":1,"result":{}}', 20, step=0)
    t.answered(1)
    t.wrote(b'{"id":2}\n', step=1, meta={})
    t.action("shutdown", step=2)
    path = tmp_path / "t.jsonl"
    t.dump(path, requirement="R", message="m")
    header, entries = load(path)
    assert header["requirement"] == "R" and header["format"] == TRACE_FORMAT
    assert [e["dir"] for e in entries] == ["host->target", "target->host", "host->target", "host->target"]
    assert entries[2]["after"] == 1 and entries[2]["awaits"] == [1]
    assert entries[3]["action"] == "shutdown"
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_raw_line_separators_survive_a_dump(tmp_path: Path) -> None:
    t = Trace({"format": TRACE_FORMAT})
    frame = '{"text":"a\u2028b\u2029c"}\n'.encode()
    t.wrote(frame, step=1, meta={})
    t.dump(tmp_path / "t.jsonl", requirement="R", message="m")
    _, entries = load(tmp_path / "t.jsonl")
    assert decode_bytes(entries[0]) == frame


def test_trace_is_bounded() -> None:
    t = Trace({"format": TRACE_FORMAT})
    for i in range(MAX_ENTRIES + 10):
        t.saw(i, b"{}", 2, step=0)
    assert len(t.entries) == MAX_ENTRIES and t.dropped == 10


def test_load_refuses_other_formats(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"format": "something-else"}\n')
    with pytest.raises(ValueError, match="not a"):
        load(path)
