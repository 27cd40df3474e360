"""Certify a host RPC client: the harness plays its host-core.

Three scripted scenarios, each with a fresh client process
(peers/rpc_hostcore.py, docs/client-driver.md):

* ``session``: an operation is queued before the handshake is answered
  (nothing but app.handshake may reach the host-core until then); the
  handshake is answered well; then one operation per rule: notifications
  around an answer (§8), a CRLF answer, raw U+2028/U+2029, an invalid line
  before an answer (§2), HOST_OVERLOADED in both forms and past the four
  retries, an admitted error and a timeout that must not be retried (§2.1),
  a call too large for one line (§7), and a last answer without LF before
  end of input (§2).
* ``mismatch-version`` / ``mismatch-error``: the handshake is answered with
  protocol 10, or refused with PROTOCOL_MISMATCH: the client sends nothing
  more and exits with an error (§3).

The script is fixed: the profile and seed change nothing yet (they are kept
in the matrix like any run's). Retry delays are judged on the harness's clock
with a tolerant window (rpc_limits.RETRY_*): a loaded machine only delays the
retries it sees, and the lower bound is measured so that latency can only
lengthen a wait, never shorten it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from conformance.evidence import Recorder, StepContext
from conformance.manifest import Manifest, command_target
from conformance.peers.rpc_hostcore import (
    ClientCommand,
    ClientGone,
    ClientPeer,
    ContractBroken,
    Policy,
    Request,
    error,
    line,
    result,
    unauthorized,
)
from conformance.protocol import rpc_client, rpc_handshake, rpc_limits
from conformance.protocol.violations import Finding
from conformance.requirements import load_catalog
from conformance.results import RunResult
from conformance.transport.startup import setup_failure
from conformance.verdicts import decide

from .budget import deadline_of, run_deadline, within_budget
from .extension import _guarded, with_trace
from .profiles import Profile

API_VERSION = str(rpc_limits.PROTOCOL_VERSION)
HANDSHAKE = "app.handshake"
# How long the harness holds the handshake answer, watching for calls that
# must not come before it. A window for frames that must not appear, not a
# wait for an expected one.
HOLD_S = 0.3
SETTLE_S = 0.2  # a window for a probe's connection that may still be on its way, not a wait for a frame
CALL_TIMEOUT_S = 0.5  # the timeout the harness asks for on the call it leaves unanswered
INVALID_MARKER = "octet-invalid-line-marker"
SEPARATED_TEXT = "line\u2028separator\u2029paragraph"
UTF8_TEXT = "caf\u00e9 \u2013 \u2713 \U0001d11e"  # two-, three- and four-byte characters
OVERLOADS_BEFORE_SUCCESS = rpc_limits.MAX_RETRIES
# Beyond this many attempts of one always-overloaded call, the harness stops
# answering it (a client retrying forever is then cut by its own timeout).
MAX_SERVED_ATTEMPTS = rpc_limits.MAX_RETRIES + 3


def reference_command() -> ClientCommand:
    """The reference client's console script (see runner.hostcore.reference_command)."""
    return ClientCommand(("octet-hostcore-client",), Path.cwd())


def described(command: ClientCommand) -> Manifest:
    """The client as reports name a target (see runner.hostcore.described)."""
    return command_target(command.argv, command.cwd, API_VERSION, "client")


