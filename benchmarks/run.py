"""Benchmarks, as ratios to a ceiling measured in the same run.

    python benchmarks/run.py [--seconds 2] [--profiles quick] [--detect default] [--sim-profile quick]

Prints a table and writes JSON. Machines here are noisy (two shared cores),
so every figure is also given relative to the raw NDJSON echo pair measured
in the same run: serial round trips are measured in short alternating rounds
(raw pair, bare client against the reference, harness against the reference)
and the ratio is the median of the per-round ratios, so load that comes and
goes hits both sides of a ratio alike. CPU per call (harness and target
process, from the OS) is reported too: a serial round trip between two
processes on two busy cores costs about the sum of both sides' CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reference_echo_roundtrips import ReferenceClient, process_cpu_s  # benchmarks/ is on sys.path
from simulated import simulated_vs_subprocess

from conformance.evidence import Recorder
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer, Launcher, spawn_process
from conformance.peers.simulated import simulated_reference
from conformance.runner.extension import certify_extension, full_offer
from conformance.runner.profiles import PROFILES

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE.parent / "conformance" / "reference" / "extension" / "manifests"
LINE = b'{"jsonrpc":"2.0","id":1,"method":"tool/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'
ROUNDS = 5


class EchoPair:
    """The ceiling: ``echo_child.py`` over pipes, driven with file objects."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "echo_child.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def serial(self, seconds: float) -> tuple[int, float]:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin and stdout
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            stdin.write(LINE)
            stdin.flush()
            stdout.readline()
            n += 1
        return n, elapsed

    def pipelined(self, batch: int = 20_000) -> float:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin and stdout
        start = time.perf_counter()
        # Write from a thread: the child's stdout pipe would fill and
        # deadlock a single-threaded write-everything-then-read.
        writer = threading.Thread(target=lambda: (stdin.write(LINE * batch), stdin.flush()))
        writer.start()
        for _ in range(batch):
            stdout.readline()
        rate = batch / (time.perf_counter() - start)
        writer.join()
        return rate

    def __enter__(self) -> EchoPair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


class HarnessPair:
    """ExtensionHostPeer against the reference extension, initialized."""

    PARAMS = {"name": "echo", "arguments": {"text": "hi"}, "context": {"workspace": "/", "host": {}}}

    def __init__(self, api: str = "0.2", launcher: Launcher = spawn_process) -> None:
        manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
        self.peer = ExtensionHostPeer(manifest, Recorder(), launcher=launcher)
        offer = full_offer(api)
        self.peer.start(offer)
        assert self.peer.initialize(offer)
        assert self.peer.process is not None and self.peer.session is not None
        assert self.peer.session.negotiated is not None
        self.pid = getattr(self.peer.process, "pgid", None)  # the leader: its own group (None in-process)
        self.width = self.peer.session.negotiated.max_concurrent_requests or 1

    def serial(self, seconds: float) -> tuple[int, float]:
        peer = self.peer
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            peer.settle([peer.request("tool/call", self.PARAMS)])
            n += 1
        return n, elapsed

    def concurrent(self, seconds: float) -> tuple[int, float]:
        peer = self.peer
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            frames = [peer.request_frame("tool/call", self.PARAMS) for _ in range(self.width)]
            peer.write_raw(b"".join(f for _, f in frames))
            peer.settle([rid for rid, _ in frames])
            n += self.width
        return n, elapsed

    def __enter__(self) -> HarnessPair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.peer.close()


class CpuMeter:
    """CPU seconds this process and one target spend inside ``measure``."""

    def __init__(self, pid: int) -> None:
        self.pid, self.own, self.target, self.calls = pid, 0.0, 0.0, 0
        self.target_known = True

    def measure(self, run: Any, seconds: float) -> tuple[int, float]:
        own, target = time.process_time(), process_cpu_s(self.pid)
        n, elapsed = run(seconds)
        after = process_cpu_s(self.pid)
        self.own += time.process_time() - own
        if target is None or after is None:
            self.target_known = False
        else:
            self.target += after - target
        self.calls += n
        return n, elapsed

    def per_call_us(self) -> tuple[float, float | None]:
        calls = max(self.calls, 1)
        return self.own / calls * 1e6, (self.target / calls * 1e6 if self.target_known else None)


def serial_rounds(seconds: float, rounds: int = ROUNDS) -> dict[str, Any]:
    """Alternate short serial runs of the raw pair, the bare reference client
    and the harness; medians of rates and of per-round ratios."""
    slice_s = seconds / rounds
    per_round: list[dict[str, float]] = []
    with EchoPair() as echo, ReferenceClient("0.2") as reference, HarnessPair("0.2") as harness:
        meter = CpuMeter(harness.pid)
        for _ in range(rounds):
            ceiling = _rate(echo.serial(slice_s))
            bare = _rate(reference.serial_echoes(slice_s))
            ours = _rate(meter.measure(harness.serial, slice_s))
            per_round.append({"ceiling": ceiling, "reference_alone": bare, "harness": ours})
        pipelined = echo.pipelined()
        concurrent = _rate(harness.concurrent(seconds))
        width = harness.width
    harness_cpu, target_cpu = meter.per_call_us()

    def median(key: str) -> float:
        return statistics.median(r[key] for r in per_round)

    def median_ratio(key: str) -> float:
        return statistics.median(r[key] / r["ceiling"] for r in per_round)

    return {
        "ceiling": {"serial_rtt_per_s": median("ceiling"), "pipelined_msgs_per_s": pipelined},
        "reference_alone": {"serial_rtt_per_s": median("reference_alone"), "ratio": median_ratio("reference_alone")},
        "harness": {
            "serial_rtt_per_s": median("harness"),
            "serial_ratio": median_ratio("harness"),
            "harness_cpu_us_per_serial_call": harness_cpu,
            "target_cpu_us_per_serial_call": target_cpu,
            "concurrent_calls_per_s": concurrent,
            "concurrency": float(width),
        },
        "rounds": per_round,
    }


