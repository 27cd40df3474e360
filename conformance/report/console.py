"""What a certification prints for people: one summary line, one line per
non-pass verdict followed by the command that replays it, and -- under a
failure whose extension exited -- its exit status and the tail of its stderr.

A fail, warn or xfail is printed the way h2spec prints a failing case: the
section and requirement id with the requirement's statement, then
``expected:`` (when the judge's message says) and ``observed:`` lines.

Verbosity: ``QUIET`` (0) prints the summary line, the fail and warn lines
(with their expected/observed) and one line per error only; ``NORMAL`` (1)
adds the replay commands, exit statuses, stderr tails and the matrix path; ``VERBOSE`` (2) adds every other verdict
(pass, skip, untested) and this run's observation of each failure (first
seen, frame, count, measured values). Every piece of target or manifest text is
escaped (conformance/safe_text.py): nothing the target sends reaches the
terminal raw."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from conformance.evidence import BUDGET_SPENT
from conformance.results import RunResult
from conformance.safe_text import terminal
from conformance.transport.trace import entry_text
from conformance.verdicts import Verdict, describe, summary

from .failure import failure
from .matrix import relative_trace

STDERR_LINES_SHOWN = 8
MARKED_CHARS = 240  # of a marked frame shown under a replay (the trace keeps it whole)
UNMET_SHOWN = 5  # relations a replay could not re-create, listed at most
MAX_ERROR_LINES = 3  # more error verdicts than this are summarised, one line per distinct evidence
QUIET, NORMAL, VERBOSE = 0, 1, 2
SHOWN = {QUIET: ("fail", "warn"), NORMAL: ("fail", "warn", "xfail"), VERBOSE: ("fail", "warn", "xfail")}


def run_lines(
    run: RunResult,
    matrix_path: Path,
    title: str | None = None,
    *,
    verbosity: int = NORMAL,
    written_in: Path | None = None,
) -> Iterator[str]:
    """``written_in``: the directory the run was written to before it was moved
    to ``matrix_path``'s (the staging directory): trace paths are re-based."""
    m = run.manifest
    counts = summary(run.verdicts)
    title = title or f"{m.name} {m.version} (API {m.api_version}), profile {run.profile.name}, seed {run.seed}"
    yield terminal(f"{title}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    if run.budget_spent is not None:
        yield budget_line(run)
    errors = [v for v in run.verdicts if v.verdict == "error"]
    for v in run.verdicts:
        if v.verdict in SHOWN[verbosity]:
            yield from failure_lines(v)
            if verbosity >= NORMAL:
                yield from exit_lines(v)  # first: what its author needs to see
                yield from replay_lines(v, matrix_path.parent, written_in)
            if verbosity >= VERBOSE and v.observed is not None:
                yield f"        run detail: {terminal(_first_line(describe(v).removeprefix(v.evidence).strip()))}"
        elif v.verdict == "error" and len(errors) <= MAX_ERROR_LINES:
            yield f"  {v.verdict.upper():5} {v.requirement.id}: {terminal(_first_line(v.evidence))}"
            if verbosity >= NORMAL:
                yield from exit_lines(v)  # first: what its author needs to see
                yield from replay_lines(v, matrix_path.parent, written_in)
            if verbosity >= VERBOSE and v.observed is not None:
                yield f"        run detail: {terminal(_first_line(describe(v).removeprefix(v.evidence).strip()))}"
        elif verbosity >= VERBOSE and v.verdict != "error":
            yield f"  {v.verdict.upper():8} {v.requirement.id}: {terminal(_first_line(v.evidence))}"
    if len(errors) > MAX_ERROR_LINES:
        # One harness failure makes every unjudged requirement an error with
        # the same evidence: say it once, not once per requirement.
        for evidence, count in Counter(_first_line(v.evidence) for v in errors).items():
            yield f"  ERROR {count} requirements: {terminal(evidence)}"
    if verbosity >= NORMAL:
        for requirement, where in run.short_deadlines:
            yield terminal(f"  note: after {requirement} failed on a deadline ({where}), later waits for it were short")
        yield f"matrix: {terminal(str(matrix_path))}"


def failure_lines(v: Verdict) -> Iterator[str]:
    """A fail, warn or xfail in the h2spec style: where in the spec, which
    requirement and what it says, then what was expected and what was
    observed (conformance/report/failure.py; no expected line when the
    judge's message does not say)."""
    r = v.requirement
    f = failure(r.id, r.document, r.section, r.level, r.summary, v.evidence)
    yield terminal(f"  {v.verdict.upper()} {f.where} {r.id} \u2014 {_first_line(f.statement)}")
    if f.expected:
        yield terminal(f"        expected: {_first_line(f.expected)}")
    yield terminal(f"        observed: {_first_line(f.observed_at)}")


def budget_line(run: RunResult) -> str:
    """The one line a run cut off by its wall-time budget prints (at every verbosity)."""
    left = sum(v.verdict == "untested" and v.evidence == BUDGET_SPENT for v in run.verdicts)
    return terminal(
        f"  BUDGET run budget spent: the run passed its {run.budget_s:g} s budget ({run.budget_spent}); "
        f"{left} requirement(s) left untested, the fail/warn verdicts found are kept"
    )


def replay_lines(v: Verdict, report_dir: Path, written_in: Path | None) -> Iterator[str]:
    """Under a failure: the command that replays it, naming the trace where the
    report directory holds it (a trace without a replay: its path)."""
    if v.trace is None:
        return
    relative = relative_trace(v.trace, written_in)
    trace = str(report_dir / relative) if relative is not None and not Path(relative).is_absolute() else v.trace
    if v.replay is not None:
        yield f"        replay: {terminal(f'octet-conformance replay {shlex.quote(trace)}')}"
    else:
        yield f"        trace: {terminal(trace)}"


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def exit_lines(v: Verdict) -> Iterator[str]:
    """The exit status and stderr tail of an extension that went away, under
    the failure it caused (the first thing its author needs to see)."""
    o = v.observed
    if o is None:
        return
    status = dict(o.measured).get("exit_status")
    if status is None:
        return
    code = int(status)
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    yield f"        the extension {how}"
    lines = [line for line in o.stderr_tail.splitlines() if line.strip()]
    if not lines:
        yield "        (nothing on stderr)"
        return
    yield "        stderr (last lines):"
    for line in lines[-STDERR_LINES_SHOWN:]:
        yield f"        | {terminal(line)}"


def replayed_lines(
    requirement: str,
    runs: int,
    hits: int,
    evidence: str,
    marked: Sequence[dict[str, Any]],
    unmet: Sequence[str] | None,
) -> Iterator[str]:
    """What ``replay`` prints: the reproduction rate; when it reproduced, the
    entries the violation was judged on (direction, index, step, text); when
    some run did not, the recorded relations it could not re-create (None:
    this kind of replay re-runs a scenario and tracks none)."""
    yield terminal(f"{requirement}: reproduced {hits}/{runs}: {evidence}")
    for e in marked if hits else ():
        why = f", {e['why']}" if e.get("why") else ""
        text = entry_text(e)
        text = text if len(text) <= MARKED_CHARS else text[:MARKED_CHARS] + "…"
        yield terminal(f"  evidence: {e.get('dir')} #{e.get('index')} (step {e.get('step')}{why}): {text}")
    if hits == runs or unmet is None:
        return
    for line in list(dict.fromkeys(unmet))[:UNMET_SHOWN]:
        yield terminal(f"  not re-created: {line}")
    if not unmet:
        yield (
            "  every ordering the trace records was re-created; the violation depended on the target's own "
            "timing (how fast it read or answered), which a trace cannot force"
        )
