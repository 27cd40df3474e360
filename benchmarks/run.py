"""Benchmarks, as ratios to a ceiling measured in the same run.

    python benchmarks/run.py [--seconds 2] [--json reports/benchmarks.json] [--skip-certify]

Prints a table and writes JSON. Machines here are noisy, so every figure is
also given relative to the raw NDJSON echo pair measured moments before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.manifest import load_manifest
from conformance.peers.ext_host import ExtensionHostPeer
from conformance.runner.extension import certify_extension, full_offer
from conformance.runner.profiles import PROFILES

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE.parent / "conformance" / "reference" / "extension" / "manifests"
LINE = b'{"jsonrpc":"2.0","id":1,"method":"tool/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'


def raw_echo(seconds: float) -> dict[str, float]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "echo_child.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin and proc.stdout
    try:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            proc.stdin.write(LINE)
            proc.stdin.flush()
            proc.stdout.readline()
            n += 1
        serial = n / (time.perf_counter() - start)
        batch = 20_000
        start = time.perf_counter()
        # Write from a thread: the child's stdout pipe would fill and
        # deadlock a single-threaded write-everything-then-read.
        writer = threading.Thread(target=lambda: (proc.stdin.write(LINE * batch), proc.stdin.flush()))  # type: ignore[union-attr]
        writer.start()
        for _ in range(batch):
            proc.stdout.readline()
        pipelined = batch / (time.perf_counter() - start)
        writer.join()
    finally:
        proc.kill()
        proc.wait()
    return {"serial_rtt_per_s": serial, "pipelined_msgs_per_s": pipelined}


def harness_echo(seconds: float, api: str = "0.2") -> dict[str, float]:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    peer = ExtensionHostPeer(manifest, Recorder())
    offer = full_offer(api)
    peer.start(offer)
    try:
        assert peer.initialize(offer)
        params = {"name": "echo", "arguments": {"text": "hi"}, "context": {"workspace": "/", "host": {}}}
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            peer.settle([peer.request("tool/call", params)])
            n += 1
        serial = n / (time.perf_counter() - start)
        assert peer.session is not None and peer.session.negotiated is not None
        width = peer.session.negotiated.max_concurrent_requests or 1
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            frames = [peer.request_frame("tool/call", params) for _ in range(width)]
            peer.write_raw(b"".join(f for _, f in frames))
            peer.settle([rid for rid, _ in frames])
            n += width
        concurrent = n / (time.perf_counter() - start)
    finally:
        peer.close()
    return {"serial_rtt_per_s": serial, "concurrent_calls_per_s": concurrent, "concurrency": float(width)}


def certify_wall(profile: str, api: str) -> float:
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    start = time.perf_counter()
    certify_extension(manifest, PROFILES[profile], PROFILES[profile].default_seed)
    return time.perf_counter() - start


def time_to_detect(profile: str) -> list[dict[str, Any]]:
    """Per faulty fixture: seconds until its named requirement was first violated."""
    import tomllib

    rows = []
    for expect_path in sorted((HERE.parent / "fixtures" / "extensions").glob("*/expect.toml")):
        expect = tomllib.loads(expect_path.read_text(encoding="utf-8"))
        manifest = load_manifest(expect_path.parent / "extension.toml")
        start = time.perf_counter()
        run = certify_extension(manifest, PROFILES[profile], PROFILES[profile].default_seed)
        wall = time.perf_counter() - start
        rows.append(
            {
                "fixture": expect_path.parent.name,
                "requirement": expect["requirement"],
                "detected_after_s": run.detected_after.get(expect["requirement"]),
                "wall_s": wall,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", type=Path, default=Path("reports/benchmarks.json"))
    parser.add_argument("--profiles", default="quick", help="comma-separated certification profiles to time")
    parser.add_argument("--detect", default="", help="profile for time-to-detect over every faulty fixture (slow)")
    args = parser.parse_args()

    ceiling = raw_echo(args.seconds)
    harness = harness_echo(args.seconds)
    rows: list[tuple[str, float, str, float | None]] = [
        ("raw echo pair, serial round trips", ceiling["serial_rtt_per_s"], "/s", 1.0),
        ("raw echo pair, pipelined messages", ceiling["pipelined_msgs_per_s"], "/s", 1.0),
        (
            "harness <-> reference, serial tool/call",
            harness["serial_rtt_per_s"],
            "/s",
            harness["serial_rtt_per_s"] / ceiling["serial_rtt_per_s"],
        ),
        (
            f"harness <-> reference, {int(harness['concurrency'])} concurrent",
            harness["concurrent_calls_per_s"],
            "/s",
            harness["concurrent_calls_per_s"] / ceiling["pipelined_msgs_per_s"],
        ),
    ]
    results: dict[str, Any] = {"ceiling": ceiling, "harness": harness, "certify_wall_s": {}}
    for profile in [p for p in args.profiles.split(",") if p]:
        for api in ("0.1", "0.2", "0.4"):
            wall = certify_wall(profile, api)
            results["certify_wall_s"][f"{profile}/{api}"] = wall
            rows.append((f"certify reference API {api}, {profile} profile", wall, "s", None))
    if args.detect:
        detections = time_to_detect(args.detect)
        results["time_to_detect"] = detections
        found = sorted(d["detected_after_s"] for d in detections if d["detected_after_s"] is not None)
        if found:
            rows.append(
                (f"median time-to-detect ({len(found)}/{len(detections)} found)", found[len(found) // 2], "s", None)
            )
        for d in detections:
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
