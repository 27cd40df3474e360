"""The harness playing host to an extension under test.

It owns the clock the sans-IO session lacks: it writes frames, pumps what
the extension writes through :class:`HostSession`, answers the extension's
child requests, and turns missed deadlines into findings. Every wait here is
bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.evidence import MAX_KEPT_STRAYS, Recorder
from conformance.manifest import OCTET_VERSION, Manifest
from conformance.protocol import jsonrpc, limits
from conformance.protocol.ext_requests import (
    artifact_bytes,
    artifact_limits,
    artifact_publish,
    inline_bytes,
    over_generation_budget,
    single_writer,
    tools_register,
    tools_unregister,
)
from conformance.protocol.ext_session import (
    UNANSWERED_BREAKS,
    HostRequest,
    HostSession,
    Intent,
    LifecycleInput,
    LocalProtocolError,
)
from conformance.protocol.ext_types import ManifestInfo, Offer
from conformance.protocol.framing import Frame, encode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Violation
from conformance.transport.process import TargetProcess, WriteTimeout, sanitized_env
from conformance.transport.schedule import Outgoing, Schedule
from conformance.transport.target import Received, StdoutClosed, Target
from conformance.transport.trace import TRACE_FORMAT, Trace

from . import wave1_backend

WRITE_TIMEOUT_S = 5.0
# Once its stdout closed, how long an extension may take to exit before the
# harness stops waiting to learn its exit status (it is killed either way).
EXIT_STATUS_WAIT_S = 0.5
# How long replay waits for target frames that a legal race may never have
# produced, once the target owes no answer (see ExtensionHostPeer.hold).
HOLD_GRACE_S = 0.5


@dataclass
class Patience:
    """How long the harness waits. Generous by default: a loaded CI machine
    must never turn into a verdict; only documented deadlines (the 2 s grace
    and shutdown stage timeout) are judged strictly."""

    response_s: float = 15.0
    cancel_grace_s: float = limits.CANCEL_GRACE_S
    shutdown_s: float = limits.SHUTDOWN_TIMEOUT_S
    eof_exit_s: float = limits.EOF_EXIT_BOUND_S
    startup_s: float = 30.0  # spawning under load is the slowest thing a target does

    @classmethod
    def of(cls, response_s: float) -> Patience:
        """Patience for a given response deadline (startup gets twice as long)."""
        return cls(response_s=response_s, startup_s=2 * response_s)


INPUT_ANSWER = "octet conformance"  # §2.7: well inside the 256 KiB answer bound
SECRET_VALUE = "conformance-not-a-real-secret"  # §2.10: well inside the 64 KiB value bound
SECRET_UNAVAILABLE = -32004  # §2.10: no value, or the broker failed
# §2.9: the scripted classifier's decisions, in turn: every outcome the text
# allows (approval tokens need the approvals feature, never offered).
POLICY_DECISIONS = ("deny", "allow", "ask")
# §2.8: the environment variable naming the scratch directory a path source is under.
SCRATCH_VARIABLE = "OCTET_EXTENSION_SCRATCH"


@dataclass
class ChildPolicy:
    """How the harness answers the extension's requests (deterministic):
    one method per request it hosts, each named in ``CHILD_ANSWERS``."""

    confirm: bool = True
    answered: int = 0
    # §2.7: alternate a typed answer and null (the frontend cancelled), so
    # an extension meets both outcomes the document allows.
    input_given: bool = True
    # §2.10: alternate a value and the -32004 "unavailable" refusal.
    secret_given: bool = True
    # §2.19-§2.24: the scripted Wave-1 host (conformance/peers/wave1_backend.py).
    wave1: wave1_backend.Wave1State = field(default_factory=wave1_backend.Wave1State)
    policy_turn: int = 0  # §2.9: index into POLICY_DECISIONS
    artifacts_issued: int = 0  # §2.8: numbers the opaque artifact ids
    # §2.11/§2.12: the catalog as answered so far in this generation (answers
    # are written later, in bursts, so the session's epoch may lag behind).
    revision: int = 0
    catalog: frozenset[str] | None = None

    def confirmation(self, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
        """§2.2: alternate yes and no, so both paths get exercised."""
        self.answered += 1
        reply = jsonrpc.result(msg.id, {"confirmed": self.confirm})
        self.confirm = not self.confirm
        return reply

    def input(self, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
        value = INPUT_ANSWER if self.input_given else None
        self.input_given = not self.input_given
        return jsonrpc.result(msg.id, {"value": value})

    def secret(self, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
        """§2.10 from a scripted broker: an undeclared name is invalid
        params; a declared one alternately yields a value and the generic
        unavailable refusal (a broker with no value), both allowed outcomes."""
        name = msg.params.get("name") if isinstance(msg.params, dict) else None
        if not isinstance(name, str) or name not in manifest.secret_names():
            return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, "secret name is not in the manifest allowlist")
        given, self.secret_given = self.secret_given, not self.secret_given
        if given:
            return jsonrpc.result(msg.id, {"value": SECRET_VALUE})
        return jsonrpc.error(msg.id, SECRET_UNAVAILABLE, "secret is unavailable")


PeerAnswer = Callable[["ExtensionHostPeer", jsonrpc.Request], dict[str, Any]]
PolicyAnswer = Callable[[ChildPolicy, jsonrpc.Request, ManifestInfo], dict[str, Any]]


def scripted(answer: PolicyAnswer) -> PeerAnswer:
    """A backend that needs only the scripted state and the manifest."""

    def run(peer: ExtensionHostPeer, msg: jsonrpc.Request) -> dict[str, Any]:
        assert peer.session is not None
        return answer(peer.children, msg, peer.session.manifest)

    return run


@dataclass(frozen=True)
class ChildAnswer:
    """How the harness answers one request the extension may send: the
    backend that writes the reply, and the feature that must have been
    negotiated first (None: none)."""

    answer: PeerAnswer
    feature: str | None = None
    # The feature need only have been offered (§2.20: shortcut/register is
    # written inside initialize, before negotiation ends).
    when_offered: bool = False


Launcher = Callable[[Manifest], Target]


def spawn_process(manifest: Manifest) -> Target:
    """Start the manifest's command as a hostile process (the normal way)."""
    env = brokered_environment(manifest)
    if manifest.api_version != "0.1":
        scratch = scratch_dir(manifest)
        scratch.mkdir(parents=True, exist_ok=True)
        env[SCRATCH_VARIABLE] = str(scratch)
    return TargetProcess(
        manifest.command,
        cwd=manifest.folder,
        env=sanitized_env(env),
        max_frame_bytes=limits.MAX_FRAME_BYTES,
    )


