"""How well the suite catches race bugs: detection, shrinking, replay.

    python benchmarks/races.py [--profile default] [--runs 20] [--reference-runs 3]
                               [--patience 15] [--only NAME,...] [--json reports/races.json]

For every race fixture (faulty extensions whose fault needs a particular
interleaving to show): certify it with the profile's fixed seed, keeping
traces; read the trace of the fixture's requirement (already shrunk by the
certification, see ``conformance.runner.replay.shrink``); replay it ``--runs``
times, and ``--reference-runs`` times against the reference extension (API
0.2), where every legal outcome of the race must pass. Prints a table and
writes JSON.

A race fixture is healthy when it is detected, nothing else is flagged, its
trace shrinks to a few steps (<= 10), replays every time, and never against
the reference. Anything else
is either a flaky fixture or a race the harness does not pin down (the
fixture's docstring says which).

Fixtures share on-disk state with themselves (replacement-answers-old-ids
keeps a journal per host process), so do not run this next to a test run of
the same fixtures on a loaded machine if timings matter.
"""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.manifest import load_manifest
from conformance.peers.ext_host import Patience
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.runner.replay import host_steps, replay
from conformance.transport.trace import load

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
REFERENCE = HERE.parent / "conformance" / "reference" / "extension" / "manifests" / "api-0.2" / "extension.toml"
# name -> folder under fixtures/ (fixtures/pending is not collected by tests)
RACE_FIXTURES = {
    "cancel-race-double-response": "extensions",
    "same-write-cancel-unanswered": "extensions",
    "child-id-reused-after-cancel": "extensions",
    "replacement-answers-old-ids": "extensions",
    "progress-after-result": "extensions",
}
MAX_SHRUNK_STEPS = 10


@dataclass
class RaceRow:
    fixture: str
    requirement: str
    detected: bool
    detected_after_s: float | None
    also_flagged: list[str]  # anything else with fail/warn/error: should be empty
    steps_before: int | None
    steps_after: int | None
    shrink_replays: int | None
    reproduced: int
    runs: int
    reference_reproduced: int  # replays against the reference that (wrongly) reproduced: must be 0
    reference_runs: int
    certify_s: float
    replay_s: float
    trace: str | None

    @property
    def healthy(self) -> bool:
        return (
            self.detected
            and not self.also_flagged
            and self.steps_after is not None
            and self.steps_after <= MAX_SHRUNK_STEPS
            and self.reproduced == self.runs
            and self.reference_reproduced == 0
        )


def shrunk_steps(trace: Path) -> tuple[int, int, int | None]:
    """(steps before shrinking, steps after, replays spent) from a trace."""
    header, entries = load(trace)
    shrunk = header.get("shrunk")
    if isinstance(shrunk, dict):
        return int(shrunk["steps_before"]), int(shrunk["steps_after"]), int(shrunk.get("replays", 0))
    steps = len(host_steps(entries))  # nothing could be dropped (or shrinking was skipped)
    return steps, steps, None


