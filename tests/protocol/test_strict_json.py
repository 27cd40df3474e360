"""strict_json: the fast path is the reporting decoder, only cheaper.

``parse_json`` answers most frames with one cached decoder and falls back to
``_parse_reporting`` (which names every duplicate member) when a member name
repeats or the text does not parse. These tests hold the two to the same
answer on generated JSON text: duplicates, big integers, non-finite
constants, lone surrogate escapes, deep nesting and broken text included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.protocol.strict_json import JsonError, ParsedJson, _parse_reporting, dumps, parse_json

# A small key alphabet makes repeated member names frequent.
KEYS = st.sampled_from(["a", "b", "id", "a:", "\u00e9", "\ud800", "k" * 3])
SCALAR_TEXT = st.one_of(
    st.sampled_from(["null", "true", "false", "NaN", "Infinity", "-Infinity", "0", "-0", "1e400", "-0.0"]),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=6).map(lambda s: json.dumps(s, ensure_ascii=False)),
    st.text(max_size=6).map(json.dumps),  # \uXXXX escapes, lone surrogates among them
)
SPACE = st.sampled_from(["", " ", "\n\t ", "\r"])


def _object(pairs: list[tuple[str, str]], space: str, escape: bool) -> str:
    return "{" + ",".join(f"{space}{json.dumps(k, ensure_ascii=escape)}{space}:{v}" for k, v in pairs) + "}"


JSON_TEXT = st.recursive(
    SCALAR_TEXT,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.builds(_object, st.lists(st.tuples(KEYS, children), max_size=5), SPACE, st.booleans()),
    ),
    max_leaves=25,
)


@st.composite
def broken(draw: st.DrawFn) -> str:
    """Valid-looking text, cut short or with a byte spliced in."""
    text = draw(JSON_TEXT)
    cut = draw(st.integers(min_value=0, max_value=len(text)))
    splice = draw(st.sampled_from(["", "}", "]", ",", ":", '"', "\\", "x", "{}"]))
    return text[:cut] + splice + text[cut:] if splice else text[:cut]


def same(payload: bytes) -> None:
    fast = parse_json(payload)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        assert isinstance(fast, JsonError) and fast.reason.startswith("not UTF-8")
        return
    slow = _parse_reporting(text)
    # repr: stricter than ==, which would equate 1, 1.0 and True
    assert repr(fast) == repr(slow)


@settings(max_examples=400)
@given(JSON_TEXT, SPACE)
@example('{"a":1,"a":2}', "")
@example('{"a":{"b":1,"b":2},"a":3}', " ")
@example('{"a":1,"a":"\\u003a"}', "")
@example('[{"x":NaN,"x":1}]', "")
@example('{"id":18446744073709551615}', "")
@example('["\\ud800"]', "")
def test_fast_path_equals_reporting_decoder(text: str, space: str) -> None:
    payload = (space + text + space).encode("utf-8", "surrogatepass")
    same(payload)


@settings(max_examples=300)
@given(broken())
def test_fast_path_equals_reporting_decoder_on_broken_text(text: str) -> None:
    same(text.encode("utf-8", "surrogatepass"))


@given(st.binary(max_size=64))
def test_fast_path_equals_reporting_decoder_on_bytes(payload: bytes) -> None:
    same(payload)


def test_duplicates_are_all_named_in_text_order() -> None:
    parsed = parse_json(b'{"a":1,"b":{"c":1,"c":2,"c":3},"a":2,"b":0}')
    assert isinstance(parsed, ParsedJson)
    assert parsed.duplicate_keys == ("c", "c", "a", "b")
    assert parsed.value == {"a": 2, "b": 0}


def test_exact_integers_and_no_constants() -> None:
    parsed = parse_json(b'{"id":18446744073709551615,"n":-170141183460469231731687303715884105728}')
    assert isinstance(parsed, ParsedJson) and parsed.duplicate_keys == ()
    assert parsed.value["id"] == 2**64 - 1 and parsed.value["n"] == -(2**127)
    for constant in (b"NaN", b"Infinity", b"-Infinity"):
        result = parse_json(b'{"x":[' + constant + b"]}")
        assert isinstance(result, JsonError) and "is not a JSON value" in result.reason


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    for payload in (b"[" * 100_000, b'{"a":' * 100_000):
        result = parse_json(payload)
        assert isinstance(result, JsonError)


def test_lone_surrogate_escapes_are_kept() -> None:
    parsed = parse_json(b'{"\\ud800":"\\udfff"}')
    assert isinstance(parsed, ParsedJson) and parsed.value == {"\ud800": "\udfff"}


@given(st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)))
def test_dumps_is_compact_utf8_json(value: Any) -> None:
    try:
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form
        with pytest.raises(UnicodeEncodeError):
            dumps(value)
        return
    assert dumps(value) == expected
