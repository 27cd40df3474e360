"""Do saved traces replay? Certify every faulty fixture of a role, replay each trace.

    python benchmarks/replays.py [--role extension] [--profile default] [--runs 5]
                                 [--only NAME,...] [--workers 1] [--patience 15]
                                 [--work-dir /tmp/octet-replays] [--json reports/replays-PROFILE.json]

For every faulty fixture of the role: certify it with the profile's fixed
seed, keeping traces (shrunk by the certification); then replay each saved
trace of a fail/warn verdict ``--runs`` times. Prints a table -- per fixture
and requirement: steps before and after shrinking, reproduced k/runs, the
shrink note when its budget ran out -- and a summary: the share of traces
reproducing at least 4 runs in 5 (scaled to ``--runs``), the median and the
largest shrunk length. Writes the same as JSON.

Issue 19's targets: at least 95% of traces reproduce at least 4 of 5 times;
shrunk length median <= 3 steps and max <= 15 at the default profile.

Only the extension role is wired today; a role is an entry of ``ROLES`` (its
fixtures, how to certify one into a trace directory, how to replay a trace),
so host, host-core and client fixtures plug in when their traces replay.

The script uses only what every revision of the suite offers (certify,
replay, the trace header's ``shrunk``), so ``PYTHONPATH=<an older checkout>``
measures that checkout for a before/after table. Wall times are whatever the
machine gave: on a shared machine they are noise, the rates are not.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from detect import trace_steps  # benchmarks/ is on sys.path when run as a script

from conformance.manifest import load_manifest
from conformance.peers.ext_host import Patience
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES, Profile
from conformance.runner.replay import replay
from conformance.transport.trace import load

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
GOOD_SHARE = 4 / 5  # a trace "reproduces" when at least this share of its replays did


@dataclass(frozen=True)
class Role:
    """How this benchmark drives the fixtures of one role."""

    folder: Path
    certify: Callable[[Path, Profile, Path, float], Any]  # fixture dir, profile, trace dir, patience -> RunResult
    replay: Callable[[Path, int, float], list[Any]]  # trace, runs, patience -> outcomes with .reproduced


def _certify_extension(fixture: Path, profile: Profile, trace_dir: Path, patience_s: float) -> Any:
    manifest = load_manifest(fixture / "extension.toml")
    return certify_extension(manifest, profile, profile.default_seed, Patience.of(patience_s), trace_dir=trace_dir)


def _replay_extension(trace: Path, runs: int, patience_s: float) -> list[Any]:
    return replay(trace, runs=runs, patience=Patience.of(patience_s))


ROLES = {"extension": Role(FIXTURES / "extensions", _certify_extension, _replay_extension)}


@dataclass
class Row:
    fixture: str
    requirement: str
    verdict: str
    steps_before: int
    steps_after: int
    shrink_replays: int | None
    shrink_note: str  # the header's "shrink" (budget spent, not reproduced), else ""
    reproduced: int
    runs: int
    certify_s: float
    replay_s: float


def measure(role: str, fixture: Path, profile_name: str, runs: int, patience_s: float, work_dir: Path) -> list[Row]:
    """Certify one fixture and replay each of its fail/warn traces, with the
    patience its expect.toml names (a fixture that answers a long burst
    first), as its test does, else ``patience_s``."""
    driver = ROLES[role]
    expect = tomllib.loads((fixture / "expect.toml").read_text(encoding="utf-8"))
    patience_s = float(expect.get("patience", patience_s))
    trace_dir = work_dir / fixture.name / "traces"
    for stale in trace_dir.glob("*.jsonl"):
        stale.unlink()
    start = time.perf_counter()
    run = driver.certify(fixture, PROFILES[profile_name], trace_dir, patience_s)
    certify_s = time.perf_counter() - start
    rows = []
    for v in run.verdicts:
        if v.verdict not in ("fail", "warn") or v.trace is None:
            continue
        before, after, replays = trace_steps(Path(v.trace))
        header, _ = load(Path(v.trace))
        start = time.perf_counter()
        hits = sum(o.reproduced for o in driver.replay(Path(v.trace), runs, patience_s))
        replay_s = time.perf_counter() - start
        note = str(header.get("shrink", ""))
        rows.append(
            Row(
                fixture.name, v.requirement.id, v.verdict, before, after, replays, note, hits, runs, certify_s, replay_s
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    head = ("fixture", "requirement", "steps", "replayed", "certify s", "replay s", "shrink note")
    lines = [head]
    for r in rows:
        steps = f"{r.steps_before} -> {r.steps_after}"
        times = (f"{r.certify_s:.0f}", f"{r.replay_s:.0f}")
        lines.append((r.fixture, r.requirement, steps, f"{r.reproduced}/{r.runs}", *times, r.shrink_note or "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def summary(rows: list[Row], runs: int) -> dict[str, Any]:
    needed = math.ceil(GOOD_SHARE * runs)
    lengths = [r.steps_after for r in rows]
    return {
        "traces": len(rows),
        "reproducing": sum(r.reproduced >= needed for r in rows),
        "reproducing_share": round(sum(r.reproduced >= needed for r in rows) / len(rows), 3) if rows else None,
        "reproduced_at_least": needed,
        "median_shrunk_steps": statistics.median(lengths) if lengths else None,
        "max_shrunk_steps": max(lengths) if lengths else None,
        "budget_spent": sum("budget spent" in r.shrink_note for r in rows),
        "not_reproducing": [
            f"{r.fixture}/{r.requirement} {r.reproduced}/{r.runs}" for r in rows if r.reproduced < needed
        ],
    }


def _one(args: tuple[str, Path, str, int, float, Path]) -> list[Row]:
    role, fixture, profile_name, runs, patience_s, work_dir = args
    return measure(role, fixture, profile_name, runs, patience_s, work_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", default="extension", choices=sorted(ROLES))
    parser.add_argument("--profile", default="default", choices=sorted(PROFILES))
    parser.add_argument("--runs", type=int, default=5, help="replays of each saved trace")
    parser.add_argument(
        "--patience", type=float, default=15.0, help="response deadline, s (as the CLI; an expect.toml may name more)"
    )
    parser.add_argument("--only", default="", help="comma-separated fixture names (default: all of the role)")
    parser.add_argument("--workers", type=int, default=1, help="fixtures measured at once (worker processes)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/octet-replays"), help="where traces are kept")
    parser.add_argument("--json", type=Path, default=None, help="default: reports/replays-<profile>.json")
    args = parser.parse_args()

    found = sorted(p.parent for p in ROLES[args.role].folder.glob("*/expect.toml"))
    only = [n for n in args.only.split(",") if n]
    unknown = sorted(set(only) - {p.name for p in found})
    if unknown:
        parser.error(f"unknown fixture(s): {', '.join(unknown)}")
    by_name = {p.name: p for p in found}
    chosen = [by_name[n] for n in only] if only else found  # in the order given
    jobs = [(args.role, p, args.profile, args.runs, args.patience, args.work_dir) for p in chosen]
    start = time.perf_counter()
    rows: list[Row] = []
    out = args.json or Path(f"reports/replays-{args.profile}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=max(1, args.workers), mp_context=get_context("spawn")) as pool:
        for fixture, measured in zip(chosen, pool.map(_one, jobs), strict=True):
            print(f"measured {fixture.name}: {len(measured)} trace(s)", flush=True)
            rows.extend(measured)
            _write(out, args, rows, time.perf_counter() - start)  # an interrupted run keeps what it measured
    print(table(rows))
    print(json.dumps(summary(rows, args.runs), indent=2))


def _write(out: Path, args: argparse.Namespace, rows: list[Row], wall_s: float) -> None:
    report = {
        "role": args.role,
        "profile": args.profile,
        "seed": PROFILES[args.profile].default_seed,
        "runs": args.runs,
        "patience_s": args.patience,
        "workers": args.workers,
        "wall_s": round(wall_s, 1),
        "summary": summary(rows, args.runs),
        "rows": [asdict(r) for r in rows],
    }
    partial = out.with_name(out.name + ".part")
    partial.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    partial.replace(out)


if __name__ == "__main__":
    main()