def _rate(measured: tuple[int, float]) -> float:
    n, elapsed = measured
    return n / elapsed if elapsed > 0 else 0.0


def certify_wall(profile: str, api: str) -> float:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    start = time.perf_counter()
    certify_extension(manifest, PROFILES[profile], PROFILES[profile].default_seed)
    return time.perf_counter() - start


def time_to_detect(profile: str, ceiling: dict[str, float]) -> dict[str, Any]:
    """Per faulty fixture: time-to-detect and shrunk trace length (benchmarks/detect.py)."""
    from detect import detect  # benchmarks/ is on sys.path

    return detect(profile, json_path=Path("reports") / f"detect-{profile}.json", same_run_ceiling=ceiling)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", type=Path, default=Path("reports/benchmarks.json"))
    parser.add_argument("--profiles", default="quick", help="comma-separated certification profiles to time")
    parser.add_argument("--detect", default="", help="profile for time-to-detect over every faulty fixture (slow)")
    parser.add_argument("--sim-profile", default="quick", help="profile for steps/s, simulated pair vs subprocess")
    args = parser.parse_args()

    measured = serial_rounds(args.seconds)
    ceiling, harness, bare = measured["ceiling"], measured["harness"], measured["reference_alone"]
    ceiling_rtt = ceiling["serial_rtt_per_s"]
    rows: list[tuple[str, float, str, float | None]] = [
        ("raw echo pair, serial round trips", ceiling["serial_rtt_per_s"], "/s", 1.0),
        ("raw echo pair, pipelined messages", ceiling["pipelined_msgs_per_s"], "/s", 1.0),
        ("bare client <-> reference, serial echo", bare["serial_rtt_per_s"], "/s", bare["ratio"]),
        ("harness <-> reference, serial tool/call", harness["serial_rtt_per_s"], "/s", harness["serial_ratio"]),
        ("  harness CPU per serial call", harness["harness_cpu_us_per_serial_call"], "us", None),
    ]
    if harness["target_cpu_us_per_serial_call"] is not None:
        rows.append(("  reference CPU per serial call", harness["target_cpu_us_per_serial_call"], "us", None))
    rows.append(
        (
            f"harness <-> reference, {int(harness['concurrency'])} concurrent",
            harness["concurrent_calls_per_s"],
            "/s",
            harness["concurrent_calls_per_s"] / ceiling["pipelined_msgs_per_s"],
        )
    )
    with HarnessPair(launcher=simulated_reference) as pair:
        in_process = _rate(pair.serial(args.seconds))
    rows.append(("harness <-> reference in-process (simulated)", in_process, "/s", in_process / ceiling_rtt))
    steps = simulated_vs_subprocess(args.sim_profile)
    for pair_name in ("simulated", "subprocess"):
        rows.append(
            (f"machine steps, {pair_name} pair ({args.sim_profile})", steps[pair_name]["steps_per_s"], "/s", None)
        )
    rows.append(("  simulated / subprocess steps per second", steps["speedup"], "x", None))
    measured["in_process_serial_rtt_per_s"] = in_process
    results: dict[str, Any] = {**measured, "steps": steps, "certify_wall_s": {}}
    for profile in [p for p in args.profiles.split(",") if p]:
        for api in ("0.1", "0.2", "0.4"):
            wall = certify_wall(profile, api)
            results["certify_wall_s"][f"{profile}/{api}"] = wall
            rows.append((f"certify reference API {api}, {profile} profile", wall, "s", None))
    if args.detect:
        detections = time_to_detect(args.detect, ceiling)
        results["time_to_detect"] = detections
        t = detections["totals"]
        median = t["median_time_to_detect_s"]
        rows.append(
            (
                f"median time-to-detect ({t['detected']}/{t['fixtures']} found)",
                median if median is not None else float("nan"),
                "s",
                None,
            )
        )
        if t["median_steps_after"] is not None:
            rows.append(("median shrunk trace length (steps)", t["median_steps_after"], "", None))
        for d in detections["fixtures"]:
            after = d["detected_after_s"]
            rows.append((f"  detect {d['fixture']}", after if after is not None else float("nan"), "s", None))
    print(f"{'measure':50} {'value':>12}  {'ratio to ceiling':>16}")
    for name, value, unit, ratio in rows:
        r = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"{name:50} {value:>10.1f}{unit:>2}  {r:>16}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.json}")


if __name__ == "__main__":
    main()
