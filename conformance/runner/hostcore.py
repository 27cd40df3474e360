"""Certify a host-core: fixed scenarios, then the state machine.

The harness plays the client (peers/rpc_client.py). Each scenario and each
machine example gets a fresh data directory (the command's ``{data_dir}``)
under one temporary root that is removed at the end. As for extensions,
harness failures become ``error`` verdicts (exit status 2) and one broken
requirement never stops the run.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, Stage, StepContext
from conformance.machines import hostcore_admission, hostcore_ending, hostcore_held
from conformance.machines.hostcore import UNKNOWN_METHOD, HostcoreMachine, machine_for, scripted_example
from conformance.manifest import Manifest, command_target
from conformance.peers.rpc_client import DATA_DIR, HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors, rpc_handshake, rpc_limits, rpc_results
from conformance.protocol.rpc_answers import id_key
from conformance.protocol.violations import Violation
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.transport.startup import SetupFailure, setup_failure
from conformance.verdicts import Verdict, decide

from .budget import deadline_of, run_deadline, within_budget
from .extension import _guarded, machine_settings, with_trace
from .profiles import Profile
from .search import machine_stages, run_machine

API_VERSION = str(rpc_limits.PROTOCOL_VERSION)
WRONG_VERSION = rpc_limits.PROTOCOL_VERSION - 1


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
    for name, scenario in (*hostcore_admission.SCENARIOS, *hostcore_ending.SCENARIOS):
        if not _runs(name, profile, scenarios):
            continue
        _guarded(recorder, name, functools.partial(scenario, command, recorder, response_s, work))
    machine = machine_for(command, recorder, response_s=response_s, work_root=work)
    recorder.stage = Stage("walk")
    _guarded(recorder, "scripted example", lambda: scripted_example(machine, walks))
    if profile.examples > 0:  # a profile of no examples runs the scripted walk only
        _guarded(recorder, "state machine", lambda: _run_machine(machine, profile, run_seed, recorder))


def _runs(name: str, profile: Profile, scenarios: Sequence[str] | None) -> bool:
    """Only the named fixed scenarios when some are named; else all, the
    slow ones (hostcore_ending.THOROUGH_ONLY) in the thorough profile only."""
    if scenarios is not None:
        return name in scenarios
    return name not in hostcore_ending.THOROUGH_ONLY or profile.name == "thorough"


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


def _peer(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> HostcorePeer:
    return HostcorePeer(command, Path(tempfile.mkdtemp(prefix="scenario-", dir=work)), recorder, response_s=response_s)


def handshake(peer: HostcorePeer) -> bool:
    """Acceptance item 1 (RPC-10-01-handshake): version 11 is accepted."""
    rid = peer.send("app.handshake", handshake_params())
    response = peer.await_answer(rid)
    if response is None or "result" not in response:
        why = "no answer" if response is None else "an error"
        message = f"app.handshake with protocolVersion 11 got {why} within {peer.response_s:g}s"
        peer.violate(Violation("RPC-10-01-handshake", message))
        return False
    peer.add(rpc_handshake.handshake_completed(response, exact_id=id_key(rid) not in peer.loose))
    return True


def _refused(peer: HostcorePeer, method: str, params: object, judge: Any) -> bool:
    """Judge the answer to a call that must be refused; False when none came."""
    response = peer.call(method, params)
    if response is None:
        peer.violate(Violation("RPC-2-jsonrpc-2.0", f"{method} got no response within {peer.response_s:g}s"))
        return False
    peer.add(judge(response))
    return True


def handshake_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> bool:
    """§3: calls before a handshake, a version mismatch, calls after the failed
    handshake, then the good handshake and acceptance item 2 (app.health).
    Whether the good handshake succeeded."""
    recorder.context = StepContext(scenario="handshake")
    with _peer(command, recorder, response_s, work) as peer:
        try:
            for method, params, judge in (
                ("app.health", None, rpc_errors.refused_before_handshake),
                ("app.handshake", handshake_params(WRONG_VERSION), rpc_errors.refused_mismatch),
                ("session.list", {}, rpc_errors.refused_before_handshake),
            ):
                if not _refused(peer, method, params, judge):
                    if not peer.spoke and not peer.target.running():
                        raise _not_set_up(command, peer, "ended without answering anything")
                    peer.violate(
                        Violation("RPC-10-01-handshake", f"no handshake possible: {method} was never answered")
                    )
                    return False
            if not handshake(peer):
                return False
            response = peer.call("app.health")
            if response is None:
                peer.violate(Violation("RPC-10-02-health-ok", f"app.health got no answer within {response_s:g}s"))
            else:
                peer.add(rpc_results.health_ok(response))
        except HostcoreGone as exc:
            if not peer.spoke:
                raise _not_set_up(command, peer, f"ended without answering anything ({exc})") from None
            peer.violate(Violation("RPC-10-01-handshake", f"the host-core ended during the handshake scenario ({exc})"))
            return False
        # The same process goes on with the §2 transport checks: a spawn saved.
        transport_checks(peer)
        return True


def _not_set_up(command: HostcoreCommand, peer: HostcorePeer, what: str) -> SetupFailure:
    """The first host-core ended before writing one JSON line: it was never a
    host-core (a wrong command, arguments it rejects, a crash at start), so
    the run stops before any verdict. One that keeps running, whatever it
    writes, is judged instead (fixtures/hostcores/floods-stdout)."""
    if peer.first_garbage is not None:
        what += f"; its stdout began with {peer.first_garbage!r}, which is not JSON"
    hint = "run the command by hand: it must read JSON-RPC requests on stdin (docs/reference-hostcore.md)"
    return setup_failure("host-core", command.argv, command.cwd, what, peer.target, hint=hint)


def transport_checks(peer: HostcorePeer) -> None:
    """§2, after a handshake: an invalid JSON line is diagnosed (or answered
    -32700 with a null id) and later lines are still read; a CRLF-terminated
    line is accepted."""
    peer.recorder.context = StepContext(scenario="transport")
    try:
        peer.write_raw(b'{"jsonrpc":"2.0","id":\n', intent="invalid-json")
        _later_frames(peer)
        rid = peer.send(UNKNOWN_METHOD, {})
        # The same request again, CRLF-terminated: its id differs, so both answers are awaited.
        peer.write_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"app.health"}\r\n', intent="crlf")
        first, second = peer.await_all([rid, "crlf"])
        if first is not None:
            peer.add(rpc_errors.refused_unknown_method(first))
        if second is None:
            peer.violate(Violation("RPC-2-crlf-accepted", "a CRLF-terminated app.health line got no answer"))
        else:
            peer.recorder.exercise("RPC-2-crlf-accepted")
            peer.add(rpc_results.health_ok(second))
    except HostcoreGone as exc:
        message = f"the host-core ended after an invalid line ({exc})"
        peer.violate(Violation("RPC-2-invalid-json-later-frames", message))


OVERSIZED_ID = "oversized"
OVERSIZED_HEAD = b'{"jsonrpc":"2.0","id":"oversized","method":"app.health","params":{"pad":"'
OVERSIZED_TAIL = b'"}}'


def oversized_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§7: one request line a byte over 64 MiB (the id first, so it can be
    peeked): LIMIT_EXCEEDED with that id, and the next line is a fresh frame
    that gets its answer. Run once per certification: it writes 64 MiB."""
    recorder.context = StepContext(scenario="oversized-line")
    with _peer(command, recorder, response_s, work) as peer:
        try:
            if not handshake(peer):
                return
            size = rpc_limits.MAX_LINE_BYTES + 1
            # Draining 64 MiB is the one slow thing asked of a host-core here.
            peer.write_padded_line(
                OVERSIZED_HEAD, size, OVERSIZED_TAIL, intent="oversized-line", timeout=8 * response_s
            )
            _judge_limit(peer, OVERSIZED_HEAD)
            _judge_after_limit(peer)
        except HostcoreGone as exc:
            peer.violate(Violation("RPC-7-limit-reader-alive", f"the host-core ended after an oversized line ({exc})"))