def certify_client(
    command: ClientCommand,
    profile: Profile,
    run_seed: int,
    *,
    response_s: float = 15.0,
    trace_dir: Path | None = None,
    oversized: bool = True,
    judged: frozenset[str] | None = None,
    watch: Callable[[Recorder], None] | None = None,
    budget_s: float | None = None,
) -> RunResult:
    """``oversized``: also ask for the call too large for one line (tests
    that certify many clients switch it off where it proves nothing new).
    ``judged`` and ``watch`` as for
    :func:`conformance.runner.extension.certify_extension`; ``budget_s``: the
    run's wall-time budget (default: the profile's; runner/budget.py)."""
    recorder = Recorder(trace_dir=trace_dir, run_info={"profile": profile.name, "seed": run_seed}, judged=judged)
    if watch is not None:
        watch(recorder)  # a progress display (runner/progress.py)
    deadline = deadline_of(recorder, profile, "client", response_s, budget_s)
    with run_deadline(deadline):
        within_budget(recorder, lambda: _scenarios(command, recorder, response_s, oversized))
    verdicts = [
        with_trace(v, recorder.traces.get(v.requirement.id))
        for v in decide(load_catalog(), recorder, role="client", api_version=API_VERSION)
    ]
    budget = round(deadline - recorder.started_at, 1)
    return RunResult.recorded(described(command), profile, run_seed, verdicts, recorder, role="client", budget_s=budget)


def _scenarios(command: ClientCommand, recorder: Recorder, response_s: float, oversized: bool) -> None:
    started: list[bool] = []
    _guarded(
        recorder,
        "session scenario",
        lambda: started.append(session_scenario(command, recorder, response_s, oversized=oversized)),
    )
    if started == [True]:
        # A client that never handshakes shows nothing more in these.
        for name, answer in MISMATCHES.items():
            _guarded(
                recorder, f"{name} scenario", partial(mismatch_scenario, command, recorder, response_s, name, answer)
            )


# -- the handshake ---------------------------------------------------------------------------


def handshake_result(version: int = rpc_limits.PROTOCOL_VERSION) -> dict[str, object]:
    return {
        "protocolVersion": version,
        "host": rpc_limits.HANDSHAKE_HOST,
        "hostVersion": "octet-conformance",
        "features": [],
        "capabilities": [],
    }


MISMATCHES: dict[str, dict[str, object]] = {
    "mismatch-version": {"result": handshake_result(rpc_limits.PROTOCOL_VERSION - 1)},
    "mismatch-error": {
        "error": {"code": 1011, "message": "protocol mismatch", "data": {"errorCode": "PROTOCOL_MISMATCH"}}
    },
}


def _open_handshake(peer: ClientPeer, answer: dict[str, object]) -> tuple[Request | None, int]:
    """Take the client's first request, hold it for the window, judge its
    params, then answer it with ``answer`` (result or error members). The
    handshake request and how many requests came before the answer."""
    peer.hold.add(HANDSHAKE)
    peer.policy = unauthorized  # until a handshake succeeds
    first = peer.first_request(2 * peer.response_s)
    if first is None:
        return None, 0
    peer.settle(HOLD_S)
    handshake = next((r for r in peer.requests if r.method == HANDSHAKE), None)
    if handshake is not None:
        peer.add(rpc_handshake.handshake_params(handshake.message.get("params")))
    answered_after = len(peer.requests)
    for request in peer.requests:
        if request.method == HANDSHAKE and request.answered_at is None:
            peer.answer(request, line({"jsonrpc": "2.0", "id": request.message.get("id"), **answer}))
    peer.hold.discard(HANDSHAKE)
    return handshake, answered_after


def _judge_order(peer: ClientPeer, answered_after: int, answer: dict[str, object]) -> None:
    if not peer.requests:
        return  # no request, no order: a client that never wrote one exercised nothing here
    messages = [r.message for r in peer.requests]
    peer.add(rpc_client.judge_before_handshake(messages, answered_after=answered_after, answer=answer))


# -- the session scenario -------------------------------------------------------------------------


