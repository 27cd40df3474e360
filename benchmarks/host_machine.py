"""HostMachine steps per second: ``host --simulate`` against the subprocess run, side by side.

    python benchmarks/host_machine.py [--profile quick] [--api 0.2]

Both runs certify the reference host (the fixed scenarios, then the
HostMachine) with the same profile and seed: one through its driver as a
subprocess with real probe processes, one in-process on the virtual clock
(conformance/peers/host_simulated.py). A step is one machine rule or its
initialize. The scenarios the simulated run leaves to processes (floods,
signals) and the fixed ones differ in cost, so whole-run wall time is shown
too; the verdicts of the two runs are compared.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import conformance.machines.host as machine_module
from conformance.machines.host import HostMachine
from conformance.runner.host import REFERENCE_DRIVER, certify_host
from conformance.runner.profiles import PROFILES

HERE = Path(__file__).resolve().parent


def measure(simulate: bool, profile: str, api: str) -> dict[str, Any]:
    """One certification; machine steps are counted through ``HostMachine._step``
    and its initialize, and the machine's share of the wall time is timed apart."""
    counter, machine_wall = [0], [0.0]
    step, load, run_machine = HostMachine._step, machine_module.load_ready, _runner_machine()

    def counting_step(self: HostMachine) -> None:
        counter[0] += 1
        step(self)

    def counting_load(*args: Any) -> None:  # the machine's initialize (kept a Hypothesis rule)
        counter[0] += 1
        load(*args)

    def timed_machine(*args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            run_machine(*args, **kwargs)
        finally:
            machine_wall[0] += time.perf_counter() - start

    import conformance.runner.host as runner

    HostMachine._step, runner._run_machine = counting_step, timed_machine  # type: ignore[method-assign]
    machine_module.load_ready = counting_load
    try:
        chosen = PROFILES[profile]
        start = time.perf_counter()
        run = certify_host(REFERENCE_DRIVER, api, chosen, chosen.default_seed, simulate=simulate)
        wall = time.perf_counter() - start
    finally:
        HostMachine._step, runner._run_machine = step, run_machine  # type: ignore[method-assign]
        machine_module.load_ready = load
    bad = sum(1 for v in run.verdicts if v.verdict in ("fail", "warn", "error")) + len(run.harness_errors)
    return {
        "steps": counter[0],
        "machine_wall_s": round(machine_wall[0], 3),
        "machine_steps_per_s": round(counter[0] / machine_wall[0], 1) if machine_wall[0] else 0.0,
        "run_wall_s": round(wall, 3),
        "fail_warn_error": bad,
        "verdicts": {v.requirement.id: v.verdict for v in run.verdicts},
    }


def _runner_machine() -> Any:
    import conformance.runner.host as runner

    return runner._run_machine


def simulated_vs_subprocess(profile: str = "quick", api: str = "0.2") -> dict[str, Any]:
    sim = measure(True, profile, api)
    proc = measure(False, profile, api)
    sim_verdicts, proc_verdicts = sim.pop("verdicts"), proc.pop("verdicts")
    differ = sorted(k for k in sim_verdicts if sim_verdicts[k] != proc_verdicts.get(k))
    speedup = sim["machine_steps_per_s"] / proc["machine_steps_per_s"] if proc["machine_steps_per_s"] else 0.0
    return {
        "profile": profile,
        "api": api,
        "simulated": sim,
        "subprocess": proc,
        "machine_speedup": round(speedup, 1),
        "verdicts_differ": differ,  # requirements only the subprocess run can exercise (floods, signals)
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="quick", choices=sorted(PROFILES))
    parser.add_argument("--api", default="0.2", choices=["0.1", "0.2", "0.4"])
    args = parser.parse_args(argv)
    print(json.dumps(simulated_vs_subprocess(args.profile, args.api), indent=2))


if __name__ == "__main__":
    main()
