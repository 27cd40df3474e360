"""The scripted Bash scenario of the host-core machine (§10 item 13): streams,
timeouts, grants, shell pins and the end of a command's process tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.machines.hostcore_forks import ForkTodoRules
from conformance.machines.hostcore_proposals import _guessed_wrong
from conformance.machines.hostcore_world import POLL_S, REAP_GRACE_S, Executed, _code, _mentions, survives
from conformance.protocol import rpc_limits, rpc_tools
from conformance.protocol.violations import Violation


def _pid_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie counts as ended: the
    harness is a child subreaper, so orphans wait on it to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"])


class BashScenario(ForkTodoRules):
    """§10 item 13, run once per certification (scripted): it waits on real
    processes and timeouts, so the generated examples leave it out."""

    def _pids(self, start: int, sid: str, call_id: str, count: int, *, wait: bool = True) -> list[int]:
        """The first ``count`` whole numbers the call printed on stdout."""
        deadline = self.peer.target.now() + (self.response_s if wait else 0.0)
        while True:
            text = self._stream(start, sid, call_id, "stdout")
            numbers = [int(w) for w in text.split() if w.isdigit()]
            if len(numbers) >= count or not self.peer.alive or self.peer.target.now() >= deadline:
                return numbers[:count]
            self.peer.pump(min(POLL_S, max(deadline - self.peer.target.now(), 0.0)))

    def _stream(self, start: int, sid: str, call_id: str, stream: str) -> str:
        chunks = []
        for note in self._notes(start, "tools.output"):
            params = note.get("params")
            if isinstance(params, dict) and (params.get("sessionId"), params.get("toolCallId")) == (sid, call_id):
                if params.get("stream") == stream and isinstance(params.get("chunk"), str):
                    chunks.append(params["chunk"])
        return "".join(chunks)

    def _ended(self, pids: list[int], requirements: tuple[str, ...], what: str) -> None:
        """The processes are gone (their zombies aside) soon after the answer:
        the host ends them before it answers (§8.5) or releases the slot (§4)."""
        deadline = self.peer.target.now() + REAP_GRACE_S
        alive = [p for p in pids if not _pid_gone(p)]
        while alive and self.peer.target.now() < deadline:
            self.peer.pump(POLL_S)  # frames keep flowing while the host reaps
            alive = [p for p in alive if not _pid_gone(p)]
        self.recorder.exercise(*requirements)
        if alive:
            message = f"{what}: process {alive[0]} of the command's tree still runs"
            for requirement in requirements:
                self.peer.violate(Violation(requirement, message))

    @survives
    def bash_scenario(self) -> None:
        """RPC-10-13-bash-shell: the pin (RPC-5.2-shell-pin), separate
        streamed output (RPC-5-bash-streams-separate, RPC-4-tools.output,
        RPC-5.1-tools-output-shape) and a failing command's result
        (RPC-5-bash-failure-result); standing grants
        (RPC-4-permissions.listSessionGrants, RPC-4-permissions.clearSessionGrants).
        The pin comes from commandShells.list (RPC-4-commandShells.list,
        RPC-5.2-catalog-shape); every result is judged by RPC-5-execute-result."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        pin = self._shell_pin()
        if sid is None or pin is None:
            return
        self._wrong_pins(sid, pin)
        self._grants(sid)
        self._streams(sid)

    @survives
    def bash_timeouts_scenario(self) -> None:
        """RPC-10-13-bash-shell: the default (RPC-5-bash-default-timeout: not
        cut short) and an override (RPC-5-bash-timeout-override, the child
        reaped: RPC-4-timed-out-child-reaped), and an abort ending the whole
        tree (RPC-4-tools.abort)."""
        if not self._guard():
            return
        sid = self._session_in(self.world().a)
        if sid is None:
            return
        self._timeouts(sid)
        self._abort_tree(sid)

    def _allow_until_printed(self, start: int, sid: str, call_id: str, rid: object) -> dict[str, Any] | None | bool:
        """Allow the call's prompt (if one comes) until it has printed two
        pids; False when it was answered first."""
        request: dict[str, Any] | None = None
        deadline = self.peer.target.now() + self.response_s
        while self.peer.target.now() < deadline:
            if self.peer.await_answer(rid, timeout=POLL_S) is not None:
                return False
            if request is None:
                request = self._prompt(start, sid, call_id)
                if request is not None:
                    self._answer(request, "allow-once", sid, call_id)
            if len(self._pids(start, sid, call_id, 2, wait=False)) == 2:
                break
        return request

    def _wrong_pins(self, sid: str, pin: tuple[str, str]) -> None:
        other_id = next(i for i in rpc_limits.COMMAND_SHELL_IDS if i != pin[0])
        other_dialect = next(d for d in rpc_limits.SHELL_DIALECTS if d != pin[1])
        for shell, dialect in ((other_id, pin[1]), (pin[0], other_dialect)):
            marker = self.world().a / f"spawned-{self._call_id()}"
            pinned: dict[str, Any] = {"expectedCommandShellId": shell, "expectedCommandShellDialect": dialect}
            judges = ("RPC-5.2-shell-pin", "RPC-10-13-bash-shell")
            done = self._execute(sid, "Bash", {"command": f"touch {marker}"}, judges=judges, **pinned)
            if done.result is None:
                continue
            self.recorder.exercise("RPC-5.2-shell-pin", "RPC-10-13-bash-shell")
            if done.result.get("ok") is not False or _code(done.result) != "COMMAND_SHELL_CHANGED" or marker.exists():
                message = f"Bash pinned to {shell}/{dialect} (not the effective {pin[0]}/{pin[1]}) answered "
                message += f"errorCode {_code(done.result)!r}; expected COMMAND_SHELL_CHANGED and nothing spawned"
                for requirement in ("RPC-5.2-shell-pin", "RPC-10-13-bash-shell"):
                    self.peer.violate(Violation(requirement, message))
            elif done.request is not None:
                message = "a Bash call with a stale pin raised a permission prompt; the pin is checked before it"
                self.peer.violate(Violation("RPC-5.2-shell-pin", message))

    def _grants(self, sid: str) -> None:
        """RPC-4-permissions.listSessionGrants: an allow-session answer is a
        standing grant, listed; RPC-4-permissions.clearSessionGrants: after
        clearing, it is gone and the next Bash call asks again."""
        first = self._bash(sid, "echo granted", answer="allow-session")
        if first is None or first.request is None:
            return  # no prompt, no grant to look at
        response = self._call("permissions.listSessionGrants", {"sessionId": sid})
        if response is None or _guessed_wrong(response):
            return  # the params are not documented: a refusal of them is not judged
        listed = response.get("result")
        self.recorder.exercise("RPC-4-permissions.listSessionGrants")
        if not _mentions(listed, '"Bash"'):
            message = f"permissions.listSessionGrants lacks the Bash grant just given: {listed!r}"[:300]
            self.peer.violate(Violation("RPC-4-permissions.listSessionGrants", message))
        cleared = self._call("permissions.clearSessionGrants", {"sessionId": sid})
        if cleared is None or _guessed_wrong(cleared):
            return
        after = self._result("permissions.listSessionGrants", {"sessionId": sid})
        again = self._bash(sid, "echo asked again", answer="allow-once")
        self.recorder.exercise("RPC-4-permissions.clearSessionGrants")
        if _mentions(after, '"Bash"') or (again is not None and again.result is not None and again.request is None):
            message = "after permissions.clearSessionGrants the Bash grant still stands"
            self.peer.violate(Violation("RPC-4-permissions.clearSessionGrants", message))

    def _streams(self, sid: str) -> None:
        start = len(self.peer.notifications)
        call_id = self._call_id()
        done = self._bash(sid, "printf out-one; printf err-one >&2; printf out-two; exit 3", toolCallId=call_id)
        if done is None or done.result is None:
            return
        self.peer.add(rpc_tools.bash_failure_result(done.result))
        for note in self._notes(start, "tools.output"):
            self.peer.add(rpc_tools.tools_output_params(note.get("params")))
        out, err = self._stream(start, sid, call_id, "stdout"), self._stream(start, sid, call_id, "stderr")
        self.recorder.exercise("RPC-5-bash-streams-separate", "RPC-4-tools.output", "RPC-10-13-bash-shell")
        if (out, err) != ("out-oneout-two", "err-one"):
            message = f"tools.output carried stdout {out!r} and stderr {err!r}; expected 'out-oneout-two' and 'err-one'"
            for requirement in ("RPC-5-bash-streams-separate", "RPC-4-tools.output", "RPC-10-13-bash-shell"):
                self.peer.violate(Violation(requirement, message))

    def _timeouts(self, sid: str) -> None:
        slow = self._bash(sid, "sleep 1.2; echo finished")
        if slow is not None and slow.result is not None:
            self.recorder.exercise("RPC-5-bash-default-timeout")
            if slow.result.get("ok") is not True:
                message = (
                    f"Bash without timeoutMs was cut short after 1.2 s ({_code(slow.result)!r}); the default is 60 s"
                )
                self.peer.violate(Violation("RPC-5-bash-default-timeout", message))
        start = len(self.peer.notifications)
        call_id = self._call_id()
        minimum = rpc_limits.BASH_TIMEOUT_MIN_MS
        began = self.peer.target.now()
        timed = self._bash(sid, "echo $$; exec sleep 15", toolCallId=call_id, timeoutMs=minimum)
        if timed is None or timed.result is None:
            return
        took = self.peer.target.now() - began
        self.recorder.exercise("RPC-5-bash-timeout-override", "RPC-10-13-bash-shell")
        if timed.result.get("ok") is not False:
            message = f"Bash with timeoutMs {minimum} running `sleep 15` answered ok after {took:.1f} s"
            for requirement in ("RPC-5-bash-timeout-override", "RPC-10-13-bash-shell"):
                self.peer.violate(Violation(requirement, message))
        self._ended(self._pids(start, sid, call_id, 1), ("RPC-4-timed-out-child-reaped",), "after the timeout")

    def _abort_tree(self, sid: str) -> None:
        start = len(self.peer.notifications)
        call_id = self._call_id()
        pin = self._shell_pin()
        if pin is None:
            return
        pinned = {"expectedCommandShellId": pin[0], "expectedCommandShellDialect": pin[1]}
        params = {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash", "args": {}, **pinned}
        params["args"] = {"command": "sleep 12 & echo $!; echo $$; wait"}
        rid = self.peer.send("tools.execute", params)
        request = self._allow_until_printed(start, sid, call_id, rid)
        if request is False:
            return  # answered before any abort: nothing to judge
        pids = self._pids(start, sid, call_id, 2)
        aborted = self._result("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash"})
        self.recorder.exercise("RPC-4-tools.abort")
        if not isinstance(aborted, dict):
            self.peer.violate(Violation("RPC-4-tools.abort", "tools.abort of a running Bash call was not answered"))
        response = self.peer.await_answer(rid)
        if response is not None:
            self._judged(Executed(response, request if isinstance(request, dict) else None), call_id, "Bash")
        self._ended(pids, ("RPC-10-13-bash-shell", "RPC-4-tools.abort"), "after tools.abort")
        again = self._call("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash"})
        if again is not None and "error" in again:
            self.peer.violate(Violation("RPC-4-tools.abort", "a second tools.abort of the same call was refused"))
