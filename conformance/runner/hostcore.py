"""Certify a host-core: fixed scenarios, then the state machine.

The harness plays the client (peers/rpc_client.py). Each scenario and each
machine example gets a fresh data directory (the command's ``{data_dir}``)
under one temporary root that is removed at the end. As for extensions,
harness failures become ``error`` verdicts (exit status 2) and one broken
requirement never stops the run. The fixed scenarios are data
(conformance/scenarios/hostcore*.py).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from conformance.evidence import Recorder, Stage
from conformance.machines.hostcore import HostcoreMachine, machine_for, scripted_example
from conformance.manifest import Manifest, command_target
from conformance.peers.rpc_client import DATA_DIR, HostcoreCommand
from conformance.protocol import rpc_limits
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.scenarios import hostcore_held
from conformance.scenarios.hostcore import SCENARIOS, THOROUGH_ONLY
from conformance.scenarios.hostcore_handshake import handshake_scenario, oversized_scenario
from conformance.verdicts import Verdict, decide

from .budget import deadline_of, run_deadline, within_budget
from .extension import _guarded, machine_settings, with_trace
from .profiles import Profile
from .search import machine_stages, run_machine

API_VERSION = str(rpc_limits.PROTOCOL_VERSION)


def reference_command() -> HostcoreCommand:
    """The reference host-core: its console script, found first on the
    target's PATH (the directory of the interpreter the suite runs on). Not
    ``sys.executable -m``: the spawner resolves symlinks, which would turn a
    virtual environment's python into the base interpreter without the suite."""
    return HostcoreCommand(("octet-hostcore", "--data-dir", DATA_DIR), Path.cwd())


def certify_hostcore(
    command: HostcoreCommand,
    profile: Profile,
    run_seed: int,
    *,
    response_s: float = 15.0,
    trace_dir: Path | None = None,
    oversized: bool = True,
    judged: frozenset[str] | None = None,
    watch: Callable[[Recorder], None] | None = None,
    walks: Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    budget_s: float | None = None,
) -> RunResult:
    """``oversized``: also run the 64 MiB line scenario (tests that certify
    many targets switch it off where it proves nothing new); ``walks``: the
    parts of the scripted walk to take (machines.hostcore.WALKS; all when
    None), for the same reason; ``scenarios``: the fixed scenarios to run, by
    name (all when None). ``judged`` and ``watch`` as for
    :func:`conformance.runner.extension.certify_extension`; ``budget_s``: the
    run's wall-time budget (default: the profile's; runner/budget.py)."""
    recorder = Recorder(trace_dir=trace_dir, run_info={"profile": profile.name, "seed": run_seed}, judged=judged)
    if watch is not None:
        watch(recorder)  # a progress display (runner/progress.py)
    deadline = deadline_of(recorder, profile, "hostcore", response_s, budget_s)
    with tempfile.TemporaryDirectory(prefix="octet-hostcore-") as root, run_deadline(deadline):
        work = Path(root)
        parts = functools.partial(_parts, command, recorder, profile, run_seed, response_s, work)
        within_budget(recorder, lambda: parts(oversized=oversized, walks=walks, scenarios=scenarios))
    verdicts = [
        _with_trace(v, recorder.traces.get(v.requirement.id))
        for v in decide(load_catalog(), recorder, role="hostcore", api_version=API_VERSION)
    ]
    budget = round(deadline - recorder.started_at, 1)
    return RunResult.recorded(
        described(command), profile, run_seed, verdicts, recorder, role="hostcore", budget_s=budget
    )


def _parts(
    command: HostcoreCommand,
    recorder: Recorder,
    profile: Profile,
    run_seed: int,
    response_s: float,
    work: Path,
    *,
    oversized: bool,
    walks: Sequence[str] | None,
    scenarios: Sequence[str] | None,
) -> None:
    """The certification's parts, in order (certify_hostcore's options)."""
    shook: list[bool] = []
    _guarded(
        recorder,
        "handshake scenario",
        lambda: shook.append(handshake_scenario(command, recorder, response_s, work)),
    )
    if shook != [True]:
        # A host-core that cannot complete a handshake has nothing more to
        # show; every further generation would only wait out its deadline.
        return
    if oversized:
        _guarded(recorder, "oversized scenario", lambda: oversized_scenario(command, recorder, response_s, work))
    held: list[hostcore_held.HeldPrompt] = []
    if _runs(hostcore_held.NAME, profile, scenarios):  # open for the rest of the run (§6)
        opened = functools.partial(hostcore_held.open_prompt, command, recorder, response_s, work)
        _guarded(recorder, hostcore_held.NAME, lambda: held.extend(filter(None, [opened()])))
    try:
        _run_all(command, recorder, response_s, work, profile, run_seed, walks, scenarios)
        hold_s = hostcore_held.hold_seconds(profile.name)
        for prompt in held:
            _guarded(recorder, hostcore_held.NAME, functools.partial(prompt.judge, hold_s))
    finally:
        for prompt in held:
            prompt.peer.close()  # judged or not (a signal, the budget, stops the run): nothing outlives it


def _run_all(
    command: HostcoreCommand,
    recorder: Recorder,
    response_s: float,
    work: Path,
    profile: Profile,
    run_seed: int,
    walks: Sequence[str] | None,
    scenarios: Sequence[str] | None,
) -> None:
    """The fixed scenarios, the scripted walk and the state machine."""
    for scenario in SCENARIOS:
        if not _runs(scenario.name, profile, scenarios):
            continue
        _guarded(recorder, scenario.name, functools.partial(scenario.run, command, recorder, response_s, work))
    machine = machine_for(command, recorder, response_s=response_s, work_root=work)
    recorder.stage = Stage("walk")
    _guarded(recorder, "scripted example", lambda: scripted_example(machine, walks))
    if profile.examples > 0:  # a profile of no examples runs the scripted walk only
        _guarded(recorder, "state machine", lambda: _run_machine(machine, profile, run_seed, recorder))


def _runs(name: str, profile: Profile, scenarios: Sequence[str] | None) -> bool:
    """Only the named fixed scenarios when some are named; else all, the
    slow ones (scenarios.hostcore.THOROUGH_ONLY) in the thorough profile only."""
    if scenarios is not None:
        return name in scenarios
    return name not in THOROUGH_ONLY or profile.name == "thorough"


def described(command: HostcoreCommand) -> Manifest:
    """The host-core as reports name a target (like the host runner's driver)."""
    return command_target(command.argv, command.cwd, API_VERSION, "host-core")


def _with_trace(verdict: Verdict, trace: Path | None) -> Verdict:
    """The trace of a failure and its replay command (runner/rpc_replay.py
    re-runs the certification the trace names and re-checks the requirement)."""
    return with_trace(verdict, trace)


def _run_machine(machine: type[HostcoreMachine], profile: Profile, run_seed: int, recorder: Recorder) -> None:
    stage = machine_stages(recorder, machine.example_counter, profile.examples)
    run_machine(machine, machine_settings(profile), run_seed, sweep_first=profile.sweep, on_stage=stage)
