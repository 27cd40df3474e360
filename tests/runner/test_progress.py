"""The progress display (conformance/runner/progress.py): a live line on a
terminal (driven under a pseudo-terminal with pexpect), plain lines
elsewhere, nothing at all with --quiet."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from conformance.evidence import Recorder, Stage, StepContext
from conformance.protocol.violations import Violation
from conformance.runner.progress import CLEAR_LINE, Phase, Progress, phase_of, status_line

ROOT = Path(__file__).resolve().parents[2]


def test_phases_are_read_from_the_recorder_context() -> None:
    assert phase_of(StepContext(example=3, step=7, offer="all")) == Phase("state machine", 3, 7)
    assert phase_of(StepContext("machine", example=2, api="0.2")) == Phase("state machine", 2, None)
    assert phase_of(StepContext(scenario="frame-size")) == Phase("scenario frame-size")
    assert phase_of(StepContext(scenario="stubborn_shutdown", api="0.2")) == Phase("scenario stubborn_shutdown")
    assert phase_of(StepContext("shrinking EXT-1.9-x")) == Phase("shrinking EXT-1.9-x")
    assert phase_of(StepContext()) == Phase("starting")
    line = status_line(Phase("state machine", 4, 7), 2, 12.34, 30)
    assert line == "[  12.3s] state machine: example 4/30, step 7 | 2 failing"
    assert "\\x1b" in status_line(Phase("scenario \x1b[31m"), 0, 0, 1)  # escaped, never raw


def test_every_phase_has_its_line() -> None:
    """Sweep, scenarios, scripted walk, exploration and shrinking (issue 25 item 3)."""
    example = StepContext(example=5, step=3)
    assert phase_of(example, Stage("sweep")) == Phase("sweep", None, 3)
    assert phase_of(example, Stage("walk")) == Phase("scripted walk", None, 3)
    assert phase_of(example, Stage("exploration", first_example=1, examples=30)) == Phase("exploration", 4, 3, 30)
    assert phase_of(StepContext(scenario="wave1"), Stage("scenarios")) == Phase("scenario wave1")
    assert status_line(phase_of(example, Stage("sweep")), 0, 1.0, 30) == "[   1.0s] sweep: step 3 | 0 failing"
    exploring = phase_of(example, Stage("exploration", first_example=1, examples=30))
    assert status_line(exploring, 1, 2.0, 99) == "[   2.0s] exploration: example 4/30, step 3 | 1 failing"
    shrinking = Stage(
        "shrinking", "JSONRPC-5-one-response", trace=2, traces=3, steps_left=7, replays=12, max_replays=60,
        budget_s=30.0, started_at=100.0,
    )  # fmt: skip
    phase = phase_of(StepContext("shrinking JSONRPC-5-one-response"), shrinking, now=114.25)
    assert status_line(phase, 1, 50.0, 30) == (
        "[  50.0s] shrinking JSONRPC-5-one-response (trace 2/3): 7 steps left, 12/60 replays, 14.2s of 30s | 1 failing"
    )
    # One trace: no "trace 1/1"; before its first replay: no steps counted yet; time never past the budget.
    first = Stage("shrinking", "X", trace=1, traces=1, max_replays=60, budget_s=30.0, started_at=0.0)
    assert status_line(phase_of(StepContext(), first, now=99.0), 0, 0, 1).endswith(
        "shrinking X: 0/60 replays, 30.0s of 30s | 0 failing"
    )


def test_counters_never_overshoot() -> None:
    """The sweep's example and Hypothesis' extra examples are no example past the budget (was ``31/30``)."""
    explored = [StepContext(example=n, step=0) for n in range(2, 33)]  # numbered after the sweep's example 1
    stage = Stage("exploration", first_example=1, examples=30)
    shown = [status_line(phase_of(c, stage), 0, 0, 30) for c in explored]
    assert "example 1/30" in shown[0] and all("example 30/30" in line for line in shown[-2:])
    assert not any(re.search(r"example (3[1-9]|[4-9]\d)/30", line) for line in shown)
    # Without a stage (a machine run alone), the budget still caps what is shown.
    assert "example 10/10" in status_line(phase_of(StepContext(example=11, step=20)), 1, 0, 10)
    assert "example 1/10" in status_line(Phase("exploration", 0, 0, 10), 0, 0, 10)


def shrink(*, steps_left: int | None, replays: int) -> Stage:
    return Stage("shrinking", "X", trace=1, traces=1, steps_left=steps_left, replays=replays, max_replays=60,
                 budget_s=30)  # fmt: skip


def test_verbose_prints_one_line_per_phase_change() -> None:
    out = io.StringIO()
    now = [0.0]
    progress = Progress(out, live=False, budget=2, clock=lambda: now[0])
    run = Recorder()
    progress.watch(run)
    for stage, context in [
        (Stage("scenarios"), StepContext(scenario="stdin-eof")),
        (Stage("scenarios"), StepContext(scenario="stdin-eof")),  # unchanged: no line
        (Stage("sweep"), StepContext(example=1, step=0)),
        (Stage("sweep"), StepContext(example=1, step=9)),  # a step: no line
        (Stage("exploration", first_example=1, examples=2), StepContext(example=2, step=0)),
        (Stage("exploration", first_example=1, examples=2), StepContext(example=3, step=0)),
        (shrink(steps_left=None, replays=0), StepContext("shrinking X")),
        (shrink(steps_left=9, replays=1), StepContext("shrinking X")),
        (shrink(steps_left=9, replays=2), StepContext("shrinking X")),  # a replay: no line
        (shrink(steps_left=4, replays=3), StepContext("shrinking X")),
    ]:
        run.stage, run.context = stage, context
        now[0] += 1.0
        progress.tick()
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "scenario stdin-eof | 0 failing",
        "sweep: step 0 | 0 failing",
        "exploration: example 1/2, step 0 | 0 failing",
        "exploration: example 2/2, step 0 | 0 failing",
        "shrinking X: 0/60 replays, 7.0s of 30s | 0 failing",
        "shrinking X: 9 steps left, 1/60 replays, 8.0s of 30s | 0 failing",
        "shrinking X: 4 steps left, 3/60 replays, 10.0s of 30s | 0 failing",
    ]


def test_shrinking_on_the_run_shows_over_the_last_part() -> None:
    """A run in parts shrinks on the run's recorder after its last part: that is what is shown."""
    out = io.StringIO()
    progress = Progress(out, live=False, budget=10)
    run, part = Recorder(), Recorder()
    progress.watch(run)
    progress.watch(part)
    part.stage, part.context = Stage("exploration", first_example=1, examples=10), StepContext(example=11, step=20)
    progress.tick()
    run.stage = Stage("shrinking", "X", trace=1, traces=1, max_replays=60, budget_s=30.0)
    progress.tick()
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("exploration: example 10/10, step 20 | 0 failing")
    assert "shrinking X: 0/60 replays" in lines[1]


