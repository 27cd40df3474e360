"""Read a JSON-RPC id from the first bytes of a line too long to parse.

Host RPC §2/§7: a request line over the bound is drained, and the
LIMIT_EXCEEDED reply keeps the request id *when it can be peeked from the
prefix*. Both the reference host-core and the harness (which must predict what
a host can see) use this one helper, on the prefix the framing kept
(``FrameDecoder(prefix_bytes=...)``).

What counts as "can be peeked": the prefix starts a JSON object, and every
member before ``"id"`` -- and the id value itself -- is complete and valid
JSON inside the prefix, and only ``,``, ``}`` or the prefix's end may follow
the id. The id must be
a string, a number or null (JSON-RPC 2.0 §4); anything else is not an id the
reply could echo. A number cut by the end of the prefix is *not* peeked
(``12`` may be the start of ``123``).

Decisions: the first ``"id"`` member wins (a duplicate later in the line is
beyond what a prefix can know); a prefix that ends inside a multi-byte UTF-8
character is read up to that character; invalid UTF-8 or JSON before the id,
or invalid UTF-8 inside it, means no id; whatever follows a complete id is
never looked at. Never raises on any input.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from typing import Any

_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class PeekedId:
    """An id found in a prefix (``value`` may be ``None``: the JSON null id)."""

    value: int | float | str | None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def peek_id(prefix: bytes) -> PeekedId | None:
    """The id of the JSON-RPC message whose line starts with ``prefix``, or
    ``None`` when the prefix does not show it completely."""
    text = _complete_utf8(prefix)
    try:
        return _scan_object(text)
    except (ValueError, RecursionError, IndexError):
        return None


def _complete_utf8(prefix: bytes) -> str:
    # final=False keeps an incomplete trailing character back instead of
    # failing on it. surrogateescape maps each invalid byte to U+DC80..U+DCFF,
    # so junk after the id costs nothing and junk in the id is detected.
    return codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(prefix, final=False)


def _escaped_bytes(value: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in value)


def _skip_ws(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def _scan_object(text: str) -> PeekedId | None:
    at = _skip_ws(text, 0)
    if text[at : at + 1] != "{":
        return None
    at += 1
    while True:
        at = _skip_ws(text, at)
        if text[at : at + 1] != '"':
            return None  # '}' (no id at all), the prefix ended, or not JSON
        key, at = _DECODER.raw_decode(text, at)  # a complete string, or ValueError
        at = _skip_ws(text, at)
        if text[at : at + 1] != ":":
            return None
        at = _skip_ws(text, at + 1)
        if key == "id":
            return _id_value(text, at)
        at = _skip_value(text, at)
        if text[at : at + 1] != ",":
            return None
        at += 1


def _id_value(text: str, at: int) -> PeekedId | None:
    if text[at : at + 1] in ("{", "["):
        return None  # not a valid id; skipping it could also cost a deep parse
    value, end = _DECODER.raw_decode(text, at)
    if isinstance(value, bool) or not isinstance(value, int | float | str | type(None)):
        return None
    if isinstance(value, str) and _escaped_bytes(value):
        return None  # invalid UTF-8 inside the id (or a lone-surrogate escape): nothing to echo
    if isinstance(value, int | float) and end >= len(text):
        return None  # the prefix ends inside the number: "12" may be "123"
    end = _skip_ws(text, end)
    # Whatever follows must still be JSON: a delimiter, or the prefix's end.
    return PeekedId(value) if text[end : end + 1] in ("", ",", "}") else None


def _skip_value(text: str, at: int) -> int:
    # A member before the id is parsed whole; the prefix is small (a few KiB),
    # and nesting deep enough to hit the recursion limit is caught by peek_id.
    _, end = _DECODER.raw_decode(text, at)
    return _skip_ws(text, end)
