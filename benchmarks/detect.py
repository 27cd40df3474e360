"""Time-to-detect and shrunk-trace length for every faulty fixture.

    python benchmarks/detect.py [--profile default] [--only NAME,...] [--patience 15]
                                [--work-dir /tmp/octet-detect] [--json reports/detect-default.json]

(``python benchmarks/run.py --detect PROFILE`` runs the same and adds the rows to
its table.)

For each fixture in ``fixtures/extensions/`` (sorted by name), certify it with
the profile's fixed seed, keeping traces, and report:

- whether the requirement its ``expect.toml`` names got the expected verdict,
  and anything else flagged (should be nothing beyond ``also``);
- time-to-detect: seconds from the start of the certification to the first
  violation of that requirement (``RunResult.detected_after``), and where in
  the run it was (example, step);
- the length of its trace in host steps, before and after the certification
  shrank it (from the trace header; initialize and the orderly end excluded);
- the certification's wall time.

Totals: median time-to-detect over all fixtures (an undetected fixture counts
as never, so it sits at the top of the order) and over the detected ones, and
the median shrunk length. Machines here are noisy, so the JSON also holds the
raw echo pair's serial round-trip rate measured at the start of the same run
(``ceiling``, the convention of ``run.py``): compare medians across machines
in ceiling round trips, not seconds. Issue 4's goal is a median <= 5 s with
the default profile.

Fixtures run one after another (never two at once: detection times are wall
times). The JSON is rewritten after every fixture, so an interrupted run
keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.manifest import load_manifest
from conformance.peers.ext_host import Patience
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES
from conformance.runner.replay import host_steps
from conformance.transport.trace import load

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "extensions"
CEILING_SECONDS = 2.0
ECHO_LINE = b'{"jsonrpc":"2.0","id":1,"method":"tool/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'


@dataclass
class DetectRow:
    fixture: str
    requirement: str
    detected: bool  # the expected verdict (fail, or warn for a should) was reached
    detected_after_s: float | None  # seconds into the run of the first violation
    first_seen: str | None  # example, step and offer of that violation
    steps_before: int | None  # host steps of the first violating generation's trace
    steps_after: int | None  # after shrinking
    shrink_replays: int | None
    also_flagged: list[str]  # flagged beyond the requirement and its declared `also`
    wall_s: float


def trace_steps(trace: Path) -> tuple[int, int, int | None]:
    """(steps before shrinking, steps after, replays spent) of a saved trace."""
    header, entries = load(trace)
    shrunk = header.get("shrunk")
    if isinstance(shrunk, dict):
        return int(shrunk["steps_before"]), int(shrunk["steps_after"]), int(shrunk.get("replays", 0))
    steps = len(host_steps(entries))  # nothing could be dropped, shrinking was skipped, or a manifest rule
    return steps, steps, None


def fixtures(only: list[str] | None = None) -> list[Path]:
    found = sorted(p.parent for p in FIXTURES.glob("*/expect.toml"))
    if only:
        unknown = sorted(set(only) - {p.name for p in found})
        if unknown:
            raise SystemExit(f"unknown fixture(s): {', '.join(unknown)}")
        found = [p for p in found if p.name in only]
    return found


def measure(fixture: Path, *, profile_name: str, patience: Patience, work_dir: Path) -> DetectRow:
    expect = tomllib.loads((fixture / "expect.toml").read_text(encoding="utf-8"))
    requirement = str(expect["requirement"])
    expected = {requirement, *expect.get("also", [])}
    profile = PROFILES[profile_name]
    trace_dir = work_dir / fixture.name / "traces"
    for stale in trace_dir.glob("*.jsonl"):
        stale.unlink()
    start = time.perf_counter()
    run = certify_extension(
        load_manifest(fixture / "extension.toml"), profile, profile.default_seed, patience, trace_dir=trace_dir
    )
    wall = time.perf_counter() - start
    verdicts = {v.requirement.id: v for v in run.verdicts}
    flagged = {i for i, v in verdicts.items() if v.verdict in ("fail", "warn", "error")}
    target = verdicts.get(requirement)
    detected = target is not None and target.verdict == expect.get("verdict", "fail")
    trace = trace_dir / f"{requirement}.jsonl"
    before = after = replays = None
    if detected and trace.exists():
        before, after, replays = trace_steps(trace)
    after_s = run.detected_after.get(requirement)
    return DetectRow(
        fixture=fixture.name,
        requirement=requirement,
        detected=detected,
        detected_after_s=round(after_s, 3) if after_s is not None else None,
        first_seen=target.observed.first_seen if target is not None and target.observed is not None else None,
        steps_before=before,
        steps_after=after,
        shrink_replays=replays,
        also_flagged=sorted(flagged - expected) + [f"harness: {e[:120]}" for e in run.harness_errors],
        wall_s=round(wall, 3),
    )


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def totals(rows: list[DetectRow]) -> dict[str, Any]:
    found = [r.detected_after_s for r in rows if r.detected and r.detected_after_s is not None]
    # Undetected fixtures count as never: they sort above every detection.
    everything = sorted(found) + [float("inf")] * (len(rows) - len(found))
    shrunk = [float(r.steps_after) for r in rows if r.steps_after is not None]
    unshrunk = [float(r.steps_before) for r in rows if r.steps_before is not None]
    median_all = _median(everything)
    return {
        "fixtures": len(rows),
        "detected": len(found),
        "median_time_to_detect_s": median_all if median_all != float("inf") else None,
        "median_time_to_detect_detected_s": _median(found),
        "median_steps_before": _median(unshrunk),
        "median_steps_after": _median(shrunk),
        "max_steps_after": max(shrunk, default=None),
        "total_wall_s": round(sum(r.wall_s for r in rows), 1),
    }


def table(rows: list[DetectRow]) -> str:
    head = ("fixture", "requirement", "detected", "after s", "first seen", "steps", "wall s", "also flagged")
    lines = [head]
    for r in rows:
        steps = "-" if r.steps_after is None else f"{r.steps_before} -> {r.steps_after}"
        when = "-" if r.detected_after_s is None else f"{r.detected_after_s:.1f}"
        where = (r.first_seen or "-").split(", offer")[0]
        lines.append(
            (
                r.fixture,
                r.requirement,
                "yes" if r.detected else "NO",
                when,
                where,
                steps,
                f"{r.wall_s:.0f}",
                ", ".join(r.also_flagged) or "-",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def summary_lines(t: dict[str, Any]) -> list[str]:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    return [
        f"detected {t['detected']}/{t['fixtures']}; median time-to-detect {s(t['median_time_to_detect_s'])} s "
        f"(undetected count as never; over detected only: {s(t['median_time_to_detect_detected_s'])} s)",
        f"median trace length {s(t['median_steps_before'])} steps before shrinking, "
        f"{s(t['median_steps_after'])} after (max {s(t['max_steps_after'])}); "
        f"certification wall total {t['total_wall_s']:.0f} s",
    ]


def ceiling(seconds: float = CEILING_SECONDS) -> dict[str, float]:
    """The same-run ceiling (run.py's convention): serial round trips per
    second of a raw NDJSON echo pair over pipes, measured just before."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "echo_child.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            proc.stdin.write(ECHO_LINE)
            proc.stdin.flush()
            proc.stdout.readline()
            n += 1
        return {"serial_rtt_per_s": n / (time.perf_counter() - start)}
    finally:
        proc.kill()
        proc.wait(timeout=10)


def detect(
    profile_name: str,
    *,
    only: list[str] | None = None,
    patience: Patience | None = None,
    work_dir: Path = Path("/tmp/octet-detect"),
    json_path: Path | None = None,
    progress: bool = True,
    same_run_ceiling: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Measure every fixture; returns (and keeps rewriting ``json_path`` with)
    the report. ``same_run_ceiling``: the caller's ceiling figures, if it
    measured them already."""
    patience = patience or Patience()
    report: dict[str, Any] = {
        "profile": profile_name,
        "seed": PROFILES[profile_name].default_seed,
        "patience_s": patience.response_s,
        "ceiling": same_run_ceiling,
        "fixtures": [],
        "totals": {},
    }
    rows: list[DetectRow] = []
    for fixture in fixtures(only):
        row = measure(fixture, profile_name=profile_name, patience=patience, work_dir=work_dir)
        rows.append(row)
        if progress:
            when = "NOT detected" if not row.detected else f"detected after {row.detected_after_s:.1f} s"
            print(f"{row.fixture}: {when}, {row.wall_s:.0f} s certification", flush=True)
        report["fixtures"] = [asdict(r) for r in rows]
        report["totals"] = totals(rows)
        median = report["totals"]["median_time_to_detect_s"]
        if same_run_ceiling and median is not None:
            # The ratio convention for a duration: how many ceiling round trips it lasts.
            report["totals"]["median_time_to_detect_ceiling_rtts"] = round(
                median * same_run_ceiling["serial_rtt_per_s"]
            )
        if json_path is not None:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def print_report(report: dict[str, Any]) -> None:
    rows = [DetectRow(**r) for r in report["fixtures"]]
    print(table(rows))
    slowest = sorted(
        rows, key=lambda r: (not r.detected, r.detected_after_s if r.detected_after_s is not None else 0), reverse=True
    )[:10]
    print("slowest to detect: " + ", ".join(f"{r.fixture} ({r.detected_after_s})" for r in slowest))
    for line in summary_lines(report["totals"]):
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", choices=sorted(PROFILES))
    parser.add_argument("--only", default="", help="comma-separated fixture names (default: every fixture)")
    parser.add_argument("--patience", type=float, default=15.0, help="response deadline in seconds (as the CLI)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/octet-detect"), help="where traces are kept")
    parser.add_argument("--json", type=Path, default=None, help="default: reports/detect-PROFILE.json")
    args = parser.parse_args()
    report = detect(
        args.profile,
        only=[n for n in args.only.split(",") if n] or None,
        patience=Patience.of(args.patience),
        work_dir=args.work_dir,
        json_path=args.json or Path("reports") / f"detect-{args.profile}.json",
        same_run_ceiling=ceiling(),
    )
    print_report(report)


if __name__ == "__main__":
    main()