def scratch_dir(manifest: Manifest) -> Path:
    """The scratch directory of §2.8 for targets of ``manifest`` started by
    this harness process (the peer reads path sources there and removes it)."""
    digest = hashlib.sha256(str(manifest.path).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return scratch_root(os.getpid()) / digest


def scratch_root(pid: int) -> Path:
    """The folder holding the scratch directories of harness process ``pid``
    (a worker of a --jobs run that was killed cannot remove its own:
    runner/parallel.py removes it)."""
    return Path(tempfile.gettempdir()) / f"octet-conformance-scratch-{pid}"


def read_scratch(root: Path, relative: str) -> tuple[bytes | None, str]:
    """The bytes of a regular file at ``relative`` under ``root``, read
    without following a symlink anywhere on the way, or (None, why not)."""
    base = os.path.realpath(root)
    target = os.path.normpath(os.path.join(base, relative))
    if os.path.commonpath([base, target]) != base or target == base:
        return None, f"{relative!r} is not inside the scratch directory"
    if os.path.realpath(target) != target:
        return None, f"{relative!r} goes through a symbolic link"
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return None, f"{relative!r} cannot be opened ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"{relative!r} is not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limits.ARTIFACT_MAX_BYTES + 1), ""
    finally:
        os.close(fd)


class TargetGone(RuntimeError):
    """The extension's stdout closed or it stopped reading; the generation is over."""


