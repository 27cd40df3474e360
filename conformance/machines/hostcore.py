"""``HostcoreMachine``: Hypothesis drives a host-core through the harness-as-client.

One example is one fresh data directory. The machine handshakes, then runs a
generated sequence of session, turn, notification and transport steps; a
``restart`` step ends the process (stdin EOF, then its group is killed) and
starts a new one on the same directory, after which everything the model
holds must still be there. Rules never assert: each answer is judged by the
sans-IO validators and recorded, so exploration goes on past a failure. The
model depends only on what the harness sent and on ids the host-core gave
back, never on timing (Hypothesis would call that flaky).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.evidence import Recorder, StepContext
from conformance.machines.hostcore_bash import BashScenario
from conformance.peers.rpc_client import HostcoreCommand, HostcoreGone, HostcorePeer, handshake_params
from conformance.protocol import rpc_errors, rpc_handshake, rpc_limits, rpc_results, rpc_session
from conformance.protocol.rpc_answers import id_key
from conformance.protocol.violations import Violation
from conformance.scenarios.hostcore_handshake import UNKNOWN_METHOD

# Titles for session.rename (§4: trimmed, then 1..80 code points). No
# whitespace or format characters but the plain space: which of those a
# "trim" removes differs between languages (U+FEFF, U+180E), and the document
# does not say.
TITLES = st.one_of(
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cn")),
        min_size=1,
        max_size=90,
    ),
    st.sampled_from(["", "   ", "x" * 80, "x" * 81, " padded title ", " " + "y" * 80 + " "]),
)
MESSAGE_IDS = st.sampled_from([f"msg-{i}" for i in range(4)])
# Which earlier session or notification a step uses: an index taken modulo
# how many the model holds, so a step can be called directly with a number.
PICKS = st.integers(min_value=0, max_value=63)


@dataclass
class Model:
    """What the host-core must hold, from what the harness did."""

    sessions: list[str] = field(default_factory=list)
    messages: dict[str, set[str]] = field(default_factory=dict)  # session -> message ids appended
    notifications: dict[str, bool] = field(default_factory=dict)  # notification id -> read


class HostcoreMachine(BashScenario, RuleBasedStateMachine):
    """Set ``command``, ``recorder``, ``response_s`` and ``work_root`` on a
    subclass (see :func:`machine_for`)."""

    command: ClassVar[HostcoreCommand]
    recorder: ClassVar[Recorder]
    response_s: ClassVar[float]
    work_root: ClassVar[Path]
    example_counter: ClassVar[list[int]]

    def __init__(self) -> None:
        super().__init__()
        self.example_counter[0] += 1
        self.data_dir = Path(tempfile.mkdtemp(prefix="hostcore-", dir=self.work_root))
        self.model = Model()
        self.step = 0
        self.ready = False
        self.turns = itertools.count(1)
        self.peer = self._spawn()

    # -- helpers -------------------------------------------------------------------
    def _spawn(self) -> HostcorePeer:
        return HostcorePeer(self.command, self.data_dir, self.recorder, response_s=self.response_s)

    def _guard(self) -> bool:
        self.recorder.context = StepContext(example=self.example_counter[0], step=self.step)
        self.peer.step = self.step
        self.step += 1
        return self.ready and self.peer.alive

    def _call(self, method: str, params: object = None) -> dict[str, Any] | None:
        """The response, or None: unanswered (recorded; the generation ends),
        or refused for params the document leaves to the suite (nothing to
        judge: ``RPC-4-<method>`` is untested with that reason)."""
        try:
            rid = self.peer.send(method, params)
        except HostcoreGone as exc:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"{method} got no response: {exc}"))
            self.ready = False
            return None
        response = self._await(method, rid)
        refused = rpc_errors.shape_refusal(method, params, response)
        if refused is not None:
            self.recorder.untestable(refused, f"RPC-4-{method}")
            return None
        return response

    def _await(self, method: str, rid: object) -> dict[str, Any] | None:
        try:
            response = self.peer.await_answer(rid)
        except HostcoreGone as exc:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"{method} got no response: {exc}"))
            self.ready = False
            return None
        if response is None:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"{method} got no response within {self.response_s:g}s"))
            self.ready = False
        return response

    def _result(self, method: str, params: object = None) -> Any:
        """The result of a call expected to succeed (None otherwise)."""
        response = self._call(method, params)
        return response.get("result") if response is not None else None

    def _handshake(self) -> None:
        try:
            rid = self.peer.send("app.handshake", handshake_params())
        except HostcoreGone as exc:
            self.peer.violate(Violation("RPC-2-jsonrpc-2.0", f"app.handshake got no response: {exc}"))
            return
        response = self._await("app.handshake", rid)
        if response is None:
            return
        if "result" not in response:
            self.peer.violate(Violation("RPC-10-01-handshake", "app.handshake with version 11 was refused"))
            return
        self.peer.add(rpc_handshake.handshake_completed(response, exact_id=id_key(rid) not in self.peer.loose))
        self.ready = True

    # -- rules -----------------------------------------------------------------------
    @initialize()
    def start(self) -> None:
        self._guard()  # names the step; nothing runs before the handshake
        self._handshake()

    @rule()
    def create_session(self) -> None:
        # No optional params: §4 names no title for session.create, and the
        # defaults (thinkingLevel off, fastMode false) are what is judged.
        if not self._guard():
            return
        params: dict[str, Any] = {}
        response = self._call("session.create", params)
        if response is None or "error" in response:
            if response is not None:
                self.peer.violate(Violation("RPC-4-session.create", "session.create with no params was refused"))
            return
        self.peer.add(rpc_session.session_create_result(response["result"], params=params))
        sid = rpc_session.session_id(response["result"])
        if sid is not None:
            self.model.sessions.append(sid)
            self.model.messages[sid] = set()

    @rule()
    def list_sessions(self) -> None:
        if not self._guard():
            return
        result = self._result("session.list", {})
        if result is None:
            return
        self.peer.add(rpc_session.session_list_result(result))
        listed = {rpc_session.session_id(s) for s in (result.get("sessions") or []) if isinstance(s, dict)}
        for sid in self.model.sessions:
            if sid not in listed:
                self.peer.violate(Violation("RPC-4-session.list", f"session.list lacks session {sid}, created earlier"))

    def _session(self, pick: int) -> str:
        return self.model.sessions[pick % len(self.model.sessions)]

    @rule(pick=PICKS, title=TITLES)
    def rename(self, pick: int, title: str) -> None:
        if not self._guard() or not self.model.sessions:
            return
        sid = self._session(pick)
        response = self._call("session.rename", {"id": sid, "title": title})  # §4 names the session "id" here
        if response is not None:
            self.peer.add(rpc_session.rename_result(response, title=title))

    @rule(pick=PICKS, message_id=MESSAGE_IDS)
    def append_message(self, pick: int, message_id: str) -> None:
        if not self._guard() or not self.model.sessions:
            return
        sid = self._session(pick)
        message = {"id": message_id, "role": "user", "content": [{"type": "text", "text": "conformance"}]}
        response = self._call("session.appendMessage", {"sessionId": sid, "message": message})
        if response is None:
            return  # unanswered (reported) or its params refused (untested)
        result = response.get("result")
        if not isinstance(result, dict):
            self.peer.violate(
                Violation("RPC-4-session.appendMessage", "session.appendMessage did not answer with an object result")
            )
            return
        self.recorder.exercise("RPC-4-session.appendMessage")
        replay = message_id in self.model.messages[sid]
        if replay and result.get("appended") is not False:
            # A replay must change nothing; a host saying it appended again did.
            shown = "absent" if "appended" not in result else repr(result["appended"])
            self.peer.violate(
                Violation("RPC-4-session.appendMessage", f"replaying message {message_id} answered appended {shown}")
            )
        self.model.messages[sid].add(message_id)

    @rule(pick=PICKS, status=st.sampled_from(rpc_limits.END_TURN_STATUSES), notify=st.sampled_from([None, False]))
    def turn(self, pick: int, status: str, notify: bool | None) -> None:
        """A turn begun and ended, then ended again (a repeated terminal update)."""
        if not self._guard() or not self.model.sessions:
            return
        sid = self._session(pick)
        turn_id = self._begin(sid)
        if turn_id is None:
            return
        params: dict[str, Any] = {"turnId": turn_id, "status": status}  # §4a SessionEndTurnParams
        if notify is not None:
            params["createNotification"] = notify
        self._end_turn(params, was_running=True)
        self._end_turn(params, was_running=False)  # a repeated terminal update creates nothing

    @rule(pick=PICKS)
    def busy_turn(self, pick: int) -> None:
        """A second beginTurn while one runs: refused or not, any error it
        gets goes through the §7 rules; then the turn ends."""
        if not self._guard() or not self.model.sessions:
            return
        sid = self._session(pick)
        turn_id = self._begin(sid)
        if turn_id is None:
            return
        second = self._call("session.beginTurn", {"sessionId": sid})
        if second is not None and "result" in second:
            self.peer.add(rpc_session.begin_turn_result(second["result"]))
        for tid in [t for t in (turn_id, _turn_id(second)) if t is not None]:
            self._end_turn({"turnId": tid, "status": "aborted"}, was_running=True)

    def _begin(self, sid: str) -> str | None:
        begun = self._result("session.beginTurn", {"sessionId": sid})
        if begun is not None:
            self.peer.add(rpc_session.begin_turn_result(begun))
        return begun.get("turnId") if isinstance(begun, dict) and isinstance(begun.get("turnId"), str) else None

    def _end_turn(self, params: dict[str, Any], *, was_running: bool) -> None:
        result = self._result("session.endTurn", params)
        if result is None:
            return
        self.peer.add(rpc_session.end_turn_result(result))
        rule_args = {"was_running": was_running, "status": params["status"]}
        self.peer.add(rpc_session.end_turn_notification(result, **rule_args, **_notify(params)))
        self.recorder.exercise("RPC-10-06-endturn-one-notification")
        note = result.get("notification") if isinstance(result, dict) else None
        if note is not None:  # RPC-4-notification-shape
            self.peer.add(rpc_session.notification_shape(note))
        self._no_created_event()
        if isinstance(note, dict) and isinstance(note.get("id"), str):
            if note["id"] in self.model.notifications:
                self.peer.violate(
                    Violation("RPC-10-06-endturn-one-notification", f"endTurn returned notification {note['id']} again")
                )
            self.model.notifications[note["id"]] = False

    def _no_created_event(self) -> None:
        """RPC-4-notification-no-created-event: the record travels only in
        the session.endTurn result, never as a server notification."""
        self.recorder.exercise("RPC-4-notification-no-created-event")
        if any(n.get("method") == "notification.created" for n in self.peer.notifications):
            message = "host-core sent a notification.created notification; the endTurn result carries the record"
            self.peer.violate(Violation("RPC-4-notification-no-created-event", message))

    @rule()
    def list_notifications(self) -> None:
        if not self._guard():
            return
        result = self._result("notification.list", {})
        if result is None:
            return
        self.peer.add(rpc_session.notification_list_result(result))
        self.recorder.exercise("RPC-10-07-notification-round-trip")
        if not isinstance(result, dict) or not isinstance(result.get("notifications"), list):
            return
        listed = {n.get("id") for n in result["notifications"] if isinstance(n, dict)}
        expected = len(self.model.notifications) <= rpc_limits.MAX_NOTIFICATIONS
        missing = sorted(n for n in self.model.notifications if n not in listed)
        if expected and missing:
            self.peer.violate(
                Violation("RPC-10-07-notification-round-trip", f"notification.list lacks notification {missing[0]}")
            )
        unread = sum(not read for read in self.model.notifications.values())
        if expected and result.get("unreadCount") != unread:
            got = result.get("unreadCount")
            self.peer.violate(
                Violation(
                    "RPC-10-07-notification-round-trip", f"unreadCount is {got!r}; {unread} notification(s) are unread"
                )
            )

    @rule(pick=PICKS)
    def mark_read(self, pick: int) -> None:
        if not self._guard() or not self.model.notifications:
            return
        known = sorted(self.model.notifications)
        nid = known[pick % len(known)]
        for _ in range(2):  # marking a read row again still succeeds
            result = self._result("notification.markRead", {"id": nid})
            if result is None:
                return
            self.peer.add(rpc_session.mark_read_result(result, known_id=True))
        self.model.notifications[nid] = True

    @rule()
    def mark_all_read(self) -> None:
        """RPC-4-notification.markAllRead: {ok: true}; every row read after it."""
        if not self._guard():
            return
        result = self._result("notification.markAllRead", {})
        if result is None:
            return
        self.peer.add(rpc_session.mark_all_read_result(result))
        for nid in self.model.notifications:
            self.model.notifications[nid] = True

    @rule()
    def clear_notifications(self) -> None:
        """RPC-4-notification.clear: {ok: true} and an empty inbox after it
        (cleared turns never notify again: the repeated endTurn of ``turn``)."""
        if not self._guard():
            return
        result = self._result("notification.clear", {})
        if result is None:
            return
        self.peer.add(rpc_session.clear_result(result))
        self.model.notifications.clear()
        listed = self._result("notification.list", {})
        rows = listed.get("notifications") if isinstance(listed, dict) else None
        self.recorder.exercise("RPC-4-notification.clear")
        if isinstance(rows, list) and rows:
            message = f"notification.list shows {len(rows)} row(s) right after notification.clear"
            self.peer.violate(Violation("RPC-4-notification.clear", message))

    @rule()
    def health(self) -> None:
        if not self._guard():
            return
        response = self._call("app.health")
        if response is not None:
            self.peer.add(rpc_results.health_ok(response))
            if "result" in response:
                self.peer.add(rpc_results.health_result(response["result"]))
        version = self._call("app.getVersion", {})
        if version is not None:
            # RPC-4-app.getVersion: a result once the handshake is done.
            if "result" not in version:
                self.peer.violate(Violation("RPC-4-app.getVersion", "app.getVersion after the handshake was refused"))
            else:
                self.peer.add(rpc_results.version_result(version["result"]))

    @rule()
    def unknown_method(self) -> None:
        if not self._guard():
            return
        response = self._call(UNKNOWN_METHOD, {})
        if response is not None:
            self.peer.add(rpc_errors.refused_unknown_method(response))

    @rule(params=st.sampled_from([[], [{"sessionId": "x"}]]))
    def non_object_params(self, params: object) -> None:
        if not self._guard():
            return
        response = self._call("session.list", params)
        if response is not None:
            self.peer.add(rpc_errors.refused_invalid_params(response))

    @rule()
    def restart(self) -> None:
        """End this host-core and start another on the same data directory."""
        if not self._guard():
            return
        self._restart()

    def _restart(self) -> None:
        self.peer.stdin_eof(self.response_s)
        self.peer.close()
        self.peer = self._spawn()
        self.ready = False
        self._handshake()

    def teardown(self) -> None:
        self.peer.close()


def _turn_id(response: dict[str, Any] | None) -> str | None:
    result = response.get("result") if response is not None else None
    turn_id = result.get("turnId") if isinstance(result, dict) else None
    return turn_id if isinstance(turn_id, str) else None


def _sessions_walk(m: HostcoreMachine) -> None:
    m.create_session()
    m.create_session()
    m.list_sessions()
    m.rename(0, "Renamed by the harness")
    m.rename(0, "   ")
    m.append_message(0, "msg-0")
    m.append_message(0, "msg-0")
    m.turn(0, "completed", None)
    m.turn(1, "error", None)
    m.turn(0, "aborted", None)
    m.turn(1, "completed", False)
    m.busy_turn(0)
    m.list_notifications()
    m.mark_read(0)
    m.list_notifications()
    m.health()
    m.mark_all_read()
    m.list_notifications()
    m.turn(0, "completed", None)
    m.clear_notifications()
    m.turn(1, "error", None)
    m.list_notifications()
    m.unknown_method()
    m.non_object_params([])
    m.restart()
    m.list_sessions()
    m.list_notifications()


def _tools_walk(m: HostcoreMachine) -> None:
    m.workspace_switch()
    m.file_tools()
    for escape, answer in (("absolute", "deny"), ("dotdot", "abort"), ("symlink", "allow-once")):
        m.outside_path(escape, answer)
    m.denied_write("absolute", "deny")
    m.denied_write("symlink", "abort")


def _plans_walk(m: HostcoreMachine) -> None:
    m.plan_mode("plan")
    m.plan_mode("goal")
    m.submit_and_resolve("plan")
    m.submit_and_resolve("goal")


def _interrupts_walk(m: HostcoreMachine) -> None:
    m.plan_interrupted("goal", "abort")
    m.plan_interrupted("plan", "restart-pending")
    m.plan_interrupted("goal", "restart-queued")


def _forks_walk(m: HostcoreMachine) -> None:
    m.fork()
    m.todos()


# The scripted walk in parts, so a test of one faulty host-core can walk
# only the part its fault is about (a whole walk takes several seconds).
WALKS: dict[str, Callable[[HostcoreMachine], None]] = {
    "sessions": _sessions_walk,
    "tools": _tools_walk,
    "plans": _plans_walk,
    "interrupts": _interrupts_walk,
    "forks": _forks_walk,
    "bash": lambda m: m.bash_scenario(),
    "bash-timeouts": lambda m: m.bash_timeouts_scenario(),
}


def scripted_example(machine: type[HostcoreMachine], walks: Sequence[str] | None = None) -> None:
    """One fixed walk through every rule (or the named parts of it), run
    before the generated ones so each rule is exercised whatever the
    profile and seed draw."""
    m = machine()
    try:
        m.start()
        for name in walks if walks is not None else WALKS:
            WALKS[name](m)
    finally:
        m.teardown()


def _notify(params: dict[str, Any]) -> dict[str, Any]:
    return {"create_notification": params["createNotification"]} if "createNotification" in params else {}


def machine_for(
    command: HostcoreCommand, recorder: Recorder, *, response_s: float, work_root: Path
) -> type[HostcoreMachine]:
    """A machine class bound to one target (Hypothesis instantiates it per example)."""
    bound = {"command": command, "recorder": recorder, "response_s": response_s, "work_root": work_root}
    return type("BoundHostcoreMachine", (HostcoreMachine,), {**bound, "example_counter": [0]})
