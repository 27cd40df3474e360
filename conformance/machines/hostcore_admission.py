"""Fixed host-core scenarios for §2 transport, §2.1 admission, §3 history, §7 and §8.

Each scenario starts its own host-core generation (a fresh data directory and
a scratch project folder), plays the client, and judges what it sees. Nothing
here asserts: answers go through rule functions, violations are recorded and
the scenario goes on.

Concurrency is driven with Bash *blockers*: a command that first creates a
marker file named after its call, then waits for a gate file the harness
creates. Markers are what really runs, whatever the host-core reports; the
app.health ``toolBudget`` counters are what it says. Judging is tolerant of
scheduling: the spec's budgets are the only strict bounds (more markers than
a budget is a violation the moment it is seen); "this call should have been
admitted by now" is only concluded after the harness patience has passed
with the call still waiting. Runnable is judged by the spec's numbers.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder, StepContext
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors, rpc_limits, rpc_tools
from conformance.protocol.violations import Violation, rule

POLL_S = 0.02  # how long one wait for frames lasts between two looks at the markers
SECRET = "octet-secret-7f3a"  # text of an invalid line that no diagnostic may repeat
SPLIT_TITLE = "Zürich 東京 \U0001f389"  # multi-byte characters, written one byte per write
SEPARATORS = "a\u2028b\u2029c"
STDERR_BYTES = 64 * 1024
# More calls taken on at once than any reading of §2.1 allows (see RPC-2.1-dispatcher-cap).
OVERLOAD_LIMIT = rpc_limits.MAX_TOOL_EXECUTIONS + rpc_limits.MAX_QUEUED_TOOLS + rpc_limits.MAX_ACTIVE_REQUESTS
A2A_METHODS = ("a2a.task.send", "a2a.tasks.list")
# Methods versions 4, 5 and 9 introduced that this release drives (§3 rules 4-7);
# session.appendCompaction (version 6) is not among them (docs/reference-hostcore.md).
OTHER_TEXT = "gamma-of-the-other-project"
TOOL_CALL_ID = "octet-tool-call-1"
CUMULATIVE_METHODS = ("notification.list", "session.fork", "commandShells.list")


# -- the rig: one generation plus a project folder ---------------------------------------


class Unresponsive(Exception):
    """app.health went unanswered: the scenario stops (the rig releases what it started)."""


class ShapeRefused(Exception):
    """The host-core refused a tool call's arguments, which the document
    leaves to the suite (rpc_limits.UNSPECIFIED_ARGS_TOOLS): the scenario
    stops, and what it was for is untested with this reason."""


@dataclass
class Call:
    name: str
    session: str
    rid: object
    order: int
    tool: str = ""
    answer: dict[str, Any] | None = None


@dataclass
class Rig:
    peer: HostcorePeer
    project: Path
    data_dir: Path
    pin: dict[str, str] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)
    leave_open: set[str] = field(default_factory=set)  # calls whose permission prompts stay unanswered
    unresponsive: bool = False  # app.health went unanswered once: waits are shortened
    counters_ok: bool = True  # False once app.health failed to account for a call: stop waiting on it
    fifos: dict[str, Path] = field(default_factory=dict)  # Read calls blocked on a named pipe
    held: dict[str, int] = field(default_factory=dict)  # write ends the harness holds open: reads running
    freed: set[str] = field(default_factory=set)
    sinks: dict[str, Path] = field(default_factory=dict)  # Write calls blocked on a named pipe
    _order: Iterator[int] = field(default_factory=itertools.count)
    _resolved: int = 0

    @property
    def started_dir(self) -> Path:
        return self.project / ".octet-started"

    @property
    def gate_dir(self) -> Path:
        return self.project / ".octet-gates"

    def session(self, project: Path | None = None) -> str | None:
        """A session in ``project``: only the documented projectPath is sent,
        so it has the default modes (Agent, and ask: §5.1 calls ask the
        product default); prompts are answered by :meth:`collect`."""
        folder = str(project or self.project)
        response = self.peer.call("session.create", {"projectPath": folder})
        result = response.get("result") if response else None
        session = result.get("session") if isinstance(result, dict) else None
        sid = session.get("id") if isinstance(session, dict) else None
        return sid if isinstance(sid, str) else None

    def execute(self, sid: str, name: str, tool: str, args: dict[str, Any], **extra: Any) -> Call:
        params = {"sessionId": sid, "toolCallId": name, "toolName": tool, "args": args, **extra}
        call = Call(name, sid, self.peer.send("tools.execute", params), next(self._order), tool)
        self.calls[name] = call
        return call

    def blocker(self, sid: str, name: str) -> Call:
        """A Bash call that marks its start, then waits for its gate."""
        started, gate = shlex.quote(str(self.started_dir / name)), shlex.quote(str(self.gate_dir / name))
        command = f"touch {started}; while [ ! -e {gate} ]; do sleep 0.02; done"
        return self.execute(sid, name, "Bash", {"command": command}, **self.pin)

    def reader(self, sid: str, name: str) -> Call:
        """A Read of a named pipe: it runs from the moment it opens the pipe
        (the harness sees that, and holds the write end) until released."""
        fifo = self.project / f"{name}.fifo"
        os.mkfifo(fifo)
        self.fifos[name] = fifo
        return self.execute(sid, name, "Read", {"path": fifo.name})

    def writer(self, sid: str, name: str) -> Call:
        """A Write to a named pipe: it blocks until the harness releases it."""
        fifo = self.project / f"{name}.fifo"
        os.mkfifo(fifo)
        self.sinks[name] = fifo
        return self.execute(sid, name, "Write", {"path": fifo.name, "content": name})

    def _unblock_sinks(self) -> None:
        """Unblock released Writes, whichever end they wait on: a reader
        (an open for reading, say to take a digest first) gets EOF, a writer
        gets a reader that reads what is there and goes away."""
        for name in self.freed & set(self.sinks):
            if self.calls[name].answer is not None:
                continue
            with contextlib.suppress(OSError):
                os.close(os.open(self.sinks[name], os.O_WRONLY | os.O_NONBLOCK))
            with contextlib.suppress(OSError):
                fd = os.open(self.sinks[name], os.O_RDONLY | os.O_NONBLOCK)
                with contextlib.suppress(OSError):
                    os.read(fd, 1 << 16)
                os.close(fd)

    def probe(self) -> None:
        self._unblock_sinks()
        """Hold the write end of every pipe a Read has opened; a released
        pipe's write end is closed at once (its Read then reads EOF)."""
        for name, fifo in self.fifos.items():
            if name in self.held:
                continue
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # no reader yet (ENXIO)
            if name in self.freed:
                os.close(fd)
            else:
                self.held[name] = fd

    def reading(self, session: str | None = None) -> set[str]:
        """Reads that surely run: their pipe is open and held, no answer yet."""
        return {
            n
            for n in self.held
            if self.calls[n].answer is None and (session is None or self.calls[n].session == session)
        }

    def started(self) -> set[str]:
        return set(os.listdir(self.started_dir)) if self.started_dir.is_dir() else set()

    def running(self) -> set[str]:
        """Blockers that surely still run: started, gate closed, unanswered. (One
        whose gate is open may have ended before its answer was written.)"""
        return {
            n
            for n in self.started()
            if n in self.calls and self.calls[n].answer is None and not (self.gate_dir / n).exists()
        }

    def release(self, *names: str) -> None:
        for name in names or tuple(self.calls):
            (self.gate_dir / name).touch()
            if name in self.sinks:
                self.freed.add(name)
            if name in self.fifos:
                self.freed.add(name)
                fd = self.held.pop(name, None)
                if fd is not None:
                    os.close(fd)

    def collect(self) -> None:
        """Move answers that arrived into their calls; answer new prompts."""
        self.probe()
        for call in self.calls.values():
            if call.answer is None:
                call.answer = self.peer.await_answer(call.rid, timeout=0)
                if call.answer is not None:
                    self.peer.add(rpc_tools.tool_outcome_not_error(call.answer))
                    _shape_accepted(call)
        prompts = [n for n in self.peer.notifications if n.get("method") == "permissions.request"]
        for note in prompts[self._resolved :]:
            params = note.get("params")
            if not isinstance(params, dict) or params.get("toolCallId") in self.leave_open:
                continue
            self.peer.send("permissions.resolve", {"requestId": params.get("requestId"), "decision": "allow-session"})
        self._resolved = len(prompts)

    def pending(self) -> list[Call]:
        return [c for c in self.calls.values() if c.answer is None]

    def health(self) -> dict[str, Any] | None:
        """app.health's toolBudget (None: no usable answer; an overloaded refusal is no verdict).
        Raises Unresponsive when no answer came at all (§8.1 says so while a tool runs)."""
        response = self.peer.call("app.health")
        if response is None:
            if self.pending():
                self.peer.add(answered_meanwhile(None))
            self.unresponsive = True
            raise Unresponsive()
        result = response.get("result") if response else None
        budget = result.get("toolBudget") if isinstance(result, dict) else None
        return budget if isinstance(budget, dict) else None

    def wait_for(self, done: Callable[[], bool], *, timeout: float | None = None) -> bool:
        deadline = self.peer.target.now() + (self.peer.response_s if timeout is None else timeout)
        while True:
            self.collect()
            if done():
                return True
            if self.peer.target.now() >= deadline:
                return False
            self.peer.pump(POLL_S)

    def finish(self) -> None:
        """Open every gate and wait (bounded) for every call's answer."""
        self.gate_dir.mkdir(exist_ok=True)
        self.release()
        patience = self.peer.response_s * (1 if self.unresponsive else 4)
        try:
            self.wait_for(lambda: not self.pending(), timeout=patience)
        finally:
            for fd in self.held.values():
                os.close(fd)
            self.held.clear()


