"""Size, depth and node count of a parsed JSON value (§1.2 bounds).

§1.2 bounds structured content and metadata by encoded size, by nesting and by
node count without saying how each is counted. This module fixes one reading
and every validator uses it, so a bound means the same thing wherever it is
checked:

* **encoded size** -- UTF-8 bytes of the *compact* re-encoding
  (``separators=(",", ":")``, ``ensure_ascii=False``). The peer's own
  whitespace, escapes and number spelling are not seen here: the bound is on
  the value, not on how the peer happened to spell it. A lone surrogate (only
  reachable through a ``\\uD800``-style escape) cannot be written as UTF-8, so
  it is counted as the six-byte escape a compact encoder has to emit.
* **depth** -- the number of values on the longest root-to-leaf path. A
  scalar is depth 1; an array or object is one more than its deepest member
  (an empty one is depth 1). "Capped at 32 levels" therefore admits 31 nested
  containers around a scalar, or 32 nested empty containers.
* **node count** -- every value is one node: each container, each member of
  it, recursively. Object keys are not nodes (they are names, not values).

Every walk here is iterative: a 100,000-deep array from a hostile peer must be
measured, not crash the harness with ``RecursionError``.

The functions take values as :func:`json.loads` returns them (dict, list, str,
int, float, bool, None). On anything else :func:`encoded_size` raises
``TypeError`` as :func:`json.dumps` does; the walks count it as a leaf.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from .describe import Path as JsonPath
from .describe import utf8_len

__all__ = ["JsonPath", "depth", "encoded_size", "node_count", "oversized_keys", "utf8_len"]

_SURROGATE_LOW = "\ud800"
_SURROGATE_HIGH = "\udfff"
# A lone surrogate costs 3 bytes under "surrogatepass" but 6 ("\\udXXX") once
# escaped, which is what a compact encoder must emit for it.
_SURROGATE_ESCAPE_EXTRA = len("\\ud800") - len("\ud800".encode("utf-8", "surrogatepass"))


def _lone_surrogates(text: str) -> int:
    return sum(1 for ch in text if _SURROGATE_LOW <= ch <= _SURROGATE_HIGH)


def _string_size(text: str) -> int:
    encoded = json.dumps(text, ensure_ascii=False)
    try:
        return len(encoded.encode("utf-8"))
    except UnicodeEncodeError:
        size = len(encoded.encode("utf-8", "surrogatepass"))
        return size + _SURROGATE_ESCAPE_EXTRA * _lone_surrogates(text)


def _encoded_size_iterative(value: object) -> int:
    total = 0
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            # braces, one colon per member, commas between members
            total += 2 + 2 * len(item) - (1 if item else 0)
            for key, member in item.items():
                if not isinstance(key, str):
                    raise TypeError(f"object keys must be strings, not {type(key).__name__}")
                total += _string_size(key)
                stack.append(member)
        elif isinstance(item, list | tuple):
            total += 2 + max(len(item) - 1, 0)
            stack.extend(item)
        elif isinstance(item, str):
            total += _string_size(item)
        else:
            total += len(json.dumps(item))  # numbers, booleans, null: ASCII
    return total


def encoded_size(value: object) -> int:
    """UTF-8 bytes of the compact JSON encoding of ``value``."""
    try:
        # C encoder first: fast, and exact whenever it succeeds.
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    except (RecursionError, UnicodeEncodeError):
        # Too deep for the C encoder, or a lone surrogate: count by hand.
        return _encoded_size_iterative(value)


def depth(value: object) -> int:
    """Values on the longest root-to-leaf path (scalar 1, ``[]`` 1, ``[1]`` 2)."""
    deepest = 1
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        members = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if not members:
            continue
        below = level + 1
        if below > deepest:
            deepest = below
        for member in members:
            if isinstance(member, dict | list | tuple):
                stack.append((member, below))
    return deepest


def node_count(value: object) -> int:
    """Every value counts once: containers and all their descendants."""
    count = 1
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        members = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if not members:
            continue
        count += len(members)
        for member in members:
            if isinstance(member, dict | list | tuple):
                stack.append(member)
    return count


def oversized_keys(value: object, max_bytes: int) -> Iterator[tuple[JsonPath, str, int]]:
    """Every object key anywhere in ``value`` longer than ``max_bytes`` UTF-8.

    Yields ``(path, key, size)`` where ``path`` ends with the key itself.
    Paths are rebuilt only for offenders (each stack entry keeps a link to its
    parent), so a deep value costs linear time, not depth squared.
    """
    # Each entry: (value, link); link is None at the root, else (parent_link, step).
    stack: list[tuple[object, object]] = [(value, None)]
    while stack:
        item, link = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                size = utf8_len(key)
                if size > max_bytes:
                    yield (*_unlink(link), key), key, size
                if isinstance(member, dict | list | tuple):
                    stack.append((member, (link, key)))
        elif isinstance(item, list | tuple):
            for index, member in enumerate(item):
                if isinstance(member, dict | list | tuple):
                    stack.append((member, (link, index)))


def _unlink(link: object) -> JsonPath:
    steps: list[str | int] = []
    while link is not None:
        assert isinstance(link, tuple)
        link, step = link
        steps.append(step)
    return tuple(reversed(steps))
