"""What a certification is doing while it runs, on stderr.

On a terminal: one live line, redrawn a few times a second -- the phase, how
far it has come, how many requirements have failed so far, and the elapsed
time. The phases: ``scenario NAME`` (the fixed scenarios), ``sweep`` (one
generation calling every rule), ``scripted walk``, ``exploration: example
k/N, step s`` (the state machine's budget; never past N), and ``shrinking ID
(trace i/n): S steps left, R/M replays, T s of B s`` (each failure's trace
is replayed without steps while it still fails: the part that used to look
frozen). Elsewhere (a pipe, a CI log), and only with ``--verbose``: plain
lines, one when the phase changes (each example, each step shrinking takes
off) and one when a requirement fails for the first time, never a carriage
return or an escape sequence (the command line decides which).

It only *reads* the run's :class:`~conformance.evidence.Recorder` (its
``stage``, ``context`` and ``violations``) from a daemon thread; the run
never waits for it, and nothing it shows is a result.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from conformance.evidence import Recorder, Stage, StepContext
from conformance.safe_text import terminal

LIVE_INTERVAL_S = 0.2  # redraws per second on a terminal: 5
PLAIN_INTERVAL_S = 0.5
CLEAR_LINE = "\r\x1b[2K"


@dataclass(frozen=True)
class Phase:
    name: str  # "exploration", "sweep", "scenario frame-size", "shrinking EXT-...", "manifest"
    example: int | None = None
    step: int | None = None
    total: int | None = None  # the examples of the budget (None: the display's own budget)
    detail: str = ""  # shrinking: what is left of it

    @property
    def key(self) -> tuple[str, int | None, str]:
        """What a plain line is printed for when it changes (not the step of an example)."""
        return (self.name, self.example, self.detail.split(", ", 1)[0])


def phase_of(context: StepContext, stage: Stage | None = None, now: float | None = None) -> Phase:
    """The phase a recorder's stage and context name: shrinking a trace, a
    state machine's sweep, walk or exploration (its example counted from
    the start of exploration), a named scenario, or a phase of the run."""
    if stage is not None and stage.kind == "shrinking":
        where = f"shrinking {stage.name}" + (f" (trace {stage.trace}/{stage.traces})" if stage.traces > 1 else "")
        return Phase(where, detail=shrinking_detail(stage, now))
    if context.example is not None:
        kind = stage.kind if stage is not None else ""
        if kind == "sweep":
            return Phase("sweep", None, context.step)
        if kind == "walk":
            return Phase("scripted walk", None, context.step)
        if kind == "exploration" and stage is not None:
            return Phase("exploration", context.example - stage.first_example, context.step, stage.examples)
        return Phase("state machine", context.example, context.step)
    if context.scenario is not None:
        return Phase(f"scenario {context.scenario}")
    return Phase(context.phase or "starting")


def shrinking_detail(stage: Stage, now: float | None) -> str:
    """``7 steps left, 12/60 replays, 14.2s of 30s`` (the time only given a clock)."""
    parts = [] if stage.steps_left is None else [f"{stage.steps_left} step{'s' * (stage.steps_left != 1)} left"]
    parts.append(f"{stage.replays}/{stage.max_replays} replays")
    if now is not None and stage.budget_s > 0:
        spent = min(max(now - stage.started_at, 0.0), stage.budget_s)
        parts.append(f"{spent:.1f}s of {stage.budget_s:g}s")
    return ", ".join(parts)


def status_line(phase: Phase, failing: int, elapsed_s: float, budget: int) -> str:
    """One progress line: ``[  12.3s] exploration: example 4/30, step 7 | 2 failing``.
    An example is shown within its budget, never past it (``31/30``): the
    examples a state machine replays beyond it (Hypothesis may) count as its last."""
    where = phase.name
    total = phase.total if phase.total is not None else budget
    if phase.example is not None:
        shown = min(max(phase.example, 1), total) if total > 0 else phase.example
        where += f": example {shown}/{total}" if total > 0 else f": example {shown}"
        if phase.step is not None:
            where += f", step {phase.step}"
    elif phase.step is not None:
        where += f": step {phase.step}"
    if phase.detail:
        where += f": {phase.detail}"
    return f"[{elapsed_s:6.1f}s] {terminal(where)} | {failing} failing"


class Progress:
    """Use as ``with Progress(sys.stderr, live=..., budget=N) as p:`` and hand
    ``p.watch`` to the runner: it calls it with the run's recorder first, then
    (a run in parts, runner/parallel.py, in this process) with each part's
    recorder as that part starts; the newest one's phase is shown, and the
    failures of all of them count."""

    def __init__(
        self,
        stream: TextIO,
        *,
        live: bool,
        budget: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.live = live
        self.budget = budget
        self.clock = clock
        self.recorder: Recorder | None = None  # the run's
        self.current: Recorder | None = None  # the part of the run recording now
        self._failing: dict[str, None] = {}  # every part's failing requirements, in order seen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_phase: tuple[str, int | None, str] | None = None
        self._reported: set[str] = set()
        self._drawn = False

    def watch(self, recorder: Recorder) -> None:
        if self.recorder is None:
            self.recorder = recorder
        self.current = recorder

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._loop, name="octet-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._drawn:
            self._write(CLEAR_LINE)

    def _loop(self) -> None:
        interval = LIVE_INTERVAL_S if self.live else PLAIN_INTERVAL_S
        while not self._stop.wait(interval):
            self.tick()

    def tick(self) -> None:
        """Draw (terminal) or print what changed (plain); public for tests."""
        run, recorder = self.recorder, self.current
        if run is None or recorder is None:
            return
        try:
            self._failing.update(dict.fromkeys(run.violations))
            self._failing.update(dict.fromkeys(recorder.violations))
        except RuntimeError:  # the run added one while we copied: next tick
            return
        failing = tuple(self._failing)
        # Shrinking happens on the run's recorder, after the parts it watched.
        stage = run.stage if run.stage.kind == "shrinking" else recorder.stage
        context = run.context if run.stage.kind == "shrinking" else recorder.context
        phase = phase_of(context, stage, self.clock())
        line = status_line(phase, len(failing), run.elapsed(), self.budget)
        if self.live:
            width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
            self._write(CLEAR_LINE + line[:width])
            self._drawn = True
            return
        for requirement in failing:
            if requirement not in self._reported:
                self._reported.add(requirement)
                self._write(f"{line.split(']', 1)[0]}] {terminal(requirement)}: first violation\n")
        if phase.key != self._last_phase:
            self._last_phase = phase.key
            self._write(line + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth failing a run for
            self._stop.set()
