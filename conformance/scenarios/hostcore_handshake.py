"""The first fixed host-core scenarios: §3 the handshake (calls before it, a
version mismatch, the good one and app.health), §2 transport checks on the
same process, and §7 one oversized request line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors, rpc_handshake, rpc_limits, rpc_results
from conformance.protocol.rpc_answers import id_key
from conformance.protocol.violations import Violation
from conformance.transport.startup import SetupFailure, setup_failure

WRONG_VERSION = rpc_limits.PROTOCOL_VERSION - 1
# A method no host-core has (the state machine calls it too).
UNKNOWN_METHOD = "octetConformance.noSuchMethod"


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
