"""Strict JSON text parsing for frames (RFC 8259 as the wire requires).

Python's ``json`` accepts NaN/Infinity and silently keeps the last of
duplicate member names; the wire core must see both. Big integers stay exact
(Python ints), so ids such as 2**64 - 1 survive a round trip.

Every frame is parsed, so the common case is kept cheap: one decoder built
once, whose object hook only checks that no member name repeated. A frame
where one did -- or that fails to parse at all -- is parsed again by the
reporting decoder, which names every duplicate. Both run the same scanner
with the same constant and number handling, so the value and the error are
the reporting decoder's whenever it matters (tests compare the two).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class _NonFinite(ValueError):
    pass


class _Duplicate(Exception):
    """Raised by the fast decoder's hook: this frame needs the reporting one."""


def _reject_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not a JSON value")


@dataclass(frozen=True)
class ParsedJson:
    value: Any
    duplicate_keys: tuple[str, ...]  # member names that appeared twice in one object


@dataclass(frozen=True)
class JsonError:
    reason: str


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(items)
    if len(obj) != len(items):
        raise _Duplicate
    return obj


_FAST = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_constant=_reject_constant)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def parse_json(payload: bytes) -> ParsedJson | JsonError:
    """Parse one frame's payload; never raises."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JsonError(f"not UTF-8: invalid byte at offset {exc.start}")
    try:
        return ParsedJson(_FAST.decode(text), ())
    except Exception:  # a duplicate, or an error the reporting decoder words
        return _parse_reporting(text)


def _parse_reporting(text: str) -> ParsedJson | JsonError:
    """The reference semantics: every duplicate member name, in text order."""
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            seen: set[str] = set()
            duplicates.extend(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        return obj

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=_reject_constant)
    except _NonFinite as exc:
        return JsonError(str(exc))
    except RecursionError:
        return JsonError("nesting too deep to parse")
    except ValueError as exc:  # JSONDecodeError is a ValueError
        return JsonError(f"invalid JSON: {exc}")
    return ParsedJson(value, tuple(duplicates))


def dumps(value: Any) -> bytes:
    """Compact UTF-8 encoding used for every frame this suite writes."""
    return _ENCODER.encode(value).encode("utf-8")