def test_plain_lines_say_what_changed_and_never_redraw() -> None:
    out = io.StringIO()
    progress = Progress(out, live=False, budget=10)
    run, recorder = Recorder(), Recorder()
    progress.watch(run)
    progress.watch(recorder)  # a part of the run (runner/parallel.py): its phase is shown
    recorder.context = StepContext(example=1, step=0, offer="all")
    progress.tick()
    recorder.context = StepContext(example=1, step=5, offer="all")
    progress.tick()  # same example: nothing new
    recorder.violate(Violation("JSONRPC-5-one-response", "two answers"))
    recorder.context = StepContext(example=2, step=0, offer="all")
    progress.tick()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert lines[0].endswith("state machine: example 1/10, step 0 | 0 failing")
    assert lines[1].endswith("] JSONRPC-5-one-response: first violation")
    assert lines[2].endswith("state machine: example 2/10, step 0 | 1 failing")


def test_a_live_line_is_redrawn_in_place_and_erased_at_the_end() -> None:
    out = io.StringIO()
    recorder = Recorder(context=StepContext(scenario="stdin-eof"))
    with Progress(out, live=True, budget=10) as progress:
        progress.watch(recorder)
        progress.tick()
    text = out.getvalue()
    assert text.startswith(CLEAR_LINE + "[") and "scenario stdin-eof | 0 failing" in text
    assert text.endswith(CLEAR_LINE) and "\n" not in text