def session_scenario(command: ClientCommand, recorder: Recorder, response_s: float, *, oversized: bool = True) -> bool:
    """Whether the client completed a handshake (else the mismatch scenarios would show nothing)."""
    recorder.context = StepContext(scenario="session")
    with ClientPeer(command, recorder, response_s=response_s, scenario="session") as peer:
        good: dict[str, object] = {"result": handshake_result()}
        answered_after = 0
        ready = judged = False
        try:
            peer.operate("app.health", "queued-before-handshake")
            handshake, answered_after = _open_handshake(peer, good)
            if handshake is None:
                _check_set_up(command, peer)
            if handshake is not None:
                peer.policy = _serve
                outcome = peer.outcome(2 * response_s)
                ready = outcome is not None and outcome.get("kind") == "handshake"
            _judge_handshake(peer, ready)
            judged = True
            if not ready:
                _judge_order(peer, answered_after, good)
                return False
            _outcome(peer)  # the operation queued before the handshake
            _steps(peer, oversized=oversized)
        except ClientGone:
            _check_set_up(command, peer)
            if not judged:
                # Gone before the handshake completed (say, it exited at once):
                # acceptance item 1 is judged all the same, never left to pass.
                _judge_handshake(peer, ready=False)
        except ContractBroken as exc:
            if not judged:  # broken before any handshake: it was never run as a client
                _check_set_up(command, peer, f"broke the driver contract before any handshake: {exc}")
            recorder.harness_errors.append(f"session scenario: the client broke the driver contract: {exc}")
        _judge_order(peer, answered_after if peer.requests else 0, good)
        # Only the calls the harness asked for (they carry a step): a request a
        # client makes on its own, say a periodic app.health, is no retry.
        asked = [r.attempt() for r in peer.requests if r.method != HANDSHAKE and r.step is not None]
        peer.add(rpc_client.judge_retries(asked))
        peer.end_operations(response_s)
        if any(r.step == "invalid-line" and r.answered_at is not None for r in peer.requests):
            # The client has exited: its whole stderr tail is in.
            peer.add(rpc_client.diagnostic_without_payload(peer.client.stderr_excerpt(1 << 20), INVALID_MARKER))
        return ready


def _check_set_up(command: ClientCommand, peer: ClientPeer, broken: str = "") -> None:
    """A client that exited without ever starting the host-core it was given
    (it exited at once, whatever its status, or rejected its arguments), or
    that wrote something other than the driver contract before any handshake
    (``broken`` says what), was never run as a client: a SetupFailure, before
    any verdict. One that keeps running without starting its host-core is
    judged (fixtures/clients/never-starts-hostcore)."""
    hint = "the client is run as CMD ... -- HOSTCORE-CMD ... and must start HOSTCORE-CMD (docs/client-driver.md)"
    if broken:
        raise setup_failure("client", command.argv, command.cwd, broken, peer.client, hint=hint)
    if peer.link is None:
        with contextlib.suppress(ContractBroken):
            peer.settle(SETTLE_S)  # a host-core it started just before it exited may connect a moment later
    if peer.link is not None or peer.client.running():
        return
    what = "exited without starting the host-core command it was given"
    raise setup_failure("client", command.argv, command.cwd, what, peer.client, hint=hint)


def _judge_handshake(peer: ClientPeer, ready: bool) -> None:
    """§10 item 1: the client started its host-core and completed the handshake."""
    first = peer.requests[0].method if peer.requests else None
    peer.add(rpc_client.handshake_completed(first, ready=ready, waited_s=2 * peer.response_s))


def _serve(request: Request, count: int) -> bytes | None:
    """Answers after the handshake: the default, per step."""
    policy = STEP_POLICIES.get(request.step)
    if policy is not None:
        return policy(request, count)
    return line(result(request.message.get("id"), {"ok": True, "step": request.step}))


def _outcome(peer: ClientPeer, timeout: float | None = None) -> dict[str, object]:
    """The outcome of an operation no rule judges by its outcome. None in
    time breaks the driver contract (every call ends within its timeoutS):
    a harness-side failure to run the client, not a verdict."""
    waited = timeout if timeout is not None else 2 * peer.response_s
    outcome = peer.outcome(waited)
    if outcome is None:
        raise ContractBroken(f"no outcome for an operation within {waited:g} s")
    return outcome


