from __future__ import annotations

from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.framing import Frame, FrameDecoder, OversizedFrame
from conformance.protocol.jsonrpc import (
    Decoded,
    ErrorResponse,
    Notification,
    Request,
    Response,
    decode_event,
    decode_frame,
)
from conformance.protocol.strict_json import JsonError, ParsedJson, dumps, parse_json


def decode(payload: bytes) -> Decoded:
    return decode_frame(Frame(0, payload, "lf"))


def ids(d: Decoded) -> list[str]:
    return [v.requirement for v in d.violations]


def test_request_notification_response_error() -> None:
    assert decode(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{}}').message == Request(1, "m", {})
    assert decode(b'{"jsonrpc":"2.0","method":"n"}').message == Notification("n", None)
    assert decode(b'{"jsonrpc":"2.0","id":"a","result":null}').message == Response("a", None)
    err = decode(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
    assert err.message == ErrorResponse(None, -32700, "x") and not err.violations


@pytest.mark.parametrize("rid", [0, 2**53 + 1, 2**64 - 1, 2**70, -5])
def test_big_and_negative_integer_ids_stay_exact(rid: int) -> None:
    d = decode(dumps({"jsonrpc": "2.0", "id": rid, "result": {}}))
    assert isinstance(d.message, Response) and d.message.id == rid and type(d.message.id) is int


@pytest.mark.parametrize(
    ("payload", "rule"),
    [
        (b"hello from a print()", "EXT-0-diagnostics-stderr"),
        (b"fetching index...", "EXT-0-diagnostics-stderr"),
        (b"true story", "EXT-0-diagnostics-stderr"),
        (b"note: cache miss", "EXT-0-diagnostics-stderr"),
        (b"2026-11-30 12:00 started", "EXT-0-diagnostics-stderr"),
        (b'{"jsonrpc":"2.0",', "EXT-0-json-text"),
        (b'{"x":NaN}', "EXT-0-json-text"),
        (b'{"x":-Infinity}', "EXT-0-json-text"),
        (b"\xff{}", "EXT-0-diagnostics-stderr"),
        (b'{"a":"\xff"}', "EXT-0-json-text"),
        (b'[{"jsonrpc":"2.0","method":"m"}]', "EXT-0-one-object-per-line"),
        (b"42", "EXT-0-one-object-per-line"),
        (b'{"jsonrpc":"2.0","id":1,"id":2,"result":1}', "EXT-0-unique-member-names"),
        (b'{"jsonrpc":"1.0","id":1,"result":1}', "JSONRPC-4-jsonrpc-member"),
        (b'{"id":1,"result":1}', "JSONRPC-4-jsonrpc-member"),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', "JSONRPC-4-method-string"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":3}', "JSONRPC-4-params-structured"),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', "JSONRPC-4-id-type"),
        (b'{"jsonrpc":"2.0","id":[1],"result":1}', "JSONRPC-4-id-type"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', "JSONRPC-4-id-not-fractional"),
        (b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}', "JSONRPC-5-result-xor-error"),
        (b'{"jsonrpc":"2.0","id":1}', "JSONRPC-5-result-xor-error"),
        (b'{"jsonrpc":"2.0","id":1,"error":"bad"}', "JSONRPC-5.1-error-object"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}', "JSONRPC-5.1-error-object"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', "JSONRPC-5.1-error-object"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-32500,"message":"m"}}', "JSONRPC-5.1-reserved-codes"),
    ],
)
def test_each_envelope_rule(payload: bytes, rule: str) -> None:
    assert rule in ids(decode(payload))


@pytest.mark.parametrize("rid", [b"5.0", b"1e3", b"-2E2"])
def test_whole_numbers_with_a_fraction_or_exponent_are_not_fractional_ids(rid: bytes) -> None:
    assert ids(decode(b'{"jsonrpc":"2.0","id":' + rid + b',"method":"m"}')) == []


@pytest.mark.parametrize("code", [-32700, -32600, -32601, -32602, -32603, -32000, -32099, -32800, -31999, 1])
def test_codes_outside_the_reserved_gap_are_fine(code: int) -> None:
    assert ids(decode(dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}))) == []


def test_oversized_event_names_the_bound_the_same_way_however_it_was_seen() -> None:
    whole = decode_event(OversizedFrame(3, 1_048_577, 1_048_576, complete=True))
    early = decode_event(OversizedFrame(3, 1_114_112, 1_048_576, complete=False))
    assert ids(whole) == ids(early) == ["EXT-0-frame-bound"]
    assert "longer than the 1,048,576-byte limit" in whole.violations[0].message
    # chunking decides which of the two a frame gets: the evidence must not differ
    assert whole.violations == early.violations
    assert whole.violations[0].frame_index == 3 and (whole.size, early.size) == (1_048_577, 1_114_112)


def test_every_frame_reports_its_rules() -> None:
    d = decode(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    assert "EXT-0-json-text" in d.rules and "JSONRPC-4-method-string" in d.rules


def test_strict_json_reports_duplicates_and_rejects_constants() -> None:
    parsed = parse_json(b'{"a":{"b":1,"b":2},"a":3}')
    assert isinstance(parsed, ParsedJson) and sorted(parsed.duplicate_keys) == ["a", "b"]
    assert isinstance(parse_json(b"[Infinity]"), JsonError)
    assert isinstance(parse_json(b"[" * 100_000), JsonError)


json_values = strategies.json_values(max_leaves=20, surrogates=False)


@given(json_values)
def test_any_json_value_decodes_without_raising(value: Any) -> None:
    d = decode(dumps(value))
    assert d.message is not None or d.violations


@given(st.binary(max_size=200))
def test_any_bytes_decode_without_raising(data: bytes) -> None:
    decode(data)


@pytest.mark.parametrize("payload", [b"", b" ", b"\t", b"  \t "])
def test_a_blank_stdout_line_has_its_own_should_rule(payload: bytes) -> None:
    # Neither a malformed frame nor a diagnostic: its own entry (a should).
    assert ids(decode(payload)) == ["EXT-0-no-blank-lines"]
    assert "EXT-0-no-blank-lines" in decode(b'{"jsonrpc":"2.0","id":1,"result":1}').rules


def test_a_blank_line_between_frames_is_one_finding_in_a_stream() -> None:
    frames = FrameDecoder(max_frame_bytes=64).feed(
        b'{"jsonrpc":"2.0","id":1,"result":1}\n\n{"jsonrpc":"2.0","id":2,"result":2}\n'
    )
    assert [ids(decode_event(f)) for f in frames] == [[], ["EXT-0-no-blank-lines"], []]
