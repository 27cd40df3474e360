"""What a certification prints for people: one summary line, one line per
non-pass verdict, and -- under a failure whose extension exited -- its exit
status and the tail of its stderr. Every piece of target or manifest text is
escaped (conformance/safe_text.py): nothing the target sends reaches the
terminal raw."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from conformance.results import RunResult
from conformance.safe_text import terminal
from conformance.verdicts import Verdict, summary

STDERR_LINES_SHOWN = 8
MAX_ERROR_LINES = 3  # more error verdicts than this are summarised, one line per distinct evidence


def run_lines(run: RunResult, matrix_path: Path, title: str | None = None) -> Iterator[str]:
    m = run.manifest
    counts = summary(run.verdicts)
    title = title or f"{m.name} {m.version} (API {m.api_version}), profile {run.profile.name}, seed {run.seed}"
    yield terminal(f"{title}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    errors = [v for v in run.verdicts if v.verdict == "error"]
    for v in run.verdicts:
        if v.verdict in ("fail", "warn", "xfail") or (v.verdict == "error" and len(errors) <= MAX_ERROR_LINES):
            yield f"  {v.verdict.upper():5} {v.requirement.id}: {terminal(_first_line(v.evidence))}"
            yield from exit_lines(v)
    if len(errors) > MAX_ERROR_LINES:
        # One harness failure makes every unjudged requirement an error with
        # the same evidence: say it once, not once per requirement.
        for evidence, count in Counter(_first_line(v.evidence) for v in errors).items():
            yield f"  ERROR {count} requirements: {terminal(evidence)}"
    for requirement, where in run.short_deadlines:
        yield terminal(f"  note: after {requirement} failed on a deadline ({where}), later waits for it were short")
    yield f"matrix: {terminal(str(matrix_path))}"


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
