"""A certification's wall-time budget, as the runners apply it.

The budget (conformance/profiles.py: ``Profile.budget_s``) is a backstop a
correct target never reaches. The transport enforces it at every wait
(conformance/transport/budget.py: waits past the deadline raise
``BudgetSpent`` instead of timing out, so a wait the budget cut short never
becomes a finding); the runners run each part of a certification through
:func:`within_budget`, which ends the part there, keeps every finding made so
far and marks the run as cut off (``Recorder.spend_budget``). From then on
nothing else is started, and whatever the run had not judged is reported
``untested: run budget spent`` (conformance/verdicts.py). The ``fail`` and
``warn`` verdicts already found are kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.evidence import Recorder
from conformance.profiles import Profile
from conformance.transport import budget
from conformance.transport.budget import BudgetSpent, run_deadline, unbudgeted

__all__ = ["BudgetSpent", "deadline_of", "run_deadline", "unbudgeted", "within_budget"]


def deadline_of(
    recorder: Recorder, profile: Profile, role: str, patience_s: float | None, budget_s: float | None = None
) -> float:
    """The run's deadline on ``time.monotonic()``: its start plus the budget
    (``budget_s``, or the profile's for ``role`` and this patience)."""
    seconds = profile.budget_s(role, patience_s) if budget_s is None else budget_s
    return recorder.started_at + seconds


def within_budget(recorder: Recorder, part: Callable[[], Any]) -> bool:
    """Run ``part`` unless the budget is spent; False (and the recorder marked)
    when the budget ran out before or during it."""
    if recorder.budget_spent is not None:
        return False
    try:
        budget.check()
        part()
    except BudgetSpent:
        recorder.spend_budget()
        return False
    return True


def left_s() -> float | None:
    """Seconds left of the budget in force (None: no budget)."""
    deadline = budget.deadline()
    return None if deadline is None else max(0.0, deadline - time.monotonic())
