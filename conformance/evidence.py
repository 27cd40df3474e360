"""Findings gathered during a run, per requirement -- the raw material of
verdicts. Peers add to it; the runner turns it into verdicts; reports only
read the verdicts.

What a finding *says* (the violation's message and JSON path) must not
depend on timing: two runs with the same seed against the same target give
the same messages. What a run merely *measured* -- durations, how many times
a late frame was seen, which frame index it had, the target's stderr --
travels beside the message (``Observed.measured`` and friends) and ends up
in the matrix's run details, never in its compared results
(docs/matrix-format.md).
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .protocol.violations import Exercise, Finding, Violation
from .transport.trace import HOST, TARGET, Mark, Shown, Trace

MAX_KEPT_VIOLATIONS = 5  # per requirement: enough to act on, bounded in size
MAX_KEPT_STRAYS = 50  # stray processes noted per run


@dataclass(frozen=True)
class StepContext:
    """Where findings are being made, as fields: a state machine's example
    and step (with the offer it drew, or the API it runs), a named scenario,
    or a phase of the run ("manifest", "shrinking ..."). ``str()`` is the
    text reports and trace headers show ("example 3, step 7, offer [...]");
    code reads the fields, never that text."""

    phase: str = ""
    scenario: str | None = None
    example: int | None = None
    step: int | None = None
    offer: str | None = None
    api: str | None = None

    def __str__(self) -> str:
        parts = [f"scenario={self.scenario}"] if self.scenario is not None else []
        parts += [self.phase] if self.phase else []
        parts += [f"example {self.example}"] if self.example is not None else []
        parts += [f"step {self.step}"] if self.step is not None else []
        parts += [f"offer [{self.offer}]"] if self.offer is not None else []
        parts += [f"api {self.api}"] if self.api is not None else []
        return ", ".join(parts)


@dataclass(frozen=True)
class Stage:
    """Which phase of a run is going on, for a progress display only
    (runner/progress.py): nothing judged or written reads it. The runners set
    it as a phase starts; a state machine's example and step stay in the
    recorder's :class:`StepContext`.

    ``kind``: ``starting``, ``sweep``, ``scenarios``, ``walk`` (a scripted
    example), ``exploration`` or ``shrinking``. Exploration: examples are
    numbered across the whole run (the sweep's and a scripted walk's come
    first), so ``first_example`` is the number before its first, and
    ``examples`` its budget. Shrinking: ``name`` is the requirement whose
    trace is being shrunk, ``trace`` of ``traces``, with ``steps_left``,
    ``replays`` of ``max_replays`` and ``budget_s`` seconds from
    ``started_at`` (time.monotonic)."""

    kind: str = "starting"
    name: str = ""
    first_example: int = 0
    examples: int | None = None
    trace: int = 0
    traces: int = 0
    steps_left: int | None = None
    replays: int = 0
    max_replays: int = 0
    budget_s: float = 0.0
    started_at: float = 0.0


@dataclass(frozen=True)
class Observed:
    """A violation with where and when it happened in this run."""

    violation: Violation
    context: StepContext
    stderr: str = ""
    after_s: float = 0.0  # seconds from the start of the run
    # Numbers the run measured for this violation (e.g. how long a cancelled
    # request took to settle), kept out of the message so it stays the same
    # from run to run.
    measured: tuple[tuple[str, float], ...] = ()
    # The entries of the generation's trace it was judged on (docs/trace-format.md).
    evidence: tuple[Mark, ...] = ()


# How long a wait lasts once its requirement has already failed on a deadline
# (Recorder.deadline_s).
SHORT_DEADLINE_S = 0.5
# The evidence of a requirement a run left because its wall-time budget ran
# out (conformance/profiles.py: a backstop a correct target never reaches).
BUDGET_SPENT = "run budget spent"


@dataclass(frozen=True)
class Carried:
    """What one part of a run learned about the target that later parts
    start from (runner/parallel.py): the requirements that failed on a
    deadline (their waits are short from then on) and whether a generation
    sat on initialize past the deadline (later ones are not started)."""

    short_deadlines: tuple[tuple[str, str], ...] = ()
    hung_initializations: int = 0


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# Rules judged on a pair of frames: the trace marks both (a second answer and
# the first one it repeats).
PAIRED_RULES = frozenset({"JSONRPC-5-one-response"})
NO_REQUEST = object()


def marks_of(trace: Trace, v: Violation, request: Any = NO_REQUEST) -> tuple[Mark, ...]:
    """The entries of ``trace`` a violation was judged on: the frame it names
    (with the earlier answers to the same id, for a rule judged on a pair);
    for a judgement about an absence, the write that carried ``request``;
    else the last entry recorded when it was judged."""
    if v.frame_index is not None and (at := trace.frame(v.frame_index)) is not None:
        judged = Mark(TARGET, at, "the frame judged")
        if v.requirement not in PAIRED_RULES:
            return (judged,)
        earlier = [Mark(TARGET, i, "an earlier answer to the same id") for i in trace.answers_like(at) if i < at]
        return (*earlier, judged)
    if request is not NO_REQUEST and (write := trace.write_carrying(request)) is not None:
        return (Mark(HOST, write, f"the write carrying request {request!r}"),)
    latest = trace.latest()
    return () if latest is None else (Mark(latest.dir, latest.index, "the last entry when it was judged"),)


def _order(o: Observed) -> list[Any]:
    """A content order for violations: message (numbers compared as numbers,
    so request 9 comes before request 10), then JSON path."""
    parts: list[Any] = [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", o.violation.message))]
    return [parts, o.violation.where()]


@dataclass
class Recorder:
    exercised: dict[str, int] = field(default_factory=dict)
    violations: dict[str, list[Observed]] = field(default_factory=dict)
    violation_counts: dict[str, int] = field(default_factory=dict)
    negotiated_features: set[str] = field(default_factory=set)
    api_versions: set[str] = field(default_factory=set)
    harness_errors: list[str] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)  # target descendants found outside their process group
    hung_initializations: int = 0
    started_at: float = field(default_factory=time.monotonic)
    started_utc: str = field(default_factory=utc_now)  # run metadata: when the run began
    # seconds from the start of the run to the first violation, per requirement
    # (benchmarks report it as time-to-detect)
    first_violation_after: dict[str, float] = field(default_factory=dict)
    trace_dir: Path | None = None  # where generations that first violate a requirement save their trace
    traces: dict[str, Path] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)  # profile, seed: stamped on traces
    context: StepContext = field(default_factory=StepContext)
    # The requirement ids this run judges (None: all). Violations of any
    # other are not recorded, so they leave no trace and are never shrunk.
    judged: frozenset[str] | None = None
    # requirement -> where it first failed on a deadline: later waits judged
    # against it are short (the verdict cannot change; only time would be lost)
    short_deadlines: dict[str, str] = field(default_factory=dict)
    # requirement -> why the run could not judge it (the first reason given):
    # an ``untested`` verdict says this instead of "never exercised"
    untested_reasons: dict[str, str] = field(default_factory=dict)
    # Where the run's wall-time budget ran out (None: it did not). What the run
    # had not judged by then is untested (verdicts.decide), never a pass.
    budget_spent: str | None = None
    # The phase going on (set as it starts, read by a progress display only).
    stage: Stage = field(default_factory=Stage)

    def carried(self) -> Carried:
        """What later parts of the run start from (see :class:`Carried`)."""
        return Carried(tuple(self.short_deadlines.items()), self.hung_initializations)

    def carry(self, carried: Carried) -> None:
        """Start from what an earlier part of the run learned."""
        for requirement, where in carried.short_deadlines:
            self.short_deadlines.setdefault(requirement, where)
        self.hung_initializations = max(self.hung_initializations, carried.hung_initializations)

    def spend_budget(self) -> None:
        """The run's budget ran out here: nothing more is judged."""
        if self.budget_spent is None:
            self.budget_spent = str(self.context) or "between the parts of the run"

    # The trace of the generation being driven: a violation judged without
    # naming a trace marks its entries there (peers register it, see watch()).
    trace: Trace | None = None

    def watch(self, trace: Trace) -> None:
        """Violations judged from now on (without a trace of their own) are marked in ``trace``."""
        self.trace = trace

    def unwatch(self, trace: Trace | None) -> None:
        if trace is not None and self.trace is trace:
            self.trace = None

    def add(self, findings: Iterable[Finding], *, stderr: str = "", trace: Trace | None = None) -> None:
        exercised = self.exercised
        for f in findings:
            if isinstance(f, Exercise):
                exercised[f.requirement] = exercised.get(f.requirement, 0) + 1
            else:
                self.violate(f, stderr=stderr, trace=trace)

    def violate(
        self,
        v: Violation,
        *,
        stderr: str = "",
        measured: Mapping[str, float] | None = None,
        request: Any = NO_REQUEST,
        trace: Trace | None = None,
    ) -> None:
        """Record ``v``. Whatever was measured about it goes in ``measured``
        (name -> number), not in ``v.message``. It is marked in ``trace``
        (default: the watched one) on the frame it names, else on the write
        carrying ``request`` (a judgement about an absence: no answer to it),
        else on the trace's last entry (:func:`marks_of`)."""
        if self.judged is not None and v.requirement not in self.judged:
            return
        after = time.monotonic() - self.started_at
        self.exercised[v.requirement] = self.exercised.get(v.requirement, 0) + 1
        self.violation_counts[v.requirement] = self.violation_counts.get(v.requirement, 0) + 1
        self.first_violation_after.setdefault(v.requirement, after)
        kept = self.violations.setdefault(v.requirement, [])
        trace = trace if trace is not None else self.trace
        marks = marks_of(trace, v, request) if trace is not None else ()
        seen = Observed(v, self.context, stderr, after, tuple(sorted((measured or {}).items())), marks)
        if trace is not None:
            _show(trace, seen)
        if kept and kept[0].context == self.context and _order(seen) < _order(kept[0]):
            # Several violations in the step that first broke the rule (say,
            # two concurrent calls): which frame the target wrote first is
            # timing, so the one reported first is chosen by content instead.
            kept.insert(0, seen)
            del kept[MAX_KEPT_VIOLATIONS:]
        elif len(kept) < MAX_KEPT_VIOLATIONS:
            kept.append(seen)

    def first_contexts(self) -> dict[str, str]:
        """Requirement id -> the context of its first kept violation."""
        return {rid: str(kept[0].context) for rid, kept in self.violations.items() if kept}

    def missed_deadline(self, requirement: str) -> None:
        """``requirement`` just failed because a wait ran out: from now on, waits
        judged only against it use :data:`SHORT_DEADLINE_S`."""
        self.short_deadlines.setdefault(requirement, str(self.context))

    def deadline_s(self, judged: str | Collection[str], full_s: float) -> float:
        """How long to wait for something judged against the requirement
        ``judged`` (or each of several): the full time until each has failed
        on a deadline, then short. A short wait can only add violations of
        requirements that have already failed, and what they say never names
        the wait, so no verdict or evidence changes; a target that hangs stops
        costing a full deadline per step."""
        requirements = (judged,) if isinstance(judged, str) else judged
        shortened = bool(requirements) and all(r in self.short_deadlines for r in requirements)
        return min(full_s, SHORT_DEADLINE_S) if shortened else full_s

    def untestable(self, reason: str, *requirements: str) -> None:
        """The run could not judge ``requirements`` here, for ``reason`` (say,
        the target refused a request shape the document does not define).
        Only the verdict's evidence changes: a requirement judged elsewhere
        in the run keeps that verdict."""
        for r in requirements:
            self.untested_reasons.setdefault(r, reason)

    def exercise(self, *requirements: str) -> None:
        for r in requirements:
            self.exercised[r] = self.exercised.get(r, 0) + 1

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at


def _show(trace: Trace, seen: Observed) -> None:
    """Keep in ``trace`` the violation it shows for the requirement: the
    first one, or one of the same step that comes first by content (the
    rule :meth:`Recorder.violate` applies to a run's evidence)."""
    rid = seen.violation.requirement
    shown = Shown(seen.violation.message, str(seen.context), seen.evidence, _order_key(seen))
    before = trace.shown.get(rid)
    if before is None or (before.context == shown.context and shown.order < before.order):
        trace.shown[rid] = shown


def _order_key(o: Observed) -> tuple[Any, ...]:
    parts, where = _order(o)
    return (tuple(parts), where)
