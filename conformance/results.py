"""What a certification run produced, as reports read it.

It sits below the runner (ARCHITECTURE: imports point down), so
:mod:`conformance.report` reads a run without importing the code that made it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.evidence import Recorder
from conformance.manifest import Manifest
from conformance.profiles import Profile
from conformance.verdicts import Verdict


@dataclass(frozen=True)
class RunResult:
    manifest: Manifest
    profile: Profile
    seed: int
    verdicts: tuple[Verdict, ...]
    harness_errors: tuple[str, ...]
    detected_after: dict[str, float]  # requirement -> seconds into the run of its first violation
    started: str = ""  # run metadata (UTC, ISO 8601): not part of the results
    duration_s: float = 0.0  # run metadata
    strays: tuple[str, ...] = ()  # run metadata: target descendants killed outside their process group
    # run metadata: requirement -> where it first failed on a deadline; later
    # waits judged against it were short (evidence.Recorder.deadline_s)
    short_deadlines: tuple[tuple[str, str], ...] = ()
    # run metadata: the run's wall-time budget (conformance/profiles.py) and
    # where it ran out (None: it did not; every unjudged requirement is then
    # untested, "run budget spent")
    budget_s: float = 0.0
    budget_spent: str | None = None
    role: str = "extension"  # the side certified ("host": ``manifest`` describes the driver)
    selection: str = ""  # the options that narrowed the judged requirements ("": all; conformance/selection.py)

    @classmethod
    def recorded(
        cls,
        manifest: Manifest,
        profile: Profile,
        seed: int,
        verdicts: Iterable[Verdict],
        recorder: Recorder,
        *,
        role: str = "extension",
        budget_s: float = 0.0,
    ) -> RunResult:
        """The result of a run: its verdicts, and the run details its recorder kept."""
        return cls(
            manifest,
            profile,
            seed,
            tuple(verdicts),
            tuple(recorder.harness_errors),
            recorder.first_violation_after,
            started=recorder.started_utc,
            duration_s=recorder.elapsed(),
            strays=tuple(recorder.strays),
            short_deadlines=tuple(recorder.short_deadlines.items()),
            budget_s=budget_s,
            budget_spent=recorder.budget_spent,
            role=role,
        )
