"""peek_id: the id of an oversized request read from its first bytes (host RPC §2/§7)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.id_peek import PeekedId, peek_id

FOUND = [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools.execute","params":{"args":"xxxx', 7),
    (b'{"id":"req_01H","method"', "req_01H"),
    (b'{"id":null,', None),
    (b' {\t"id" :\r\n-3e2 }', -300.0),
    (b'{"id":1.5}', 1.5),
    (b'{"id":"x"', "x"),  # a string is complete at its closing quote
    (b'{"method":"m","params":{"a":[1,{"b":"}"}]},"id":"late",', "late"),
    ('{"x":"é","id":"é\u2028",'.encode(), "é\u2028"),
    (b'{"id":"a\\u00e9\\n"}', "a\u00e9\n"),
]

NOT_FOUND = [
    b"",
    b"{",
    b'{"id":12',  # may be 123...
    b'{"id":1.',
    b'{"id":1e',
    b'{"id":-',
    b'{"id":"unterminated',
    b'{"id":true,',
    b'{"id":NaN,',
    b'{"id":{"a":1},',
    b'{"id":[1],',
    b'{"id":1 2',
    b'{"method":"m","params":{"big":"xxxxxxxx',  # the id lies beyond the prefix
    b'{"method":"m"}',  # complete object without an id (a notification)
    b'[{"id":1}]',  # a batch is not a request object
    b'"id"',
    b'\xff{"id":1,',  # invalid UTF-8
    b'{"id":"\xc3',  # prefix ends inside a character inside the id
    b'{"a":' + b"[" * 5000,  # deep nesting before the id
    b'{"a" "id":1}',
    b'{"a":1 "id":2}',
]


@pytest.mark.parametrize(("prefix", "expected"), FOUND)
def test_found(prefix: bytes, expected: object) -> None:
    assert peek_id(prefix) == PeekedId(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", NOT_FOUND)
def test_not_found(prefix: bytes) -> None:
    assert peek_id(prefix) is None


@pytest.mark.parametrize(("prefix", "expected"), [(p, e) for p, e in FOUND if p.endswith(b",")])
def test_trailing_junk_after_the_id_does_not_matter(prefix: bytes, expected: object) -> None:
    # Whatever follows a complete id and its comma (the rest of a 64 MiB line,
    # or garbage, invalid UTF-8 included) is never looked at.
    assert peek_id(prefix + b"\xff\x00junk]]]") == PeekedId(expected)  # type: ignore[arg-type]


def test_invalid_utf8_inside_the_id_is_no_id() -> None:
    assert peek_id(b'{"id":"a\xffb",') is None
    assert peek_id(b'{"id":"\\udcff",') is None  # the same string spelled as an escape


def _line(rid: object, before: dict[str, object], after: dict[str, object]) -> bytes:
    return json.dumps({**before, "id": rid, **after}, ensure_ascii=False).encode()


IDS = st.one_of(st.none(), st.integers(-(2**64), 2**64), st.text(max_size=12))
MEMBERS = st.dictionaries(
    st.text(max_size=4).filter(lambda k: k != "id"), st.one_of(st.integers(), st.text(max_size=6)), max_size=3
)


@given(rid=IDS, before=MEMBERS, after=MEMBERS)
def test_every_prefix_is_right_or_silent(rid: object, before: dict[str, object], after: dict[str, object]) -> None:
    # Byte by byte: each prefix of a real request line either shows the true
    # id or shows nothing -- never a wrong one (e.g. 12 for 123).
    line = _line(rid, before, after)
    answers = [peek_id(line[:cut]) for cut in range(len(line) + 1)]
    assert all(a is None or a == PeekedId(rid) for a in answers)  # type: ignore[arg-type]
    assert answers[-1] == PeekedId(rid)  # type: ignore[arg-type]
    # once seen, the id stays seen as the prefix grows
    first = next(i for i, a in enumerate(answers) if a is not None)
    assert all(a is not None for a in answers[first:])


@given(st.binary(max_size=200))
def test_never_raises(data: bytes) -> None:
    result = peek_id(data)
    assert result is None or isinstance(result, PeekedId)
