"""Member checks the host RPC validators need beyond :mod:`.members`.

Same conventions as :mod:`.members` (an optional member that is ``null``
counts as absent; extra members are allowed unless a section closes the
object; messages name the member, the expectation and the value).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from .describe import Path, kind
from .members import excerpt, is_number, name
from .violations import Violation


def number_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: Path = (), *, required: bool
) -> Iterator[Violation]:
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected a number", path)
        return
    if not is_number(obj[key]):
        yield Violation(requirement, f"{name(root, where)} is {kind(obj[key])}; expected a number", where)


def required_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: Path = ()
) -> Iterator[Violation]:
    """A member that must exist, whatever its value (``content: unknown``)."""
    if key not in obj:
        yield Violation(requirement, f"{name(root, path)} has no {key}", path)


def array_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: Path = (), *, required: bool
) -> Iterator[Violation]:
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected an array", path)
        return
    if not isinstance(obj[key], list):
        yield Violation(requirement, f"{name(root, where)} is {kind(obj[key])}; expected an array", where)


def timestamp_member(
    obj: Mapping[str, object], key: str, requirement: str, root: str, path: Path = (), *, required: bool
) -> Iterator[Violation]:
    """An ISO-8601 date-time string (``Z`` or an offset accepted)."""
    where = (*path, key)
    if key not in obj or (not required and obj[key] is None):
        if required:
            yield Violation(requirement, f"{name(root, path)} has no {key}; expected an ISO-8601 time", path)
        return
    value = obj[key]
    if not isinstance(value, str) or parse_time(value) is None:
        shown = excerpt(value) if isinstance(value, str) else kind(value)
        yield Violation(requirement, f"{name(root, where)} is {shown}; expected an ISO-8601 time", where)


def parse_time(value: str) -> datetime | None:
    """An ISO-8601 date-time, or None. Parsing only: no clock is read."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if "T" in value or " " in value else None


def objects(value: object) -> list[tuple[int, dict[str, object]]]:
    """The object items of an array, with their indices (others skipped)."""
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def non_objects(value: object, requirement: str, root: str, path: Path) -> Iterator[Violation]:
    """A violation for each item of an array that is not an object."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                where = (*path, index)
                yield Violation(requirement, f"{name(root, where)} is {kind(item)}; expected an object", where)