def _judged(peer: ClientPeer, judge: Callable[[object, object], Iterable[Finding]], wanted: object) -> None:
    """The outcome of an operation a rule judges. None in time is that rule's
    violation (the fault may well have stuck the call), and ends the scenario."""
    outcome = peer.outcome(2 * peer.response_s)
    peer.add(judge(outcome, wanted))
    if outcome is None:
        raise ClientGone("the client reported no outcome; nothing after it can be judged")


def expected(step: str) -> dict[str, object]:
    return {"ok": True, "step": step}


def _overloaded_error(request: Request) -> bytes:
    return line(error(request.message.get("id"), -32029, "HOST_OVERLOADED", "dispatcher full"))


def _overloaded_then_ok(request: Request, count: int) -> bytes:
    if count < OVERLOADS_BEFORE_SUCCESS:
        return _overloaded_error(request)
    return line(result(request.message.get("id"), expected(str(request.step))))


def _always_overloaded(request: Request, count: int) -> bytes | None:
    return _overloaded_error(request) if count < MAX_SERVED_ATTEMPTS else None


def _tool_overloaded_once(request: Request, count: int) -> bytes:
    rid = request.message.get("id")
    if count == 0:
        outcome = {"toolCallId": "overloaded", "ok": False, "isError": True, "errorCode": "HOST_OVERLOADED"}
        return line(result(rid, {**outcome, "content": {}}))
    return line(result(rid, expected(str(request.step))))


def _internal(request: Request, _: int) -> bytes:
    return line(error(request.message.get("id"), 1000, "INTERNAL", "unexpected host failure"))


def _never(request: Request, _: int) -> None:
    return None


def _crlf(request: Request, _: int) -> bytes:
    return line(result(request.message.get("id"), expected("crlf")), b"\r\n")


def _separators(request: Request, _: int) -> bytes:
    return line(result(request.message.get("id"), {**expected("separators"), "text": SEPARATED_TEXT}))


def _invalid_first(request: Request, _: int) -> bytes:
    invalid = b'{"jsonrpc":"2.0","id":' + INVALID_MARKER.encode() + b"\n"
    return invalid + line(result(request.message.get("id"), expected("invalid-line")))


NOTIFICATION = {
    "jsonrpc": "2.0",
    "method": "permissions.request",
    "params": {
        "requestId": "perm-1",
        "sessionId": "s-1",
        "toolCallId": "call-1",
        "toolName": "Bash",
        "risk": "low",
        "argsPreview": {"command": "true"},
        "reason": "a notification between a request and its answer",
    },
}


def _notified(request: Request, _: int) -> bytes:
    note = line(NOTIFICATION)
    return note + note + line(result(request.message.get("id"), expected("notifications")))


def _final(request: Request, _: int) -> bytes:
    return line(result(request.message.get("id"), expected("final")), b"")


STEP_POLICIES: dict[object, Policy] = {
    "notifications": _notified,
    "crlf": _crlf,
    "separators": _separators,
    "invalid-line": _invalid_first,
    "overloaded": _overloaded_then_ok,
    "overloaded-always": _always_overloaded,
    "tool-overloaded": _tool_overloaded_once,
    "admitted-error": _internal,
    "timeout": _never,
    "final": _final,
}


