from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.evidence import Recorder, StepContext
from conformance.protocol.framing import pad_frame
from conformance.protocol.violations import Violation
from conformance.transport.trace import (
    HOST,
    INLINE_BYTES,
    MAX_ENTRIES,
    TARGET,
    TRACE_FORMAT,
    Trace,
    decode_bytes,
    encode_bytes,
    entry_text,
    load,
    marked_entries,
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


def test_each_direction_numbers_its_entries_and_an_index_names_one_entry() -> None:
    t = Trace({"format": TRACE_FORMAT})
    t.wrote(b"a\n", step=0, meta={})
    t.saw(0, b"{}", 2, step=0)
    t.child_answer(b"answer\n", step=0)
    t.action("reload", step=1)
    t.saw(1, b"{}", 2, step=1)
    t.saw(0, b"{}", 2, step=1)  # the reloaded process starts its output again at 0
    t.saw(1, b"{}", 2, step=1)
    assert [e["index"] for e in t.entries if e["dir"] == HOST] == [0, 1, 2]
    assert [e["index"] for e in t.entries if e["dir"] == TARGET] == [0, 1, 2, 3]
    assert t.frame(0) == 2 and t.frame(1) == 3  # a frame judged now is the latest with that output index


def test_child_answers_sit_after_their_request_and_await_nothing() -> None:
    t = Trace({"format": TRACE_FORMAT})
    t.wrote(b"call\n", step=1, meta={"requests": [{"id": 1, "method": "m"}]})
    t.saw(0, b'{"id":1,"result":{}}', 20, step=1)
    t.answered(1)
    t.saw(1, b'{"id":"c","method":"confirmation/request"}', 40, step=1)
    t.child_answer(b'{"id":"c","result":{}}\n', step=1)
    t.wrote(b"next\n", step=2, meta={})
    child, following = t.entries[3], t.entries[4]
    assert child["child_answer"] is True and child["awaits"] == [] and child["after"] == 2
    assert following["awaits"] == [1]  # the answer awaited is not spent by the child answer


def test_violations_mark_the_entries_they_were_judged_on(tmp_path: Path) -> None:
    t = Trace({"format": TRACE_FORMAT, "context": "start"})
    recorder = Recorder()
    recorder.watch(t)
    recorder.context = StepContext(example=1, step=2)
    t.wrote(b"call 2\n", step=1, meta={"requests": [{"id": 2, "method": "tool/call"}]})
    t.wrote(b"call 3\n", step=1, meta={"requests": [{"id": 3, "method": "tool/call"}]})
    t.saw(0, b'{"id":2,"result":{}}', 20, step=1)
    t.answered(2)
    t.saw(1, b'{"id":2,"result":{}}', 20, step=2)
    t.answered(2)
    recorder.violate(Violation("JSONRPC-5-one-response", "request 2 answered a second time", frame_index=1))
    recorder.violate(Violation("JSONRPC-5-every-request-answered", "request 3 never answered"), request=3)
    recorder.violate(Violation("EXT-1.8-shutdown-ack", "no acknowledgement"))
    shown = {rid: [m.as_json() for m in kept[0].evidence] for rid, kept in recorder.violations.items()}
    assert shown["JSONRPC-5-one-response"] == [
        {"dir": TARGET, "index": 0, "why": "an earlier answer to the same id"},
        {"dir": TARGET, "index": 1, "why": "the frame judged"},
    ]
    assert shown["JSONRPC-5-every-request-answered"] == [
        {"dir": HOST, "index": 1, "why": "the write carrying request 3"}
    ]
    assert shown["EXT-1.8-shutdown-ack"] == [{"dir": TARGET, "index": 1, "why": "the last entry when it was judged"}]
    t.dump(tmp_path / "t.jsonl", requirement="JSONRPC-5-one-response", message="ignored: the trace keeps its own")
    header, entries = load(tmp_path / "t.jsonl")
    assert header["evidence"] == shown["JSONRPC-5-one-response"]
    assert header["violation"] == "request 2 answered a second time" and header["context"] == "example 1, step 2"
    assert [e["index"] for e in marked_entries(entries, header["evidence"])] == [0, 1]
    assert entry_text(entries[0]) == "call 2" and entry_text({"action": "shutdown"}) == "[shutdown]"
    recorder.unwatch(t)
    assert recorder.trace is None


def test_a_trace_shows_the_violation_its_step_ranks_first_by_content() -> None:
    # Which of two calls the target answered twice first is timing; the trace
    # shows the one the run's evidence names (the same rule, in evidence.py).
    t = Trace({"format": TRACE_FORMAT})
    recorder = Recorder()
    recorder.watch(t)
    recorder.context = StepContext(example=1, step=5)
    for index, rid in enumerate((10, 9)):
        t.saw(index, b"{}", 2, step=5)
        recorder.violate(Violation("JSONRPC-5-one-response", f"request {rid} answered", frame_index=index))
    assert t.shown["JSONRPC-5-one-response"].message == "request 9 answered"
    assert recorder.violations["JSONRPC-5-one-response"][0].violation.message == "request 9 answered"
    recorder.context = StepContext(example=1, step=6)
    t.saw(2, b"{}", 2, step=6)
    recorder.violate(Violation("JSONRPC-5-one-response", "request 1 answered", frame_index=2))
    assert t.shown["JSONRPC-5-one-response"].message == "request 9 answered"  # an earlier step stays first


def test_a_trace_without_a_violation_of_its_own_marks_its_last_entry(tmp_path: Path) -> None:
    t = Trace({"format": TRACE_FORMAT})
    t.wrote(b"a\n", step=0, meta={})
    t.dump(tmp_path / "t.jsonl", requirement="R", message="m")
    header, _ = load(tmp_path / "t.jsonl")
    assert header["evidence"] == [{"dir": HOST, "index": 0, "why": "the last entry of the trace"}]
    empty = Trace({"format": TRACE_FORMAT})
    empty.dump(tmp_path / "u.jsonl", requirement="R", message="m")
    assert load(tmp_path / "u.jsonl")[0]["evidence"] == []
