"""``ExtensionMachine``: Hypothesis drives an extension through the harness-as-host.

Each example is one process generation: spawn, initialize under a generated
offer, a generated sequence of steps, then shutdown. Rules never assert:
every frame the extension writes is judged by the session and recorded, so one
broken requirement never hides another and exploration goes on. Rules do not
use preconditions that depend on the target (Hypothesis would call that
flaky); a step that makes no sense right now is a no-op instead.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.evidence import Recorder, StepContext
from conformance.machines.oversized import host_sizes_step
from conformance.manifest import Manifest
from conformance.peers.ext_host import ExtensionHostPeer, Launcher, Patience, TargetGone, spawn_process
from conformance.protocol import limits
from conformance.protocol.ext_types import Offer
from conformance.protocol.framing import encode_frame
from conformance.strategies import (
    SPECIAL_IDS,
    invalid_arguments,
    malformed_frames,
    offers,
    tool_arguments,
)
from conformance.strategies.schedules import schedules
from conformance.transport.schedule import Outgoing

UNKNOWN_METHODS = ("octet-conformance/no-such-method", "tools/frobnicate", "commands/register")
HOOK_PAYLOADS: dict[str, dict[str, Any]] = {
    "before_prompt": {"prompt": "conformance prompt"},
    "after_response": {"response": "conformance response"},
    "before_tool_call": {"name": "conformance_tool", "arguments": {}},
    "after_tool_call": {"name": "conformance_tool", "arguments": {}, "output": "ok", "is_error": False},
}
# §1.4b: the model-turn observations (API 0.4 with session_entries; sent by
# the Wave-1 scenario, conformance/runner/wave1.py, never by the machine).
# One text-only assistant entry and so no tool-result entries (§1.4b shapes).
_TURN = {"run_id": "run:001", "turn_index": 0}
TURN_HOOK_PAYLOADS: dict[str, dict[str, Any]] = {
    "model_turn_start": {"kind": "model_turn_start", **_TURN, "timestamp_ms": 1791129600000},
    "model_turn_end": {
        "kind": "model_turn_end",
        **_TURN,
        "timestamp_ms": 1791129600123,
        "assistant_entry": {
            "id": "002",
            "parent": "001",
            "timestamp_unix_ms": 1791129600110,
            "value": {
                "type": "message",
                "Assistant": {"content": [{"Text": "Done."}], "model": "local-model", "protocol": "open_ai_chat"},
            },
        },
        "tool_result_entries": [],
    },
}
SURFACES = ("status", "header", "footer")
# When a cancellation is written, relative to what the target has shown
# (every mode is an ordering the host observes, never a matter of timing):
# same-write: with its request, in one write; after-read: once a probe written
# behind the request was answered (the target has read the request);
# after-first-frame: once the call's first frame (progress, confirmation
# request or its answer) was seen; after-reply: once it was answered.
CANCEL_MODES = ("same-write", "after-read", "after-first-frame", "after-reply")


class ExtensionMachine(RuleBasedStateMachine):
    """Set ``manifest``, ``recorder`` and ``patience`` on a subclass (see
    :func:`machine_for`)."""

    manifest: ClassVar[Manifest]
    recorder: ClassVar[Recorder]
    patience: ClassVar[Patience]
    launcher: ClassVar[Launcher]
    example_counter: ClassVar[list[int]]

    def __init__(self) -> None:
        super().__init__()
        self.example_counter[0] += 1
        self.peer = ExtensionHostPeer(self.manifest, self.recorder, self.patience, launcher=type(self).launcher)
        self.ready = False
        self.step = 0
        self.used_ids: set[Any] = set()
        self.offer_label = ""

    # -- helpers -------------------------------------------------------------------
    def _context(self, offer: Offer | None = None) -> None:
        if offer is not None:
            self.offer_label = ",".join(offer.optional_features) or "required features only"
        self.recorder.context = StepContext(example=self.example_counter[0], step=self.step, offer=self.offer_label)
        self.peer.step = self.step
        self.step += 1

    def _guard(self) -> bool:
        """True when a step can run; a dead target turns steps into no-ops."""
        self._context()
        return self.ready and self.peer.alive

    @property
    def tools(self) -> tuple[str, ...]:
        """The initialize catalog (§1.1): tools registered later (§2.11) are
        called by the services scenario, so draws do not hang on them. A
        tuple, so ``st.sampled_from(self.tools)`` is a strategy Hypothesis
        builds once and reuses (a list makes a new one every draw; the draws
        are the same)."""
        assert self.peer.session is not None
        initial = self.peer.session.epochs.get(0, self.peer.session.tools)
        return tuple(sorted(initial)) or tuple(self.manifest.info.declared_names("tools"))

    def _tool_call(self, name: str, arguments: Any) -> dict[str, Any]:
        """tool/call params; with dynamic_tools negotiated they name the
        current catalog epoch (§1.2)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments, "context": call_context()}
        s = self.peer.session
        if s is not None and s.negotiated is not None and s.negotiated.has("dynamic_tools"):
            params["catalog_revision"] = s.catalog_revision
        return params

    def _run(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except TargetGone:
            self.ready = False

    def _cancellation(self) -> bool:
        s = self.peer.session
        return bool(s and s.negotiated and s.negotiated.has("request_cancellation"))

    def _behind_barrier(self, frames: bytes) -> None:
        """Write ``frames`` with a probe request behind them, and wait for the
        probe's answer. A target reads its input in order, so once the probe is
        answered everything written before it has been read: whatever comes
        next reaches the target in a later read, whatever its timing."""
        rid, probe = self.peer.request_frame(UNKNOWN_METHODS[0], {"probe": "barrier"}, intent="unknown-method")
        self.peer.write_raw(frames + probe)
        self.peer.settle([rid])

    def _first_frame_of(self, rid: Any) -> None:
        """Pump until request ``rid`` shows a frame: a progress event, a
        confirmation request (whose answer the peer holds until the extension
        pauses, so a cancellation written now goes before it) or its answer.
        Frames about other, settled requests do not count."""
        peer = self.peer
        assert peer.session is not None
        request = peer.session.request(rid)
        if request is None:
            return
        confirmations = peer.children.answered
        deadline = peer.now() + self.patience.response_s
        while peer.alive and not peer.stdout_closed:
            if request.last_sequence is not None or request.response is not None:
                return
            if peer.children.answered != confirmations:
                return
            remaining = deadline - peer.now()
            if remaining <= 0:
                return
            peer.pump(min(remaining, 0.5))

    # -- life ----------------------------------------------------------------------
    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        secrets = bool(self.manifest.info.secret_names())
        offer = data.draw(offers(api_version=self.manifest.api_version, secrets=secrets), label="offer")
        self._context(offer)
        try:
            self.peer.start(offer)
            self.ready = self.peer.initialize(offer)
        except TargetGone:
            self.ready = False

    def teardown(self) -> None:
        self._context()  # a step of its own, so shrinking a trace never drops the orderly end
        try:
            if self.peer.process is not None and self.peer.alive:
                self.peer.drain()
                self.peer.shutdown()
        except TargetGone:
            pass
        finally:
            self.peer.close()

    # -- rules -----------------------------------------------------------------------
    @rule(data=st.data())
    def call_tool(self, data: st.DataObject) -> None:
        if not self._guard() or not self.tools:
            return
        name = data.draw(st.sampled_from(self.tools), label="tool")
        tool = self.peer.session.tools.get(name) if self.peer.session else None
        arguments = data.draw(tool_arguments(tool.parameters if tool else None), label="arguments")
        self._run(self._call_and_settle, name, arguments, None)

    @rule(data=st.data())
    def call_tool_invalid_arguments(self, data: st.DataObject) -> None:
        if not self._guard() or not self.tools:
            return
        name = data.draw(st.sampled_from(self.tools), label="tool")
        tool = self.peer.session.tools.get(name) if self.peer.session else None
        arguments, _why = data.draw(invalid_arguments(tool.parameters if tool else None), label="invalid")
        self._run(self._call_and_settle, name, arguments, "invalid-params")

    @rule(name=st.sampled_from(["octet-conformance-no-such-tool", "", "ECHO"]))
    def call_unknown_tool(self, name: str) -> None:
        if not self._guard() or name in self.tools:
            return
        self._run(self._call_and_settle, name, {}, "invalid-params")

    def _call_and_settle(self, name: str, arguments: Any, intent: str | None) -> None:
        rid = self.peer.request("tool/call", self._tool_call(name, arguments), intent=intent)
        self.peer.settle([rid])

    @rule(method=st.sampled_from(UNKNOWN_METHODS))
    def unknown_method(self, method: str) -> None:
        if self._guard():
            self._run(lambda: self.peer.settle([self.peer.request(method, {}, intent="unknown-method")]))

    @rule(data=st.data())
    def concurrent_calls(self, data: st.DataObject) -> None:
        if not self._guard() or not self.tools:
            return
        assert self.peer.session is not None
        negotiated = self.peer.session.negotiated
        cap = (negotiated.max_concurrent_requests if negotiated else None) or 4
        n = data.draw(st.integers(2, max(2, min(cap, 8))), label="concurrency")
        calls = []
        for _ in range(n):
            name = data.draw(st.sampled_from(self.tools), label="tool")
            tool = self.peer.session.tools.get(name)
            calls.append((name, data.draw(tool_arguments(tool.parameters if tool else None), label="arguments")))

        def go() -> None:
            frames = [self.peer.request_frame("tool/call", self._tool_call(n_, a)) for n_, a in calls]
            self.peer.write_raw(b"".join(f for _, f in frames))
            self.peer.settle([rid for rid, _ in frames])

        self._run(go)

    @rule(data=st.data(), mode=st.sampled_from(CANCEL_MODES))
    def cancel_call(self, data: st.DataObject, mode: str) -> None:
        if not self._guard() or not self.tools or not self._cancellation():
            return
        name = data.draw(st.sampled_from(self.tools), label="tool")
        tool = self.peer.session.tools.get(name) if self.peer.session else None
        arguments = data.draw(tool_arguments(tool.parameters if tool else None), label="arguments")
        self._run(self._cancel_scenario, name, arguments, mode)

    def _cancel_scenario(self, name: str, arguments: Any, mode: str) -> None:
        """Cancel a call at ``mode``. A probe request follows the cancellation
        in the same write: once the probe is answered, the extension has read
        the cancellation, so a reply to the call written after that must
        carry -32800 or a result (§1.9); one written earlier is any reply."""
        peer = self.peer
        rid, frame = peer.request_frame("tool/call", self._tool_call(name, arguments))
        if mode == "after-reply":  # the extension must ignore a cancel for a settled id
            peer.write_raw(frame)
            peer.settle([rid])
            peer.cancel(rid)
            peer.settle([rid])
            return
        if mode == "same-write":
            head = frame
        elif mode == "after-read":
            self._behind_barrier(frame)
            head = b""
        else:  # after-first-frame
            peer.write_raw(frame)
            self._first_frame_of(rid)
            head = b""
        cancel = peer.cancel_frame(rid)  # registered before the probe: the probe is written after it
        probe, probe_frame = peer.request_frame(
            UNKNOWN_METHODS[0], {"probe": "after a cancel"}, intent="unknown-method"
        )
        peer.write_raw(head + cancel + probe_frame)
        peer.settle([rid, probe])

    @rule(data=st.data())
    def scheduled_calls(self, data: st.DataObject) -> None:
        """Up to three tool calls, some cancelled, written on a generated
        schedule: any order keeping each cancellation behind its request,
        frames coalesced into one write or split across several, writes held
        until the extension wrote N more frames or answered an earlier call."""
        if not self._guard() or not self.tools:
            return
        assert self.peer.session is not None
        negotiated = self.peer.session.negotiated
        cap = (negotiated.max_concurrent_requests if negotiated else None) or 1
        frames: list[Outgoing] = []
        depends: list[tuple[int, ...]] = []
        for _ in range(data.draw(st.integers(1, max(1, min(cap, 3))), label="calls")):
            name = data.draw(st.sampled_from(self.tools), label="tool")
            tool = self.peer.session.tools.get(name)
            arguments = data.draw(tool_arguments(tool.parameters if tool else None), label="arguments")
            frames.append(self.peer.prepare_request("tool/call", self._tool_call(name, arguments)))
            depends.append(())
            if self._cancellation() and data.draw(st.booleans(), label="cancel"):
                frames.append(self.peer.prepare_cancel(frames[-1].id))
                depends.append((len(frames) - 2,))
        schedule = data.draw(schedules(frames, depends=depends), label="schedule")
        self._run(lambda: self.peer.settle(self.peer.perform(schedule)))

    @rule(data=st.data())
    def malformed_then_valid(self, data: st.DataObject) -> None:
        if not self._guard():
            return
        garbage = data.draw(malformed_frames(), label="garbage")

        def go() -> None:
            self.peer.mark_unreadable()
            self.peer.write_raw(encode_frame(garbage))
            self.peer.settle([self.peer.request(UNKNOWN_METHODS[0], {}, intent="unknown-method")])

        self._run(go)

    @rule(rid=st.sampled_from(SPECIAL_IDS), terminator=st.sampled_from([b"\n", b"\r\n"]))
    def special_id(self, rid: Any, terminator: bytes) -> None:
        """Ids at the edges of the range, echoed exactly; CRLF framing accepted."""
        if not self._guard():
            return
        if rid in self.used_ids:
            rid = None
        else:
            self.used_ids.add(rid)

        def go() -> None:
            rid_, frame = self.peer.request_frame(UNKNOWN_METHODS[0], {"probe": "id"}, rid=rid, intent="unknown-method")
            self.peer.write_raw(frame[:-1] + terminator)
            self.peer.settle([rid_])

        self._run(go)

    @rule(split=st.booleans())
    def awkward_bytes(self, split: bool) -> None:
        """Raw U+2028/U+2029 inside strings, and a frame written byte by byte."""
        if not self._guard():
            return

        def go() -> None:
            params = {"text": "line\u2028separator\u2029paragraph ☃"}
            rid, frame = self.peer.request_frame(UNKNOWN_METHODS[0], params, intent="unknown-method")
            if split:
                for i in range(len(frame)):
                    self.peer.write_raw(frame[i : i + 1])
            else:
                self.peer.write_raw(frame)
            self.peer.settle([rid])

        self._run(go)

    @rule(data=st.data())
    def contribution_requests(self, data: st.DataObject) -> None:
        """command/execute, hook/run, context/collect, status/collect and
        tool/render for every contribution the manifest declares, pipelined
        in one write, in a generated order."""
        if not self._guard():
            return
        choices = contribution_requests(self.manifest)
        if not choices:
            return
        order = data.draw(st.permutations(choices), label="contributions")

        def go() -> None:
            frames = [self.peer.request_frame(method, params) for method, params in order]
            self.peer.write_raw(b"".join(f for _, f in frames))
            self.peer.settle([rid for rid, _ in frames])

        self._run(go)

    @rule(data=st.data(), mode=st.sampled_from(["shutdown", "kill"]))
    def reload_under_load(self, data: st.DataObject, mode: str) -> None:
        """§5: replace the process while calls are in flight (read by the
        extension -- a probe behind them was answered -- and not yet
        answered), by graceful drain + shutdown or by kill, then initialize a
        fresh generation. Nothing of the old generation may be accepted on the
        new one; under drain, each in-flight call settles exactly once."""
        if not self._guard():
            return
        calls = data.draw(st.integers(0, 3), label="in-flight calls")
        chosen = []
        for _ in range(calls if self.tools else 0):
            name = data.draw(st.sampled_from(self.tools), label="tool")
            tool = self.peer.session.tools.get(name) if self.peer.session else None
            chosen.append((name, data.draw(tool_arguments(tool.parameters if tool else None), label="arguments")))

        def go() -> None:
            frames = [self.peer.request_frame("tool/call", self._tool_call(n, a)) for n, a in chosen]
            if frames:
                self._behind_barrier(b"".join(f for _, f in frames))
            self.ready = self.peer.reload(mode)
            if self.ready:
                # What the new generation wrote right after its initialize
                # answer is seen within this step, before anything else is sent.
                self._behind_barrier(b"")

        self._run(go)

    @rule(event=st.sampled_from(limits.LIFECYCLE_EVENTS))
    def lifecycle_notification(self, event: str) -> None:
        """A subscribed lifecycle notification (§1.10), and a trigger for
        each shortcut the host admitted (§1.11); nothing may answer them."""
        if not self._guard():
            return
        s = self.peer.session
        if s and s.negotiated and s.negotiated.has("shortcuts"):
            for sid in self.peer.children.wave1.shortcuts:
                self._run(lambda sid=sid: self.peer.notify("shortcut/trigger", {"id": sid}))
        if not (s and s.negotiated and s.negotiated.has("lifecycle_events") and event in s.negotiated.lifecycle_events):
            return
        params: dict[str, Any] = {"session_id": "conformance-session", "run_id": "run-1", "turn_id": "turn-1"}
        if event.endswith("settled"):
            params |= {"outcome": "completed", "duration_ms": 1, "reason": None}
        if event.startswith("tool/"):
            params |= {"tool_call_id": "call-1", "tool_name": self.tools[0] if self.tools else "tool"}
        self._run(lambda: self.peer.notify(event, params))

    @rule(data=st.data())
    def host_sizes_at_bounds(self, data: st.DataObject) -> None:
        """Frames of 1 MiB - 1, 1 MiB and 1 MiB + 1 (request or notification,
        1- to 4-byte fillers), settled reasons of 4 KiB - 1 and 4 KiB: the
        bounds on what a host sends (conformance/machines/oversized.py)."""
        if self._guard():
            self._run(lambda: host_sizes_step(self.peer, data, method=UNKNOWN_METHODS[0], tools=self.tools))


def call_context() -> dict[str, Any]:
    return {"workspace": "/conformance/workspace", "execution_scope": None, "host": {}}


def contribution_requests(manifest: Manifest) -> list[tuple[str, dict[str, Any]]]:
    info = manifest.info
    ctx = call_context()
    out: list[tuple[str, dict[str, Any]]] = []
    for index, name in enumerate(info.declared_names("commands")):
        # On API 0.2+ the first command runs without arguments, so it may ask
        # the person (§2.7 input/request); the rest get one literal argument.
        # (One request per command either way: the generated orders, and so
        # every other draw of a run, stay what they were.)
        arguments = [] if index == 0 and info.api_version != "0.1" else ["conformance"]
        out.append(("command/execute", {"name": name, "arguments": arguments, "context": ctx}))
    for hook in info.declared_names("hooks"):
        if hook in HOOK_PAYLOADS:
            out.append(("hook/run", {"hook": hook, "payload": HOOK_PAYLOADS[hook], "context": ctx}))
    if info.contributes.get("context") is True:
        out.append(("context/collect", {"prompt": None, "context": ctx}))
    for surface in info.declared_names("ui"):
        if surface in SURFACES:
            out.append(("status/collect", {"surface": surface, "context": ctx}))
    for name in info.declared_names("tool_renderers"):
        out.append(("tool/render", {"name": name, "arguments": {}, "output": "ok", "is_error": False, "context": ctx}))
    # §1.6b: the menu is pulled only from API 0.2+ extensions that opt in and declare a command.
    if info.api_version != "0.1" and info.contributes.get("menu") is True and info.declared_names("commands"):
        out.append(("menu/collect", {"context": ctx}))
    return out


def model_turn_requests(manifest: Manifest) -> list[tuple[str, dict[str, Any]]]:
    """§1.4b: a hook/run for each model-turn hook the manifest declares, start first."""
    declared = manifest.info.declared_names("hooks")
    return [
        ("hook/run", {"hook": hook, "payload": payload, "context": call_context()})
        for hook, payload in TURN_HOOK_PAYLOADS.items()
        if hook in declared
    ]


# Hypothesis digests every machine class it runs by its source (a key for an
# example database, which certifications do not use). A class made by type()
# has no source of its own, so inspect parsed all of this module looking for
# it and gave up -- tens of milliseconds per run of the machine, that is per
# shard, a tenth of a quick certification. A bound class names a module that
# has no file instead: the search ends at once, and the digest is the same
# (of the class name, as when the search failed).
BOUND_MODULE = f"{__name__}.bound"


def machine_for(
    manifest: Manifest, recorder: Recorder, patience: Patience, launcher: Launcher = spawn_process
) -> type[ExtensionMachine]:
    """A machine class bound to one target (Hypothesis instantiates it per example)."""
    bound = {"manifest": manifest, "recorder": recorder, "patience": patience, "launcher": staticmethod(launcher)}
    namespace = {**bound, "example_counter": [0], "__module__": BOUND_MODULE}
    return type("BoundExtensionMachine", (ExtensionMachine,), namespace)
