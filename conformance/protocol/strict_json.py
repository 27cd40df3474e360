"""Strict JSON text parsing for frames (RFC 8259 as the wire requires).

Python's ``json`` accepts NaN/Infinity and silently keeps the last of
duplicate member names; the wire core must see both. Big integers stay exact
(Python ints), so ids such as 2**64 - 1 survive a round trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not a JSON value")


@dataclass(frozen=True)
class ParsedJson:
    value: Any
    duplicate_keys: tuple[str, ...]  # member names that appeared twice in one object


@dataclass(frozen=True)
class JsonError:
    reason: str


def parse_json(payload: bytes) -> ParsedJson | JsonError:
    """Parse one frame's payload; never raises."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JsonError(f"not UTF-8: invalid byte at offset {exc.start}")
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
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
