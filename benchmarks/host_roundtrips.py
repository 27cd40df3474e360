"""tool/call round trips per second: reference host <-> reference extension.

Usage: python benchmarks/host_roundtrips.py [--api-version 0.2] [--seconds 2] [--rounds 5]

One call in flight at a time (serial latency), measured in short alternating
rounds beside the raw NDJSON echo pair of the same run (benchmarks/run.py's
ceiling), so load that comes and goes on the shared cores hits both sides of
the ratio alike. The ratio is the median of the per-round ratios. The bare
pipe client against the same reference extension is measured in the same
rounds too, so ``ratio_host_to_bare_client`` isolates what the host itself
costs per call. Also reports the serial rate on the simulated transport
(in-process, virtual clock): the host's and the extension's bookkeeping alone,
and (benchmarks/host_machine.py) HostMachine steps per second of ``host
--simulate`` beside the subprocess run of the same profile and seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from host_machine import simulated_vs_subprocess  # benchmarks/ is on sys.path when run as a script
from reference_echo_roundtrips import ReferenceClient
from run import EchoPair

from conformance.reference.host import HostConfig, ReferenceHost, SimWorld

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE.parent / "conformance" / "reference" / "extension" / "manifests"


def host_serial(host: ReferenceHost, name: str, seconds: float) -> tuple[int, float]:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        outcome = host.call_tool(name, "echo", {"text": "hi"}, timeout=10.0)
        if not outcome.ok:
            raise RuntimeError(f"call failed: {outcome}")
        n += 1
    return n, elapsed


def simulated_serial(api_version: str, seconds: float) -> float:
    world = SimWorld()
    host = ReferenceHost(runtime=world.runtime, launcher=world.launcher)
    name = world.run(lambda: host.load(MANIFESTS / f"api-{api_version}" / "extension.toml")).name

    def loop() -> tuple[int, float]:
        return host_serial(host, name, seconds)

    n, elapsed = world.run(loop)
    world.run(lambda: host.shutdown())
    return n / elapsed


def measure(api_version: str, seconds: float, rounds: int) -> dict[str, object]:
    host = ReferenceHost(config=HostConfig())
    name = host.load(MANIFESTS / f"api-{api_version}" / "extension.toml").name
    raw_rates, bare_rates, host_rates, ratios, bare_ratios = [], [], [], [], []
    try:
        with EchoPair() as pair, ReferenceClient(api_version) as bare:
            pair.serial(0.2)  # warm every side up
            bare.serial_echoes(0.2)
            host_serial(host, name, 0.2)
            for _ in range(rounds):
                n, elapsed = pair.serial(seconds / rounds)
                raw = n / elapsed
                n, elapsed = bare.serial_echoes(seconds / rounds)
                direct = n / elapsed
                n, elapsed = host_serial(host, name, seconds / rounds)
                hosted = n / elapsed
                raw_rates.append(raw)
                bare_rates.append(direct)
                host_rates.append(hosted)
                ratios.append(hosted / raw)
                bare_ratios.append(hosted / direct)
    finally:
        host.shutdown()
    return {
        "api_version": api_version,
        "raw_echo_serial_per_s": round(statistics.median(raw_rates)),
        "bare_client_tool_call_serial_per_s": round(statistics.median(bare_rates)),
        "host_tool_call_serial_per_s": round(statistics.median(host_rates)),
        "ratio_host_to_raw": round(statistics.median(ratios), 3),
        "ratio_host_to_bare_client": round(statistics.median(bare_ratios), 3),
        "simulated_host_tool_call_serial_per_s": round(simulated_serial(api_version, seconds / rounds)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python benchmarks/host_roundtrips.py")
    parser.add_argument("--api-version", default="0.2", choices=["0.1", "0.2", "0.4"])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--machine-profile", default="quick", help="profile for HostMachine steps/s, simulated vs subprocess ('' skips)"
    )
    args = parser.parse_args(argv)
    figures = measure(args.api_version, args.seconds, args.rounds)
    if args.machine_profile:
        figures["host_machine"] = simulated_vs_subprocess(args.machine_profile, args.api_version)
    json.dump(figures, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