def _shape_accepted(call: Call) -> None:
    """Raise ShapeRefused when ``call`` was refused for the arguments the suite chose."""
    reason = rpc_errors.shape_refusal("tools.execute", {"toolName": call.tool}, call.answer)
    if reason is not None:
        raise ShapeRefused(reason)


@contextlib.contextmanager
def rig(
    command: HostcoreCommand,
    recorder: Recorder,
    response_s: float,
    work: Path,
    name: str,
    judges: tuple[str, ...] = (),
) -> Iterator[Rig | None]:
    """A handshaken generation (None when the handshake failed: other
    scenarios report that). ``judges``: the requirements the scenario is
    for, untested with the reason when it stops on a refused tool shape."""
    recorder.context = StepContext(scenario=name)
    data_dir = Path(tempfile.mkdtemp(prefix="scenario-", dir=work))
    project = Path(tempfile.mkdtemp(prefix="project-", dir=work))
    (project / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    with HostcorePeer(command, data_dir, recorder, response_s=response_s) as peer:
        made = Rig(peer, project, data_dir)
        made.started_dir.mkdir()
        made.gate_dir.mkdir()
        try:
            response = peer.call("app.handshake", handshake_params())
            if response is None or "result" not in response:
                yield None
                return
            made.pin = shell_pin(peer)
            yield made
        except ShapeRefused as exc:
            recorder.untestable(str(exc), *judges)
        except (HostcoreGone, Unresponsive):
            return
        finally:
            with contextlib.suppress(HostcoreGone, Unresponsive, ShapeRefused):
                if peer.alive:
                    made.finish()


def shell_pin(peer: HostcorePeer) -> dict[str, str]:
    """The effective shell's id and dialect from commandShells.list (§5.2)."""
    response = peer.call("commandShells.list", {})
    result = response.get("result") if response else None
    effective = result.get("effective") if isinstance(result, dict) else None
    if isinstance(effective, dict) and isinstance(effective.get("id"), str):
        return {"expectedCommandShellId": effective["id"], "expectedCommandShellDialect": str(effective.get("dialect"))}
    return {"expectedCommandShellId": "bash", "expectedCommandShellDialect": "posix"}


# -- judges: one per requirement, fed what a scenario observed ------------------------------


def _code(response: dict[str, Any] | None) -> tuple[object, str | None]:
    error = response.get("error") if isinstance(response, dict) else None
    return (error.get("code") if isinstance(error, dict) else None), rpc_errors.error_code_of(error)


@rule("RPC-8-notifications-after-handshake")
def no_notification_before_handshake(notifications: list[dict[str, Any]]) -> Iterator[Violation]:
    for note in notifications[:1]:
        method = note.get("method")
        yield Violation("RPC-8-notifications-after-handshake", f"notification {method!r} came before the handshake")


@rule("RPC-3-a2a-withdrawn")
def a2a_refused(method: str, response: dict[str, Any] | None) -> Iterator[Violation]:
    if response is not None and "error" not in response:
        yield Violation("RPC-3-a2a-withdrawn", f"{method} got a result; version 11 has no a2a.* methods")


@rule("RPC-3-no-a2a-notifications")
def no_a2a_notifications(notifications: list[dict[str, Any]]) -> Iterator[Violation]:
    for note in notifications:
        if note.get("method") in rpc_limits.WITHDRAWN_NOTIFICATIONS:
            yield Violation("RPC-3-no-a2a-notifications", f"the host-core sent a {note['method']} notification")
            return


@rule("RPC-3-cumulative-versions")
def method_present(method: str, response: dict[str, Any] | None) -> Iterator[Violation]:
    if _code(response)[0] == rpc_errors.UNKNOWN_METHOD:
        yield Violation("RPC-3-cumulative-versions", f"{method} is unknown (-32601); an earlier version requires it")


@rule("RPC-2-line-separators-are-payload")
def separators_answered(response: dict[str, Any] | None, stray: dict[str, Any] | None) -> Iterator[Violation]:
    if response is None:
        yield Violation("RPC-2-line-separators-are-payload", "a request with U+2028/U+2029 in a string got no answer")
    elif _code(response)[0] == rpc_errors.PARSE_ERROR or stray is not None:
        yield Violation("RPC-2-line-separators-are-payload", "U+2028/U+2029 inside a string ended a frame")


@rule("RPC-2-utf8-split-reads")
def title_intact(sent: str, listed: object) -> Iterator[Violation]:
    if listed != sent:
        yield Violation(
            "RPC-2-utf8-split-reads", f"a title written one byte per write came back as {listed!r}; sent {sent!r}"
        )


@rule("RPC-2-invalid-json-diagnostic")
def diagnostic_without_text(answers: list[dict[str, Any]], stderr: str) -> Iterator[Violation]:
    for answer in answers:
        if SECRET in json.dumps(answer):
            yield Violation("RPC-2-invalid-json-diagnostic", "the answer to an invalid line repeats its text")
    if SECRET in stderr:
        yield Violation("RPC-2-invalid-json-diagnostic", "the stderr diagnostic of an invalid line repeats its text")


@rule("RPC-2-final-unterminated-frame")
def final_frame_answered(response: dict[str, Any] | None) -> Iterator[Violation]:
    """A normal answer or HOST_SHUTTING_DOWN (draining after EOF) passes."""
    if response is None:
        yield Violation("RPC-2-final-unterminated-frame", "a last request without LF before EOF got no answer")
    elif "error" in response and _code(response)[1] != "HOST_SHUTTING_DOWN":
        code, error_code = _code(response)
        yield Violation(
            "RPC-2-final-unterminated-frame",
            f"a last request without LF was refused with {code} {error_code}; expected an answer",
        )


@rule("RPC-7-session-not-found")
def session_not_found(method: str, response: dict[str, Any] | None, *, fallback: bool) -> Iterator[Violation]:
    """``fallback``: a result is a legacy fallback §5 allows (tools.execute)."""
    if response is None:
        return
    if "error" not in response:
        if not fallback:
            yield Violation("RPC-7-session-not-found", f"{method} for a session that does not exist got a result")
        return
    error_code = _code(response)[1]
    if error_code not in ("SESSION_NOT_FOUND", "NOT_FOUND", "PLAN_SESSION_NOT_FOUND"):
        yield Violation(
            "RPC-7-session-not-found",
            f"{method} for a missing session got errorCode {error_code}; expected SESSION_NOT_FOUND or NOT_FOUND",
        )


@rule("RPC-2.1-bash-session-budget")
def bash_per_session(running: dict[str, int]) -> Iterator[Violation]:
    for count in running.values():
        if count > rpc_limits.MAX_BASH_PER_SESSION:
            yield Violation(
                "RPC-2.1-bash-session-budget",
                f"{count} Bash commands of one session ran at once; limit {rpc_limits.MAX_BASH_PER_SESSION}",
            )
            return


@rule("RPC-2.1-bash-global-budget")
def bash_global(running: int, reported: object) -> Iterator[Violation]:
    for seen, how in ((running, "ran"), (reported, "were admitted (app.health shell)")):
        if isinstance(seen, int) and seen > rpc_limits.MAX_BASH_GLOBAL:
            yield Violation(
                "RPC-2.1-bash-global-budget", f"{seen} Bash commands {how} at once; limit {rpc_limits.MAX_BASH_GLOBAL}"
            )
            return


@rule("RPC-2.1-session-budget")
def session_total(running: int) -> Iterator[Violation]:
    if running > rpc_limits.MAX_TOOLS_PER_SESSION:
        yield Violation(
            "RPC-2.1-session-budget",
            f"{running} tool calls of one session ran at once; limit {rpc_limits.MAX_TOOLS_PER_SESSION}",
        )


@rule("RPC-2.1-read-budget")
def reads_global(running: int) -> Iterator[Violation]:
    if running > rpc_limits.MAX_READ_TOOLS:
        yield Violation("RPC-2.1-read-budget", f"{running} Read calls ran at once; limit {rpc_limits.MAX_READ_TOOLS}")


@rule("RPC-2.1-mutation-session-budget")
def mutations_per_session(reported: object) -> Iterator[Violation]:
    """``reported``: toolBudget.mutations while only one session has Write calls."""
    if isinstance(reported, int) and reported > rpc_limits.MAX_MUTATING_PER_SESSION:
        yield Violation(
            "RPC-2.1-mutation-session-budget",
            f"toolBudget.mutations is {reported} with Writes of one session only; "
            f"limit {rpc_limits.MAX_MUTATING_PER_SESSION} per session",
        )


@rule("RPC-2.1-mutation-global-budget")
def mutations_global(reported: object) -> Iterator[Violation]:
    if isinstance(reported, int) and reported > rpc_limits.MAX_MUTATING_GLOBAL:
        yield Violation(
            "RPC-2.1-mutation-global-budget",
            f"toolBudget.mutations is {reported}; limit {rpc_limits.MAX_MUTATING_GLOBAL}",
        )


@rule("RPC-8-mutations-fifo")
def mutations_in_order(content: object) -> Iterator[Violation]:
    """``content``: the file two queued Writes of one session wrote "2" then "3" to."""
    if content != "3":
        yield Violation(
            "RPC-8-mutations-fifo", f"after Writes of '2' then '3' in one session the file holds {content!r}"
        )


@rule("RPC-8-sessions-independent")
def sessions_apart(read: dict[str, Any] | None, wanted: str, *, leaked_grant: bool) -> Iterator[Violation]:
    """``read``: session B's Read of notes.txt while A's Bash call runs;
    ``leaked_grant``: B's Write ran unprompted after A got an allow-session
    grant for Write (A's own Write was prompted)."""
    if read is None:
        yield Violation("RPC-8-sessions-independent", "a Read of one session got no answer while another ran Bash")
        return
    result = read.get("result")
    if isinstance(result, dict) and result.get("ok") is True and wanted not in json.dumps(result.get("content")):
        yield Violation("RPC-8-sessions-independent", "a Read of notes.txt did not come from its session's own project")
    if leaked_grant:
        yield Violation(
            "RPC-8-sessions-independent", "an allow-session grant for Write in one session let another session write"
        )


@rule("RPC-8-fork-snapshot")
def source_unchanged(before: object, after: object) -> Iterator[Violation]:
    if before != after:
        yield Violation("RPC-8-fork-snapshot", "session.fork changed the source session's transcript")


@rule("RPC-8-message-fork-isolated")
def ids_remapped(source: list[dict[str, Any]], child: list[dict[str, Any]]) -> Iterator[Violation]:
    kept = {m.get("id") for m in source} & {m.get("id") for m in child}
    if kept - {None}:
        yield Violation("RPC-8-message-fork-isolated", "a message-scoped fork kept the source's message ids")
    if TOOL_CALL_ID in json.dumps(child):
        yield Violation("RPC-8-message-fork-isolated", "a message-scoped fork kept the source's tool-call id")


@rule("RPC-8-one-approval-per-session")
def one_pending(pending: object) -> Iterator[Violation]:
    """``pending``: plans.pending's result after two SubmitPlan calls of one turn."""
    plans = pending.get("plans") if isinstance(pending, dict) else None
    if isinstance(plans, list) and len(plans) > 1:
        yield Violation("RPC-8-one-approval-per-session", f"one session has {len(plans)} pending approvals")


@rule("RPC-8-late-response-fails-closed")
def late_refused(response: dict[str, Any] | None, mode: object) -> Iterator[Violation]:
    """``response``: plans.resolve approving a proposal left pending across a
    restart; ``mode``: the session's mode read afterwards."""
    result = response.get("result") if response else None
    if isinstance(result, dict) and result.get("ok") is not False:
        yield Violation("RPC-8-late-response-fails-closed", "approving a proposal interrupted by a restart succeeded")
    if mode is not None and mode != "plan":
        yield Violation(
            "RPC-8-late-response-fails-closed", f"after an interrupted Plan approval the session's mode is {mode!r}"
        )


@rule("RPC-8-concurrent-requests")
def answered_meanwhile(response: dict[str, Any] | None) -> Iterator[Violation]:
    if response is None:
        yield Violation("RPC-8-concurrent-requests", "app.health got no answer while one Bash call was running")


@rule("RPC-2.1-queued-holds-nothing")
def read_not_held(answer: dict[str, Any] | None, queued: int) -> Iterator[Violation]:
    if answer is None:
        yield Violation(
            "RPC-2.1-queued-holds-nothing",
            f"a Read in a session with 2 Bash running and {queued} queued was not answered; "
            "queued calls hold no capacity",
        )


@rule("RPC-2.1-no-head-of-line-blocking")
def not_blocked_behind(waiting: list[str]) -> Iterator[Violation]:
    if waiting:
        yield Violation(
            "RPC-2.1-no-head-of-line-blocking",
            f"{len(waiting)} Bash call(s) of another session stayed queued behind a session-blocked call "
            "although shell slots were free",
        )


@rule("RPC-2.1-health-counters")
def counters_match(budget: dict[str, Any] | None, *, running: int, waiting: int) -> Iterator[Violation]:
    """``running``: blockers whose markers exist; ``waiting``: the rest of the
    unanswered ones (every unanswered call is a Bash blocker). ``active``
    counts admitted reservations only, so never more than run (§2.1: queued
    calls are counted apart)."""
    if budget is None:
        return
    if budget.get("shell") != running or budget.get("queued") != waiting:
        yield Violation(
            "RPC-2.1-health-counters",
            f"toolBudget says shell {budget.get('shell')!r}, queued {budget.get('queued')!r}; "
            f"{running} Bash commands run and {waiting} wait",
        )
    elif isinstance(budget.get("active"), int) and budget["active"] > running:
        yield Violation(
            "RPC-2.1-health-counters",
            f"toolBudget says active {budget['active']!r} with {running} Bash commands admitted and {waiting} waiting; "
            "active counts admitted reservations only",
        )


@rule("RPC-2.1-oldest-runnable-first")
def oldest_first(started: Call, runnable: list[Call]) -> Iterator[Violation]:
    """``runnable``: calls that were queued and runnable when the slot freed."""
    older = [c for c in runnable if c.order < started.order]
    if older:
        yield Violation(
            "RPC-2.1-oldest-runnable-first",
            f"queued Bash call {started.name} was admitted before {older[0].name}, older and runnable",
        )


@rule("RPC-2.1-waiter-release")
def waiter_released(answer: dict[str, Any] | None, queued: object, expected: int) -> Iterator[Violation]:
    if answer is None:
        yield Violation("RPC-2.1-waiter-release", "a queued call aborted with tools.abort was never settled")
    elif isinstance(queued, int) and queued > expected:
        yield Violation(
            "RPC-2.1-waiter-release", f"after aborting a queued call toolBudget.queued is {queued}; {expected} wait"
        )


@rule("RPC-2.1-permission-no-slot")
def prompts_hold_nothing(budget: dict[str, Any] | None, started: int, wanted: int) -> Iterator[Violation]:
    if budget is not None and (budget.get("shell") or budget.get("active")):
        yield Violation(
            "RPC-2.1-permission-no-slot",
            f"with only permission prompts open toolBudget shows active {budget.get('active')!r}",
        )
    elif started < wanted:
        yield Violation(
            "RPC-2.1-permission-no-slot",
            f"only {started} of {wanted} Bash commands started while other calls waited on permission prompts",
        )


@rule("RPC-2.1-overloaded-retryable")
def overload_named(refusal: dict[str, Any]) -> Iterator[Violation]:
    if not rpc_errors.is_overload(refusal):
        yield Violation(
            "RPC-2.1-overloaded-retryable",
            "a call refused at capacity lacks HOST_OVERLOADED",
        )


@rule("RPC-7-overloaded-code")
def overload_error_code(refusal: dict[str, Any]) -> Iterator[Violation]:
    """As a JSON-RPC error, the refusal is -32029; as a tool result (§2.1) it passes."""
    code, _ = _code(refusal)
    if "error" in refusal and code != rpc_errors.HOST_OVERLOADED_CODE:
        yield Violation(
            "RPC-7-overloaded-code",
            f"a call refused at capacity got {code}; expected {rpc_errors.HOST_OVERLOADED_CODE}",
        )


@rule("RPC-2.1-dispatcher-cap")
def dispatcher_bounded(outstanding: int, *, limit: int = OVERLOAD_LIMIT) -> Iterator[Violation]:
    """``outstanding``: calls taken on before the first refusal; ``limit``:
    the most that any reading lets the calls of the scenario be taken on."""
    if outstanding <= limit:
        return
    yield Violation(
        "RPC-2.1-dispatcher-cap", f"{outstanding} calls were taken on at once and none refused; limit {limit}"
    )


@rule("RPC-2.1-queue-bound")
def queue_bounded(outstanding: int) -> Iterator[Violation]:
    if outstanding <= OVERLOAD_LIMIT:
        return
    yield Violation(
        "RPC-2.1-queue-bound",
        f"{outstanding} tool calls wait or run at once and none was refused; no reading allows more than "
        f"{rpc_limits.MAX_ACTIVE_REQUESTS} + {rpc_limits.MAX_TOOL_EXECUTIONS} + {rpc_limits.MAX_QUEUED_TOOLS}",
    )


@rule("RPC-8-abort-idempotent")
def abort_settled(first: dict[str, Any] | None, second: dict[str, Any] | None, survivor: bool) -> Iterator[Violation]:
    for nth, answer in (("first", first), ("second", second)):
        if answer is None or "error" in answer:
            yield Violation("RPC-8-abort-idempotent", f"the {nth} tools.abort of one call got no result")
            return
    if survivor:
        yield Violation("RPC-8-abort-idempotent", "a child process of the aborted Bash command was still running")


@rule("RPC-8-tools-output-order")
def output_in_order(notes: list[dict[str, Any]], sid: str, call: str) -> Iterator[Violation]:
    streams: dict[str, str] = {}
    for note in notes:
        params = note.get("params")
        if not isinstance(params, dict) or params.get("toolCallId") != call:
            continue
        if params.get("sessionId") != sid:
            yield Violation("RPC-8-tools-output-order", "a tools.output chunk names another session")
            return
        stream, chunk = params.get("stream"), params.get("chunk")
        if isinstance(stream, str) and isinstance(chunk, str):
            streams[stream] = streams.get(stream, "") + chunk
    wanted = {"stdout": "o1\no2\n", "stderr": "e1\ne2\n"}
    if streams and streams != wanted:
        yield Violation(
            "RPC-8-tools-output-order", f"tools.output streams carried {streams!r}; the command wrote {wanted!r}"
        )


# -- scenarios ---------------------------------------------------------------------------------

Scenario = Callable[[HostcoreCommand, Recorder, float, Path], None]


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


def budget_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 with Bash blockers in three sessions (budgets 2 per session, 4 in all):
    session A sends a1..a4 (two run, two wait on A's budget), then a Read in A
    (queued calls hold nothing), then B sends b1..b3 (b1, b2 run past A's
    waiters), then C sends c1 (waits: 4 run). Then a1 ends (a3 must be next),
    c1 is aborted while it waits, and everything is released."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-budgets",
        (
            "RPC-2.1-bash-session-budget",
            "RPC-2.1-bash-global-budget",
            "RPC-2.1-no-head-of-line-blocking",
            "RPC-2.1-queued-holds-nothing",
            "RPC-2.1-health-counters",
            "RPC-2.1-oldest-runnable-first",
            "RPC-2.1-waiter-release",
        ),
    ) as r:
        if r is None:
            return
        a, b, c = r.session(), r.session(), r.session()
        if a is None or b is None or c is None:
            return
        # Each call is sent once the one before is admitted or queued: two
        # requests in flight at once may enter admission in either order.
        for name in ("a1", "a2", "a3", "a4"):
            _taken_blocker(r, a, name)
        read = r.execute(a, "read-a", "Read", {"path": "notes.txt"})
        for name in ("b1", "b2", "b3"):
            _taken_blocker(r, b, name)
        _taken_blocker(r, c, "c1")
        expected = {"a1", "a2", "b1", "b2"}
        settled = r.wait_for(lambda: expected <= r.started() and read.answer is not None)
        _judge_running(r)
        held_back: list[str] = []
        if settled:
            r.peer.add(not_blocked_behind([]))  # b1 and b2 ran past A's waiting calls
        else:
            free = rpc_limits.MAX_BASH_GLOBAL - len(r.started())
            held_back = [n for n in ("b1", "b2") if n not in r.started()] if free > 0 else []
            r.peer.add(not_blocked_behind(held_back))
        if not held_back:
            # Behind a head-of-line blocking queue the Read waits for another reason.
            r.peer.add(read_not_held(read.answer, 2))
        r.wait_for(functools.partial(_counted, r))
        running = len(r.started())
        r.peer.add(counters_match(r.health(), running=running, waiting=len(r.pending()) - running))
        _oldest_first(r, a, "a1")
        _abort_waiter(r, "c1")
        r.finish()
        r.wait_for(lambda: (r.health() or {"active": 0}).get("active") == 0)
        r.peer.add(counters_match(r.health(), running=0, waiting=0))


def reads_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 with Reads of named pipes (a Read runs from opening its pipe until
    the harness closes the write end): session S runs 2 Bash blockers and 3
    Reads (4 per session: one Read waits); then 9 Reads in three more
    sessions (8 reads in all: S's 2 and 6 more run)."""
    with rig(
        command, recorder, response_s, work, "admission-reads", ("RPC-2.1-read-budget", "RPC-2.1-session-budget")
    ) as r:
        if r is None:
            return
        s = r.session()
        if s is None:
            return
        for name in ("s1", "s2"):
            _taken_blocker(r, s, name)
        for name in ("r1", "r2", "r3"):
            r.reader(s, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: len(_session_running(r, s)) >= 4 and _queued(r) >= 1 or len(_session_running(r, s)) > 4)
        r.peer.add(session_total(len(_session_running(r, s))))
        others = [r.session() for _ in range(3)]
        if None in others:
            return
        for i, sid in enumerate(others):
            for j in range(4 if i < 2 else 1):
                r.reader(str(sid), f"t{i}{j}")
                if not r.wait_for(functools.partial(_taken, r, f"t{i}{j}")):
                    r.counters_ok = False
        r.wait_for(lambda: len(r.reading()) >= rpc_limits.MAX_READ_TOOLS and _queued(r) >= 3 or len(r.reading()) > 8)
        r.peer.add(reads_global(len(r.reading())))
        r.peer.add(session_total(len(_session_running(r, s))))


def mutations_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 and §8.1 with Writes to named pipes (they block until released):
    two in session M (one may run), then one in each of two more sessions (two
    may run in all), judged on toolBudget.mutations. Then, in a fresh
    session, a blocked Write followed by Writes of "2" and "3" to one file:
    released, they must land in arrival order."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-mutations",
        ("RPC-2.1-mutation-session-budget", "RPC-2.1-mutation-global-budget", "RPC-8-mutations-fifo"),
    ) as r:
        if r is None:
            return
        m = r.session()
        if m is None:
            return
        for name in ("w1", "w2"):
            r.writer(m, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: _mutations(r) >= 1 and _queued(r) >= 1 or _mutations(r) > 1)
        r.peer.add(mutations_per_session(_mutations(r)))
        for name in ("w3", "w4"):
            sid = r.session()
            if sid is None:
                return
            r.writer(sid, name)
            if not r.wait_for(functools.partial(_taken, r, name)):
                r.counters_ok = False
        r.wait_for(lambda: _mutations(r) >= 2 and _queued(r) >= 2 or _mutations(r) > 2)
        r.peer.add(mutations_global(_mutations(r)))
        r.release()
        if not r.wait_for(lambda: not r.pending(), timeout=2 * r.peer.response_s):
            return
        n = r.session()
        if n is None:
            return
        r.writer(n, "x1")
        if not r.wait_for(lambda: _mutations(r) >= 1) or not r.counters_ok:
            # Order is judged only when the counters showed "2" queued before
            # "3" was sent: a dispatcher that admits on worker threads may let
            # two back-to-back requests reach its queue either way round.
            return
        for name, text in (("x2", "2"), ("x3", "3")):
            r.execute(n, name, "Write", {"path": "order.txt", "content": text})
            if not r.wait_for(functools.partial(_taken, r, name)):
                return
        r.release("x1")
        if r.wait_for(lambda: not r.pending()):
            target = r.project / "order.txt"
            r.peer.add(mutations_in_order(target.read_text(encoding="utf-8") if target.exists() else None))


def _mutations(r: Rig) -> int:
    budget = r.health()
    count = budget.get("mutations") if budget else None
    return count if isinstance(count, int) else 0


def sessions_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.2: session A (project P) gets an allow-session grant for Write and
    runs a Bash blocker; meanwhile session B (project Q) reads its own
    notes.txt and writes, which needs its own prompt."""
    with rig(command, recorder, response_s, work, "sessions-independent", ("RPC-8-sessions-independent",)) as r:
        if r is None:
            return
        other = Path(tempfile.mkdtemp(prefix="project-", dir=work))
        (other / "notes.txt").write_text(f"{OTHER_TEXT}\n", encoding="utf-8")
        a, b = r.session(), r.session(other)
        if a is None or b is None:
            return
        first = r.execute(a, "write-a", "Write", {"path": "a.txt", "content": "a"})
        if not r.wait_for(lambda: first.answer is not None):
            return
        asked_a = _prompted(r, "write-a")
        r.blocker(a, "a-runs")
        if not r.wait_for(lambda: "a-runs" in r.started()):
            return
        read = r.execute(b, "read-b", "Read", {"path": "notes.txt"})
        r.wait_for(lambda: read.answer is not None)
        second = r.execute(b, "write-b", "Write", {"path": "b.txt", "content": "b"})
        r.wait_for(lambda: second.answer is not None)
        leaked = asked_a and not _prompted(r, "write-b") and (second.answer or {}).get("result", {}).get("ok") is True
        r.peer.add(sessions_apart(read.answer, OTHER_TEXT, leaked_grant=leaked))


def _prompted(r: Rig, call: str) -> bool:
    for note in r.peer.notifications:
        params = note.get("params")
        if note.get("method") == "permissions.request" and isinstance(params, dict):
            if params.get("toolCallId") == call:
                return True
    return False


def fork_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.8 / §8.9: a fork leaves the source transcript as it was; a fork
    through a message gives the copied messages and tool calls new ids."""
    with rig(command, recorder, response_s, work, "fork") as r:
        if r is None:
            return
        sid = r.session()
        if sid is None:
            return
        tool_call = {"type": "toolCall", "id": TOOL_CALL_ID, "name": "Read", "arguments": {"path": "notes.txt"}}
        for mid, role, content in (
            ("fm-1", "user", [{"type": "text", "text": "read the notes"}]),
            ("fm-2", "assistant", [tool_call]),
            ("fm-3", "user", [{"type": "text", "text": "thanks"}]),
        ):
            if (
                r.peer.call(
                    "session.appendMessage",
                    {"sessionId": sid, "message": {"id": mid, "role": role, "content": content}},
                )
                is None
            ):
                return
        before = _messages(r, sid)
        if before is None:
            return
        whole = r.peer.call("session.fork", {"sessionId": sid})
        if whole is None or "result" not in whole:
            return  # whether forks succeed is judged by the §4/§10 checks
        r.peer.add(source_unchanged(before, _messages(r, sid)))
        part = r.peer.call("session.fork", {"sessionId": sid, "throughMessageId": "fm-2"})
        result = part.get("result") if part else None
        session = result.get("session") if isinstance(result, dict) else None
        child = session.get("id") if isinstance(session, dict) else None
        if isinstance(child, str):
            copied = _messages(r, child)
            if copied:
                r.peer.add(ids_remapped(before, copied))


def approval_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.6: a Plan-mode session's running turn submits two plans; at most one
    approval may be pending afterwards (the second is refused or replaces it)."""
    with rig(command, recorder, response_s, work, "one-approval") as r:
        if r is None:
            return
        sid = r.session()
        begun = r.peer.call("session.beginTurn", {"sessionId": sid}) if sid is not None else None
        turn = (begun.get("result") or {}).get("turnId") if begun else None
        if not isinstance(sid, str) or not isinstance(turn, str):
            return
        # Into Plan mode the documented way (§4 plans.enter from the running turn).
        entered = r.peer.call("plans.enter", {"sessionId": sid, "turnId": turn, "toolCallId": "enter", "kind": "plan"})
        if entered is None or "result" not in entered:
            return  # whether plans.enter works is judged by the state machine
        for n in (1, 2):
            args = {"title": f"Plan {n}", "markdown": f"# Plan {n}\n\nSteps.\n", "question": "Proceed?"}
            call = r.execute(sid, f"submit-{n}", "SubmitPlan", args, turnId=turn)
            if not r.wait_for(functools.partial(_answered, call)):
                return
        pending = r.peer.call("plans.pending", {"sessionId": sid})
        if pending is not None and "result" in pending:
            r.peer.add(one_pending(pending["result"]))
            _late_answer(r, command, pending["result"])


def _late_answer(r: Rig, command: HostcoreCommand, pending: Any) -> None:
    """§8.7: the pending proposal, approved after a restart, fails closed."""
    plans = pending.get("plans") if isinstance(pending, dict) else None
    first = plans[0] if isinstance(plans, list) and plans and isinstance(plans[0], dict) else None
    if first is None:
        return
    r.finish()
    r.peer.stdin_eof(r.peer.response_s)
    r.peer.close()
    with HostcorePeer(command, r.data_dir, r.peer.recorder, response_s=r.peer.response_s) as peer:
        response = peer.call("app.handshake", handshake_params())
        if response is None or "result" not in response:
            return
        params = {
            "proposalId": first.get("id", first.get("proposalId")),
            "sessionId": first.get("sessionId"),
            "turnId": first.get("turnId"),
            "toolCallId": first.get("toolCallId"),
            "version": first.get("version"),
            "action": "approve",
            "targetPermissionMode": "auto",
        }
        answer = peer.call("plans.resolve", params)
        got = peer.call("session.get", {"sessionId": first.get("sessionId")})
        result = got.get("result") if got else None
        session = result.get("session") if isinstance(result, dict) else None
        peer.add(late_refused(answer, session.get("mode") if isinstance(session, dict) else None))


def _answered(call: Call) -> bool:
    return call.answer is not None


def _messages(r: Rig, sid: str) -> list[dict[str, Any]] | None:
    response = r.peer.call("session.get", {"sessionId": sid})
    result = response.get("result") if response else None
    messages = result.get("messages") if isinstance(result, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else None


def _session_running(r: Rig, sid: str) -> set[str]:
    return {n for n in r.running() if r.calls[n].session == sid} | r.reading(sid)


def _queued(r: Rig) -> int:
    """toolBudget.queued (a large number when it cannot be read: then the wait ends on the other condition)."""
    budget = r.health() if r.counters_ok else None
    queued = budget.get("queued") if budget else None
    return queued if isinstance(queued, int) else 1 << 30


def _taken_blocker(r: Rig, sid: str, name: str) -> None:
    r.blocker(sid, name)
    if not r.wait_for(functools.partial(_taken, r, name)):
        r.counters_ok = False


def _judge_running(r: Rig) -> None:
    started = r.running()
    per_session: dict[str, int] = {}
    for name in started:
        call = r.calls.get(name)
        if call is not None:
            per_session[call.session] = per_session.get(call.session, 0) + 1
    budget = r.health()
    r.peer.add(bash_per_session(per_session))
    r.peer.add(bash_global(len(started), budget.get("shell") if budget else None))


def _counted(r: Rig) -> bool:
    """Whether the counters agree with the markers (a correct host gets there)."""
    budget = r.health() if r.counters_ok else None
    if budget is None:
        return True
    running = len(r.started())
    active = budget.get("active")
    counted = budget.get("shell") == running and budget.get("queued") == len(r.pending()) - running
    return counted and (not isinstance(active, int) or active <= running)


def _oldest_first(r: Rig, session: str, ending: str) -> None:
    before = r.started()
    queued = sorted((c for c in r.calls.values() if c.name not in before and c.answer is None), key=lambda c: c.order)
    runnable = [c for c in queued if _runnable(r, c, before - {ending})]
    r.release(ending)
    if not r.wait_for(lambda: r.calls[ending].answer is not None and bool(r.started() - before)):
        return
    _judge_running(r)
    newcomers = sorted((r.calls[n] for n in r.started() - before if n in r.calls), key=lambda c: c.order)
    if newcomers:
        r.peer.add(oldest_first(newcomers[0], runnable))


def _runnable(r: Rig, call: Call, running: set[str]) -> bool:
    """By the spec's numbers, with ``running`` the calls still running."""
    mine = sum(1 for n in running if r.calls[n].session == call.session)
    return len(running) < rpc_limits.MAX_BASH_GLOBAL and mine < rpc_limits.MAX_BASH_PER_SESSION


def _abort_waiter(r: Rig, name: str) -> None:
    call = r.calls[name]
    if name in r.started() or call.answer is not None:
        return  # not waiting: nothing to judge
    still = sum(1 for c in r.pending() if c.name not in r.started() and c.name != name)
    r.peer.call("tools.abort", {"sessionId": call.session, "toolCallId": name, "toolName": "Bash"})
    r.wait_for(lambda: call.answer is not None)
    queued = None
    if call.answer is not None:
        r.wait_for(lambda: (r.health() or {"queued": still}).get("queued") == still)
        queued = (r.health() or {}).get("queued")
    r.peer.add(waiter_released(call.answer, queued, still))


def prompt_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1: six Bash calls wait on permission prompts in three "ask" sessions;
    the counters show nothing admitted, and four Bash calls of two other
    sessions all start."""
    with rig(command, recorder, response_s, work, "admission-prompts", ("RPC-2.1-permission-no-slot",)) as r:
        if r is None:
            return
        asking = [r.session() for _ in range(3)]
        if None in asking:
            return
        for i, sid in enumerate(asking):
            for j in range(2):
                r.leave_open.add(f"p{i}{j}")
                r.execute(str(sid), f"p{i}{j}", "Bash", {"command": "true"}, **r.pin)

        def prompted() -> int:
            return sum(1 for n in r.peer.notifications if n.get("method") == "permissions.request")

        if not r.wait_for(lambda: prompted() >= 6):
            r.health()  # still answering? (Unresponsive ends the scenario)
            # This host-core asks no permission for Bash in the default mode: nothing to judge.
            recorder.untestable("no Bash call raised a permissions.request", "RPC-2.1-permission-no-slot")
            return
        budget = r.health()
        free = [r.session(), r.session()]
        if None in free:
            return
        names = [f"f{i}{j}" for i in range(2) for j in range(2)]
        for name in names:
            r.blocker(str(free[int(name[1])]), name)
        r.wait_for(lambda: set(names) <= r.started())
        r.peer.add(prompts_hold_nothing(budget, len(set(names) & r.started()), len(names)))
        _deny_open(r)


def _deny_open(r: Rig) -> None:
    """Deny the prompts the scenario left open."""
    for note in r.peer.notifications:
        params = note.get("params") if note.get("method") == "permissions.request" else None
        if isinstance(params, dict) and params.get("toolCallId") in r.leave_open:
            r.peer.send("permissions.resolve", {"requestId": params.get("requestId"), "decision": "deny"})


def dispatcher_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1: 33 Reads of a path outside their sessions' roots, each left
    waiting on its permission prompt (§5: ask mode prompts for them). Such a
    call holds no execution slot and is not queued for admission either (a
    queued call waits at most 30 s; a prompt has no deadline, §6), so the
    dispatcher's 32 is all that bounds them: one of the 33 must be refused.
    The sessions are created first, so a dispatcher that counts every request
    (app.health, permissions.resolve, ...) refuses only Reads. The prompts are
    never answered: stdin EOF ends them (§6, host shutdown)."""
    judges = ("RPC-2.1-dispatcher-cap",)
    with rig(command, recorder, response_s, work, "admission-dispatcher", judges) as r:
        if r is None:
            return
        outside = Path(tempfile.mkdtemp(prefix="outside-", dir=work)) / "secret.txt"
        outside.write_text("outside\n", encoding="utf-8")
        sessions = [r.session() for _ in range(rpc_limits.MAX_ACTIVE_REQUESTS + 1)]
        if None in sessions:
            return
        for n, sid in enumerate(sessions):
            name = f"d{n}"
            r.leave_open.add(name)
            call = r.execute(str(sid), name, "Read", {"path": str(outside)})
            if not r.wait_for(functools.partial(_prompted_or_answered, r, call)):
                reason = "a Read of a path outside its session's root raised no permission prompt and got no answer"
                recorder.untestable(reason, *judges)
                break
            if call.answer is not None:
                _dispatcher_refusal(r, call.answer, n)
                break
        else:
            r.peer.add(dispatcher_bounded(len(sessions), limit=rpc_limits.MAX_ACTIVE_REQUESTS))
        r.peer.stdin_eof(response_s)


def _prompted_or_answered(r: Rig, call: Call) -> bool:
    return call.answer is not None or _prompted(r, call.name)


def _dispatcher_refusal(r: Rig, answer: dict[str, Any], taken: int) -> None:
    if not rpc_errors.is_overload(answer):
        reason = "a Read of a path outside its session's root was answered without a permission prompt"
        r.peer.recorder.untestable(reason, "RPC-2.1-dispatcher-cap")
        return
    r.peer.add(overload_named(answer))
    r.peer.add(overload_error_code(answer))
    r.peer.add(dispatcher_bounded(taken, limit=rpc_limits.MAX_ACTIVE_REQUESTS))


def overload_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§2.1 / §7: Bash blockers, two per session, until one is refused. The
    refusal must say HOST_OVERLOADED. Whether queued calls count against the
    dispatcher's 32 is not said, so a refusal is demanded only past
    32 + 16 + 64 outstanding calls (every reading's bound exceeded)."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "admission-overload",
        ("RPC-2.1-queue-bound", "RPC-2.1-overloaded-retryable", "RPC-7-overloaded-code"),
    ) as r:
        if r is None:
            return
        # Every session first: a dispatcher that counts every request refuses
        # session.create too once the calls fill it.
        sessions = [r.session() for _ in range(OVERLOAD_LIMIT // 2 + 1)]
        if None in sessions:
            return
        for n in range(OVERLOAD_LIMIT + 1):
            _taken_blocker(r, str(sessions[n // 2]), f"o{n}")
            refused = next((c for c in r.calls.values() if c.answer is not None), None)
            if refused is not None and refused.answer is not None:
                r.peer.add(overload_named(refused.answer))
                r.peer.add(overload_error_code(refused.answer))
                r.peer.add(dispatcher_bounded(n))
                r.peer.add(queue_bounded(n))
                return
        r.peer.add(dispatcher_bounded(OVERLOAD_LIMIT + 1))
        r.peer.add(queue_bounded(OVERLOAD_LIMIT + 1))


def _taken(r: Rig, name: str) -> bool:
    """The call started, or the counters show it admitted or waiting."""
    if not r.counters_ok or name in r.started() or name in r.held or r.calls[name].answer is not None:
        return True
    budget = r.health()
    if budget is None:
        return True
    held = budget.get("active", 0) if isinstance(budget.get("active"), int) else 0
    waiting = budget.get("queued", 0) if isinstance(budget.get("queued"), int) else 0
    return held + waiting >= len(r.pending())


def abort_output_scenario(command: HostcoreCommand, recorder: Recorder, response_s: float, work: Path) -> None:
    """§8.4: stdout and stderr chunks of one command in order; §8.5: abort twice,
    and the command's child process ends too."""
    with rig(
        command,
        recorder,
        response_s,
        work,
        "abort-and-output",
        ("RPC-8-tools-output-order", "RPC-8-abort-idempotent", "RPC-8-concurrent-requests"),
    ) as r:
        if r is None:
            return
        sid = r.session()
        if sid is None:
            return
        script = "printf 'o1\\n'; printf 'e1\\n' >&2; printf 'o2\\n'; printf 'e2\\n' >&2"
        out = r.execute(sid, "output", "Bash", {"command": script}, **r.pin)
        r.wait_for(lambda: out.answer is not None)
        if out.answer is not None and (out.answer.get("result") or {}).get("ok") is True:
            notes = [n for n in r.peer.notifications if n.get("method") == "tools.output"]
            r.peer.add(output_in_order(notes, sid, "output"))
        # §7: a changed shell pin is a tool outcome (judged in Rig.collect).
        dialect = next(d for d in rpc_limits.SHELL_DIALECTS if d != r.pin.get("expectedCommandShellDialect"))
        changed = r.execute(
            sid, "pin", "Bash", {"command": "true"}, **(r.pin | {"expectedCommandShellDialect": dialect})
        )
        r.wait_for(lambda: changed.answer is not None)
        pid_file = r.project / ".octet-child"
        marker = shlex.quote(str(r.started_dir / "tree"))
        command_line = f"sleep 300 & echo $! > {shlex.quote(str(pid_file))}; touch {marker}; wait"
        tree = r.execute(sid, "tree", "Bash", {"command": command_line}, **r.pin)
        if not r.wait_for(lambda: "tree" in r.started() and pid_file.exists()):
            return
        child = int(pid_file.read_text(encoding="utf-8").strip() or 0)
        meanwhile = r.peer.call("app.health")  # the tree's Bash call runs meanwhile
        r.peer.add(answered_meanwhile(meanwhile))
        if meanwhile is None:
            r.unresponsive = True
            return  # one request at a time: the aborts would go unanswered too
        params = {"sessionId": sid, "toolCallId": "tree", "toolName": "Bash"}
        first = r.peer.call("tools.abort", params)
        second = r.peer.call("tools.abort", params)
        r.wait_for(lambda: tree.answer is not None and not _alive(child))
        r.peer.add(abort_settled(first, second, _alive(child)))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    ("transport scenario", transport_scenario),
    ("final frame scenario", final_frame_scenario),
    ("admission budgets scenario", budget_scenario),
    ("admission prompts scenario", prompt_scenario),
    ("admission dispatcher scenario", dispatcher_scenario),
    ("admission reads scenario", reads_scenario),
    ("admission mutations scenario", mutations_scenario),
    ("sessions scenario", sessions_scenario),
    ("fork scenario", fork_scenario),
    ("one approval scenario", approval_scenario),
    ("admission overload scenario", overload_scenario),
    ("abort and output scenario", abort_output_scenario),
)
