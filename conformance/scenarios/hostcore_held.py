"""A permission prompt held open for a whole host-core certification (§6).

§6 puts no deadline on a prompt: an unresolved request stays pending until a
decision, a cancellation or host shutdown, and the transport puts no deadline
on the waiting tools.execute. The machine's rules look at an open prompt for
a fraction of a second (RPC-6-pending-until-decided); a host-core that
denies a prompt by itself after, say, ten seconds would pass them. So one
generation opens a prompt right after the handshake scenario -- a Read of a
path outside its session's root, which §5 makes ask in the default ask mode
-- and leaves it alone while every other scenario and the state machine run.
At the end of the run (and no sooner than the profile's hold time after it
opened) the call must still be unanswered and the request still listed by
permissions.pending; then the harness denies it.

The hold costs no wall time where the run lasts longer anyway; it is a floor
per profile, so a host-core's verdict does not depend on how fast the rest
of the run went: a host-core that answers a prompt by itself after T seconds
fails in every profile whose hold is longer than T.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors
from conformance.protocol.rpc_ending import still_pending

NAME = "held prompt scenario"
CALL_ID = "held-prompt"
# The least time the prompt stays open, per profile. Quick: about as long as
# its run takes anyway; default: past the 30 s §2.1 gives a queued call, the
# likeliest bound a host-core would borrow; thorough: past the 60 s Bash
# default. Other profiles (the suite's own tests): a short hold.
HOLD_S = {"quick": 12.0, "default": 35.0, "thorough": 65.0}
SHORT_HOLD_S = 3.0
POLL_S = 0.05
JUDGES = ("RPC-6-pending-until-decided", "RPC-10-04-permission-pending")


@dataclass
class HeldPrompt:
    peer: HostcorePeer
    rid: object
    request_id: object
    session_id: str
    opened_at: float

    def judge(self, hold_s: float) -> None:
        """Wait out the rest of ``hold_s``, judge, deny the prompt (the
        caller closes the generation)."""
        peer = self.peer
        peer.recorder.context = StepContext(scenario="held-prompt")
        try:
            answer = self._answered_by(self.opened_at + hold_s)
            listed = None
            if answer is None:
                pending = peer.call("permissions.pending", {"sessionId": self.session_id})
                result = pending.get("result") if pending is not None else None
                listed = json.dumps(self.request_id) in json.dumps(result) if isinstance(result, dict) else None
            peer.add(still_pending(answer, listed))
            if answer is None:
                peer.call("permissions.resolve", {"requestId": self.request_id, "decision": "deny"})
                peer.await_answer(self.rid)
        except HostcoreGone as exc:
            # A process that ended ended its prompts too (§6 allows shutdown).
            peer.recorder.untestable(f"the host-core holding the prompt ended ({exc})", *JUDGES)

    def _answered_by(self, deadline: float) -> dict[str, Any] | None:
        while self.peer.target.now() < deadline:
            answer = self.peer.await_answer(self.rid, timeout=min(POLL_S * 10, deadline - self.peer.target.now()))
            if answer is not None:
                return answer
        return self.peer.await_answer(self.rid, timeout=0)


def hold_seconds(profile_name: str) -> float:
    return HOLD_S.get(profile_name, SHORT_HOLD_S)


def open_prompt(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> HeldPrompt | None:
    """A generation with one prompt open (None: none could be opened; the
    peer is closed then). The caller judges and closes what it returns."""
    recorder.context = StepContext(scenario="held-prompt")
    folder = Path(tempfile.mkdtemp(prefix="held-", dir=work))
    (folder / "project").mkdir()
    (folder / "data").mkdir()  # like every generation's {data_dir}: it exists, empty
    (folder / "outside.txt").write_text("outside\n", encoding="utf-8")
    peer = HostcorePeer(command, folder / "data", recorder, response_s=response_s)
    held = None
    try:
        held = _open(peer, folder)
    except HostcoreGone:
        pass
    finally:
        if held is None:
            peer.close()
    return held


def _open(peer: HostcorePeer, folder: Path) -> HeldPrompt | None:
    shook = peer.call("app.handshake", handshake_params())
    created = peer.call("session.create", {"projectPath": str(folder / "project")}) if shook else None
    result = created.get("result") if created is not None else None
    session = result.get("session") if isinstance(result, dict) else None
    sid = session.get("id") if isinstance(session, dict) else None
    if not isinstance(sid, str):
        return None  # the handshake and session.create are judged elsewhere
    args = {"path": str(folder / "outside.txt")}
    rid = peer.send("tools.execute", {"sessionId": sid, "toolCallId": CALL_ID, "toolName": "Read", "args": args})
    deadline = peer.target.now() + peer.response_s
    answer = None
    while answer is None and peer.target.now() < deadline:
        for note in peer.notifications:
            params = note.get("params") if note.get("method") == "permissions.request" else None
            if isinstance(params, dict) and params.get("toolCallId") == CALL_ID:
                return HeldPrompt(peer, rid, params.get("requestId"), sid, peer.target.now())
        answer = peer.await_answer(rid, timeout=POLL_S)  # answered at once: nothing to hold (the machine judges why)
    code = rpc_errors.invalid_input_refusal(answer)
    reason = f"the host-core refused Read with the arguments the suite chose ({code})" if code else None
    peer.recorder.untestable(
        reason or "a Read of a path outside its session's root raised no permission prompt", *JUDGES
    )
    return None
