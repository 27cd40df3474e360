"""The progress display (conformance/runner/progress.py): a live line on a
terminal (driven under a pseudo-terminal with pexpect), plain lines
elsewhere, nothing at all with --quiet."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pexpect
import pytest

from conformance.evidence import Recorder, StepContext
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
        child.expect(re.escape(CLEAR_LINE) + r"\[\s*\d+\.\ds\] state machine: example \d+/10, step \d+ \| 0 failing")
        child.expect(r"profile quick, seed \d+: 2 pass, 0 fail")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "selection: --only EXT-1.9-*" in child.before


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
