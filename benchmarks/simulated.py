"""State-machine steps per second: the simulated in-process pair against the
subprocess run, side by side in one run.

    python benchmarks/simulated.py [--profile default] [--api 0.2]

Both runs certify the reference extension with the same profile and seed;
the simulated one runs the same server code on the virtual-clock scheduler
(conformance/transport/simulated.py). A step is one state-machine rule or
initialize; both runs take the same steps, so the ratio is the speed-up of
the transport alone. The verdicts of the two runs are compared too.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from conformance.machines.extension import ExtensionMachine
from conformance.manifest import load_manifest
from conformance.peers.ext_host import Launcher, spawn_process
from conformance.peers.simulated import simulated_reference
from conformance.runner.extension import certify_extension
from conformance.runner.profiles import PROFILES

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE.parent / "conformance" / "reference" / "extension" / "manifests"


def count_steps() -> list[int]:
    """Count machine steps (every rule and initialize calls _context once)."""
    counter = [0]
    original = ExtensionMachine._context

    def counting(self: ExtensionMachine, *args: Any, **kwargs: Any) -> None:
        counter[0] += 1
        original(self, *args, **kwargs)

    ExtensionMachine._context = counting  # type: ignore[method-assign]
    return counter


def measure(launcher: Launcher, profile: str, api: str) -> dict[str, Any]:
    counter = count_steps()
    manifest = load_manifest(MANIFESTS / f"api-{api}" / "extension.toml")
    chosen = PROFILES[profile]
    start = time.perf_counter()
    run = certify_extension(manifest, chosen, chosen.default_seed, launcher=launcher)
    wall = time.perf_counter() - start
    verdicts = {v.requirement.id: v.verdict for v in run.verdicts}
    return {"steps": counter[0], "wall_s": wall, "steps_per_s": counter[0] / wall, "verdicts": verdicts}


def simulated_vs_subprocess(profile: str = "default", api: str = "0.2") -> dict[str, Any]:
    original = ExtensionMachine._context
    try:
        sim = measure(simulated_reference, profile, api)
        ExtensionMachine._context = original  # type: ignore[method-assign]
        proc = measure(spawn_process, profile, api)
    finally:
        ExtensionMachine._context = original  # type: ignore[method-assign]
    same = sim.pop("verdicts") == proc.pop("verdicts")
    return {
        "profile": profile,
        "api": api,
        "simulated": sim,
        "subprocess": proc,
        "speedup": sim["steps_per_s"] / proc["steps_per_s"],
        "same_verdicts": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="default", choices=sorted(PROFILES))
    parser.add_argument("--api", default="0.2", choices=["0.1", "0.2", "0.4"])
    parser.add_argument("--json", type=Path, default=HERE.parent / "reports" / "simulated.json")
    args = parser.parse_args()
    result = simulated_vs_subprocess(args.profile, args.api)
    print(f"{'pair':<12}{'steps':>8}{'wall s':>9}{'steps/s':>10}")
    for name in ("simulated", "subprocess"):
        row = result[name]
        print(f"{name:<12}{row['steps']:>8}{row['wall_s']:>9.2f}{row['steps_per_s']:>10.1f}")
    print(f"speed-up {result['speedup']:.1f}x; same verdicts: {result['same_verdicts']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
