"""Member-level checks shared by the result and notification validators.

Each helper looks at one member of one JSON object and yields at most one
:class:`Violation` for the requirement it is given, with a message that names
the member (rendered from its path), the expectation and what was found.

Conventions shared by every validator that uses these helpers (each one is a
decision about text that does not say; see the module docs of the callers):

* An *optional* member whose value is ``null`` counts as absent. The document
  marks members optional (``alt?``) without saying whether ``null`` is an
  allowed spelling of "absent"; a host decoding into optional fields accepts
  it, so flagging it would be stricter than the text. Required members get no
  such allowance.
* "integer" means a JSON number with no fractional part -- ``3`` and ``3.0``
  alike, because JSON itself has one number type -- and never a boolean.
* Unknown extra members are always allowed: no section of the document
  closes these objects.
* Type names in messages come from :func:`.describe.kind`, so wording matches
  the other validator modules.
* Paths are relative to the value the validator received; callers prefix the
  frame location (``Violation.at("result")``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from .describe import Path as JsonPath
from .describe import kind
from .limits import MESSAGE_EXCERPT_CHARS
from .violations import Violation


def excerpt(value: object) -> str:
    """A short ``repr`` of a peer-supplied scalar, safe to put in a message.

    Containers are named by type only: their repr could be huge, or too deep
    to build at all.
    """
    if isinstance(value, str):
        return clip(repr(value[: MESSAGE_EXCERPT_CHARS + 1]))
    if value is None or isinstance(value, bool | int | float):
        try:
            return clip(repr(value))
        except ValueError:  # an integer past Python's digit limit
            return "a very large integer"
    return kind(value)


def clip(text: str) -> str:
    """``text`` cut to the message excerpt length (for third-party wording)."""
    if len(text) > MESSAGE_EXCERPT_CHARS:
        return text[: MESSAGE_EXCERPT_CHARS - 1] + "…"
    return text


def is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def name(root: str, path: JsonPath) -> str:
    """``root`` followed by ``path`` rendered like ``Violation.where``.

    Long member names are clipped: a peer's 1 MiB key must not be copied into
    every message about it (the path itself keeps the exact key).
    """
    return root + "".join(f"[{p}]" if isinstance(p, int) else f".{clip(p)}" for p in path)


def present(obj: Mapping[str, object], key: str) -> bool:
    """An optional member is present when it exists and is not ``null``."""
    return obj.get(key) is not None


def expected_object(value: object, requirement: str, root: str, path: JsonPath = ()) -> Violation:
    """The violation for a value that should have been an object."""
    return Violation(requirement, f"{name(root, path)} is {kind(value)}; expected an object", path)


def string_member(
    obj: Mapping[str, object],
    key: str,
    requirement: str,
    root: str,
    path: JsonPath = (),
    *,
    required: bool,
) -> Iterator[Violation]:
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected a string", path)
        return
    if not isinstance(obj[key], str):
        yield Violation(requirement, f"{name(root, where)} is {kind(obj[key])}; expected a string", where)


def nullable_string_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: JsonPath = ()
) -> Iterator[Violation]:
    """An optional member whose value is a string or ``null``."""
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        where = (*path, key)
        yield Violation(requirement, f"{name(root, where)} is {kind(value)}; expected a string or null", where)


def enum_member(
    obj: Mapping[str, object],
    key: str,
    allowed: Iterable[str],
    requirement: str,
    root: str,
    path: JsonPath = (),
    *,
    required: bool,
) -> Iterator[Violation]:
    choices = tuple(allowed)
    listing = ", ".join(choices)
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected one of {listing}", path)
        return
    value = obj[key]
    if not isinstance(value, str) or value not in choices:
        shown = excerpt(value) if isinstance(value, str) else kind(value)
        yield Violation(requirement, f"{name(root, where)} is {shown}; expected one of {listing}", where)


def bool_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: JsonPath = ()
) -> Iterator[Violation]:
    """An optional boolean member."""
    value = obj.get(key)
    if value is not None and not isinstance(value, bool):
        where = (*path, key)
        shown = excerpt(value) if isinstance(value, str) else kind(value)
        yield Violation(requirement, f"{name(root, where)} is {shown}; expected a boolean", where)


def integer_member(
    obj: Mapping[str, object],
    key: str,
    requirement: str,
    root: str,
    path: JsonPath = (),
    *,
    required: bool,
    minimum: int | None = None,
) -> Iterator[Violation]:
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected an integer", path)
        return
    value = obj[key]
    if not is_integer(value):
        shown = excerpt(value) if is_number(value) else kind(value)
        yield Violation(requirement, f"{name(root, where)} is {shown}; expected an integer", where)
    elif minimum is not None and isinstance(value, int | float) and value < minimum:
        message = f"{name(root, where)} is {excerpt(value)}; expected an integer >= {minimum}"
        yield Violation(requirement, message, where)


def number_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: JsonPath = ()
) -> Iterator[Violation]:
    """An optional number member."""
    value = obj.get(key)
    if value is not None and not is_number(value):
        where = (*path, key)
        yield Violation(requirement, f"{name(root, where)} is {kind(value)}; expected a number", where)
