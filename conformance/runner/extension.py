"""Certify an extension: manifest rules, the state machine, fixed scenarios.

The run never stops at the first broken requirement. Harness failures (a bug
in the suite, a target we cannot spawn) become ``error`` verdicts and exit
status 2; they never pass for target verdicts.
"""

from __future__ import annotations

import contextlib
import shlex
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky

from conformance.evidence import Carried, Recorder, Stage, StepContext
from conformance.machines.extension import UNKNOWN_METHODS, call_context, contribution_requests, machine_for
from conformance.machines.oversized import settle_exact_bound
from conformance.manifest import Manifest
from conformance.peers.ext_host import ExtensionHostPeer, Launcher, Patience, TargetGone, spawn_process, trace_header
from conformance.protocol import limits
from conformance.protocol.ext_hosting import (
    HOSTED_OPTIONAL_FEATURES,
    OFFERED_CONCURRENCY,
    PROTOCOL_VERSION,
    SECRETS_FEATURE,
)
from conformance.protocol.ext_manifest import check_manifest
from conformance.protocol.ext_types import Offer
from conformance.protocol.framing import pad_frame
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.transport.startup import StartFailure
from conformance.transport.trace import padded_recipe, write_trace
from conformance.verdicts import Verdict, decide

from .budget import BudgetSpent, deadline_of, left_s, run_deadline, within_budget
from .parallel import Unit, exploration_shards, merge, run_units, shard_seed
from .profiles import Profile
from .replay import SHRINK_REPLAYS, replay_regressions, shrink
from .search import run_machine, run_sweep
from .wave1 import wave1_scenario


def save_manifest_traces(manifest: Manifest, recorder: Recorder) -> None:
    """Manifest rules break before any process runs: their trace is a header
    naming the manifest, and replay re-checks the manifest."""
    if recorder.trace_dir is None:
        return
    for requirement, observed in recorder.violations.items():
        header = trace_header(manifest, full_offer(manifest.api_version), recorder)
        # Nothing ran: no entry to mark; the manifest (header target) is the evidence.
        header.update(
            scenario="manifest", requirement=requirement, violation=observed[0].violation.message, evidence=[]
        )
        path = recorder.trace_dir / f"{requirement}.jsonl"
        write_trace(path, header, [])
        recorder.traces[requirement] = path


def shrink_traces(recorder: Recorder, profile: Profile, patience: Patience) -> None:
    """Shrink every saved failure trace to the steps that still reproduce it,
    whatever unit found it (the trace file is rewritten; its header says from
    how many steps). Each gets the profile's ``shrink_s``; a profile with
    none (a test's) keeps its traces as recorded. Within the run's budget:
    once it is spent, the traces left keep every step."""
    if profile.shrink_s <= 0:
        return
    try:
        _shrink_each(recorder, profile, patience)
    except BudgetSpent:
        pass  # shrinking is no judging: the verdicts stand


def _shrink_each(recorder: Recorder, profile: Profile, patience: Patience) -> None:
    ours = [
        (requirement, path)
        for requirement, path in sorted(recorder.traces.items())
        # not ours to rewrite: a regression case kept where the user put it
        if recorder.trace_dir is not None and path.parent == recorder.trace_dir
    ]
    for number, (requirement, path) in enumerate(ours, start=1):
        observed = recorder.violations.get(requirement)
        # The first violation of a requirement is the one its trace holds.
        step = observed[0].context.step if observed else None
        recorder.context = StepContext(f"shrinking {requirement}")
        budget_s = _shrink_s(profile)
        shown = Stage("shrinking", requirement, trace=number, traces=len(ours), budget_s=budget_s)
        shown = replace(shown, max_replays=SHRINK_REPLAYS, started_at=time.monotonic())
        recorder.stage = shown

        def replayed(steps_left: int, replays: int, shown: Stage = shown) -> None:
            recorder.stage = replace(shown, steps_left=steps_left, replays=replays)

        _guarded(
            recorder,
            f"shrinking {requirement}",
            lambda p=path, s=step, b=budget_s, r=replayed: shrink(
                p, patience=patience, budget_s=b, max_replays=SHRINK_REPLAYS, violation_step=s, on_replay=r
            ),
        )


def _shrink_s(profile: Profile) -> float:
    """The profile's time to shrink one trace, within what is left of the run's budget."""
    left = left_s()
    return profile.shrink_s if left is None else min(profile.shrink_s, left)


def with_trace(verdict: Verdict, trace: Path | None) -> Verdict:
    if trace is None or verdict.verdict not in ("fail", "warn"):
        return verdict
    return replace(verdict, trace=str(trace), replay=f"octet-conformance replay {shlex.quote(str(trace))}")