def measure(
    name: str, folder: str, *, profile_name: str, runs: int, reference_runs: int, patience: Patience, out: Path
) -> RaceRow:
    fixture = FIXTURES / folder / name
    expect = tomllib.loads((fixture / "expect.toml").read_text(encoding="utf-8"))
    requirement = str(expect["requirement"])
    expected = {requirement, *expect.get("also", [])}
    profile = PROFILES[profile_name]
    trace_dir = out / name / "traces"
    start = time.perf_counter()
    run = certify_extension(
        load_manifest(fixture / "extension.toml"), profile, profile.default_seed, patience, trace_dir=trace_dir
    )
    certify_s = time.perf_counter() - start
    verdicts = {v.requirement.id: v for v in run.verdicts}
    flagged = {i for i, v in verdicts.items() if v.verdict in ("fail", "warn", "error")}
    target = verdicts.get(requirement)
    detected = target is not None and target.verdict in ("fail", "warn")
    trace = trace_dir / f"{requirement}.jsonl"
    before = after = shrink_replays = None
    reproduced, replay_s, on_reference = 0, 0.0, 0
    replayable = detected and trace.exists()
    if replayable:
        before, after, shrink_replays = shrunk_steps(trace)
        start = time.perf_counter()
        reproduced = sum(o.reproduced for o in replay(trace, runs=runs, patience=patience))
        replay_s = time.perf_counter() - start
        if reference_runs:
            outcomes = replay(trace, target=REFERENCE, runs=reference_runs, patience=patience)
            on_reference = sum(o.reproduced for o in outcomes)
    return RaceRow(
        fixture=name,
        requirement=requirement,
        detected=detected,
        detected_after_s=run.detected_after.get(requirement),
        also_flagged=sorted(flagged - expected) + [f"harness: {e[:120]}" for e in run.harness_errors],
        steps_before=before,
        steps_after=after,
        shrink_replays=shrink_replays,
        reproduced=reproduced,
        runs=runs if replayable else 0,
        reference_reproduced=on_reference,
        reference_runs=reference_runs if replayable else 0,
        certify_s=certify_s,
        replay_s=replay_s,
        trace=str(trace) if trace.exists() else None,
    )


def table(rows: list[RaceRow]) -> str:
    head = (
        "fixture",
        "requirement",
        "detected",
        "after s",
        "shrunk steps",
        "replay",
        "vs reference",
        "certify s",
        "replay s",
        "ok",
        "also flagged",
    )
    lines = [head]
    for r in rows:
        steps = "-" if r.steps_after is None else f"{r.steps_before} -> {r.steps_after}"
        when = "-" if r.detected_after_s is None else f"{r.detected_after_s:.1f}"
        replayed = f"{r.reproduced}/{r.runs}" if r.runs else "-"
        reference = f"{r.reference_reproduced}/{r.reference_runs}" if r.reference_runs else "-"
        also = ", ".join(r.also_flagged) or "-"
        detected, ok = "yes" if r.detected else "NO", "ok" if r.healthy else "!!"
        times = (f"{r.certify_s:.0f}", f"{r.replay_s:.0f}")
        lines.append((r.fixture, r.requirement, detected, when, steps, replayed, reference, *times, ok, also))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", choices=sorted(PROFILES))
    parser.add_argument("--runs", type=int, default=20, help="replays of each shrunk trace")
    parser.add_argument("--reference-runs", type=int, default=3, help="replays of each trace against the reference")
    parser.add_argument("--patience", type=float, default=15.0, help="response deadline in seconds (as the CLI)")
    parser.add_argument("--only", default="", help="comma-separated fixture names (default: all race fixtures)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/octet-races"), help="where traces are kept")
    parser.add_argument("--json", type=Path, default=Path("reports/races.json"))
    args = parser.parse_args()

    names = [n for n in args.only.split(",") if n] or list(RACE_FIXTURES)
    unknown = [n for n in names if n not in RACE_FIXTURES]
    if unknown:
        parser.error(f"unknown race fixture(s): {', '.join(unknown)}; known: {', '.join(RACE_FIXTURES)}")
    rows = []
    for name in names:
        row = measure(
            name,
            RACE_FIXTURES[name],
            profile_name=args.profile,
            runs=args.runs,
            reference_runs=args.reference_runs,
            patience=Patience.of(args.patience),
            out=args.work_dir,
        )
        print(f"measured {name}: {row.certify_s:.0f}s certify, {row.replay_s:.0f}s replay", flush=True)
        rows.append(row)
    print(table(rows))
    report: dict[str, Any] = {
        "profile": args.profile,
        "seed": PROFILES[args.profile].default_seed,
        "runs": args.runs,
        "reference_runs": args.reference_runs,
        "patience_s": args.patience,
        "max_shrunk_steps": MAX_SHRUNK_STEPS,
        "fixtures": [{**asdict(r), "healthy": r.healthy} for r in rows],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
