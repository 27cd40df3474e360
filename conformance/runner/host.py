"""Certify a host: its driver (docs/host-driver.md) operates it, the probe is its extension.

How to use::

    run = certify_host(["python3", "-m", "conformance.reference.host.driver"], "0.2", PROFILES["quick"], 1)
    write_matrix(run, Path("reports/host"))     # same matrix / JUnit as ``extension`` (role "host")

The run starts the driver once, says hello, then plays every fixed scenario
of :mod:`conformance.scenarios` for the API version, each on a
fresh probe generation. A driver that breaks the contract stops the run with
an ``error`` naming the cause (exit status 2); a host that kills the probe
mid-scenario is judged on what it did. At the end the driver is told to shut
everything down and exit, and its process group, every probe and every
grandchild a probe reported are killed whatever happened.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings

from conformance.evidence import Recorder, StepContext
from conformance.machines.host import machine_for
from conformance.manifest import OCTET_VERSION, Manifest
from conformance.peers.host_driver import DriverError, HostDriver
from conformance.peers.host_rig import HostRig, ProbeGone, RigPace, save_traces
from conformance.peers.host_simulated import NEEDS_PROCESSES, NeedsProcesses, SimulatedHost
from conformance.peers.probe import ProbeListener
from conformance.reference.host.simulated import SimDeadlock
from conformance.requirements import load_catalog
from conformance.scenarios import Scenario
from conformance.scenarios.host import scenarios_for
from conformance.scenarios.host_children import ON_REQUEST
from conformance.scenarios.host_handling import handling_scenarios
from conformance.scenarios.host_lifecycle import lifecycle_scenarios
from conformance.scenarios.host_steps import HostQueued, HostRejected
from conformance.scenarios.host_storms import machine_scenarios
from conformance.scenarios.lifecycle_steps import SCALED_DRAIN_MS, state_judge
from conformance.scenarios.storm_steps import SCALED_BACKOFF
from conformance.transport.trace import load
from conformance.verdicts import decide

from .budget import deadline_of, run_deadline, within_budget
from .extension import RunResult, with_trace
from .profiles import PROFILES, Profile
from .replay import NotReplayable, ReplayOutcome
from .search import machine_stages, run_machine

# With the driver's ``timing`` capability the host's §1.8 stage is scaled to
# this, so stubborn-shutdown scenarios take a fraction of a second, not 4 s.
SCALED_STAGE_MS = 300
REFERENCE_DRIVER = ("python3", "-m", "conformance.reference.host.driver")
SIMULATED_DRIVER = ("simulated", "conformance.reference.host.driver")


def certify_host(
    driver_argv: list[str] | tuple[str, ...],
    api_version: str,
    profile: Profile,
    run_seed: int,
    *,
    patience_s: float = 10.0,
    trace_dir: Path | None = None,
    cwd: Path | None = None,
    listener: ProbeListener | None = None,
    machine: bool = True,
    only: tuple[str, ...] = (),
    simulate: bool = False,
    judged: frozenset[str] | None = None,
    watch: Callable[[Recorder], None] | None = None,
    budget_s: float | None = None,
) -> RunResult:
    """``simulate``: the bundled reference host in-process on the virtual
    clock (``driver_argv`` is then ignored; see :mod:`conformance.peers.host_simulated`).
    ``cwd``: where the driver runs (default: here). ``listener``: pass one
    to look at the probes afterwards (it is closed either way). ``machine``:
    also run the :class:`HostMachine` (half the profile's examples and steps).
    ``only``: run just the scenarios whose name starts with one of these
    (tests of faulty hosts; a certification runs them all). ``judged``: the
    requirement ids a selection judges (conformance/selection.py; None: all).
    ``watch``: called with the run's recorder (a progress display).
    ``budget_s``: the run's wall-time budget (default: the profile's for this
    patience; runner/budget.py)."""
    recorder = Recorder(trace_dir=trace_dir, run_info={"profile": profile.name, "seed": run_seed}, judged=judged)
    if watch is not None:
        watch(recorder)  # a progress display (runner/progress.py)
    deadline = deadline_of(recorder, profile, "host", patience_s, budget_s)
    recorder.context = StepContext("driver")
    if simulate:
        return _certify_simulated(recorder, api_version, profile, run_seed, patience_s, machine, only, deadline)
    listener = listener or ProbeListener()
    driver: HostDriver | None = None
    info: list[tuple[str, str]] = [("host", "?")]
    try:
        with run_deadline(deadline):
            driver = HostDriver.spawn(list(driver_argv), cwd=cwd)
            # Before any verdict: a driver that cannot say hello is a SetupFailure.
            within_budget(recorder, driver.greet)
            within_budget(recorder, lambda: info.append(_drive(driver, listener, recorder, api_version, profile,
                                                               run_seed, machine, only, patience_s, None)))  # fmt: skip
    except DriverError as exc:
        recorder.harness_errors.append(f"host driver: {exc}")
        if driver is not None:
            driver.close()  # it broke the contract: no polite exit
    finally:
        if driver is not None and recorder.budget_spent is not None:
            driver.close()  # out of time: no polite exit either
        elif driver is not None:
            driver.exit()  # kills its group whatever it answers
        listener.close()
    return _result(recorder, driver_argv, info[-1][0], info[-1][1], api_version, profile, run_seed, deadline)


def _drive(
    driver: HostDriver,
    listener: Any,
    recorder: Recorder,
    api_version: str,
    profile: Profile,
    run_seed: int,
    machine: bool,
    only: tuple[str, ...],
    patience_s: float,
    options: dict[str, Any] | None,
) -> tuple[str, str]:
    """Hello, the scenarios, the machine, shutdown; returns the host's name and version.
    ``options``: the rig options (None: from the driver's capabilities)."""
    info = driver.hello_info or driver.hello()  # said already when the run greeted it
    driver.observers.append(state_judge(recorder))
    if api_version not in info.api_versions:
        recorder.harness_errors.append(f"driver: the host does not load API {api_version} ({info.api_versions})")
    else:
        options = options if options is not None else _rig_options(driver, patience_s)
        skip = skipped_scenarios(profile, only, simulated=options.get("idle_wait") is not None)
        played = _scenarios(driver, listener, recorder, api_version, options, only, skip)
        if machine and played:
            _run_machine(driver, listener, recorder, api_version, options, profile, run_seed)
    driver.request("shutdown", {}, 15.0)
    return info.host_name or "host", info.host_version or "?"


def skipped_scenarios(profile: Profile, only: tuple[str, ...], *, simulated: bool) -> tuple[str, ...]:
    """Name prefixes of the scenarios a run leaves out: those needing real
    processes when simulated, and the costly :data:`ON_REQUEST` ones unless
    the profile is thorough or the run names its scenarios (``only``). A
    scenario left out leaves its requirements untested, never passed."""
    skip = NEEDS_PROCESSES if simulated else ()
    return skip if profile.name == "thorough" or only else (*skip, *ON_REQUEST)


def _certify_simulated(
    recorder: Recorder,
    api_version: str,
    profile: Profile,
    run_seed: int,
    patience_s: float,
    machine: bool,
    only: tuple[str, ...],
    deadline: float,
) -> RunResult:
    """The reference host, its probes and the harness on one virtual clock
    (no wall-time budget applies: nothing waits on the wall clock)."""
    sim = SimulatedHost()
    info: tuple[str, str] = ("host", "?")

    def body() -> tuple[str, str]:
        options = sim.rig_options(patience_s)
        try:
            return _drive(sim.driver, sim.listener, recorder, api_version, profile, run_seed, machine, only,
                          patience_s, options)  # fmt: skip
        finally:
            sim.driver.exit()

    try:
        info = sim.run(body)
    except DriverError as exc:
        recorder.harness_errors.append(f"host driver: {exc}")
    except SimDeadlock as exc:
        recorder.harness_errors.append(f"simulated run: {exc}")
    finally:
        sim.listener.close()
    # A worker of the host that raised is a bug of the reference host, never a pass.
    recorder.harness_errors.extend(f"simulated host worker: {exc!r}" for exc in sim.world.crashes)
    return _result(recorder, SIMULATED_DRIVER, info[0], info[1], api_version, profile, run_seed, deadline)


def _rig_options(driver: HostDriver, patience_s: float) -> dict[str, Any]:
    if not driver.has("timing"):
        return {"patience_s": patience_s, "stage_s": 2.0, "timing": {}}
    timing = {"shutdown_timeout_ms": SCALED_STAGE_MS, "shutdown_aggregate_ms": 3 * SCALED_STAGE_MS, **SCALED_BACKOFF,
              "drain_ms": SCALED_DRAIN_MS}  # fmt: skip
    return {"patience_s": patience_s, "stage_s": SCALED_STAGE_MS / 1000, "timing": timing}


def machine_examples(profile: Profile) -> int:
    """The host machine's examples: half the profile's (the scenarios carry most of the run)."""
    return max(2, profile.examples // 2)


def _run_machine(
    driver: HostDriver,
    listener: ProbeListener,
    recorder: Recorder,
    api_version: str,
    options: dict[str, Any],
    profile: Profile,
    run_seed: int,
) -> None:
    bound = machine_for(driver, listener, recorder, api_version, **options)
    try:
        run_machine(
            bound,
            settings(
                max_examples=machine_examples(profile),
                stateful_step_count=max(5, profile.steps // 2),
                deadline=None,
                database=None,
                derandomize=False,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
                print_blob=False,
            ),
            run_seed,
            on_stage=machine_stages(recorder, bound.example_counter, machine_examples(profile)),
        )
    except DriverError:
        raise
    except (HostRejected, ProbeGone) as exc:
        recorder.harness_errors.append(f"host machine: could not run: {exc}")
    except Exception as exc:  # noqa: BLE001 -- a harness failure becomes an `error` verdict, never a pass
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()[-400:]
        recorder.harness_errors.append(f"host machine: {type(exc).__name__}: {exc} | {tail}")


def _scenarios(
    driver: HostDriver,
    listener: ProbeListener,
    recorder: Recorder,
    api_version: str,
    options: dict[str, Any],
    only: tuple[str, ...],
    skip: tuple[str, ...] = (),
) -> bool:
    """Play the scenarios; False when the run cannot go on (the host sat on a
    call it accepted: nothing after could be judged, and each would wait)."""
    played = [
        *scenarios_for(api_version),
        *machine_scenarios(api_version),
        *lifecycle_scenarios(api_version),
        *handling_scenarios(api_version),
    ]
    for scenario in played:
        if only and not scenario.name.startswith(only):
            continue
        if skip and scenario.name.startswith(skip):
            continue  # needs real processes (simulated runs), or played only on request
        recorder.context = StepContext(scenario=scenario.name, api=api_version)
        rig = HostRig(driver, listener, recorder, pace=RigPace(**options))
        before = frozenset(recorder.violations)
        lost: str | None = None
        try:
            _play(scenario, rig)
            lost = rig.lost_call()
        finally:
            save_traces(rig, before)
            rig.close()
        if lost is not None:
            recorder.harness_errors.append(f"host driver: {lost}; the run ends here")
            return False
    return True


def _play(scenario: Scenario, rig: HostRig) -> None:
    """One scenario; driver errors end the run, everything else ends only the scenario."""
    try:
        scenario.run(rig)
    except DriverError:
        raise
    except ProbeGone:
        pass  # the host ended the probe: judged on what it did so far
    except NeedsProcesses:
        pass  # simulated: what follows needs real processes (judged on subprocess runs)
    except HostQueued:
        pass  # the host's concurrency limit is below what the scenario needs: the rest stays untested
    except HostRejected as exc:
        rig.recorder.harness_errors.append(f"{scenario.name}: could not run: {exc}")
    except Exception as exc:  # noqa: BLE001 -- a harness failure becomes an `error` verdict, never a pass
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()[-400:]
        rig.recorder.harness_errors.append(f"{scenario.name}: {type(exc).__name__}: {exc} | {tail}")


def _result(
    recorder: Recorder,
    driver_argv: list[str] | tuple[str, ...],
    name: str,
    version: str,
    api_version: str,
    profile: Profile,
    run_seed: int,
    deadline: float,
) -> RunResult:
    verdicts = [
        with_trace(v, recorder.traces.get(v.requirement.id))
        for v in decide(load_catalog(), recorder, role="host", api_version=api_version)
    ]
    described = Manifest(
        path=Path(driver_argv[0]) if driver_argv else Path("driver"),
        name=name,
        version=version,
        api_version=api_version,
        requires_octet=OCTET_VERSION,
        command=tuple(driver_argv),
        contributes={},
        capabilities={},
    )
    budget_s = round(deadline - recorder.started_at, 1)
    return RunResult.recorded(described, profile, run_seed, verdicts, recorder, role="host", budget_s=budget_s)


# -- replay ----------------------------------------------------------------------------------


def is_host_trace(trace_path: Path) -> bool:
    """A trace written by a host certification (its header says role host)."""
    try:
        header, _ = load(trace_path)
    except (OSError, ValueError):
        return False
    return bool(header.get("target", {}).get("role") == "host")


def replay_host(trace_path: Path, *, runs: int = 1, patience_s: float = 10.0) -> list[ReplayOutcome]:
    """Re-run the scenario (or the machine, same seed) a host trace came from
    against the same driver and re-check its requirement. Scenarios are fixed
    scripts, so this reproduces what the trace recorded (the frames the probe
    wrote are the scenario's, in its order)."""
    if runs < 1:
        raise ValueError(f"runs must be >= 1; got {runs}")
    header, _ = load(trace_path)
    target, requirement = header["target"], str(header["requirement"])
    scenario = header.get("scenario")  # None: the trace came from the state machine
    seed_value = int(header.get("suite", {}).get("seed", 0))
    profile = PROFILES.get(str(header.get("suite", {}).get("profile", "quick")), PROFILES["quick"])
    cwd = Path(target["cwd"]) if target.get("cwd") else None
    outcomes = []
    for _ in range(runs):
        run = certify_host(
            list(target["driver"]),
            str(target["api_version"]),
            profile,
            seed_value,
            patience_s=patience_s,
            cwd=cwd,
            machine=scenario is None,
            only=(str(scenario),) if scenario else ("no scenario",),
        )
        if run.harness_errors:
            raise NotReplayable(f"the replay run failed: {run.harness_errors[0]}")
        verdict = next((v for v in run.verdicts if v.requirement.id == requirement), None)
        hit = verdict is not None and verdict.verdict in ("fail", "warn")
        outcomes.append(ReplayOutcome(requirement, hit, verdict.evidence if verdict else "not judged"))
    return outcomes
