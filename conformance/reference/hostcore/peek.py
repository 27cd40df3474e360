"""Reading the request id from the start of a line too long to parse (§7).

LIMIT_EXCEEDED keeps the request id "when it can be peeked from the prefix".
The prefix is a truncated JSON object, so no JSON parser will take it; this
scanner walks it token by token, tracking nesting, and returns the value of a
top-level ``"id"`` member if that member lies wholly inside the prefix. An
``"id"`` nested inside params is never taken for the request's id.
"""

from __future__ import annotations

import json
import re

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SPACE = re.compile(rb"[ \t\r\n]*")

RequestId = int | str


def peek_id(prefix: bytes) -> RequestId | None:
    """The top-level id of a truncated JSON object, or None if unreadable."""
    pos = _skip_space(prefix, 0)
    if prefix[pos : pos + 1] != b"{":
        return None
    depth, pos, expect_key = 1, pos + 1, True
    while (pos := _skip_space(prefix, pos)) < len(prefix):
        char = prefix[pos : pos + 1]
        if char == b'"':
            string = _STRING.match(prefix, pos)
            if string is None:
                return None  # the prefix ends inside a string
            if depth == 1 and expect_key and _decode(string.group()) == "id":
                colon = _skip_space(prefix, string.end())
                if prefix[colon : colon + 1] == b":":
                    return _value(prefix, _skip_space(prefix, colon + 1))
            pos = string.end()
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return None  # a complete object without an id
        elif char == b",":
            expect_key = depth == 1  # a comma at depth 1 separates members
        elif char == b":":
            expect_key = False
        pos += 1  # numbers and literals hold no structural bytes
    return None


def _skip_space(data: bytes, pos: int) -> int:
    match = _SPACE.match(data, pos)
    return match.end() if match else pos


def _decode(token: bytes) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return None


def _value(prefix: bytes, pos: int) -> RequestId | None:
    string = _STRING.match(prefix, pos)
    if string is not None:
        value = _decode(string.group())
        return value if isinstance(value, str) else None
    number = _NUMBER.match(prefix, pos)
    # A number must be followed by a delimiter inside the prefix, or it may
    # have been cut short ("12" of "123").
    if number is None or number.end() >= len(prefix):
        return None
    value = _decode(number.group())
    if isinstance(value, float) and value.is_integer():
        return int(value)  # judged by value: 5.0 is the id 5
    return value if isinstance(value, int) else None
