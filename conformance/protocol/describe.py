"""How validators name JSON values and places in their messages.

Messages have to say *which* field broke *which* bound with *what* value; these
helpers keep that wording uniform across validator modules. Pure functions,
no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .limits import MESSAGE_EXCERPT_CHARS

Path = tuple[str | int, ...]


def kind(value: object) -> str:
    """The JSON type of ``value`` with an article ("an array", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    # Not reachable from decoded JSON; named anyway so a caller passing a
    # Python object still gets a message instead of an exception.
    return f"a {type(value).__name__}"


def dotted(path: Sequence[str | int]) -> str:
    """``("tools", 2, "name")`` -> ``"tools[2].name"``; ``()`` -> ``"result"``.

    The empty path is rendered as the caller's root name so a message never
    starts with an empty subject. Member names longer than the message
    excerpt are cut short: a peer's 1 MiB key must not be copied into every
    message about it (the ``Violation.path`` keeps the exact key).
    """
    if not path:
        return "result"
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            key = part if len(part) <= MESSAGE_EXCERPT_CHARS else part[: MESSAGE_EXCERPT_CHARS - 1] + "…"
            out += f".{key}" if out else key
    return out


def utf8_len(text: str) -> int:
    """Encoded size of ``text`` in bytes.

    A decoded JSON string may hold a lone surrogate ("\\ud800" escapes); it is
    counted as the three bytes it would take rather than raising, because a
    validator must report, not crash, on whatever the peer sent.
    """
    return len(text.encode("utf-8", "surrogatepass"))


def duplicates(entries: Iterable[tuple[int, str]]) -> dict[str, list[int]]:
    """Each value of ``(index, value)`` pairs occurring more than once, with
    every index it occurs at (indices are the caller's, so entries filtered
    out beforehand do not shift them)."""
    seen: dict[str, list[int]] = {}
    for index, value in entries:
        seen.setdefault(value, []).append(index)
    return {value: where for value, where in seen.items() if len(where) > 1}
