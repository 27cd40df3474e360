"""Parallel certification: a run as a fixed list of units, merged in order.

A certification of an extension is cut into *units* that do not depend on
one another: the stdin-EOF scenario, the sweep generation
(:mod:`conformance.runner.search`), the frame-size, Wave-1 and services
scenarios (runner/wave1.py, ``services_scenario``), and the profile's
exploration cut into ``profile.shards`` shards (each its own Hypothesis run,
with its share of the examples and a seed derived from the run's seed and the
shard's number). Each unit records into a fresh :class:`Recorder`
and, with a trace directory, into a folder of its own. The units are the
same whatever ``jobs`` is; ``jobs`` only says how many run at once (``1``:
one after another in this process; more: a pool of worker processes). The
first unit always runs alone, in this process, and every later unit starts
from what it learned about the target (short waits for a target that left
a request unanswered, no new generation for one that sat on initialize:
:func:`run_units`). The
unit recorders are then merged *in unit order* (:func:`merge`), so the same
seed gives the same matrix for any ``jobs``: the first violation of a
requirement, its evidence and its trace come from the first unit (in that
order) that broke it, never from whichever finished first.

What a unit measured (durations, counts, time-to-detect) stays a run detail,
as it always was (docs/matrix-format.md).
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import MAX_KEPT_STRAYS, MAX_KEPT_VIOLATIONS, Recorder
from conformance.peers.ext_host import scratch_root
from conformance.transport.process import kill_spawned_groups
from conformance.transport.startup import StartFailure

_GOLDEN = 0x9E3779B97F4A7C15  # spreads shard seeds over the 64-bit range


@dataclass(frozen=True)
class Unit:
    """One independent part of a certification."""

    kind: str  # "stdin-eof" | "sweep" | "explore" | "frame-size" | "wave1" | "services"
    shard: int = 0  # for "explore": which shard
    examples: int = 0  # for "explore": its share of the profile's examples
    # for "explore": examples numbered before it (the sweep is example 1), so
    # "example N" in a finding's context names one generation of the run
    numbered_before: int = 0

    @property
    def label(self) -> str:
        return f"{self.kind} {self.shard}" if self.kind == "explore" else self.kind


def shard_seed(run_seed: int, shard: int) -> int:
    """Shard 0 explores at the run's seed; the others at seeds derived from it."""
    return (run_seed + shard * _GOLDEN) % 2**64