def full_offer(api_version: str, *, secrets: bool = False, optional: bool = True) -> Offer:
    """Every feature the harness hosts; with ``optional=False`` the required
    ones alone (API 0.1 has none to offer)."""
    if api_version == "0.1":
        return Offer("0.1", None)
    hosted = HOSTED_OPTIONAL_FEATURES[api_version] + ((SECRETS_FEATURE,) if secrets else ())
    offered = hosted if optional else ()
    return Offer(api_version, PROTOCOL_VERSION, limits.REQUIRED_FEATURES, offered, OFFERED_CONCURRENCY)


def required_offer(api_version: str) -> Offer:
    return full_offer(api_version, optional=False)


def certify_extension(
    manifest: Manifest,
    profile: Profile,
    run_seed: int,
    patience: Patience | None = None,
    *,
    trace_dir: Path | None = None,
    regressions: Path | None = None,
    launcher: Launcher = spawn_process,
    judged: frozenset[str] | None = None,
    watch: Callable[[Recorder], None] | None = None,
    jobs: int = 1,
    budget_s: float | None = None,
) -> RunResult:
    """Certify one extension. With ``trace_dir``, the generation that first
    violates each requirement leaves its trace there (``<id>.jsonl``).
    ``launcher`` starts each generation (a process, or a simulated target);
    it must be picklable (a module-level function) when ``jobs > 1``.
    ``judged``: the requirement ids a selection judges (conformance/selection.py;
    None: all). ``watch``: called with the run's recorder (a progress display).
    ``jobs``: how many units of the run go at once (runner/parallel.py); the
    results are the same for any number. ``budget_s``: the run's wall-time
    budget (default: the profile's for this patience; runner/budget.py)."""
    patience = patience or Patience()
    recorder = Recorder(trace_dir=trace_dir, run_info={"profile": profile.name, "seed": run_seed}, judged=judged)
    if watch is not None:
        watch(recorder)  # a progress display (runner/progress.py)
    deadline = deadline_of(recorder, profile, "extension", patience.response_s, budget_s)
    recorder.context = StepContext("manifest")
    recorder.add(check_manifest(manifest.info))
    save_manifest_traces(manifest, recorder)
    with run_deadline(deadline):
        if regressions is not None:
            within_budget(
                recorder,
                lambda: _guarded(
                    recorder, "regression cases", lambda: replay_regressions(regressions, manifest, recorder, patience)
                ),
            )
        # The stdin-EOF scenario is one short generation that nothing else covers:
        # it comes first, so a target that ignores EOF is known within a second,
        # not after the whole state machine (benchmarks/detect.py).
        # A progress display follows each part run in this process (workers' parts are not watched).
        watched = watch if jobs <= 1 else None
        work = partial(
            run_unit, manifest, profile, run_seed, patience, launcher, judged, watch=watched, deadline=deadline
        )
        units = extension_units(profile) if recorder.budget_spent is None else []
        merge(recorder, run_units(work, units, jobs, trace_dir))
        shrink_traces(recorder, profile, patience)
    verdicts = [
        with_trace(v, recorder.traces.get(v.requirement.id))
        for v in decide(load_catalog(), recorder, role="extension", api_version=manifest.api_version)
    ]
    return RunResult.recorded(
        manifest, profile, run_seed, verdicts, recorder, budget_s=round(deadline - recorder.started_at, 1)
    )


