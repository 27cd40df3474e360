"""Schedules: which frames go in which write, in what order, held how long.

Given the frames a step wants to write and which must come after which (a
cancellation after its request), draw a :class:`Schedule`: a dependency-
respecting order, coalescing of neighbours into one write, a hold until the
target has written N more frames or answered an earlier request, and byte
splits. Everything shrinks toward the plain case: original order, one write
per frame, no holds, no splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from conformance.transport.schedule import Outgoing, Schedule, Write


def schedules(
    frames: Sequence[Outgoing],
    *,
    depends: Sequence[Sequence[int]] | None = None,
    max_after: int = 2,
    max_splits: int = 2,
) -> st.SearchStrategy[Schedule]:
    """Schedules of ``frames``; ``depends[i]`` lists the frames that must be
    written before frame ``i`` or in the same write."""
    if not frames:
        raise ValueError("a schedule needs at least one frame")
    needs = [tuple(d) for d in depends] if depends is not None else [() for _ in frames]
    if len(needs) != len(frames):
        raise ValueError(f"depends has {len(needs)} entries for {len(frames)} frames")
    return _schedules(tuple(frames), tuple(needs), max_after, max_splits)


@st.composite
def _schedules(
    draw: st.DrawFn,
    frames: tuple[Outgoing, ...],
    depends: tuple[tuple[int, ...], ...],
    max_after: int,
    max_splits: int,
) -> Schedule:
    order = _order(draw, len(frames), depends)
    # The same draws for every frame, whether it opens a write or joins the
    # previous one, so the plain schedule is also the shortest to describe
    # (Hypothesis shrinks toward fewer choices first).
    writes: list[Write] = []
    written: list[Any] = []  # ids of the requests in earlier writes
    for position, i in enumerate(order):
        joins = draw(st.booleans()) if position else False  # coalesce with the previous write
        after = draw(st.integers(0, max_after))
        held = draw(st.booleans())  # hold until an earlier request is answered
        pick = draw(st.integers(0, len(frames) - 1))
        awaited = written[pick % len(written)] if held and written else None
        cuts = draw(st.lists(st.integers(1, len(frames[i].data) - 1), max_size=max_splits, unique=True))
        if joins:
            last = writes[-1]
            writes[-1] = Write((*last.frames, frames[i]), last.after, last.awaits, last.split_at)
        else:
            if writes:
                written.extend(f.id for f in writes[-1].frames if f.kind == "request")
            awaits = (awaited,) if awaited is not None else ()
            writes.append(Write((frames[i],), after=after, awaits=awaits, split_at=tuple(sorted(cuts))))
    return Schedule(tuple(writes))


def _order(draw: st.DrawFn, n: int, depends: tuple[tuple[int, ...], ...]) -> list[int]:
    order: list[int] = []
    remaining = list(range(n))
    while remaining:
        ready = [i for i in remaining if all(d in order for d in depends[i])]
        if not ready:
            raise ValueError(f"depends has a cycle among frames {remaining}")
        pick = ready[draw(st.integers(0, n - 1)) % len(ready)]  # a draw even when one is ready: see above
        order.append(pick)
        remaining.remove(pick)
    return order
