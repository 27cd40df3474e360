"""Fixed host-core scenarios about how a generation ends: §7 refusals while
draining after stdin EOF, §2 exit on a broken stdout, and §2.1 the end of a
call's admission wait (30 s: the thorough profile only).

Each scenario runs on a host-core process of its own (what it does to the
pipes leaves nothing usable behind). Answers go through the judges of
protocol/rpc_ending.py and the scenario goes on after a violation.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_limits
from conformance.protocol.rpc_ending import ended_on_pipe_error, refused_as_shutting_down, wait_settled
from conformance.scenarios.hostcore_rig import rig

# Calls written in the same write as stdin EOF: a state read and a listing.
DRAIN_CALLS = (("drain-1", "app.health"), ("drain-2", "session.list"))


def shutdown_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§7: two calls and stdin EOF at once; each answer is a result or HOST_SHUTTING_DOWN."""
    recorder.context = StepContext(scenario="shutting-down")
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        try:
            response = peer.call("app.handshake", handshake_params())
            if response is None or "result" not in response:
                return
            lines = b"".join(
                json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {}}).encode() + b"\n"
                for rid, method in DRAIN_CALLS
            )
            peer.write_raw(lines, intent="calls-then-eof")
            peer.stdin_eof(response_s)
            for rid, method in DRAIN_CALLS:
                peer.add(refused_as_shutting_down(method, peer.await_answer(rid, timeout=0)))
        except HostcoreGone:
            return


def pipe_error_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2: the harness closes its read end of the host-core's stdout, then
    sends app.health; writing the answer fails, and the host-core must exit
    within the patience. The peer kills the process group afterwards either way."""
    recorder.context = StepContext(scenario="pipe-error")
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        try:
            response = peer.call("app.handshake", handshake_params())
        except HostcoreGone:
            return
        if response is None or "result" not in response:
            return
        peer.trace.action("close-stdout", step=peer.step)
        peer.target.close_stdout()
        with contextlib.suppress(HostcoreGone):  # it stopped reading stdin: it may be exiting already
            peer.send("app.health")
        peer.add(ended_on_pipe_error(peer.target.wait_exit(response_s), response_s))


def wait_timeout_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1: two Bash blockers fill one session's shell budget, a third waits;
    it must be settled within the 30 s wait plus the patience. Slow: only the
    thorough profile runs it (or a run that names it)."""
    with rig(command, recorder, response_s, work, "admission-wait-timeout") as r:
        if r is None:
            return
        sid = r.session()
        if sid is None:
            return
        for name in ("h1", "h2"):
            r.blocker(sid, name)
        if not r.wait_for(lambda: {"h1", "h2"} <= r.started()):
            return  # the budget checks judge a host that never runs them
        sent = r.peer.target.now()
        waiter = r.blocker(sid, "h3")
        limit = rpc_limits.ADMISSION_WAIT_S + response_s
        r.wait_for(lambda: waiter.answer is not None or "h3" in r.started(), timeout=limit)
        if "h3" not in r.started():  # admitted past the budget: RPC-2.1-bash-session-budget's matter
            r.peer.add(wait_settled(waiter.answer, r.peer.target.now() - sent))