def machine_settings(profile: Profile) -> settings:
    """Hypothesis settings of a certification's state machine: the profile's
    budget, no deadline (steps talk to processes), no example database (a
    failure is kept as a self-contained trace instead)."""
    return settings(
        max_examples=profile.examples,
        stateful_step_count=profile.steps,
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def _guarded(recorder: Recorder, what: str, fn: Any) -> None:
    try:
        fn()
    except StartFailure:
        raise  # the run cannot happen at all: one message and exit 2, not an error per requirement
    except Flaky as exc:
        # Timing must never flip a verdict; if Hypothesis saw nondeterminism
        # we say so plainly instead of surfacing a bare Flaky.
        recorder.harness_errors.append(f"{what}: the target behaved nondeterministically ({type(exc).__name__})")
    except Exception as exc:  # noqa: BLE001 -- any harness failure becomes an `error` verdict, never a pass
        tail = traceback.format_exception(exc)[-3:]
        recorder.harness_errors.append(f"{what}: {type(exc).__name__}: {exc} | {''.join(tail).strip()[-400:]}")


def extension_units(profile: Profile) -> list[Unit]:
    """The units of an extension certification, in the order they run (one
    job) and merge. Fixed and cheap before drawn: the stdin-EOF scenario, the
    sweep and the three fixed scenarios take a few seconds together, so a
    fault they show is found before exploration starts (benchmarks/detect.py)."""
    sweep = [Unit("sweep")] if profile.sweep else []
    shards = exploration_shards(profile.examples, profile.shards)
    return [Unit("stdin-eof"), *sweep, Unit("frame-size"), Unit("wave1"), Unit("services"), *shards]


def unit_stage(unit: Unit, profile: Profile) -> Stage:
    """The progress display's stage of a unit. Exploration's examples are
    numbered from 2 across its shards (1 is the sweep's:
    runner/parallel.exploration_shards), so it counts from 1."""
    if unit.kind == "sweep":
        return Stage("sweep")
    if unit.kind == "explore":
        return Stage("exploration", first_example=1, examples=profile.examples)
    return Stage("scenarios")


def run_unit(
    manifest: Manifest,
    profile: Profile,
    run_seed: int,
    patience: Patience,
    launcher: Launcher,
    judged: frozenset[str] | None,
    unit: Unit,
    trace_dir: Path | None,
    *,
    watch: Callable[[Recorder], None] | None = None,
    carried: Carried | None = None,
    deadline: float | None = None,
) -> Recorder:
    """Run one unit of a certification into a recorder of its own, starting
    from what the run's first unit learned (``carried``: runner/parallel.py),
    until the run's ``deadline`` (runner/budget.py)."""
    recorder = Recorder(trace_dir=trace_dir, run_info={"profile": profile.name, "seed": run_seed}, judged=judged)
    if carried is not None:
        recorder.carry(carried)
    if watch is not None:
        watch(recorder)
    with run_deadline(deadline):
        within_budget(recorder, lambda: _unit(manifest, profile, run_seed, patience, launcher, recorder, unit))
    recorder.unwatch(recorder.trace)  # every generation has ended
    return recorder


def _unit(
    manifest: Manifest,
    profile: Profile,
    run_seed: int,
    patience: Patience,
    launcher: Launcher,
    recorder: Recorder,
    unit: Unit,
) -> None:
    recorder.stage = unit_stage(unit, profile)
    if unit.kind == "stdin-eof":
        _guarded(recorder, "stdin-EOF scenario", lambda: stdin_eof_scenario(manifest, recorder, patience, launcher))
    elif unit.kind == "frame-size":
        _guarded(recorder, "frame-size scenario", lambda: frame_size_scenario(manifest, recorder, patience, launcher))
    elif unit.kind == "wave1":
        offer = full_offer(manifest.api_version)
        _guarded(recorder, "wave1 scenario", lambda: wave1_scenario(manifest, recorder, patience, offer, launcher))
    elif unit.kind == "services":
        _guarded(recorder, "services scenario", lambda: services_scenario(manifest, recorder, patience, launcher))
    else:
        machine = machine_for(manifest, recorder, patience, launcher)
        if unit.kind == "sweep":
            _guarded(recorder, "state machine", lambda: run_sweep(machine))
        else:
            machine.example_counter[0] = unit.numbered_before
            budget = machine_settings(replace(profile, examples=unit.examples))
            seed_ = shard_seed(run_seed, unit.shard)
            _guarded(recorder, "state machine", lambda: run_machine(machine, budget, seed_, sweep_first=False))


def _started(
    manifest: Manifest,
    recorder: Recorder,
    patience: Patience,
    launcher: Launcher = spawn_process,
    *,
    secrets: bool = False,
    offer: Offer | None = None,
) -> ExtensionHostPeer | None:
    """A started, initialized peer under ``offer`` (default: the full offer)."""
    peer = ExtensionHostPeer(manifest, recorder, patience, launcher=launcher)
    offer = offer or full_offer(manifest.api_version, secrets=secrets and bool(manifest.info.secret_names()))
    try:
        peer.start(offer)
        if peer.initialize(offer):
            return peer
    except TargetGone:
        pass
    peer.close()
    return None


def services_scenario(
    manifest: Manifest, recorder: Recorder, patience: Patience, launcher: Launcher = spawn_process
) -> None:
    """The host services of §2.7-§2.12, whatever the machine's draws: under
    the full offer, run the first declared command twice (on API 0.2+ it
    runs without arguments, where an extension may ask the person, consult
    policy, publish artifacts and change its tool catalog), and after each,
    call the tools registered since initialize, a tool under an older epoch
    that lacks it, and a tool under an epoch never published."""
    if manifest.api_version == "0.1":
        return
    recorder.context = StepContext(scenario="services")
    peer = _started(manifest, recorder, patience, launcher, secrets=True)
    if peer is None:
        return
    commands = [r for r in contribution_requests(manifest) if r[0] == "command/execute"][:1]
    try:
        for _ in range(2 if commands else 0):
            if not peer.alive:
                break  # gone, or already judged unresponsive: no deadline twice
            peer.next_step()
            peer.settle([peer.request(*commands[0])])
            _epoch_calls(peer)
        peer.next_step()
        peer.drain()
        peer.shutdown()
    except TargetGone:
        pass
    finally:
        peer.close()


def _epoch_calls(peer: ExtensionHostPeer) -> None:
    """§1.2/§2.12 calls against the catalog epochs published so far."""
    session = peer.session
    if session is None or session.negotiated is None or not session.negotiated.has("dynamic_tools"):
        return
    current = session.catalog_revision

    def call(name: str, revision: int, intent: str | None = None) -> None:
        if not peer.alive:
            return
        peer.next_step()
        params = {"name": name, "arguments": {}, "context": call_context(), "catalog_revision": revision}
        peer.settle([peer.request("tool/call", params, intent=intent)])

    initial = session.epochs.get(0, {})
    for name in sorted(set(session.tools) - set(initial)):
        call(name, current)  # registered since initialize, under the current epoch
    for revision in sorted(session.epochs, reverse=True):
        newer = sorted(set(session.tools) - set(session.epochs[revision]))
        if revision < current and newer:
            call(newer[0], revision)  # an older epoch that does not hold the tool
            break
    # Arguments {} must be valid, so a refusal can only be for the epoch.
    free = sorted(
        n for n, t in session.tools.items() if isinstance(t.parameters, dict) and not t.parameters.get("required")
    )
    if free:
        call(free[0], current + 2, "invalid-params")


def frame_size_scenario(
    manifest: Manifest, recorder: Recorder, patience: Patience, launcher: Launcher = spawn_process
) -> None:
    """A frame of 1 MiB - 1 bytes of JSON must be accepted and answered. One
    of exactly 1 MiB is one byte over the bound if the newline counts (§0 is
    silent), so refusing it any way is legal and only a should warning
    (EXT-0-frame-bound-exact). One of 1 MiB + 1 may be refused any way the
    extension likes, so nothing is judged for it beyond the frames it writes."""
    recorder.context = StepContext(scenario="frame-size")
    peer = _started(manifest, recorder, patience, launcher)
    if peer is None:
        return
    try:
        peer.next_step()
        rid, frame = peer.request_frame(UNKNOWN_METHODS[0], {"pad": ""}, intent="unknown-method")
        size = limits.MAX_FRAME_BYTES - 1
        peer.write_raw(pad_frame(frame, size), recipe=padded_recipe(frame, size))
        peer.settle([rid], timeout=patience.response_s)
        for size in (limits.MAX_FRAME_BYTES, limits.MAX_FRAME_BYTES + 1):
            if not peer.alive:
                break
            peer.next_step()
            _refusable_frame(peer, size)
        peer.next_step()
        peer.drain()
        peer.shutdown()
    except TargetGone:
        pass
    finally:
        peer.close()


def _refusable_frame(peer: ExtensionHostPeer, size: int) -> None:
    """Write a request frame of ``size`` bytes of JSON that the extension
    may refuse (an id-null refusal included); at exactly the bound, judge
    whether it was handled like any other frame."""
    assert peer.session is not None
    peer.mark_unreadable()  # an id-null refusal is one legal answer
    allowance = peer.session.unreadable_sent
    # Registered so a reply with its id is matched, but never awaited as a must.
    rid, frame = peer.request_frame(UNKNOWN_METHODS[0], {"pad": ""}, intent="oversize")
    peer.write_raw(pad_frame(frame, size), recipe=padded_recipe(frame, size))
    if size > limits.MAX_FRAME_BYTES:
        peer.drain(0.2)
        return
    settle_exact_bound(peer, rid, allowance)


def stdin_eof_scenario(
    manifest: Manifest, recorder: Recorder, patience: Patience, launcher: Launcher = spawn_process
) -> None:
    recorder.context = StepContext(scenario="stdin-eof")
    # The only offer of required features alone before exploration: the sweep
    # and the fixed scenarios offer everything, and a fault that shows only
    # when less is offered (a feature claimed without its prerequisite) would
    # otherwise wait for exploration to draw such an offer.
    peer = _started(manifest, recorder, patience, launcher, offer=required_offer(manifest.api_version))
    if peer is None:
        return
    try:
        # The run's first request after initialize, in the part that runs
        # alone before all others: a target that leaves it unanswered past the
        # deadline is known unresponsive before any other part starts, and
        # each of them starts with short waits (runner/parallel.py).
        with contextlib.suppress(TargetGone):
            peer.settle([peer.request(UNKNOWN_METHODS[0], {"probe": "responsive"}, intent="unknown-method")])
            peer.drain()
        peer.stdin_eof()
    finally:
        peer.close()