def _steps(peer: ClientPeer, *, oversized: bool) -> None:
    """One operation per rule, in an order where a client that breaks one
    (say, stops reading after an invalid line) leaves the others judged."""
    # §8: a notification before any call, then two between a request and its answer.
    peer.write(line(NOTIFICATION), intent="notification")
    peer.operate("session.list", "notifications")
    _judged(peer, rpc_client.notifications_accepted, expected("notifications"))
    peer.operate("session.list", "crlf")
    _judged(peer, rpc_client.crlf_answer_read, expected("crlf"))
    # §2: the client writes non-ASCII text as UTF-8 (the answer is not judged here).
    peer.operate("session.list", "utf8", params={"query": UTF8_TEXT})
    _outcome(peer)
    peer.operate("session.list", "separators")
    _judged(peer, rpc_client.separators_kept, {**expected("separators"), "text": SEPARATED_TEXT})
    # §2.1: retried with the documented delays, then success; given up after four.
    patient = 2 * peer.response_s + sum(rpc_limits.RETRY_DELAYS_MS) / 1000
    for method, step in (("session.list", "overloaded"), ("session.list", "overloaded-always")):
        peer.operate(method, step)
        _outcome(peer, patient)
    peer.operate("tools.execute", "tool-overloaded", params=_TOOL_PARAMS)
    _outcome(peer, patient)
    peer.operate("session.get", "admitted-error", params={"sessionId": "s-1"})
    _outcome(peer)
    peer.operate("session.get", "timeout", params={"sessionId": "s-1"}, timeoutS=CALL_TIMEOUT_S)
    _outcome(peer, CALL_TIMEOUT_S + 2 * peer.response_s)
    if oversized:
        _oversized_step(peer)
    peer.operate("session.list", "invalid-line")
    _judged(peer, rpc_client.answer_after_invalid_line_read, expected("invalid-line"))
    # Last: the answer without LF, then the host-core's stdout ends.
    peer.operate("app.health", "final")
    answered = _await_answer(peer, "final")
    if answered:
        peer.close_hostcore_stdout()
        _judged(peer, rpc_client.final_frame_read, expected("final"))


_TOOL_PARAMS = {"sessionId": "s-1", "toolCallId": "call-overloaded", "toolName": "Read", "args": {"path": "a.txt"}}


def _await_answer(peer: ClientPeer, step: str) -> bool:
    """Wait until the harness has answered the request of ``step``."""
    deadline = 2 * peer.response_s
    while not any(r.step == step and r.answered_at is not None for r in peer.requests):
        if deadline <= 0:
            return False
        if peer.client_stdout_closed:
            raise ClientGone("the client closed its stdout")
        peer.pump(0.05)
        deadline -= 0.05
    return True


def _oversized_step(peer: ClientPeer) -> None:
    """§7: a call whose request cannot fit one line. Every line over the limit
    the client writes meanwhile is a violation; two are a retry."""
    before = len(peer.oversized)
    method = "app.health"
    peer.operate(method, "oversized", padBytes=rpc_limits.MAX_LINE_BYTES, timeoutS=2 * CALL_TIMEOUT_S)
    _outcome(peer, 8 * peer.response_s)  # building and (wrongly) writing 64 MiB takes a while
    sizes = [size for _, size in peer.oversized[before:]]
    peer.add(rpc_client.no_oversized_lines(method, sizes))
    peer.add(rpc_client.oversized_not_resent(method, sizes))


# -- the mismatch scenarios ----------------------------------------------------------------------------


def mismatch_scenario(
    command: ClientCommand, recorder: Recorder, response_s: float, name: str, answer: dict[str, object]
) -> None:
    """§3: a handshake answer a v11 client must refuse. Operations are
    queued for it anyway; it must send nothing more and exit with an error."""
    recorder.context = StepContext(scenario=name)
    with ClientPeer(command, recorder, response_s=response_s, scenario=name) as peer:
        answered_after = 0
        try:
            peer.operate("app.health", "after-mismatch")
            peer.operate("session.list", "after-mismatch-2")
            handshake, answered_after = _open_handshake(peer, answer)
            if handshake is None:
                return
            status = peer.wait_exit(2 * response_s)
            peer.add(rpc_client.exits_after_failed_handshake(status, waited_s=2 * response_s))
        except ClientGone:
            status = peer.wait_exit(2 * response_s)
            peer.add(rpc_client.exits_after_failed_handshake(status, waited_s=2 * response_s))
        except ContractBroken as exc:
            recorder.harness_errors.append(f"{name} scenario: the client broke the driver contract: {exc}")
        _judge_order(peer, answered_after, answer)
