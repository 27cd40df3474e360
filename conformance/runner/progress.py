"""What a certification is doing while it runs, on stderr.

On a terminal: one live line, redrawn a few times a second -- the phase
(state machine, scenario, shrinking), examples done of the budget, how many
requirements have failed so far, and the elapsed time. Elsewhere (a pipe, a
CI log), and only with ``--verbose``: plain lines, one when the phase or the
example changes and one when a requirement fails for the first time, never
a carriage return or an escape sequence (the command line decides which).

It only *reads* the run's :class:`~conformance.evidence.Recorder` (its
``context`` and ``violations``) from a daemon thread; the run never waits
for it, and nothing it shows is a result.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from conformance.evidence import Recorder, StepContext
from conformance.safe_text import terminal

LIVE_INTERVAL_S = 0.2  # redraws per second on a terminal: 5
PLAIN_INTERVAL_S = 0.5
CLEAR_LINE = "\r\x1b[2K"


@dataclass(frozen=True)
class Phase:
    name: str  # "state machine", "scenario frame-size", "shrinking EXT-...", "manifest"
    example: int | None = None
    step: int | None = None


def phase_of(context: StepContext) -> Phase:
    """The phase a recorder's context names: a state machine's example and
    step, a named scenario, or a phase of the run ("shrinking X")."""
    if context.example is not None:
        return Phase("state machine", context.example, context.step)
    if context.scenario is not None:
        return Phase(f"scenario {context.scenario}")
    return Phase(context.phase or "starting")


def status_line(phase: Phase, failing: int, elapsed_s: float, budget: int) -> str:
    """One progress line: ``[  12.3s] state machine: example 4/30, step 7 | 2 failing``."""
    where = phase.name
    if phase.example is not None:
        where += f": example {phase.example}/{budget}"
        if phase.step is not None:
            where += f", step {phase.step}"
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
        self._last_phase = ""
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
        phase = phase_of(recorder.context)
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
        shown = f"{phase.name} {phase.example}"
        if shown != self._last_phase:
            self._last_phase = shown
            self._write(line + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth failing a run for
            self._stop.set()