def exploration_shards(examples: int, shards: int) -> list[Unit]:
    """``examples`` split over ``shards`` (the first ones get one more when it does not divide)."""
    shards = max(1, min(shards, examples))
    sizes = [examples // shards + (k < examples % shards) for k in range(shards)]
    return [Unit("explore", k, n, 1 + sum(sizes[:k])) for k, n in enumerate(sizes)]


# work(unit, trace_dir, carried=...): runs one unit, starting from what the
# first unit learned about the target (None for the first unit itself).
UnitWork = Callable[..., Recorder]
_Outcome = tuple[Recorder, tuple[Any, ...] | None]


def run_units(work: UnitWork, units: Sequence[Unit], jobs: int, trace_dir: Path | None) -> list[Recorder]:
    """Run every unit (``jobs`` at a time) and return their recorders in unit
    order. ``work`` must be picklable when ``jobs > 1`` (a module-level
    function, or a functools.partial of one).

    The first unit runs alone, before the others, whatever ``jobs`` is: every
    later unit starts from what it learned about the target
    (:meth:`Recorder.carried`: a target that sat on initialize, or left a
    request unanswered past the deadline, is not waited for in full again).
    Only the first unit's findings are carried, never those of units that
    happened to finish earlier, so the same seed gives the same results for
    any ``jobs``."""
    dirs = [None if trace_dir is None else trace_dir / f".unit-{i}" for i in range(len(units))]
    if not units:
        return []
    outcomes = [_run_unit(work, units[0], dirs[0])]
    _raise_start_failure(outcomes)
    rest = functools.partial(work, carried=outcomes[0][0].carried())
    if jobs <= 1 or len(units) <= 2:
        outcomes += [_run_unit(rest, unit, d) for unit, d in zip(units[1:], dirs[1:], strict=True)]
    else:
        outcomes += _pooled(rest, units[1:], dirs[1:], jobs)
    _raise_start_failure(outcomes)
    return [recorder for recorder, _ in outcomes]


def _raise_start_failure(outcomes: Sequence[_Outcome]) -> None:
    for _, failure in outcomes:
        if failure is not None:  # the target could not start: the run cannot happen at all
            raise StartFailure(*failure)


def _pooled(work: UnitWork, units: Sequence[Unit], dirs: Sequence[Path | None], jobs: int) -> list[_Outcome]:
    """Workers are spawned, not forked: nothing of this process's state
    (threads, signal handlers, open targets) is copied into them. Like any
    spawned pool, a script calling this needs the ``if __name__ ==
    "__main__":`` guard. When this process is interrupted, the workers are
    killed at once instead of being waited for (their targets, orphaned, are
    adopted and killed by the command line: transport/process.py)."""
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(units)), mp_context=context)
    try:
        futures = [pool.submit(_in_worker, work, unit, d) for unit, d in zip(units, dirs, strict=True)]
        outcomes = [f.result() for f in futures]
    except BaseException:
        _kill_workers(pool)
        raise
    pool.shutdown()
    return outcomes


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers and remove what they cannot remove themselves
    any more: their scratch folders (peers/ext_host.py, §2.8)."""
    # No public way to stop a running worker before Python 3.14.
    workers = list(getattr(pool, "_processes", {}).values())
    for process in workers:
        process.kill()
    for process in workers:
        process.join(timeout=2.0)  # dead before its folder goes, or it could write there again
        if process.pid is not None:
            shutil.rmtree(scratch_root(process.pid), ignore_errors=True)
    pool.shutdown(wait=False, cancel_futures=True)


def _run_unit(work: UnitWork, unit: Unit, trace_dir: Path | None) -> _Outcome:
    try:
        return work(unit, trace_dir), None
    except StartFailure as exc:  # not picklable as is: its fields travel instead
        return Recorder(), (exc.argv, exc.cwd, exc.cause, exc.hint)


def _in_worker(work: UnitWork, unit: Unit, trace_dir: Path | None) -> _Outcome:
    try:
        return _run_unit(work, unit, trace_dir)
    finally:
        kill_spawned_groups()  # nothing a unit started outlives it


def merge(into: Recorder, parts: Sequence[Recorder]) -> None:
    """Add the findings of ``parts`` (in order) to ``into``. Every field of
    :class:`Recorder` has a rule here; a new field without one is an error, so
    it cannot be dropped silently."""
    for f in dataclasses.fields(Recorder):
        rule = _MERGE_RULES.get(f.name)
        if rule is None:
            raise TypeError(f"Recorder.{f.name} has no merge rule in conformance/runner/parallel.py")
        for part in parts:
            rule(into, part)
    for part in parts:
        if part.trace_dir is not None:
            shutil.rmtree(part.trace_dir, ignore_errors=True)


def _counts(name: str) -> Callable[[Recorder, Recorder], None]:
    def add(into: Recorder, part: Recorder) -> None:
        mine: dict[str, int] = getattr(into, name)
        for key, n in getattr(part, name).items():
            mine[key] = mine.get(key, 0) + n

    return add


def _violations(into: Recorder, part: Recorder) -> None:
    for requirement, observed in part.violations.items():
        kept = into.violations.setdefault(requirement, [])
        kept.extend(observed[: MAX_KEPT_VIOLATIONS - len(kept)])


def _first_after(into: Recorder, part: Recorder) -> None:
    # Clocks are the same monotonic clock in every process of this machine.
    for requirement, after in part.first_violation_after.items():
        since_run = after + part.started_at - into.started_at
        into.first_violation_after[requirement] = min(into.first_violation_after.get(requirement, since_run), since_run)


def _traces(into: Recorder, part: Recorder) -> None:
    """A requirement's trace comes from the first unit that broke it (the one
    its first kept violation came from)."""
    for requirement, path in part.traces.items():
        if requirement in into.traces:
            continue
        first = into.violations.get(requirement, [None])[0]
        if first is not None and first not in part.violations.get(requirement, []):
            continue  # an earlier unit broke it first, without leaving a trace
        if into.trace_dir is not None and path.parent == part.trace_dir:
            into.trace_dir.mkdir(parents=True, exist_ok=True)
            path = Path(shutil.move(path, into.trace_dir / path.name))
        into.traces[requirement] = path


def _short_deadlines(into: Recorder, part: Recorder) -> None:
    for requirement, context in part.short_deadlines.items():
        into.short_deadlines.setdefault(requirement, context)


def _untested_reasons(into: Recorder, part: Recorder) -> None:
    for requirement, reason in part.untested_reasons.items():
        into.untested_reasons.setdefault(requirement, reason)


def _keep(into: Recorder, part: Recorder) -> None:
    """Fields of the run itself, not of a unit: the merged run keeps its own."""


_MERGE_RULES: dict[str, Callable[[Recorder, Recorder], None]] = {
    "exercised": _counts("exercised"),
    "violations": _violations,
    "violation_counts": _counts("violation_counts"),
    "negotiated_features": lambda into, part: into.negotiated_features.update(part.negotiated_features),
    "api_versions": lambda into, part: into.api_versions.update(part.api_versions),
    "harness_errors": lambda into, part: into.harness_errors.extend(part.harness_errors),
    "strays": lambda into, part: into.strays.extend(part.strays[: MAX_KEPT_STRAYS - len(into.strays)]),
    # a flag in effect (any unit's hang skips the rest); units may start from unit 0's (Recorder.carry)
    "hung_initializations": lambda into, part: setattr(
        into, "hung_initializations", max(into.hung_initializations, part.hung_initializations)
    ),
    "started_at": _keep,
    "started_utc": _keep,
    "first_violation_after": _first_after,
    "trace_dir": _keep,
    "traces": _traces,
    "run_info": _keep,
    "context": _keep,
    "stage": _keep,  # a progress display's, of the run itself
    "judged": _keep,  # every unit judged the same selection (run_unit is given it)
    "short_deadlines": _short_deadlines,
    "untested_reasons": _untested_reasons,
    # where the budget ran out first, in unit order (a run detail)
    "budget_spent": lambda into, part: setattr(into, "budget_spent", into.budget_spent or part.budget_spent),
    "trace": _keep,  # a unit's generations have ended: no trace is being driven
}