@dataclass
class ExtensionHostPeer:
    manifest: Manifest
    recorder: Recorder
    patience: Patience = field(default_factory=Patience)
    children: ChildPolicy = field(default_factory=ChildPolicy)
    _held_answers: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    launcher: Launcher = spawn_process
    process: Target | None = None
    session: HostSession | None = None
    stdout_closed: bool = False
    # Set once a request goes unanswered past the deadline: the generation is
    # treated as hung, so later steps do not each wait out the deadline again.
    unresponsive: bool = False
    _next_id: int = 1
    _cancel_sent_at: dict[Any, float] = field(default_factory=dict)
    _menu_sent_at: dict[Any, float] = field(default_factory=dict)  # §1.6b: menu/collect requests written
    trace: Trace | None = None
    step: int = 0  # the machine's logical step, stamped on trace entries
    _meta: dict[str, Any] = field(default_factory=dict)  # what the next write means
    _violated_before: frozenset[str] = frozenset()
    _recording: bool = True
    frames_observed: int = 0
    _exit: tuple[int | None] | None = None  # this generation's exit status, once looked for

    # -- life -------------------------------------------------------------------
    def start(self, offer: Offer) -> None:
        self.session = HostSession(self.manifest.info, offer)
        if self.recorder.hung_initializations:
            # One generation already sat on initialize past the deadline; more
            # would only repeat that verdict at the cost of a deadline each.
            raise TargetGone("skipped: an earlier generation never answered initialize")
        self.trace = Trace(trace_header(self.manifest, offer, self.recorder))
        self.recorder.watch(self.trace)  # what is judged from now on is marked in this generation's trace
        self._violated_before = frozenset(self.recorder.violations)
        self._spawn()

    def _spawn(self) -> None:
        self.stdout_closed = False
        self.unresponsive = False
        self._exit = None
        self._held_answers.clear()  # the previous generation's requests die with it
        self.children.wave1 = wave1_backend.Wave1State()  # §2.20: registrations live for one generation
        self.children.revision, self.children.catalog = 0, None  # §2.12: epochs restart at 0
        self.process = self.launcher(self.manifest)

    def reload(self, mode: str) -> bool:
        """§5 reload under load: the current generation drains (API 0.2+: its
        in-flight requests are cancelled and must each settle once) and is shut
        down -- or is killed outright -- then a fresh process is initialized
        with the same offer. Request ids keep counting, so anything the new
        generation says about an id of the old one is caught by its session.
        True when the new generation answered initialize."""
        assert self.session is not None and self.process is not None
        if self.trace is not None and self._recording:
            self.trace.action("reload", step=self.step, mode=mode)
        recording, self._recording = self._recording, False  # replay performs the whole reload
        try:
            if mode == "shutdown":
                self._drain_generation()
            self._end_process()
            offer = self.session.offer
            self.session = HostSession(self.manifest.info, offer)
            self._cancel_sent_at.clear()
            self._menu_sent_at.clear()
            self._spawn()
            return self.initialize(offer)
        finally:
            self._recording = recording

    def _drain_generation(self) -> None:
        assert self.session is not None
        if not self.alive:
            return
        pending = [r.id for r in self.session.unanswered()]
        if pending and self.session.negotiated is not None and self.session.negotiated.has("request_cancellation"):
            self.write_raw(b"".join(self.cancel_frame(rid, "reload") for rid in pending))
        if pending:
            self.settle(pending)
        self.shutdown()

    def close(self) -> None:
        if self.process is not None:
            self._end_process()
        scratch = scratch_dir(self.manifest)
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):  # the per-process parent, once no other manifest uses it
            scratch.parent.rmdir()
        self._save_traces()

    def _end_process(self) -> None:
        """Kill the generation's whole process tree; descendants that had left
        its process group are noted as strays (a run detail, not a verdict:
        the protocol documents say nothing about a target's descendants)."""
        assert self.process is not None
        self.process.kill_group()
        for stray in getattr(self.process, "strays", ()):
            if len(self.recorder.strays) < MAX_KEPT_STRAYS:  # bounded, whatever the target forks
                self.recorder.strays.append(f"{self.recorder.context}: {stray}")

    def _save_traces(self) -> None:
        """Keep this generation's trace for every requirement it was the first
        to violate (later generations add nothing new for it)."""
        self.recorder.unwatch(self.trace)
        if self.trace is None or self.recorder.trace_dir is None:
            self.trace = None
            return
        for requirement in sorted(set(self.recorder.violations) - self._violated_before):
            if requirement in self.recorder.traces:
                continue
            path = self.recorder.trace_dir / f"{requirement}.jsonl"
            message = self.recorder.violations[requirement][0].violation.message
            self.trace.dump(path, requirement=requirement, message=message)
            self.recorder.traces[requirement] = path
        self.trace = None

    def next_step(self) -> None:
        """A scenario's next part is a step of its own (in its trace and in its
        violations' context), so shrinking can drop it as it drops a machine's rule."""
        self.step += 1
        self.recorder.context = replace(self.recorder.context, step=self.step)

    def now(self) -> float:
        """The target's clock (virtual for a simulated target)."""
        return self.process.now() if self.process is not None else time.monotonic()

    @property
    def alive(self) -> bool:
        return self.process is not None and not self.stdout_closed and not self.unresponsive and self.process.running()

    # -- writing ------------------------------------------------------------------
    def reserve_ids(self, highest: int) -> None:
        """Number the harness's own requests above ``highest`` from now on
        (replay: above every id the trace used)."""
        self._next_id = max(self._next_id, highest + 1)

    def new_id(self) -> int:
        rid = self._next_id
        self._next_id += 1
        return rid

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(encode_frame(dumps(message)))

    def write_raw(self, data: bytes, *, recipe: dict[str, Any] | None = None) -> None:
        assert self.process is not None
        meta, self._meta = self._meta, {}
        if self.trace is not None and self._recording:
            self.trace.wrote(data, step=self.step, meta=meta, recipe=recipe)
        try:
            self.process.write(data, timeout=WRITE_TIMEOUT_S)
        except (BrokenPipeError, WriteTimeout, OSError) as exc:
            raise TargetGone(f"writing to the extension failed: {exc}") from exc

    def request_frame(self, method: str, params: Any, *, rid: Any = None, intent: Intent = None) -> tuple[Any, bytes]:
        """Register a request and return its bytes, for callers that write
        several frames in one write (request + cancel, split writes)."""
        out = self.prepare_request(method, params, rid=rid, intent=intent)
        self.register(out)
        return out.id, out.data

    def prepare_request(self, method: str, params: Any, *, rid: Any = None, intent: Intent = None) -> Outgoing:
        """A request frame with a fresh id, registered only when written."""
        rid = self.new_id() if rid is None else rid
        data = encode_frame(dumps(jsonrpc.request(rid, method, params)))
        return Outgoing(data, "request", rid, method, params, intent)

    def prepare_cancel(self, rid: Any, reason: str = "user") -> Outgoing:
        data = encode_frame(dumps(jsonrpc.notification("$/cancelRequest", {"id": rid, "reason": reason})))
        return Outgoing(data, "cancel", rid)

    def register(self, out: Outgoing) -> None:
        """Tell the session (and the trace) what a frame about to be written means."""
        assert self.session is not None
        if out.kind == "request":
            self.session.sent_request(out.id, str(out.method), out.params, intent=out.intent)
            if out.method == "menu/collect" and out.intent is None and isinstance(out.id, int | str):
                self._menu_sent_at[out.id] = self.now()
            meta = request_meta(out.id, str(out.method), out.params, out.intent, len(out.data))
            self._meta.setdefault("requests", []).append(meta)
        elif out.kind == "cancel":
            self.register_cancel(out.id)
            self.recorder.exercise("JSONRPC-4.1-no-reply-to-notification")  # any reply to it would be seen
        elif out.kind == "unreadable":
            self.mark_unreadable()

    def perform(self, schedule: Schedule) -> list[Any]:
        """Write ``schedule``: each write held as it says, its frames
        registered as they go out, split where it says. Returns the ids of
        the requests it wrote."""
        base = self.frames_observed
        for write in schedule.writes:
            self.hold(frames=base + write.after, awaits=write.awaits)
            for out in write.frames:
                self.register(out)
            for piece in write.pieces():
                self.write_raw(piece)
        return [f.id for f in schedule.frames if f.kind == "request"]

    def hold(self, *, frames: int = 0, awaits: Iterable[Any] = (), exact: bool = False) -> bool:
        """Delay the next write until the ``awaits`` requests are answered,
        then until ``frames`` target frames of this generation were observed.
        While the target still owes answers it is bound to write again, so the
        count is waited for as long as a response may take; once it owes
        nothing, a legal race may have produced fewer frames than the hold
        expects: then the count is waited for briefly if ``exact`` (replay
        re-creating a recorded order), not at all otherwise. True when both
        came (replay says which relation it could not re-create)."""
        assert self.session is not None
        awaited = [rid for rid in awaits if self.session.request(rid) is not None]
        missing = self.settle(awaited) if awaited and self.alive else []
        # The target owes answers while this waits: as long as one may take.
        deadline = self.now() + self.recorder.deadline_s("JSONRPC-5-every-request-answered", self.patience.response_s)
        while self.frames_observed < frames and self.alive and self.session.unanswered():
            remaining = deadline - self.now()
            if remaining <= 0:
                break
            self.pump(min(remaining, 0.5))
        if exact:
            deadline = self.now() + HOLD_GRACE_S
            while self.frames_observed < frames and not self.stdout_closed:
                remaining = deadline - self.now()
                if remaining <= 0 or not self.pump(remaining):
                    break
        return not missing and self.frames_observed >= frames

    def request(self, method: str, params: Any, *, rid: Any = None, intent: Intent = None) -> Any:
        rid, frame = self.request_frame(method, params, rid=rid, intent=intent)
        self.write_raw(frame)
        return rid

    def cancel_frame(self, rid: Any, reason: str = "user") -> bytes:
        out = self.prepare_cancel(rid, reason)
        self.register(out)
        return out.data

    def register_cancel(self, rid: Any) -> None:
        assert self.session is not None
        self.session.sent_cancel(rid)
        self._cancel_sent_at.setdefault(rid, self.now())
        self._meta.setdefault("cancels", []).append(rid)

    def mark_unreadable(self) -> None:
        """The next write holds a frame whose id cannot be read."""
        assert self.session is not None
        self.session.sent_unreadable()
        self._meta["unreadable"] = self._meta.get("unreadable", 0) + 1

    def notify(self, method: str, params: Any) -> None:
        self.recorder.exercise("JSONRPC-4.1-no-reply-to-notification")
        self.send(jsonrpc.notification(method, params))

    def cancel(self, rid: Any, reason: str = "user") -> None:
        self.write_raw(self.cancel_frame(rid, reason))

    # -- reading ------------------------------------------------------------------
    def pump(self, timeout: float) -> bool:
        """Handle at most one event, waiting up to ``timeout``. False on timeout."""
        assert self.process is not None and self.session is not None
        item = self.process.next_event(0.0 if self._held_answers else timeout)
        if item is None and self._held_answers:
            self._answer_held()  # the extension paused: answer its requests now
            item = self.process.next_event(timeout)
        if item is None:
            return False
        if isinstance(item, StdoutClosed):
            self.stdout_closed = True
            return True
        self._handle(item)
        return True

    def _handle(self, item: Received) -> None:
        assert self.session is not None and self.process is not None
        decoded = jsonrpc.decode_event(item.event)
        self.frames_observed += 1
        msg = decoded.message
        if self.trace is not None:
            payload = item.event.payload if isinstance(item.event, Frame) else None
            self.trace.saw(decoded.frame_index, payload, decoded.size, step=self.step)
            if isinstance(msg, jsonrpc.Response | jsonrpc.ErrorResponse) and self.session.request(msg.id) is not None:
                self.trace.answered(msg.id)  # before judging: a second answer is marked with the first
        self.recorder.add(self.session.received(decoded), stderr=self._stderr_if(decoded.violations))
        if isinstance(item.event, Frame):
            readable = decoded.message is not None or decoded.raw is not None
            torn = [
                f.in_frame(decoded.frame_index) if isinstance(f, Violation) else f
                for f in single_writer(item.event.payload, readable=readable)
            ]
            self.recorder.add(torn, stderr="")
        if isinstance(msg, jsonrpc.Response | jsonrpc.ErrorResponse):
            self._judge_grace(msg.id, item.at)
            self._judge_menu_speed(msg.id, item.at)
        elif isinstance(msg, jsonrpc.Request):
            self._answer_child(msg)

    def _stderr_if(self, violations: Iterable[Violation]) -> str:
        assert self.process is not None
        return self.process.stderr_excerpt() if violations else ""

    def _judge_grace(self, rid: Any, at: float) -> None:
        sent = self._cancel_sent_at.pop(rid, None) if isinstance(rid, int | str) else None
        if sent is None:
            return
        self.recorder.exercise("EXT-1.9-settle-within-grace")
        if at - sent > self.patience.cancel_grace_s:
            self.recorder.violate(
                Violation(
                    "EXT-1.9-settle-within-grace",
                    f"request {rid!r} settled more than the {self.patience.cancel_grace_s:.1f} s grace "
                    "after its cancellation",
                ),
                measured={"settled_after_s": round(at - sent, 3)},  # varies run to run: kept out of the message
            )

    def _judge_menu_speed(self, rid: Any, at: float) -> None:
        """§1.6b asks a menu/collect handler to answer quickly (a should); the
        host stops waiting after its 5 s timeout and shows its fallback, so
        an answer later than that was certainly not quick. Faster answers are
        never judged: "quickly" has no other number. The side-effect half of
        the rule is not observable."""
        sent = self._menu_sent_at.pop(rid, None) if isinstance(rid, int | str) else None
        if sent is None:
            return
        self.recorder.exercise("EXT-1.6b-handler-fast")
        if at - sent > limits.MENU_COLLECT_TIMEOUT_S:
            self.recorder.violate(
                Violation(
                    "EXT-1.6b-handler-fast",
                    f"menu/collect {rid!r} was answered after the host's {limits.MENU_COLLECT_TIMEOUT_S:.0f} s "
                    "menu timeout: a host would already show its fallback",
                ),
                measured={"answered_after_s": round(at - sent, 3)},  # varies run to run: kept out of the message
            )

    def _answer_child(self, msg: jsonrpc.Request) -> None:
        """Answer the extension's request the way a headless host would: by
        its row in ``CHILD_ANSWERS`` when its gating feature was negotiated,
        else as a method the harness does not host."""
        assert self.session is not None
        row = CHILD_ANSWERS.get(msg.method)
        negotiated = self.session.negotiated
        agreed = self.session.offer.offered if row and row.when_offered else (negotiated.features if negotiated else ())
        if row is None or (row.feature is not None and row.feature not in agreed):
            reply = jsonrpc.error(msg.id, jsonrpc.METHOD_NOT_FOUND, f"{msg.method} is not hosted by the harness")
        else:
            reply = row.answer(self, msg)
        self._held_answers.append((msg.id, reply))
        if self.trace is not None and self._recording:
            self.trace.child_answer(encode_frame(dumps(reply)), step=self.step)  # replay answers live instead

    def _policy_answer(self, msg: jsonrpc.Request) -> dict[str, Any]:
        """§2.9 from a scripted classifier: deny, allow and ask in turn. A
        token without the approvals feature is refused (-32602)."""
        if isinstance(msg.params, dict) and msg.params.get("approval_token") is not None:
            return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, "approval tokens need the approvals feature")
        decision = POLICY_DECISIONS[self.children.policy_turn % len(POLICY_DECISIONS)]
        self.children.policy_turn += 1
        return jsonrpc.result(msg.id, {"decision": decision})

    def _artifact_answer(self, msg: jsonrpc.Request) -> dict[str, Any]:
        """§2.8: verify the publication as a host would (the same rules that
        judge it), reading a path source from the scratch directory; issue an
        opaque id, or refuse with -32602."""
        assert self.session is not None and self.session.negotiated is not None
        params = msg.params if isinstance(msg.params, dict) else {}
        findings = list(artifact_publish(params, negotiated=self.session.negotiated))
        findings += artifact_limits(params)
        content = inline_bytes(params.get("data")) if params.get("data") is not None else None
        path = params.get("path")
        if params.get("data") is None and isinstance(path, str):
            content, problem = read_scratch(scratch_dir(self.manifest), path)
            judged = self.session.artifact_read(msg.id, content, problem)
            self.recorder.add(judged, stderr="")
            findings += judged
        elif content is not None:
            findings += artifact_bytes(params, content)
        if content is None or any(isinstance(f, Violation) for f in findings):
            return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, "artifact publication rejected")
        if (spent := over_generation_budget(params, self.session.artifacts)) is not None:
            return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, f"artifact publication rejected: {spent}")
        self.children.artifacts_issued += 1
        return jsonrpc.result(msg.id, {"artifact_id": f"artifact-{self.children.artifacts_issued}"})

    def _catalog_answer(self, msg: jsonrpc.Request) -> dict[str, Any]:
        """§2.11/§2.12: publish a valid mutation as the next epoch and answer
        its revision and the complete accepted names; refuse an invalid one
        with -32602, leaving the catalog as it was."""
        assert self.session is not None and self.session.negotiated is not None
        params = msg.params if isinstance(msg.params, dict) else {}
        current = self.children.catalog if self.children.catalog is not None else frozenset(self.session.tools)
        if msg.method == "tools/register":
            findings = list(tools_register(params, negotiated=self.session.negotiated, catalog=current))
            changed = {
                t["name"] for t in params.get("tools", []) if isinstance(t, dict) and isinstance(t.get("name"), str)
            }
            catalog = current | changed
        else:
            findings = list(tools_unregister(params, negotiated=self.session.negotiated))
            names = params.get("names")
            catalog = current - {n for n in names if isinstance(n, str)} if isinstance(names, list) else current
        if any(isinstance(f, Violation) for f in findings):
            return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, f"{msg.method} rejected")
        self.children.revision = max(self.children.revision, self.session.catalog_revision) + 1
        self.children.catalog = frozenset(catalog)
        return jsonrpc.result(msg.id, {"revision": self.children.revision, "tools": sorted(catalog)})

    def _answer_held(self) -> None:
        """Write the answers held back while the extension's frames kept
        coming, in one write. A host may answer whenever it likes; holding
        answers until the extension pauses means a burst of child requests is
        outstanding all at once, as the extension wrote it (§2's bound on
        outstanding children is then observable)."""
        assert self.session is not None
        held, self._held_answers = self._held_answers, []
        for cid, reply in held:
            self.session.child_answered(cid, reply)
        # Each answer is in the trace already, right after its request
        # (_answer_child): when held answers go out is timing.
        recording, self._recording = self._recording, False
        try:
            self.write_raw(b"".join(encode_frame(dumps(reply)) for _, reply in held))
        except TargetGone:
            pass  # noticed by the next wait
        finally:
            self._recording = recording

    # -- waiting ------------------------------------------------------------------
    def settle(self, ids: Iterable[Any], *, timeout: float | None = None, shortened: bool = True) -> list[HostRequest]:
        """Pump until every request in ``ids`` is answered, the target is gone,
        or the deadline passes. Returns the requests still unanswered, after
        recording them as violations. The deadline is short once every
        requirement an unanswered one would break has failed on a deadline
        (Recorder.deadline_s), unless ``shortened`` is false."""
        assert self.session is not None
        wanted = [r for r in (self.session.request(i) for i in ids) if r is not None]
        full_s = self.patience.response_s if timeout is None else timeout
        broken = {_unanswered_breaks(r) for r in wanted} or {"JSONRPC-5-every-request-answered"}
        deadline = self.now() + (self.recorder.deadline_s(broken, full_s) if shortened else full_s)
        while any(r.response is None for r in wanted) and not self.stdout_closed:
            remaining = deadline - self.now()
            if remaining <= 0:
                break
            self.pump(min(remaining, 0.5))
        missing = [r for r in wanted if r.response is None]
        self.unresponsive = self.unresponsive or bool(missing)
        self.recorder.exercise("JSONRPC-5-every-request-answered")
        for r in missing if not self.stdout_closed else ():
            self.recorder.missed_deadline(_unanswered_breaks(r))
        why, measured = self._why_unanswered() if missing else ("", {})
        for r in missing:
            self.recorder.violate(
                Violation(
                    _unanswered_breaks(r),
                    f"{r.method} request {r.id!r} was never answered ({why})",
                ),
                stderr=self.process.stderr_excerpt() if self.process else "",
                measured=measured,
                request=r.id,  # evidence: the write that carried it
            )
            r.response = jsonrpc.ErrorResponse(r.id, None, "harness: unanswered")  # judged once
        return missing

    def _why_unanswered(self) -> tuple[str, dict[str, float]]:
        """Why requests went unanswered; when the extension is gone, with its
        exit status (measured too, so the console can show it with stderr)."""
        if not self.stdout_closed:
            return "no response within the deadline", {}
        code = self.exit_status()
        if code is None:
            return "the extension's stdout closed", {}
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        return f"the extension's stdout closed: it {how}", {"exit_status": float(code)}

    def exit_status(self) -> int | None:
        """The exit status of this generation, waiting briefly for it once."""
        if self._exit is None and self.process is not None:
            self._exit = (self.process.wait_exit(EXIT_STATUS_WAIT_S),)
        return None if self._exit is None else self._exit[0]

    def drain(self, quiet_s: float = 0.0, *, limit_s: float = 1.0) -> None:
        """Handle what is queued (and what arrives within ``quiet_s`` of the
        last frame), for at most ``limit_s``: a target that writes faster
        than we read must not keep us here forever."""
        deadline = self.now() + limit_s
        while self.now() < deadline and self.pump(quiet_s):
            pass

    # -- protocol steps -------------------------------------------------------------
    def initialize(self, offer: Offer) -> bool:
        """Send initialize; True when the extension answered with a result."""
        assert self.session is not None
        rid = self.request("initialize", initialize_params(self.manifest, offer))
        # Never shortened: a target that answered requests late may still start
        # slower than a short wait under load, and a missed initialize skips
        # every later generation (hung_initializations), not one step.
        if self.settle([rid], timeout=self.patience.startup_s, shortened=False) and not self.stdout_closed:
            self.recorder.hung_initializations += 1
        req = self.session.request(rid)
        ok = req is not None and isinstance(req.response, jsonrpc.Response)
        if ok and self.session.negotiated is not None:
            self.recorder.api_versions.add(offer.api_version)
            self.recorder.negotiated_features.update(self.session.negotiated.features)
        return ok

    def shutdown(self) -> None:
        """§1.8: request shutdown, expect an acknowledgement within the stage
        timeout, then an exit within the next one. The exit is judged however
        the request went (acknowledged, refused or timed out): the host waits
        for it in every case."""
        assert self.session is not None and self.process is not None
        rid = self.new_id()
        if self.trace is not None and self._recording:
            self.trace.action("shutdown", step=self.step, carries=[rid])
        recording, self._recording = self._recording, False  # replay performs the whole action, not its bytes
        try:
            self.request("shutdown", {}, rid=rid)
        except (TargetGone, LocalProtocolError):
            return
        finally:
            self._recording = recording
        self._await_shutdown_ack(rid)
        self._judge_exit(rid)

    def _await_shutdown_ack(self, rid: Any) -> None:
        """Pump until the shutdown answer or the stage timeout. A missing or
        late answer breaks the shutdown rule, not the generic "every request
        answered" one: §1.8 gives this request its own deadline."""
        assert self.session is not None
        req = self.session.request(rid)
        assert req is not None
        deadline = self.now() + self.recorder.deadline_s("EXT-1.8-shutdown-ack", self.patience.shutdown_s)
        while req.response is None and not self.stdout_closed:
            remaining = deadline - self.now()
            if remaining <= 0:
                break
            self.pump(min(remaining, 0.5))
        if req.response is not None:
            return  # judged by the session (result shape, or an error refusal)
        self.recorder.exercise("EXT-1.8-shutdown-ack")
        if not self.stdout_closed:
            self.recorder.missed_deadline("EXT-1.8-shutdown-ack")
        why = (
            "the extension's stdout closed first"
            if self.stdout_closed
            else f"none within the {self.patience.shutdown_s:.1f} s stage timeout"
        )
        self.recorder.violate(
            Violation("EXT-1.8-shutdown-ack", f"shutdown request {rid!r} was not acknowledged ({why})"),
            stderr=self.process.stderr_excerpt() if self.process else "",
            request=rid,
        )
        req.response = jsonrpc.ErrorResponse(rid, None, "harness: unacknowledged")  # judged once

    def _judge_exit(self, rid: Any) -> None:
        assert self.session is not None and self.process is not None
        self.recorder.exercise("EXT-1.8-exit-after-shutdown")
        if self.recorder.violation_counts.get("EXT-1.8-exit-after-shutdown"):
            return  # already judged in an earlier generation: do not wait out the stage timeout again
        code = self.process.wait_exit(self.patience.shutdown_s)
        if code is None:
            self.recorder.violate(
                Violation(
                    "EXT-1.8-exit-after-shutdown",
                    f"process still running {self.patience.shutdown_s:.1f}s after the shutdown request's stage",
                ),
                request=rid,  # evidence: the shutdown
            )
        else:
            self.session.advance(LifecycleInput.EXITED)

    def stdin_eof(self) -> None:
        """§0: closing stdin is transport loss; the extension should exit. The
        text gives no time, so it is judged only once a host following §1.8's
        default stages (reply, then exit) would have killed it."""
        assert self.process is not None
        if self.trace is not None and self._recording:
            self.trace.action("stdin_eof", step=self.step)
        self.process.close_stdin()
        closed = self.now()
        self.recorder.exercise("EXT-0-stdin-eof-exit")
        bound = self.patience.eof_exit_s
        if self.process.wait_exit(self.recorder.deadline_s("EXT-0-stdin-eof-exit", bound)) is None:
            self.recorder.missed_deadline("EXT-0-stdin-eof-exit")
            self.recorder.violate(
                Violation(
                    "EXT-0-stdin-eof-exit",
                    f"process still running {bound:.1f} s after stdin EOF, past the point where a host following "
                    "§1.8's default shutdown stages would have killed it",
                ),
                measured={"running_after_s": round(self.now() - closed, 3)},  # varies run to run: not in the message
            )


