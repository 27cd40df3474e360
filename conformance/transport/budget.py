"""The run's wall-time budget, enforced where every wait happens.

A certification has a wall-time budget (conformance/profiles.py). It is a
backstop, not a pace: a correct target never comes near it, so how far a run
gets never depends on the machine for one. Against a target that costs a
full deadline at every step, it is what makes the run end.

Every wait of the harness on a target process goes through
:class:`~conformance.transport.process.TargetProcess` (reading its stdout,
writing its stdin, waiting for its exit) and every target is spawned there,
so the budget is enforced there: once the run's deadline has passed, those
calls raise :class:`BudgetSpent` instead of waiting or returning a timeout.
A wait the budget cut short therefore never turns into a finding: no
"never answered" is ever recorded because the budget ran out. The runners
catch it between the parts of a run and report what was left as
``untested: run budget spent`` (conformance/verdicts.py).

The deadline is on ``time.monotonic()``, one clock for every process of the
machine, so worker processes of a ``--jobs`` run are given the same instant.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

_DEADLINE: list[float] = []  # a stack: the innermost run's deadline is last


class BudgetSpent(BaseException):
    """The run's budget ran out. A BaseException, like KeyboardInterrupt and
    unlike a target's fault: Hypothesis re-raises it instead of taking it for a
    failing example (which it would replay and shrink), and the guards that
    turn harness failures into ``error`` verdicts (``except Exception``) let
    it through to the runner."""


@contextlib.contextmanager
def run_deadline(deadline: float | None) -> Iterator[None]:
    """Within the block, waits end at ``deadline`` (a ``time.monotonic()``
    instant; None: no budget) by raising :class:`BudgetSpent`."""
    if deadline is None:
        yield
        return
    _DEADLINE.append(deadline)
    try:
        yield
    finally:
        _DEADLINE.pop()


@contextlib.contextmanager
def unbudgeted() -> Iterator[None]:
    """Within the block, no budget applies: for ending targets after the
    budget ran out (each such wait has its own short bound)."""
    saved = _DEADLINE[:]
    _DEADLINE.clear()
    try:
        yield
    finally:
        _DEADLINE[:] = saved


def deadline() -> float | None:
    """The deadline in force (None: no budget)."""
    return _DEADLINE[-1] if _DEADLINE else None


def spent() -> bool:
    return bool(_DEADLINE) and time.monotonic() >= _DEADLINE[-1]


def check() -> None:
    """Raise :class:`BudgetSpent` once the deadline has passed."""
    if spent():
        raise BudgetSpent("the run's wall-time budget is spent")


def cap(timeout: float) -> float:
    """``timeout``, cut to what is left of the budget; raises when nothing is."""
    check()
    if not _DEADLINE:
        return timeout
    return min(timeout, _DEADLINE[-1] - time.monotonic())
