"""What a validator yields when the peer breaks a rule of the catalog."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import ParamSpec

P = ParamSpec("P")


@dataclass(frozen=True)
class Violation:
    """One broken requirement, with enough context to act on it.

    ``message`` names the field, the limit and the observed value
    ("content has 257 parts; limit 256"). ``path`` is the JSON path inside the
    frame (empty for whole-frame problems); ``frame_index`` is the index of the
    offending frame in the direction it travelled, when one frame is to blame.
    """

    requirement: str
    message: str
    path: tuple[str | int, ...] = ()
    frame_index: int | None = None

    def at(self, *prefix: str | int) -> Violation:
        """The same violation, nested under ``prefix`` in the JSON path."""
        return Violation(self.requirement, self.message, (*prefix, *self.path), self.frame_index)

    def in_frame(self, index: int | None) -> Violation:
        return Violation(self.requirement, self.message, self.path, index)

    def where(self) -> str:
        """A JSON-pointer-like rendering of ``path`` ("" for the whole frame)."""
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)


@dataclass(frozen=True)
class Exercise:
    """Evidence that a requirement was checked (and, by itself, not violated)."""

    requirement: str
    detail: str = ""


Finding = Violation | Exercise


@functools.lru_cache(maxsize=64)
def exercises_of(requirements: tuple[str, ...]) -> tuple[Exercise, ...]:
    """:func:`exercise_of` for each id, for the same few tuples of ids that
    every frame evaluates."""
    return tuple(exercise_of(r) for r in requirements)


@functools.cache
def exercise_of(requirement: str) -> Exercise:
    """The :class:`Exercise` of ``requirement`` (no detail): frozen, so one
    instance per id serves every frame instead of a new one each time."""
    return Exercise(requirement)


def rule(requirement: str) -> Callable[[Callable[P, Iterable[Violation]]], Callable[P, Iterator[Finding]]]:
    """Tie a small check function to the requirement it covers.

    Calling the decorated function yields an :class:`Exercise` for
    ``requirement`` (the rule was evaluated) followed by whatever violations
    the body yields. Bodies yield ``Violation``s only; the requirement id is
    written once, here, so a body cannot cite the wrong id by accident and cite the
    id explicitly, so one rule may also report a related requirement.
    """

    exercised = Exercise(requirement)  # frozen: one instance serves every call

    def decorate(fn: Callable[P, Iterable[Violation]]) -> Callable[P, Iterator[Finding]]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> Iterator[Finding]:
            # Bodies are generator functions, so calling one runs nothing yet:
            # a chain yields the same findings in the same order, lazily, for
            # less than a generator wrapped around a generator (every frame
            # goes through a few dozen rules).
            return itertools.chain((exercised,), fn(*args, **kwargs))

        wrapper.requirement = requirement  # type: ignore[attr-defined]
        return wrapper

    return decorate