# method -> how the harness answers it; adding a hosted request is one row.
# Anything else is answered "method not found".
CHILD_ANSWERS: Mapping[str, ChildAnswer] = {
    "confirmation/request": ChildAnswer(scripted(ChildPolicy.confirmation)),
    "input/request": ChildAnswer(scripted(ChildPolicy.input)),
    "secret/get": ChildAnswer(scripted(ChildPolicy.secret), feature="secrets"),
    "policy/evaluate": ChildAnswer(ExtensionHostPeer._policy_answer, feature="policy_intents"),
    "artifact/publish": ChildAnswer(ExtensionHostPeer._artifact_answer, feature="artifacts"),
    "tools/register": ChildAnswer(ExtensionHostPeer._catalog_answer, feature="dynamic_tools"),
    "tools/unregister": ChildAnswer(ExtensionHostPeer._catalog_answer, feature="dynamic_tools"),
    # §2.19-§2.24 Wave-1 (conformance/peers/wave1_backend.py)
    "composer/get": ChildAnswer(scripted(wave1_backend.composer), feature="composer"),
    "composer/set": ChildAnswer(scripted(wave1_backend.composer), feature="composer"),
    "composer/insert": ChildAnswer(scripted(wave1_backend.composer), feature="composer"),
    "shortcut/register": ChildAnswer(scripted(wave1_backend.shortcut_register), feature="shortcuts", when_offered=True),
    "session/append_entry": ChildAnswer(scripted(wave1_backend.session_entries), feature="session_entries"),
    "session/set_name": ChildAnswer(scripted(wave1_backend.session_entries), feature="session_entries"),
    "session/set_label": ChildAnswer(scripted(wave1_backend.session_entries), feature="session_entries"),
    "session/send_message": ChildAnswer(scripted(wave1_backend.message_injection), feature="message_injection"),
    "session/send_user_message": ChildAnswer(scripted(wave1_backend.message_injection), feature="message_injection"),
    "tools/set_active": ChildAnswer(scripted(wave1_backend.set_active), feature="active_tools"),
    "terminal/acquire": ChildAnswer(scripted(wave1_backend.terminal), feature="terminal_handoff"),
    "terminal/release": ChildAnswer(scripted(wave1_backend.terminal), feature="terminal_handoff"),
}


