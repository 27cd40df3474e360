"""Fixed host-core scenarios for §2 transport, §3 history and §8.3 on one
generation, and the final unterminated frame."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors
from conformance.protocol.rpc_admission import (
    SECRET,
    a2a_refused,
    diagnostic_without_text,
    final_frame_answered,
    method_present,
    no_a2a_notifications,
    no_notification_before_handshake,
    separators_answered,
    session_not_found,
    title_intact,
)
from conformance.scenarios.hostcore_rig import (
    A2A_METHODS,
    CUMULATIVE_METHODS,
    SEPARATORS,
    SPLIT_TITLE,
    STDERR_BYTES,
)

# -- scenarios ---------------------------------------------------------------------------------


def transport_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2, §3, §7 and §8.3 on one generation."""
    recorder.context = StepContext(scenario="transport-and-history")
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        try:
            if peer.call("app.health") is None:
                return
            peer.add(no_notification_before_handshake(list(peer.notifications)))
            response = peer.call("app.handshake", handshake_params())
            if response is None or "result" not in response:
                return
            for method in A2A_METHODS:
                peer.add(a2a_refused(method, peer.call(method, {})))
            for method in CUMULATIVE_METHODS:
                peer.add(method_present(method, peer.call(method, {})))
            _separators(peer)
            _split_utf8(peer)
            if not _invalid_line(peer):
                return  # no answer after an invalid line: RPC-2-invalid-json-later-frames says so
            missing = {"sessionId": "ses_octet_missing"}
            call = {"toolCallId": "missing", "toolName": "Read", "args": {"path": "notes.txt"}}
            for method, fallback, params in (("session.get", False, missing), ("tools.execute", True, missing | call)):
                response = peer.call(method, params)
                refused = rpc_errors.shape_refusal(method, params, response)
                if refused is not None:
                    recorder.untestable(refused, "RPC-7-session-not-found")
                    continue
                peer.add(session_not_found(method, response, fallback=fallback))
            peer.add(no_a2a_notifications(peer.notifications))
            # Its stderr is complete once it has exited (the reader thread is joined then).
            peer.stdin_eof(response_s)
            peer.add(diagnostic_without_text([], peer.target.stderr_excerpt(STDERR_BYTES)))
        except HostcoreGone:
            return


def final_frame_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2: a last request without LF, then stdin EOF (a generation of its own:
    whatever an earlier step did to the reader cannot hide this one)."""
    recorder.context = StepContext(scenario="final-unterminated-frame")
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        try:
            response = peer.call("app.handshake", handshake_params())
            if response is None or "result" not in response:
                return
            peer.write_raw(b'{"jsonrpc":"2.0","id":"final","method":"app.health"}', intent="final-unterminated")
            peer.stdin_eof(response_s)
            peer.add(final_frame_answered(peer.await_answer("final", timeout=0)))
        except HostcoreGone:
            return


def _separators(peer: HostcorePeer) -> None:
    line = {"jsonrpc": "2.0", "id": "separators", "method": "session.list", "params": {"note": SEPARATORS}}
    peer.write_raw(json.dumps(line, ensure_ascii=False).encode() + b"\n", intent="line-separators")
    answer = peer.await_answer("separators")
    peer.add(separators_answered(answer, peer.await_answer(None, timeout=0)))


def _split_utf8(peer: HostcorePeer) -> None:
    created = peer.call("session.create", {})
    result = created.get("result") if created else None
    session = result.get("session") if isinstance(result, dict) else None
    sid = session.get("id") if isinstance(session, dict) else None
    if not isinstance(sid, str):
        return
    line = {"jsonrpc": "2.0", "id": "split", "method": "session.rename", "params": {"id": sid, "title": SPLIT_TITLE}}
    for byte in json.dumps(line, ensure_ascii=False).encode() + b"\n":
        peer.write_raw(bytes([byte]), intent="utf8-byte")
    renamed = peer.await_answer("split")
    if renamed is None or "result" not in renamed:
        return
    listed = peer.call("session.list", {})
    listing = listed.get("result") if listed else None
    sessions = listing.get("sessions") if isinstance(listing, dict) else None
    titles = [s.get("title") for s in sessions or [] if isinstance(s, dict) and s.get("id") == sid]
    if titles:
        peer.add(title_intact(SPLIT_TITLE, titles[0]))


def _invalid_line(peer: HostcorePeer) -> bool:
    """Whether the host-core still answers after the invalid line."""
    peer.write_raw(b'{"' + SECRET.encode() + b'": [\n', intent="invalid-json")
    if peer.call("app.health") is None:
        return False
    answer = peer.await_answer(None, timeout=0)
    peer.add(diagnostic_without_text([answer] if answer else [], ""))
    return True