def test_live_progress_under_a_pseudo_terminal(tmp_path: Path) -> None:
    """The real command line on a pty: the live line is drawn (\\r, erase
    line) while the state machine runs, then the summary is printed."""
    argv = ["-m", "conformance.cli", "extension", "--simulate", "--profile", "quick", "--only", "EXT-1.9-*",
            "--report-dir", str(tmp_path / "r")]  # fmt: skip
    child = pexpect.spawn(sys.executable, argv, cwd=str(ROOT), timeout=120, encoding="utf-8", dimensions=(24, 200))
    try:
        child.expect(re.escape(CLEAR_LINE) + r"\[\s*\d+\.\ds\] exploration: example \d+/10, step \d+ \| 0 failing")
        child.expect(r"profile quick, seed \d+: 2 pass, 0 fail")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "selection: --only EXT-1.9-*" in child.before


@pytest.mark.slow
def test_verbose_run_shows_each_phase_shrinking_included(tmp_path: Path) -> None:
    """A real run (a faulty fixture, quick, one failing requirement: about
    20 s) with --verbose and stderr not a terminal: plain lines for the
    scenarios, exploration (in order, none past the budget) and the
    shrinking of the failure's trace with its steps, replays and budget --
    the part that used to print nothing. Lines are sampled twice a second,
    so only phases that last longer than that are asserted."""
    manifest = ROOT / "fixtures" / "extensions" / "double-reply" / "extension.toml"
    argv = [sys.executable, "-m", "conformance.cli", "extension", str(manifest), "--profile", "quick",
            "--only", "JSONRPC-5-*", "--verbose", "--report-dir", str(tmp_path / "r")]  # fmt: skip
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    phases = [line.split("] ", 1)[1] for line in done.stderr.splitlines() if line.startswith("[")]
    known = ("scenario ", "sweep", "exploration: ", "shrinking ", "manifest", "starting", "JSONRPC-5-")
    assert phases and all(p.startswith(known) for p in phases), phases
    assert any(p.startswith("scenario ") for p in phases), phases
    explored = [int(m.group(1)) for p in phases if (m := re.match(r"exploration: example (\d+)/10,", p))]
    assert explored and max(explored) <= 10 and explored == sorted(explored), phases
    shrinking = [p for p in phases if p.startswith("shrinking JSONRPC-5-one-response: ")]
    assert shrinking and all(re.search(r"\d+/60 replays, \d+\.\ds of \d+s \|", p) for p in shrinking), phases
    assert "\r" not in done.stderr and "\x1b" not in done.stderr


@pytest.mark.parametrize(
    ("terminal", "flag", "shown"),
    [(True, None, True), (True, "--quiet", False), (False, None, False), (False, "--verbose", True)],
)
def test_who_gets_progress(terminal: bool, flag: str | None, shown: bool, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A terminal gets the live line unless --quiet; elsewhere only --verbose asks for plain lines."""
    from conformance import cli
    from conformance.manifest import Manifest
    from conformance.results import RunResult
    from conformance.runner.profiles import PROFILES

    monkeypatch.setattr(cli, "_is_terminal", lambda stream: terminal)
    watched: list[object] = []

    def produce(trace_dir: Path, watch: object) -> RunResult:
        watched.append(watch)
        manifest = Manifest(Path("/tmp/extension.toml"), "x", "1", "0.2", "0.8.0", ("python3",), {}, {})
        return RunResult(manifest, PROFILES["quick"], 1, (), (), {})

    verbosity = {None: 1, "--quiet": 0, "--verbose": 2}[flag]
    options = cli.RunOptions("extension", verbosity=verbosity)
    assert cli.run_and_report(tmp_path / "r", produce, options=options, budget=1) == 0
    assert (watched[0] is not None) is shown
    # a command whose produce takes only the trace directory still runs (no progress display)
    assert cli.run_and_report(tmp_path / "r1", lambda trace_dir: produce(trace_dir, "none"), options=options) == 0