def _unanswered_breaks(request: HostRequest) -> str:
    """The requirement an unanswered ``request`` breaks (ext_session.UNANSWERED_BREAKS)."""
    return UNANSWERED_BREAKS.get(request.intent or "", "JSONRPC-5-every-request-answered")


def request_meta(rid: Any, method: str, params: Any, intent: Intent, frame_bytes: int) -> dict[str, Any]:
    """What replay needs to judge the answer: small params whole, large ones
    (judged by the whole frame's size, which bounds theirs) reduced to the
    tool name."""
    kept = params if frame_bytes <= 2048 else ({"name": params.get("name")} if isinstance(params, dict) else None)
    meta: dict[str, Any] = {"id": rid, "method": method, "params": kept}
    if intent is not None:
        meta["intent"] = intent
    return meta


def trace_header(manifest: Manifest, offer: Offer, recorder: Recorder) -> dict[str, Any]:
    return {
        "format": TRACE_FORMAT,
        "suite": {"version": __version__, **recorder.run_info},
        "target": {
            "role": "extension",
            "manifest": str(manifest.path),
            "name": manifest.name,
            "version": manifest.version,
            "api_version": manifest.api_version,
            "command": list(manifest.command),
        },
        "offer": {
            "api_version": offer.api_version,
            "protocol_version": offer.protocol_version,
            "required_features": list(offer.required_features),
            "optional_features": list(offer.optional_features),
            "max_concurrent_requests": offer.max_concurrent_requests,
        },
        "context": str(recorder.context),
    }