def _judge_limit(peer: HostcorePeer, head: bytes) -> None:
    answer = peer.await_any([OVERSIZED_ID, None], timeout=4 * peer.response_s)
    if answer is None:
        peer.violate(Violation("RPC-7-limit-exceeded", "a request line of 64 MiB + 1 bytes got no answer"))
        return
    peer.add(rpc_errors.limit_exceeded(answer))
    peer.add(rpc_errors.check_limit_exceeded_id(answer, line_head=head, sent_id=OVERSIZED_ID))


def _judge_after_limit(peer: HostcorePeer) -> None:
    """The next line is answered (the reader lives) and nothing of the
    oversized line's remainder is taken for a frame (no parse error)."""
    response = peer.call("app.health")
    if response is None:
        peer.violate(Violation("RPC-7-limit-reader-alive", "app.health after an oversized line got no answer"))
        return
    peer.recorder.exercise("RPC-7-limit-reader-alive")
    stray = peer.await_answer(None, timeout=0)
    if stray is not None:
        message = "after an oversized line an answer with a null id came (its remainder was read as a frame)"
        peer.violate(Violation("RPC-7-limit-remainder-drained", message))
    else:
        peer.recorder.exercise("RPC-7-limit-remainder-drained")


def _later_frames(peer: HostcorePeer) -> None:
    """After the invalid line: the next request is answered (RPC-2-invalid-json-later-frames);
    an answer to the invalid line itself, if any, is -32700 with a null id (RPC-7-parse-error)."""
    response = peer.call("app.health")
    if response is None:
        peer.violate(Violation("RPC-2-invalid-json-later-frames", "app.health after an invalid line got no answer"))
        return
    peer.recorder.exercise("RPC-2-invalid-json-later-frames", "RPC-7-parse-error")
    parse_answer = peer.await_answer(None, timeout=0)
    if parse_answer is not None:
        error = parse_answer.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if code != rpc_errors.PARSE_ERROR:
            message = f"an invalid line was answered with code {code!r}; expected -32700"
            peer.violate(Violation("RPC-7-parse-error", message))