def brokered_environment(manifest: Manifest) -> dict[str, str]:
    """§1.1: an allowlisted ambient variable (API 0.2+) is copied from the
    host only when the manifest declares it and the host has it."""
    declared = manifest.capabilities.get("environment", [])
    if manifest.api_version == "0.1" or not isinstance(declared, list):
        return {}
    return {
        name: os.environ[name]
        for name in declared
        if isinstance(name, str) and name in limits.ENVIRONMENT_ALLOWLIST and name in os.environ
    }


def initialize_params(manifest: Manifest, offer: Offer) -> dict[str, Any]:
    """The initialize request of §1.1 for this manifest and offer."""
    capabilities: dict[str, Any] = {
        "filesystem": manifest.capabilities.get("filesystem", "none"),
        "process": bool(manifest.capabilities.get("process", False)),
        "network": bool(manifest.capabilities.get("network", False)),
    }
    if manifest.capabilities.get("secrets"):
        capabilities["secrets"] = manifest.capabilities["secrets"]
    if manifest.capabilities.get("provider_credentials") is True:
        capabilities["provider_credentials"] = True
    params: dict[str, Any] = {
        "api_version": offer.api_version,
        "octet_version": OCTET_VERSION,
        "extension": {
            "name": manifest.name,
            "version": manifest.version,
            "manifest_path": str(manifest.path),
            "source": "explicit",
        },
        "workspace": str(manifest.folder),
        "capabilities": capabilities,
        "contributes": dict(manifest.contributes),
        "host": host_state(),
    }
    if offer.protocol_version is not None:
        protocol: dict[str, Any] = {
            "version": offer.protocol_version,
            "required_features": list(offer.required_features),
            "optional_features": list(offer.optional_features),
        }
        if offer.max_concurrent_requests is not None:
            protocol["limits"] = {"max_concurrent_requests": offer.max_concurrent_requests}
        params["protocol"] = protocol
    return params


def host_state() -> dict[str, Any]:
    return {
        "session_id": "conformance-session",
        "session_name": None,
        "model": "conformance-model",
        "reasoning": None,
        "active_skills": [],
    }
