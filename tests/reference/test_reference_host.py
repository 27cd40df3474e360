"""The reference host, driven by hand-written exchanges on the virtual clock.

Children here are the reference extension (run in-process) and small scripted
extensions written below, one behaviour each (answers late, never acks
shutdown, ignores cancellation, crashes...). Everything runs on the simulated
scheduler, so the spec's 2 s / 3 s / 30 s timings are asserted exactly, in
virtual seconds, and cost no wall time. Real processes are exercised in
test_reference_host_process.py.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol.framing import Frame, FrameDecoder
from conformance.reference.host import (
    CallWaits,
    Frontend,
    HostConfig,
    HostEvents,
    LoadError,
    MemoryBounds,
    Prompt,
    ReferenceHost,
    ShutdownTiming,
    SimChildIO,
    SimWorld,
)
from conformance.reference.host.diagnostics import Diagnostic
from conformance.reference.host.simulated import Program

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "conformance" / "reference" / "extension" / "manifests"
API_VERSIONS = ("0.1", "0.2", "0.4")
REQUIRED = ["request_cancellation", "content_parts"]

Message = dict[str, Any]


# -- scripted extensions ------------------------------------------------------------


class Script:
    """A small extension: answers initialize correctly (unless told otherwise),
    answers tool/call at once with "ok", acknowledges shutdown and exits.
    Subclasses change one behaviour. ``received`` records every frame."""

    api = "0.2"
    tools = ("t",)
    commands = ("c",)
    features: Sequence[str] = (*REQUIRED, "request_progress", "lifecycle_events")
    limit = 8
    confirmations = True

    def __init__(self) -> None:
        self.received: list[Message] = []
        self.arrivals: list[float] = []  # virtual time each frame arrived
        self.io: SimChildIO | None = None
        self.exits = False

    # the program ---------------------------------------------------------------
    def program(self, io: SimChildIO) -> int:
        self.io = io
        decoder = FrameDecoder(max_frame_bytes=1 << 20)
        while True:
            chunk = io.stdin.read1(65536)
            events = decoder.feed(chunk) if chunk else decoder.close()
            for event in events:
                assert isinstance(event, Frame)
                message = json.loads(event.payload)
                self.received.append(message)
                self.arrivals.append(io.runtime.now())
                self.on_message(message)
                if self.exits:
                    return 0
            if not chunk:
                return 0

    def send(self, message: Message) -> None:
        assert self.io is not None
        if not self.io.stdout.closed:  # after the host killed us, writes go nowhere
            self.io.stdout.write(json.dumps(message).encode() + b"\n")

    def answer(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def later(self, seconds: float, action: Callable[[], None]) -> None:
        assert self.io is not None
        runtime = self.io.runtime

        def job() -> None:
            runtime.sleep(seconds)
            action()

        runtime.submit(job)

    # behaviours -------------------------------------------------------------------
    def on_message(self, message: Message) -> None:
        method = message.get("method")
        if method == "initialize":
            self.answer(message["id"], self.initialize_result(message["params"]))
        elif method == "shutdown":
            self.on_shutdown(message)
        elif method == "tool/call":
            self.on_tool_call(message)
        elif "id" in message and "method" in message:
            self.answer(message["id"], {})

    def initialize_result(self, params: Message) -> Message:
        result: Message = {
            "api_version": self.api,
            "tools": [{"name": t, "description": "a tool", "parameters": {"type": "object"}} for t in self.tools],
            "commands": [{"name": c, "description": "a command"} for c in self.commands],
        }
        if self.api != "0.1":
            result["protocol"] = {
                "version": params["protocol"]["version"],
                "features": list(self.features),
                "limits": {"max_concurrent_requests": self.limit},
            }
        return result

    def on_tool_call(self, message: Message) -> None:
        self.answer(message["id"], {"content": [{"type": "text", "text": "ok"}], "is_error": False})

    def on_shutdown(self, message: Message) -> None:
        self.answer(message["id"], {})
        self.exits = True

    def methods(self) -> list[str]:
        return [str(m.get("method")) for m in self.received if "method" in m]


def manifest_for(tmp: Path, script: Script, name: str = "scripted") -> Path:
    folder = tmp / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "extension.toml"
    confirmations = "true" if script.confirmations else "false"
    path.write_text(
        f'name = "{name}"\nversion = "1.0.0"\napi_version = "{script.api}"\nrequires_octet = "0.8.0"\n'
        f'command = ["scripted", "{name}"]\n[contributes]\ntools = {json.dumps(list(script.tools))}\n'
        f"commands = {json.dumps(list(script.commands))}\nconfirmations = {confirmations}\n",
        encoding="utf-8",
    )
    return path


class Recorder(HostEvents):
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.progress_events: list[tuple[int, int]] = []
        self.contributions: list[tuple[str, Any]] = []

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def progress(self, extension: str, generation: int, request_id: int, sequence: int, event: Any) -> None:
        self.progress_events.append((request_id, sequence))

    def contribution(self, extension: str, generation: int, method: str, params: Any) -> None:
        self.contributions.append((method, params))

    def kinds(self, kind: str) -> list[str]:
        return [d.message for d in self.diagnostics if d.kind == kind]


HARNESSES: list[Harness] = []


@pytest.fixture(autouse=True)
def no_worker_crashed() -> Any:
    """Every test: no host or child worker died of an exception on the scheduler."""
    start = len(HARNESSES)
    yield
    crashes = [repr(c) for h in HARNESSES[start:] for c in h.world.crashes]
    del HARNESSES[start:]
    assert not crashes


class Harness:
    """A SimWorld, a host on it, and a registry of scripted programs by name."""

    def __init__(self, tmp: Path, *, config: HostConfig | None = None, frontend: Frontend | None = None) -> None:
        HARNESSES.append(self)
        self.tmp = tmp
        self.programs: dict[str, Callable[[], Program]] = {}
        self.world = SimWorld(resolvers=[self._resolve])
        self.events = Recorder()
        self.host = ReferenceHost(
            config=config or HostConfig(),
            runtime=self.world.runtime,
            launcher=self.world.launcher,
            events=self.events,
            frontend=frontend,
            rng=random.Random(7),
        )

    def _resolve(self, argv: Sequence[str]) -> Program | None:
        if argv and argv[0] == "scripted":
            return self.programs[argv[1]]()
        return None

    def add(self, script_factory: Callable[[], Script], name: str = "scripted") -> list[Script]:
        """Each launch gets a fresh script; the list collects them in launch order."""
        made: list[Script] = []

        def factory() -> Program:
            script = script_factory()
            made.append(script)
            return script.program

        self.programs[name] = factory
        manifest_for(self.tmp, script_factory(), name)
        return made

    def manifest(self, name: str = "scripted") -> Path:
        return self.tmp / name / "extension.toml"

    def run(self, job: Callable[[], Any]) -> Any:
        return self.world.run(job)


# -- the reference extension on every API version -----------------------------------------


@pytest.mark.parametrize("api", API_VERSIONS)
def test_routes_every_host_request_to_the_reference_extension(tmp_path: Path, api: str) -> None:
    h = Harness(tmp_path)
    status = h.run(lambda: h.host.load(MANIFESTS / f"api-{api}" / "extension.toml"))
    name = status.name
    assert status.state == "ready" and status.generation == 1
    if api == "0.1":
        assert status.features == () and status.max_concurrent_requests is None
    else:
        assert set(REQUIRED) <= set(status.features) and status.max_concurrent_requests == 8
    host = h.host
    outcomes = h.run(
        lambda: [
            host.call_tool(name, "echo", {"text": "hi"}),
            host.execute_command(name, "greet", ["you"]),
            host.run_hook(name, "before_prompt", {"prompt": "x"}),
            host.collect_context(name),
            host.collect_status(name, "status"),
            host.render_tool(name, "echo", {"text": "hi"}, "hi"),
        ]
    )
    assert [o.status for o in outcomes] == ["ok"] * 6, outcomes
    text = outcomes[0].result["content"]
    assert text == "hi" if api == "0.1" else text == [{"type": "text", "text": "hi"}]
    assert outcomes[1].result["text"] == "Hello, you!"
    assert ("notification", {"level": "info", "title": "Greeting", "message": "Hello, you!"}) in h.events.contributions
    # Not declared -> refused without touching the child.
    assert h.run(lambda: host.call_tool(name, "nope", {})).status == "refused"
    assert h.run(lambda: host.collect_status(name, "footer")).status == "refused"
    # The 0.2/0.4 reference declares a menu (§1.6b); 0.1 has none to route to.
    assert h.run(lambda: host.collect_menu(name)).status == ("refused" if api == "0.1" else "ok")
    h.run(lambda: host.shutdown())
    assert host.inspect(name).state == "stopped"
    assert h.world.launcher.launched[0].exit_code == 0  # it exited on its own after the ack


def test_progress_from_the_reference_extension_is_delivered_in_order(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    name = h.run(lambda: h.host.load(MANIFESTS / "api-0.2" / "extension.toml")).name
    outcome = h.run(lambda: h.host.call_tool(name, "slow", {"steps": 3, "delay_ms": 10}))
    assert outcome.ok
    assert [seq for _, seq in h.events.progress_events] == sorted(seq for _, seq in h.events.progress_events)
    assert len(h.events.progress_events) == 3


class Yes(Frontend):
    interactive = True

    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    def confirm(self, prompt: Prompt) -> bool:
        self.prompts.append(prompt)
        return True


@pytest.mark.parametrize(("interactive", "expected"), [(False, "declined"), (True, "confirmed")])
def test_confirmation_goes_to_the_frontend_and_non_interactive_denies(
    tmp_path: Path, interactive: bool, expected: str
) -> None:
    frontend = Yes() if interactive else None
    h = Harness(tmp_path, frontend=frontend)
    name = h.run(lambda: h.host.load(MANIFESTS / "api-0.2" / "extension.toml")).name
    outcome = h.run(lambda: h.host.call_tool(name, "confirm", {"question": "push?"}))
    assert outcome.result["content"][0]["text"] == expected
    if frontend is not None:
        assert [p.params["prompt"] for p in frontend.prompts] == ["push?"]


# -- §1.1 initialize -------------------------------------------------------------------


@pytest.mark.parametrize("api", API_VERSIONS)
def test_initialize_params_per_api_version(tmp_path: Path, api: str) -> None:
    class Versioned(Script):
        pass

    Versioned.api = api
    h = Harness(tmp_path)
    scripts = h.add(Versioned)
    h.run(lambda: h.host.load(h.manifest()))
    params = scripts[0].received[0]["params"]
    assert params["api_version"] == api and params["octet_version"] == "0.8.0"
    assert params["extension"]["source"] == "explicit"
    assert params["contributes"]["tools"] == ["t"] and params["contributes"]["commands"] == ["c"]
    if api == "0.1":
        assert "protocol" not in params  # §1.1: the frozen 0.1 shape
        return
    protocol = params["protocol"]
    assert protocol["version"] == api and protocol["required_features"] == REQUIRED
    assert protocol["limits"]["max_concurrent_requests"] == 64
    assert ("tool_prompt_metadata_v1" in protocol["optional_features"]) == (api == "0.4")


def _tool(name: str = "t", **extra: Any) -> Message:
    return {"name": name, "description": "a tool", "parameters": {"type": "object"}, **extra}


BAD_RESULTS: dict[str, Callable[[Message], None]] = {
    "api-version-mismatch": lambda r: r.update(api_version="0.4"),
    "not-an-object": lambda r: (r.clear(), r.update(_replace="x")),
    "tools-not-declared": lambda r: r.update(tools=[_tool("other")]),
    "duplicate-tools": lambda r: r.update(tools=[_tool(), _tool()]),
    "commands-differ": lambda r: r.update(commands=[]),
    "too-many-commands": lambda r: r.update(commands=[{"name": f"c{i}"} for i in range(257)]),
    "empty-description": lambda r: r.update(tools=[_tool(description="")]),
    "parameters-not-object": lambda r: r.update(tools=[_tool(parameters=[1])]),
    "parameters-invalid-schema": lambda r: r.update(tools=[_tool(parameters={"type": "objekt"})]),
    "output-schema-invalid": lambda r: r.update(tools=[_tool(output_schema={"type": "object", "required": "n"})]),
    "protocol-missing": lambda r: r.pop("protocol"),
    "protocol-version": lambda r: r["protocol"].update(version="9.9"),
    "required-feature-missing": lambda r: r["protocol"].update(features=["content_parts"]),
    "unknown-feature": lambda r: r["protocol"].update(features=[*REQUIRED, "dynamic_tools"]),
    "duplicate-feature": lambda r: r["protocol"].update(features=[*REQUIRED, "content_parts"]),
    "zero-concurrency": lambda r: r["protocol"].update(limits={"max_concurrent_requests": 0}),
    "bool-concurrency": lambda r: r["protocol"].update(limits={"max_concurrent_requests": True}),
    "subscription-without-feature": lambda r: r["protocol"].update(
        features=REQUIRED, lifecycle_events=["turn/started"]
    ),
    "unknown-subscription": lambda r: r["protocol"].update(lifecycle_events=["turn/begun"]),
    "output-schema-keyword": lambda r: r.update(tools=[_tool(output_schema={"type": "object", "$ref": "#"})]),
    "output-schema-depth": lambda r: r.update(tools=[_tool(output_schema=_nested(33))]),
}


def _nested(depth: int) -> Message:
    node: Message = {"type": "object"}
    for _ in range(depth - 1):
        node = {"type": "object", "properties": {"x": node}}
    return node


@pytest.mark.parametrize("fault", sorted(BAD_RESULTS))
def test_every_rejected_initialize_kills_the_child_and_routes_nothing(tmp_path: Path, fault: str) -> None:
    class Bad(Script):
        def initialize_result(self, params: Message) -> Message:
            result = super().initialize_result(params)
            BAD_RESULTS[fault](result)
            return "x" if result.get("_replace") else result  # type: ignore[return-value]

    h = Harness(tmp_path)
    scripts = h.add(Bad)
    with pytest.raises(LoadError):
        h.run(lambda: h.host.load(h.manifest()))
    assert h.world.launcher.launched[0].killed
    assert scripts[0].methods() == ["initialize"]  # nothing else was ever routed
    assert h.events.kinds("initialize-rejected")
    status = h.host.inspect("scripted")
    assert status.parked and status.generation == 0  # §5: reported, not retried


def test_an_output_schema_at_the_depth_bound_is_accepted(tmp_path: Path) -> None:
    class Deep(Script):
        def initialize_result(self, params: Message) -> Message:
            result = super().initialize_result(params)
            result["tools"] = [_tool(output_schema=_nested(32))]
            return result

    h = Harness(tmp_path)
    h.add(Deep)
    assert h.run(lambda: h.host.load(h.manifest())).state == "ready"


def test_lifecycle_subscription_limits_what_is_sent(tmp_path: Path) -> None:
    class Subscribed(Script):
        def initialize_result(self, params: Message) -> Message:
            result = super().initialize_result(params)
            result["protocol"]["lifecycle_events"] = ["turn/started"]
            return result

    h = Harness(tmp_path)
    scripts = h.add(Subscribed)
    h.run(lambda: h.host.load(h.manifest()))
    sent = h.run(
        lambda: [
            h.host.notify_lifecycle("scripted", "turn/started", {"session_id": "s", "run_id": "r", "turn_id": "t"}),
            h.host.notify_lifecycle("scripted", "turn/settled", {"session_id": "s", "run_id": "r", "turn_id": "t"}),
            h.host.notify_wave1("scripted", "shortcut/trigger", {"id": "x"}),
        ]
    )
    h.world.settle()
    assert sent == [True, False, False]
    assert scripts[0].methods() == ["initialize", "turn/started"]
    assert h.events.kinds("notification-refused")


# -- concurrency, writer, cancellation (§0, §1.1, §1.9) ---------------------------------------


class Holding(Script):
    """Holds every tool call until told to answer; counts the most held at once."""

    limit = 2

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Message] = []
        self.peak = 0

    def on_tool_call(self, message: Message) -> None:
        self.held.append(message)
        self.peak = max(self.peak, len(self.held))

    def release_all(self) -> None:
        for message in self.held:
            super().on_tool_call(message)
        self.held.clear()


def test_requests_beyond_the_negotiated_limit_wait_and_are_not_sent(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Holding)
    h.run(lambda: h.host.load(h.manifest()))
    pending = h.run(lambda: [h.host.start_tool("scripted", "t", {}) for _ in range(5)])
    h.world.settle(0.1)
    script = scripts[0]
    assert len(script.held) == 2 and h.host.inspect("scripted").pending == 5
    while script.held:
        script.release_all()
        h.world.settle(0.01)
    assert all(p.wait(0).ok for p in pending)
    assert script.peak == 2


def test_cancelling_an_unwritten_frame_sends_nothing(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Holding)
    h.run(lambda: h.host.load(h.manifest()))
    first = h.run(lambda: [h.host.start_tool("scripted", "t", {}) for _ in range(3)])
    h.world.settle(0.1)
    first[2].cancel()  # still waiting for a slot
    assert first[2].wait(0).status == "cancelled"
    script = scripts[0]
    script.release_all()
    h.world.settle(0.1)
    assert [m["id"] for m in script.received if m.get("method") == "tool/call"] == [first[0].id, first[1].id]
    assert "$/cancelRequest" not in script.methods()


class Late(Script):
    """Answers tool calls after ``delay`` seconds, cancelled or not."""

    delay = 0.5

    def on_tool_call(self, message: Message) -> None:
        self.later(self.delay, lambda: super(Late, self).on_tool_call(message))


def test_a_written_frame_is_cancelled_once_and_its_late_response_is_diagnosed(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Late)
    h.run(lambda: h.host.load(h.manifest()))
    cancelled = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    other = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    cancelled.cancel()
    cancelled.cancel()  # a second cancel sends nothing more
    assert cancelled.wait(0).status == "cancelled"  # the waiter is dropped at once
    h.world.settle(1.0)
    cancels = [m for m in scripts[0].received if m.get("method") == "$/cancelRequest"]
    assert cancels == [
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": cancelled.id, "reason": "user"}}
    ]
    assert other.wait(0).ok  # unrelated calls are undisturbed
    assert any(f"cancelled request {cancelled.id}" in m for m in h.events.kinds("stale-response"))
    assert h.host.inspect("scripted").state == "ready"  # settled within the grace


def test_responses_to_never_issued_ids_are_diagnosed_and_ignored(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Late)
    h.run(lambda: h.host.load(h.manifest()))
    pending = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    for bogus in (999, "2", None):
        scripts[0].answer(bogus, {})
    h.world.settle(1.0)
    assert pending.wait(0).ok
    assert len(h.events.kinds("stale-response")) == 3


class Stubborn(Late):
    delay = 10.0  # ignores cancellation well past the 2 s grace


def test_no_settlement_within_the_grace_degrades_and_terminates_the_generation(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.add(Stubborn)
    h.run(lambda: h.host.load(h.manifest()))
    with_grace = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    cancelled_at = h.world.now
    with_grace.cancel()
    h.world.settle(1.9)
    assert h.host.inspect("scripted").state == "ready"
    h.world.settle(0.2)
    status = h.host.inspect("scripted")
    assert status.generation >= 1
    grace = [d for d in h.events.diagnostics if d.kind == "cancel-grace"]
    assert grace and h.world.launcher.launched[0].killed
    assert cancelled_at + 2.0 <= h.world.now


# -- §2 child requests, §2.6 progress ----------------------------------------------------------


class Asking(Late):
    """Holds tool calls (answers after 5 s) so child requests have an active parent."""

    delay = 5.0


def _child_answers(script: Script) -> dict[Any, Message]:
    return {m.get("id"): m for m in script.received if "method" not in m}


def test_child_request_admission(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Asking)
    h.run(lambda: h.host.load(h.manifest()))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    script = scripts[0]

    def ask(child_id: Any, parent_id: Any = parent.id, method: str = "confirmation/request") -> None:
        script.send(
            {
                "jsonrpc": "2.0",
                "id": child_id,
                "method": method,
                "params": {"parent_request_id": parent_id, "prompt": "?"},
            }
        )

    ask("ok-1")
    ask("no-parent", parent_id=None)
    ask("foreign-parent", parent_id=12345)
    ask("x" * 257)  # id over 256 bytes
    ask(2**64)  # beyond u64
    ask("unknown", method="agent/spawn")
    h.world.settle(0.1)
    ask("ok-1")  # reused after it settled
    h.world.settle(0.1)
    answers = _child_answers(script)
    first, reused = [m for m in script.received if m.get("id") == "ok-1" and "method" not in m]
    assert first["result"] == {"confirmed": False}  # non-interactive: denied (§2.2)
    assert reused["error"]["code"] == -32600  # no reuse within a generation
    assert answers["no-parent"]["error"]["code"] == -32002
    assert answers["foreign-parent"]["error"]["code"] == -32002
    assert answers[None]["error"]["code"] == -32600  # invalid ids are answered with a null id
    assert answers["unknown"]["error"]["code"] == -32601
    assert len(h.events.kinds("child-request-refused")) >= 6


def test_children_are_cancelled_when_their_parent_settles(tmp_path: Path) -> None:
    class Slow(Frontend):
        def confirm(self, prompt: Prompt) -> bool:
            h.world.runtime.sleep(10.0)  # a person who never answers in time
            return True

    h = Harness(tmp_path, frontend=Slow())
    scripts = h.add(Asking)
    h.run(lambda: h.host.load(h.manifest()))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    script = scripts[0]
    script.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "confirmation/request",
            "params": {"parent_request_id": parent.id, "prompt": "?"},
        }
    )
    h.world.settle(0.1)
    parent.cancel()
    h.world.settle(12.0)
    answers = [m for m in script.received if m.get("id") == 7 and "method" not in m]
    assert len(answers) == 1 and answers[0]["error"]["code"] == -32800  # the late "yes" was dropped


def test_progress_only_for_active_requests_with_increasing_sequences(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Asking)
    h.run(lambda: h.host.load(h.manifest()))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    script = scripts[0]

    def progress(request_id: Any, sequence: Any) -> None:
        event = {"type": "status", "message": "m"}
        script.send(
            {
                "jsonrpc": "2.0",
                "method": "$/progress",
                "params": {"request_id": request_id, "sequence": sequence, "event": event},
            }
        )

    for request_id, sequence in (
        (parent.id, 1),
        (parent.id, 2),
        (parent.id, 2),
        (parent.id, 1),
        (999, 1),
        (parent.id, 5),
    ):
        progress(request_id, sequence)
    h.world.settle(0.1)
    parent.cancel()
    progress(parent.id, 6)  # after settlement
    h.world.settle(0.1)
    assert h.events.progress_events == [(parent.id, 1), (parent.id, 2), (parent.id, 5)]
    assert len(h.events.kinds("progress-ignored")) == 4


# -- §1.8 shutdown --------------------------------------------------------------------------


class NoAck(Script):
    def on_shutdown(self, message: Message) -> None:
        pass  # never answers, never exits


class AckNoExit(Script):
    def on_shutdown(self, message: Message) -> None:
        self.answer(message["id"], {})  # ...and keeps running


@pytest.mark.parametrize(("script", "killed_after"), [(Script, None), (NoAck, 4.0), (AckNoExit, 2.0)])
def test_shutdown_stages(tmp_path: Path, script: type[Script], killed_after: float | None) -> None:
    h = Harness(tmp_path)
    scripts = h.add(script)
    h.run(lambda: h.host.load(h.manifest()))
    started = h.world.now
    h.run(lambda: h.host.shutdown("scripted"))
    child = h.world.launcher.launched[0]
    assert scripts[0].methods()[-1] == "shutdown"
    if killed_after is None:
        assert child.exit_code == 0 and not child.killed
    else:
        assert child.killed and h.world.now - started == pytest.approx(killed_after, abs=0.01)
    assert child.stdin.closed  # EOF only as final teardown
    assert h.host.inspect("scripted").state == "stopped"


def test_parallel_shutdowns_stay_within_the_aggregate_bound(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    for index in range(3):
        h.add(NoAck, name=f"s{index}")
    for index in range(3):
        h.run(lambda i=index: h.host.load(h.manifest(f"s{i}")))
    started = h.world.now
    h.run(lambda: h.host.shutdown())
    assert h.world.now - started == pytest.approx(3.0, abs=0.01)  # 2 s + 2 s stages cut by the 3 s aggregate
    assert all(c.killed for c in h.world.launcher.launched)
    started = h.world.now
    h2 = Harness(tmp_path / "coordinated")
    h2.add(NoAck)
    h2.run(lambda: h2.host.load(h2.manifest()))
    started = h2.world.now
    h2.run(lambda: h2.host.shutdown(coordinated=True))
    assert h2.world.now - started == pytest.approx(1.4, abs=0.01)


# -- §5 reload and supervisor -------------------------------------------------------------------


def test_reload_negotiates_the_candidate_first_and_drains_generation_n(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=HostConfig(shutdown=ShutdownTiming(drain_s=1.0)))
    scripts = h.add(Late)
    h.run(lambda: h.host.load(h.manifest()))
    quick = h.run(lambda: h.host.start_tool("scripted", "t", {}))  # answers after 0.5 s: drained
    h.run(lambda: h.host.reload("scripted"))
    status = h.host.inspect("scripted")
    assert status.generation == 2 and status.state == "ready"
    assert quick.wait(0).ok
    old, new = scripts
    assert old.methods()[-1] == "shutdown"
    assert new.methods() == ["initialize"]  # nothing crossed the boundary
    # Candidate first: N+1 was initialized before N was told to shut down.
    assert new.arrivals[0] < old.arrivals[-1]
    assert h.run(lambda: h.host.call_tool("scripted", "t", {})).ok
    assert new.methods() == ["initialize", "tool/call"]


def test_reload_cancels_what_does_not_drain_and_never_replays_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=HostConfig(shutdown=ShutdownTiming(drain_s=0.2)))
    scripts = h.add(Stubborn)
    h.run(lambda: h.host.load(h.manifest()))
    stuck = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.run(lambda: h.host.reload("scripted"))
    assert stuck.wait(0).status == "cancelled"
    assert "$/cancelRequest" in scripts[0].methods()
    assert "tool/call" not in scripts[1].methods()


def test_a_failed_candidate_leaves_generation_n_live(tmp_path: Path) -> None:
    launches = []

    class FailsSecond(Script):
        def initialize_result(self, params: Message) -> Message:
            launches.append(1)
            result = super().initialize_result(params)
            if len(launches) == 2:
                result["api_version"] = "0.1"
            return result

    h = Harness(tmp_path)
    h.add(FailsSecond)
    h.run(lambda: h.host.load(h.manifest()))
    with pytest.raises(LoadError):
        h.run(lambda: h.host.reload("scripted"))
    status = h.host.inspect("scripted")
    assert status.generation == 1 and status.state == "ready"
    assert h.run(lambda: h.host.call_tool("scripted", "t", {})).ok


class Crashes(Script):
    """Exits ``after`` seconds into its life (unexpectedly)."""

    after = 1.0

    def program(self, io: SimChildIO) -> int:
        def crash() -> None:
            io.runtime.sleep(self.after)
            io.stdout.close()  # the host sees end of file: an unexpected exit

        io.runtime.submit(crash)
        return super().program(io)


def test_supervisor_backoff_is_full_jitter_and_parks_after_eight_failed_restarts(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.add(Crashes)
    h.run(lambda: h.host.load(h.manifest()))
    h.world.settle(600.0)
    notes = [d.message for d in h.events.diagnostics if d.kind == "supervisor"]
    delays = [float(n.split("restarting in ")[1].split(" ms")[0]) / 1000 for n in notes if "restarting" in n]
    assert len(delays) == 8 and notes[-1].startswith("parked")
    rng = random.Random(7)
    expected = [rng.uniform(0, min(30.0, 0.25 * 2**attempt)) for attempt in range(8)]
    assert delays == pytest.approx(expected, abs=0.001)
    assert h.host.inspect("scripted").parked


def test_thirty_seconds_ready_resets_the_budget(tmp_path: Path) -> None:
    class CrashesLate(Crashes):
        after = 31.0

    h = Harness(tmp_path)
    h.add(CrashesLate)
    h.run(lambda: h.host.load(h.manifest()))
    h.world.settle(31.0 * 12)
    assert not h.host.inspect("scripted").parked
    assert h.host.inspect("scripted").generation > 9


def test_permanent_errors_park_at_once(tmp_path: Path) -> None:
    launches = []

    class CrashThenWrongVersion(Crashes):
        def initialize_result(self, params: Message) -> Message:
            launches.append(1)
            result = super().initialize_result(params)
            if len(launches) > 1:
                result["api_version"] = "0.4"
            return result

    h = Harness(tmp_path)
    h.add(CrashThenWrongVersion)
    h.run(lambda: h.host.load(h.manifest()))
    h.world.settle(60.0)
    assert len(launches) == 2 and h.host.inspect("scripted").parked


def test_explicit_shutdown_cancels_supervision(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.add(Crashes)
    h.run(lambda: h.host.load(h.manifest()))
    h.run(lambda: h.host.shutdown())
    h.world.settle(60.0)
    assert len(h.world.launcher.launched) == 1


# -- manifests -------------------------------------------------------------------------------------


def test_requires_octet_is_checked_before_any_process_starts(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.add(Script)
    path = h.manifest()
    path.write_text(path.read_text().replace('requires_octet = "0.8.0"', 'requires_octet = "0.9.0"'))
    with pytest.raises(LoadError, match="requires_octet"):
        h.run(lambda: h.host.load(path))
    assert h.world.launcher.launched == []


def test_manifest_read_bound_at_n_minus_1_n_and_n_plus_1(tmp_path: Path) -> None:
    from conformance.reference.host.manifest import ManifestError, load_manifest

    base = (MANIFESTS / "api-0.2" / "extension.toml").read_text()
    bound = 1024
    for size, ok in ((bound - 1, True), (bound, True), (bound + 1, False)):
        path = tmp_path / f"m{size}.toml"
        padding = size - len(base.encode()) - 2
        path.write_text(base + "#" + "x" * padding + "\n")
        assert path.stat().st_size == size
        if ok:
            assert load_manifest(path, octet_version="0.8.0", read_bytes=bound).name == "octet-reference-extension"
        else:
            with pytest.raises(ManifestError, match="read bound"):
                load_manifest(path, octet_version="0.8.0", read_bytes=bound)


BAD_MANIFESTS = {
    "api-0.3": ('api_version = "0.2"', 'api_version = "0.3"'),
    "no-command": ("command = [", "kommand = ["),
    "presentation-0.1": ("[contributes]", "[contributes]\npresentation = true"),
    "unknown-environment": ("[capabilities]", '[capabilities]\nenvironment = ["AWS_SECRET"]'),
    "bad-secret-name": ("[capabilities]", '[capabilities]\nsecrets = ["9lives"]'),
    "unknown-contribution": ("[contributes]", "[contributes]\nwidgets = true"),
}


@pytest.mark.parametrize("fault", sorted(BAD_MANIFESTS))
def test_discovery_reports_refused_manifests_and_loads_the_rest(tmp_path: Path, fault: str) -> None:
    from conformance.reference.host import discover

    root = tmp_path / "extensions"
    good, bad = root / "a-good", root / "b-bad"
    good.mkdir(parents=True)
    bad.mkdir()
    (root / "c-empty").mkdir()  # no manifest: not an extension
    source = (MANIFESTS / "api-0.2" / "extension.toml").read_text()
    (good / "extension.toml").write_text(source)
    old, new = BAD_MANIFESTS[fault]
    if fault == "presentation-0.1":
        source = source.replace('api_version = "0.2"', 'api_version = "0.1"')
    (bad / "extension.toml").write_text(source.replace(old, new, 1))
    found = discover([(root, "global"), (tmp_path / "absent", "project")], octet_version="0.8.0")
    assert [d.path.parent.name for d in found] == ["a-good", "b-bad"]
    assert found[0].manifest is not None and found[0].manifest.source == "global"
    assert found[1].manifest is None and found[1].error


def test_api_0_1_cancellation_drops_the_waiter_without_a_cancel_notification(tmp_path: Path) -> None:
    class Legacy(Late):
        api = "0.1"

    h = Harness(tmp_path)
    scripts = h.add(Legacy)
    h.run(lambda: h.host.load(h.manifest()))
    pending = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    pending.cancel()
    h.world.settle(5.0)
    assert pending.wait(0).status == "cancelled"
    assert "$/cancelRequest" not in scripts[0].methods()  # API 0.1 has no cancellation (§1.9)
    assert h.events.kinds("stale-response") and h.host.inspect("scripted").state == "ready"


def test_an_initialize_that_never_comes_is_a_load_error(tmp_path: Path) -> None:
    class Mute(Script):
        def on_message(self, message: Message) -> None:
            pass

    h = Harness(tmp_path, config=HostConfig(waits=CallWaits(initialize_timeout_s=5.0)))
    h.add(Mute)
    with pytest.raises(LoadError, match="did not complete"):
        h.run(lambda: h.host.load(h.manifest()))
    assert h.world.now == pytest.approx(5.0, abs=0.01) and h.world.launcher.launched[0].killed


class Framing(Script):
    """Answers tool calls in an unusual but valid shape, picked by ``style``."""

    style = "crlf"

    def on_tool_call(self, message: Message) -> None:
        assert self.io is not None
        line = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "k"}]}}
        )
        noise = (
            b"not json\n[1,2]\n"
            + b'{"jsonrpc":"2.0","method":"x"}\n'
            + b"z" * (1 << 20)
            + b"\n"
            + b"z" * ((1 << 20) + 1)
            + b"\n"
        )
        if self.style == "crlf":
            self.io.stdout.write(line.encode() + b"\r\n")
        elif self.style == "bytewise":
            for byte in line.encode() + b"\n":
                self.io.stdout.write(bytes([byte]))
        elif self.style == "noise-first":
            self.io.stdout.write(noise + line.encode() + b"\n")


@pytest.mark.parametrize("style", ["crlf", "bytewise", "noise-first"])
def test_framing_variants_and_junk_never_disturb_a_call(tmp_path: Path, style: str) -> None:
    class Styled(Framing):
        pass

    Styled.style = style
    h = Harness(tmp_path)
    h.add(Styled)
    h.run(lambda: h.host.load(h.manifest()))
    assert h.run(lambda: h.host.call_tool("scripted", "t", {})).ok
    if style == "noise-first":
        # At the 1 MiB bound a line is read (and is not JSON); one byte over it is oversized.
        assert len(h.events.kinds("bad-frame")) == 4 and len(h.events.kinds("oversized-frame")) == 1


def test_a_final_ack_without_newline_before_eof_counts(tmp_path: Path) -> None:
    class NoNewline(Script):
        def on_shutdown(self, message: Message) -> None:
            assert self.io is not None
            self.io.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode())
            self.exits = True

    h = Harness(tmp_path)
    h.add(NoNewline)
    h.run(lambda: h.host.load(h.manifest()))
    started = h.world.now
    h.run(lambda: h.host.shutdown("scripted"))
    assert h.world.now == started and not h.world.launcher.launched[0].killed
    assert not [d for d in h.events.diagnostics if d.kind == "shutdown"]


class Registers(Script):
    """Registers shortcuts inside initialize (§2.20), then answers it."""

    features = (*REQUIRED, "shortcuts")
    registrations: Sequence[Message] = ({"id": "k", "key": "ctrl+k", "description": "d"},)

    def on_message(self, message: Message) -> None:
        if message.get("method") == "initialize":
            for index, params in enumerate(self.registrations):
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": f"reg-{index}",
                        "method": "shortcut/register",
                        "params": {"parent_request_id": message["id"], **params},
                    }
                )
        super().on_message(message)


def test_wave1_shortcut_trigger_only_for_admitted_registrations(tmp_path: Path) -> None:
    class Many(Registers):
        registrations = (
            {"id": "k", "key": "ctrl+k", "description": "d"},
            {"id": "k", "key": "ctrl+j"},  # duplicate id
            {"id": "x" * 129, "key": "ctrl+l"},  # id over 128 bytes
        )

    config = HostConfig(optional_features=("request_progress", "lifecycle_events", "shortcuts"))
    h = Harness(tmp_path, config=config)
    scripts = h.add(Many)
    h.run(lambda: h.host.load(h.manifest()))
    sent = h.run(
        lambda: [
            h.host.notify_wave1("scripted", "shortcut/trigger", {"id": "k"}),
            h.host.notify_wave1("scripted", "shortcut/trigger", {"id": "other"}),
            h.host.notify_wave1("scripted", "shortcut/trigger", ["k"]),
        ]
    )
    h.world.settle()
    assert sent == [True, False, False]
    answers = {m["id"]: m for m in scripts[0].received if "method" not in m}
    assert answers["reg-0"]["result"] == {} and "error" in answers["reg-1"] and "error" in answers["reg-2"]
    assert [m["params"] for m in scripts[0].received if m.get("method") == "shortcut/trigger"] == [{"id": "k"}]


def test_shortcuts_are_not_admitted_unless_offered(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Registers)
    with pytest.raises(LoadError):  # the response names a feature never offered
        h.run(lambda: h.host.load(h.manifest()))
    answers = [m for m in scripts[0].received if m.get("id") == "reg-0"]
    assert answers[0]["error"]["code"] == -32601


def test_child_id_bounds_and_outstanding_limit(tmp_path: Path) -> None:
    class Hanging(Frontend):
        def confirm(self, prompt: Prompt) -> bool:
            h.world.runtime.sleep(100.0)
            return False

    h = Harness(tmp_path, config=HostConfig(max_outstanding_children=3, max_child_ids=5), frontend=Hanging())
    scripts = h.add(Asking)
    h.run(lambda: h.host.load(h.manifest()))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    script = scripts[0]
    ids: list[Any] = ["a" * 256, 2**64 - 1, 0, "over-outstanding"]
    for child_id in ids:
        script.send(
            {
                "jsonrpc": "2.0",
                "id": child_id,
                "method": "confirmation/request",
                "params": {"parent_request_id": parent.id, "prompt": "?"},
            }
        )
    h.world.settle(0.1)
    refused = {m["id"]: m["error"]["code"] for m in script.received if "error" in m}
    assert refused == {"over-outstanding": -32600}  # 256-byte string, u64 max and 0 admitted; the 4th is over 3
    parent.cancel()  # settles the parent: its three children are answered -32800
    h.world.settle(0.1)
    cancelled = sorted(str(m["id"]) for m in script.received if m.get("error", {}).get("code") == -32800)
    assert cancelled == sorted(str(i) for i in ids[:3])


# -- units: the writer, stderr lines, frame parsing ---------------------------------------------


class TrickleChannel:
    """Takes at most ``take`` bytes per non-blocking write; records every byte."""

    pid = None

    def __init__(self, take: int) -> None:
        self.take = take
        self.data = bytearray()

    def try_write(self, data: bytes) -> int:
        self.data += bytes(data[: self.take])
        return min(self.take, len(data))

    def write(self, data: bytes) -> None:
        self.data += data


def test_the_writer_completes_a_partial_frame_before_the_next_and_skips_cancelled_ones() -> None:
    import threading

    from conformance.reference.host.calls import Call
    from conformance.reference.host.writer import SerialWriter

    lock = threading.Condition()
    channel = TrickleChannel(take=3)
    written: list[int] = []

    def on_written(done: Call) -> None:
        written.append(done.id)
        done.move("written")

    writer = SerialWriter(channel, lock, on_written=on_written, on_failed=lambda e: None, now=lambda: 0.0)  # type: ignore[arg-type]

    def call(call_id: int) -> Call:
        made = Call(call_id, "tool/call", b"", threading.Event(), threading.Event(), True)
        made.move("admit")
        return made

    first, skipped, last = call(1), call(2), call(3)
    with lock:
        writer.enqueue(b"first-frame\n", first)
        writer.enqueue(b"skipped\n", skipped)
        writer.enqueue(b"last\n", last)
        skipped.move("cancel")
    writer.pump()  # 3 bytes go out; the rest of frame 1 waits for the worker
    assert bytes(channel.data) == b"fir" and first.state == "writing"
    worker = threading.Thread(target=writer.run)
    worker.start()
    with lock:
        lock.wait_for(lambda: not writer.queue, 5.0)
        writer.close()
    worker.join(5.0)
    assert bytes(channel.data) == b"first-frame\nlast\n"
    assert written == [1, 3] and first.state == last.state == "written"


@pytest.mark.parametrize("split", ["whole", "bytewise"])
def test_stderr_lines_are_bounded_with_and_without_newlines(split: str) -> None:
    from conformance.reference.host.stderr import StderrLines

    data = b"short\r\n" + b"a" * 10 + b"\n" + b"b" * 11 + b"\n" + b"c" * 100 + b"tail"
    lines = StderrLines(line_bytes=10)
    chunks = [data] if split == "whole" else [bytes([b]) for b in data]
    out = [line for chunk in chunks for line in lines.feed(chunk)] + lines.close()
    assert out == ["short", "a" * 10, "b" * 10 + " …[line cut]", "c" * 10 + " …[line cut]"]
    assert lines.total_bytes == len(data) and lines.dropped_bytes == 1 + 90 + 4


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', "Reply"),
        (b'{"jsonrpc":"2.0","id":"a","method":"m","params":{}}', "Incoming"),
        (b'{"jsonrpc":"2.0","method":"m"}', "Incoming"),
        (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}', "Junk"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":""}}', "Junk"),
        (b'{"jsonrpc":"1.0","id":1,"result":{}}', "Junk"),
        (b'{"jsonrpc":"2.0","id":1,"result":NaN}', "Junk"),
        (b"\xff", "Junk"),
        (b"[]", "Junk"),
        (b'{"jsonrpc":"2.0","id":1,"result":{}} trailing', "Junk"),
    ],
)
def test_frame_parsing(payload: bytes, kind: str) -> None:
    from conformance.reference.host import jsonrpc

    assert type(jsonrpc.parse(payload)).__name__ == kind


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (2**64 - 1, True),
        (2**64, False),
        (-1, False),
        (True, False),
        (1.5, False),
        (None, False),
        ("é" * 128, True),
        ("é" * 128 + "x", False),
        ("x" * 255, True),
        ("x" * 256, True),
        ("x" * 257, False),
    ],
)
def test_child_id_validity(value: Any, ok: bool) -> None:
    from conformance.reference.host.jsonrpc import valid_child_id

    assert valid_child_id(value) is ok


def test_sanitized_environment_keeps_a_minimal_set() -> None:
    from conformance.reference.host.environment import sanitized_environment

    source = {"PATH": "/bin", "HOME": "/h", "LANG": "C", "AWS_SECRET_ACCESS_KEY": "k", "SSH_AUTH_SOCK": "/s"}
    assert sanitized_environment(source=source, prefer_interpreter=False) == {"PATH": "/bin", "HOME": "/h", "LANG": "C"}
    declared = sanitized_environment(("SSH_AUTH_SOCK",), source=source, prefer_interpreter=False)
    assert declared["SSH_AUTH_SOCK"] == "/s"
    assert "SSH_AUTH_SOCK" not in sanitized_environment(("SSH_AUTH_SOCK",), source={"PATH": "/bin"})


def test_every_call_state_and_input_pair_is_in_the_table_or_a_local_error() -> None:
    from conformance.reference.host import calls

    states = {s for pair in calls.TRANSITIONS for s in (pair[0], calls.TRANSITIONS[pair])}
    inputs = {pair[1] for pair in calls.TRANSITIONS}
    for state in states:
        for event in inputs:
            if (state, event) in calls.TRANSITIONS:
                assert calls.advance(state, event) in states
            else:
                with pytest.raises(calls.LocalError):
                    calls.advance(state, event)


def test_a_confirmation_pending_across_a_reload_never_reaches_the_new_generation(tmp_path: Path) -> None:
    class SlowYes(Frontend):
        def confirm(self, prompt: Prompt) -> bool:
            h.world.runtime.sleep(3.0)  # answered after the swap
            return True

    h = Harness(tmp_path, config=HostConfig(shutdown=ShutdownTiming(drain_s=0.1)), frontend=SlowYes())
    scripts = h.add(Asking)
    h.run(lambda: h.host.load(h.manifest()))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    old = scripts[0]
    params = {"parent_request_id": parent.id, "prompt": "?"}
    old.send({"jsonrpc": "2.0", "id": "c", "method": "confirmation/request", "params": params})
    h.world.settle(0.1)
    h.run(lambda: h.host.reload("scripted"))
    h.world.settle(5.0)
    assert parent.wait(0).status == "cancelled"
    answers = [m for m in old.received if m.get("id") == "c"]
    assert [a["error"]["code"] for a in answers] == [-32800]  # cancelled with its parent; the late "yes" dropped
    assert scripts[1].methods() == ["initialize"]


def test_inspection_reports_pending_count_health_and_a_bounded_last_error(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=HostConfig(memory=MemoryBounds(last_error_bytes=64)))
    scripts = h.add(Holding)
    h.run(lambda: h.host.load(h.manifest()))
    h.run(lambda: [h.host.start_tool("scripted", "t", {}) for _ in range(3)])
    h.world.settle(0.1)
    status = h.host.inspect("scripted")
    assert (status.pending, status.health, status.generation, status.max_concurrent_requests) == (3, "healthy", 1, 2)
    scripts[0].answer(10**6, {"x": "y" * 500})  # a stale response: diagnosed, last error bounded
    h.world.settle(0.1)
    last = h.host.inspect("scripted").last_error
    assert last is not None and len(last.encode()) <= 64 + len("…".encode())


def _menu(**extra: Any) -> Message:
    item = {"id": "a", "label": "A", "command": "c", "arguments": ["x"]}
    return {"title": "T", "items": [item], **extra}


def _deep(levels: int) -> Message:
    items: list[Message] = [{"id": "leaf", "label": "L", "command": "c"}]
    for level in range(levels - 1):
        items = [{"id": f"sub{level}", "label": "S", "items": items}]
    return {"title": "T", "items": items}


MENUS: dict[str, tuple[Any, bool]] = {
    "valid": (_menu(), True),
    "four-levels": (_deep(4), True),
    "five-levels": (_deep(5), False),
    "undeclared-command": (_menu(items=[{"id": "a", "label": "A", "command": "zz"}]), False),
    "duplicate-ids": (_menu(items=[{"id": "a", "label": "A", "command": "c"}] * 2), False),
    "two-recommended": (
        _menu(items=[{"id": i, "label": "A", "command": "c", "recommended": True} for i in "ab"]),
        False,
    ),
    "submenu-with-arguments": (_menu(items=[{"id": "s", "label": "S", "items": [], "arguments": []}]), False),
    "256-items": (_menu(items=[{"id": str(i), "label": "A", "command": "c"} for i in range(256)]), True),
    "257-items": (_menu(items=[{"id": str(i), "label": "A", "command": "c"} for i in range(257)]), False),
    "not-an-object": ([], False),
}


@pytest.mark.parametrize("case", sorted(MENUS))
def test_menu_bounds_and_the_generated_fallback(tmp_path: Path, case: str) -> None:
    menu, valid = MENUS[case]

    class Menu(Script):
        def on_message(self, message: Message) -> None:
            if message.get("method") == "menu/collect":
                self.answer(message["id"], menu)
            else:
                super().on_message(message)

    h = Harness(tmp_path)
    h.add(Menu)
    path = h.manifest()
    path.write_text(path.read_text() + "menu = true\n")
    h.run(lambda: h.host.load(path))
    outcome = h.run(lambda: h.host.collect_menu("scripted"))
    assert outcome.ok
    if valid:
        assert outcome.result == menu and not outcome.message
    else:
        assert outcome.result["items"][0]["command"] == "c" and outcome.message.startswith("generated menu")


def test_a_silent_menu_falls_back_after_five_seconds(tmp_path: Path) -> None:
    class Silent(Script):
        def on_message(self, message: Message) -> None:
            if message.get("method") != "menu/collect":
                super().on_message(message)

    h = Harness(tmp_path)
    h.add(Silent)
    path = h.manifest()
    path.write_text(path.read_text() + "menu = true\n")
    h.run(lambda: h.host.load(path))
    started = h.world.now
    outcome = h.run(lambda: h.host.collect_menu("scripted"))
    assert h.world.now - started == pytest.approx(5.0, abs=0.01)
    assert outcome.ok and "timeout" in outcome.message


TEXT = {"type": "text", "text": "ok"}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _deep_value(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels - 1):
        value = [value]
    return value


TOOL_RESULTS: dict[str, tuple[str, Any, bool]] = {
    # name: (tool, result, accepted)
    "text": ("t", {"content": [TEXT]}, True),
    "empty-content": ("t", {"content": []}, False),
    "string-content": ("t", {"content": "ok"}, False),
    "256-parts": ("t", {"content": [TEXT] * 256}, True),
    "257-parts": ("t", {"content": [TEXT] * 257}, False),
    "no-text-part": ("t", {"content": [{"type": "image", "artifact_id": "a", "mime_type": "image/png"}]}, False),
    "image-without-artifacts": (
        "t",
        {"content": [TEXT, {"type": "image", "artifact_id": "a", "mime_type": "x"}]},
        False,
    ),
    "unknown-part": ("t", {"content": [TEXT, {"type": "video"}]}, False),
    "is-error-not-bool": ("t", {"content": [TEXT], "is_error": "yes"}, False),
    "structured-without-schema": ("t", {"content": [TEXT], "structured_content": {}}, False),
    "schema-without-structured": ("s", {"content": [TEXT]}, False),
    "structured-valid": ("s", {"content": [TEXT], "structured_content": {"n": 1}}, True),
    "structured-invalid": ("s", {"content": [TEXT], "structured_content": {"n": "x"}}, False),
    "metadata-32-levels": ("t", {"content": [TEXT], "metadata": {"m": _deep_value(31)}}, True),
    "metadata-33-levels": ("t", {"content": [TEXT], "metadata": {"m": _deep_value(32)}}, False),
    "metadata-key-256": ("t", {"content": [TEXT], "metadata": {"k" * 256: 1}}, True),
    "metadata-key-257": ("t", {"content": [TEXT], "metadata": {"k" * 257: 1}}, False),
    "metadata-over-64k": ("t", {"content": [TEXT], "metadata": {"m": "x" * (64 * 1024)}}, False),
}


@pytest.mark.parametrize("case", sorted(TOOL_RESULTS))
def test_tool_results_are_refused_unless_valid_for_api_0_2(tmp_path: Path, case: str) -> None:
    tool, result, accepted = TOOL_RESULTS[case]

    class Answers(Script):
        tools = ("t", "s")

        def initialize_result(self, params: Message) -> Message:
            initialized = super().initialize_result(params)
            initialized["tools"][1]["output_schema"] = SCHEMA
            return initialized

        def on_tool_call(self, message: Message) -> None:
            self.answer(message["id"], result)

    h = Harness(tmp_path)
    h.add(Answers)
    h.run(lambda: h.host.load(h.manifest()))
    outcome = h.run(lambda: h.host.call_tool("scripted", tool, {}))
    assert outcome.status == ("ok" if accepted else "invalid"), outcome.message
    assert bool(h.events.kinds("invalid-result")) is not accepted


@pytest.mark.parametrize(
    ("result", "accepted"),
    [({"content": "x"}, True), ({"content": "x", "metadata": {"a": 1}}, True), ({"content": [TEXT]}, False)],
)
def test_api_0_1_tool_results_are_a_content_string(tmp_path: Path, result: Message, accepted: bool) -> None:
    class Legacy(Script):
        api = "0.1"

        def on_tool_call(self, message: Message) -> None:
            self.answer(message["id"], result)

    h = Harness(tmp_path)
    h.add(Legacy)
    h.run(lambda: h.host.load(h.manifest()))
    assert h.run(lambda: h.host.call_tool("scripted", "t", {})).status == ("ok" if accepted else "invalid")


SETTLED = {"session_id": "s", "run_id": "r", "turn_id": "t", "outcome": "completed", "duration_ms": 5, "reason": None}


@pytest.mark.parametrize(
    ("method", "params", "sent"),
    [
        ("turn/settled", SETTLED, True),
        ("turn/settled", {**SETTLED, "outcome": "exploded"}, False),
        ("turn/settled", {**SETTLED, "duration_ms": -1}, False),
        ("turn/started", {"session_id": "s", "run_id": "r"}, False),
        (
            "tool/started",
            {"session_id": "s", "run_id": "r", "turn_id": "t", "tool_call_id": "c", "tool_name": "n"},
            True,
        ),
        ("session/settled", {"session_id": "s", "outcome": "shutdown", "duration_ms": 0.5, "reason": "é" * 3000}, True),
    ],
)
def test_lifecycle_events_are_well_formed_or_not_sent(tmp_path: Path, method: str, params: Message, sent: bool) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Script)
    h.run(lambda: h.host.load(h.manifest()))
    assert h.run(lambda: h.host.notify_lifecycle("scripted", method, params)) is sent
    h.world.settle()
    frames = [m for m in scripts[0].received if m.get("method") == method]
    assert len(frames) == int(sent)
    if frames and "reason" in frames[0]["params"] and frames[0]["params"]["reason"]:
        assert len(frames[0]["params"]["reason"].encode()) <= 4096


def test_api_0_1_requests_are_capped_by_the_host_so_its_writer_queue_stays_bounded(tmp_path: Path) -> None:
    class LegacyHolding(Holding):
        api = "0.1"

    h = Harness(tmp_path, config=HostConfig(max_concurrent_requests=3))
    scripts = h.add(LegacyHolding)
    h.run(lambda: h.host.load(h.manifest()))
    h.run(lambda: [h.host.start_tool("scripted", "t", {}) for _ in range(5)])
    h.world.settle(0.1)
    assert len(scripts[0].held) == 3


def test_best_effort_frames_past_their_deadline_are_dropped_unstarted() -> None:
    import threading

    from conformance.reference.host.writer import SerialWriter

    clock = [0.0]
    lock = threading.Condition()
    channel = TrickleChannel(take=1 << 20)
    writer = SerialWriter(channel, lock, on_written=lambda c: None, on_failed=lambda e: None, now=lambda: clock[0])  # type: ignore[arg-type]
    with lock:
        writer.enqueue(b"late\n", None, expires_at=0.25)
        writer.enqueue(b"kept\n", None, expires_at=1.0)
        writer.enqueue(b"plain\n", None)
    clock[0] = 0.5  # 250 ms passed before the writer got to the first frame
    writer.pump()
    assert bytes(channel.data) == b"kept\nplain\n" and writer.expired == 1


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tool/call", {"name": "t", "arguments": []}),
        ("command/execute", {"name": "c", "arguments": [1]}),
        ("hook/run", {"hook": "before_prompt", "payload": {"prompt": 3}}),
        ("hook/run", {"hook": "after_tool_call", "payload": {"name": "x", "arguments": {}, "output": "o"}}),
        ("context/collect", {"prompt": 5}),
        ("tool/render", {"name": "t", "arguments": {}, "output": "o", "is_error": "no"}),
        ("shutdown", {}),
    ],
)
def test_malformed_or_unrouted_requests_are_refused_before_anything_is_written(
    tmp_path: Path, method: str, params: Message
) -> None:
    h = Harness(tmp_path)
    scripts = h.add(Script)
    path = h.manifest()
    extra = 'hooks = ["before_prompt", "after_tool_call"]\ncontext = true\ntool_renderers = ["t"]\n'
    path.write_text(path.read_text().replace("[contributes]\n", "[contributes]\n" + extra))
    h.run(lambda: h.host.load(path))
    assert h.run(lambda: h.host.call("scripted", method, params)).status == "refused"
    h.world.settle()
    assert scripts[0].methods() == ["initialize"]


@pytest.mark.parametrize(("extra", "sent"), [(-1, True), (0, True), (1, False)])
def test_no_frame_over_the_bound_is_written(tmp_path: Path, extra: int, sent: bool) -> None:
    bound = 4096
    h = Harness(tmp_path, config=HostConfig(max_frame_bytes=bound))
    scripts = h.add(Script)
    h.run(lambda: h.host.load(h.manifest()))
    probe = h.run(lambda: h.host.call_tool("scripted", "t", {"a": ""}))
    assert probe.ok
    sent_frame = next(m for m in scripts[0].received if m.get("method") == "tool/call")
    base = len(json.dumps(sent_frame, separators=(",", ":"), ensure_ascii=False).encode())  # same shape, "a": ""
    padding = "x" * (bound - base + extra)
    outcome = h.run(lambda: h.host.call_tool("scripted", "t", {"a": padding}))
    assert outcome.status == ("ok" if sent else "refused")


def test_a_reload_with_changed_contributions_needs_re_registration_and_keeps_n(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.add(Script)
    path = h.manifest()
    h.run(lambda: h.host.load(path))
    path.write_text(path.read_text().replace('tools = ["t"]', 'tools = ["t", "u"]'))
    with pytest.raises(LoadError, match="re-registration") as caught:
        h.run(lambda: h.host.reload("scripted"))
    assert caught.value.permanent and len(h.world.launcher.launched) == 1  # refused before anything started
    assert h.host.inspect("scripted").state == "ready"
    assert h.run(lambda: h.host.call_tool("scripted", "t", {})).ok


def test_generation_numbers_never_repeat_even_after_a_failed_candidate(tmp_path: Path) -> None:
    launches: list[int] = []

    class FailsSecond(Script):
        def initialize_result(self, params: Message) -> Message:
            launches.append(1)
            result = super().initialize_result(params)
            if len(launches) == 2:
                result["protocol"]["limits"] = {"max_concurrent_requests": 0}
            return result

    h = Harness(tmp_path)
    h.add(FailsSecond)
    h.run(lambda: h.host.load(h.manifest()))
    with pytest.raises(LoadError):
        h.run(lambda: h.host.reload("scripted"))
    assert h.run(lambda: h.host.reload("scripted")).generation == 3


# -- a property: any interleaving of calls, cancels and answers keeps the §1.9 invariants ------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.integers(0, 0)),
        st.tuples(st.just("cancel"), st.integers(0, 7)),
        st.tuples(st.just("answer"), st.integers(0, 7)),
        st.tuples(st.just("tick"), st.integers(0, 3)),
    ),
    max_size=25,
)


class Manual(Holding):
    """Holds every call; the test answers them by index, late or not."""

    limit = 2

    def answer_call(self, message: Message) -> None:
        if self.io is None or self.io.stdout.closed:
            return  # the host killed this child (a cancel that was never settled)
        if message in self.held:
            self.held.remove(message)
        Script.on_tool_call(self, message)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_interleaving_keeps_the_cancellation_invariants(tmp_path: Path, ops: list[tuple[str, int]]) -> None:
    h = Harness(tmp_path / "p", config=HostConfig(waits=CallWaits(cancel_grace_s=2.0)))
    (tmp_path / "p").mkdir(exist_ok=True)
    scripts = h.add(Manual)
    h.run(lambda: h.host.load(h.manifest()))
    script = scripts[0]
    pending: list[Any] = []
    for op, index in ops:
        if op == "start":
            pending.append(h.run(lambda: h.host.start_tool("scripted", "t", {})))
        elif op == "cancel" and pending:
            pending[index % len(pending)].cancel()
        elif op == "answer":
            calls = [m for m in script.received if m.get("method") == "tool/call"]
            if calls:
                script.answer_call(calls[index % len(calls)])
        h.world.settle(0.5 * (index if op == "tick" else 0) + 0.001)
    sent = [m for m in script.received if m.get("method") == "tool/call"]
    cancels = [m["params"]["id"] for m in script.received if m.get("method") == "$/cancelRequest"]
    written = {m["id"] for m in sent}
    assert len(cancels) == len(set(cancels))  # at most one per id
    assert set(cancels) <= written  # never for a frame that was not written
    assert script.peak <= 2  # the negotiated limit held
    for call in pending:
        outcome = call.poll(0)
        if call.id not in written:  # still waiting for a slot, or cancelled before it was written
            assert outcome is None or outcome.status in ("cancelled", "lost", "refused")
    status = h.host.inspect("scripted")
    assert status.state in ("ready", "degraded", "crashed") and h.world.crashes == []


def test_input_requests_and_contributions_reach_the_embedder(tmp_path: Path) -> None:
    class Typist(Frontend):
        def input(self, prompt: Prompt) -> str | None:
            return "typed" if prompt.params.get("prompt") == "name?" else "x" * (256 * 1024 + 1)

    h = Harness(tmp_path, frontend=Typist())
    scripts = h.add(Asking)
    path = h.manifest()
    path.write_text(path.read_text().replace("[contributes]\n", "[contributes]\npresentation = true\n"))
    h.run(lambda: h.host.load(path))
    parent = h.run(lambda: h.host.start_tool("scripted", "t", {}))
    h.world.settle(0.1)
    script = scripts[0]
    for child_id, prompt in (("i1", "name?"), ("i2", "essay?")):
        params = {"parent_request_id": parent.id, "prompt": prompt}
        script.send({"jsonrpc": "2.0", "id": child_id, "method": "input/request", "params": params})
    for method, params in (
        ("notification", {"level": "info", "title": "t", "message": "m"}),
        ("context/contribution", {"label": "l", "content": "c"}),
        ("status/contribution", {"surface": "status", "text": "s"}),
        ("presentation/update", {"snapshot": {"revision": 0}}),
        ("notification", "not an object"),
        ("unknown/thing", {}),
    ):
        script.send({"jsonrpc": "2.0", "method": method, "params": params})
    h.world.settle(0.1)
    answers = {m["id"]: m for m in script.received if "method" not in m}
    assert answers["i1"]["result"] == {"value": "typed"}
    assert answers["i2"]["result"] == {"value": None}  # over 256 KiB: not passed on
    assert [m for m, _ in h.events.contributions] == [
        "notification",
        "context/contribution",
        "status/contribution",
        "presentation/update",
    ]
    assert len(h.events.kinds("bad-frame")) == 2


def test_api_0_1_confirmation_needs_no_parent(tmp_path: Path) -> None:
    class Legacy(Script):
        api = "0.1"

    h = Harness(tmp_path, frontend=Yes())
    scripts = h.add(Legacy)
    h.run(lambda: h.host.load(h.manifest()))
    scripts[0].send({"jsonrpc": "2.0", "id": 1, "method": "confirmation/request", "params": {"prompt": "ok?"}})
    scripts[0].send({"jsonrpc": "2.0", "id": 2, "method": "input/request", "params": {"prompt": "x"}})
    h.world.settle(0.1)
    answers = {m["id"]: m for m in scripts[0].received if "method" not in m}
    assert answers[1]["result"] == {"confirmed": True}
    assert answers[2]["error"]["code"] == -32601  # input/request is API 0.2+


def test_state_changes_reach_the_embedder_in_order(tmp_path: Path) -> None:
    class States(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.states: list[tuple[int, str]] = []

        def state_changed(self, extension: str, generation: int, state: str) -> None:
            self.states.append((generation, state))

    h = Harness(tmp_path)
    h.events = States()
    h.host.events = h.events
    h.add(Script)
    h.run(lambda: h.host.load(h.manifest()))
    h.run(lambda: h.host.reload("scripted"))
    h.run(lambda: h.host.shutdown())
    h.world.settle()
    states = h.events.states
    assert [s for g, s in states if g == 1] == ["initializing", "ready", "draining", "stopped"]
    assert [s for g, s in states if g == 2] == ["initializing", "ready", "draining", "stopped"]


# -- §5: a shutdown racing a reload (host-c) -------------------------------------------------


class SlowStart(Script):
    """Answers initialize after 0.5 s."""

    def on_message(self, message: Message) -> None:
        if message.get("method") == "initialize":
            result = self.initialize_result(message["params"])
            self.later(0.5, lambda: self.answer(message["id"], result))
        else:
            super().on_message(message)


def _shutdown_during_reload(h: Harness, after_s: float) -> None:
    def job() -> None:
        h.host.runtime.submit(lambda: h.host.reload("scripted"), "reload")
        h.host.runtime.sleep(after_s)
        h.host.shutdown("scripted")

    h.run(job)
    h.world.settle(10.0)


def test_a_shutdown_while_the_candidate_negotiates_ends_it_too(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    scripts = h.add(SlowStart)
    h.run(lambda: h.host.load(h.manifest()))
    _shutdown_during_reload(h, 0.1)  # generation 2 answers initialize at 0.5 s
    assert [s.methods().count("shutdown") for s in scripts] == [1, 1]
    assert h.host.inspect("scripted").state == "stopped"
    assert len(h.world.launcher.launched) == 2  # and nothing restarts it


def test_a_second_shutdown_of_a_draining_generation_joins_the_first(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=HostConfig(shutdown=ShutdownTiming(drain_s=1.0)))
    scripts = h.add(Late)
    h.run(lambda: h.host.load(h.manifest()))
    call = h.run(lambda: h.host.start_tool("scripted", "t", {}))  # answered at 0.5 s: generation 1 drains
    _shutdown_during_reload(h, 0.1)
    assert call.wait(0).ok
    assert [s.methods().count("shutdown") for s in scripts] == [1, 1]  # one request each, never two
    assert h.host.inspect("scripted").state == "stopped"


class AskingForSecrets(Asking):
    features = (*REQUIRED, "secrets")


def test_secrets_are_offered_only_with_a_broker_and_answered_per_section_2_10(tmp_path: Path) -> None:
    """§2.10: no broker (the default): secrets is not offered. With one:
    declared names get the broker's value; an undeclared name -32602; no value,
    a failing broker or a value over 64 KiB the one generic -32004."""
    values = {"token": "s3cret", "empty": "", "missing": None, "huge": "x" * (64 * 1024 + 1)}

    def broker(extension: str, generation: int, parent: int, name: str) -> str | None:
        if name == "broken":
            raise RuntimeError("provider down")
        return values.get(name)

    for config, offered in ((HostConfig(), False), (HostConfig(secret_broker=broker), True)):
        h = Harness(tmp_path / str(offered), config=config)
        scripts = h.add(AskingForSecrets if offered else Asking)
        path = h.manifest()
        allowlist = '["token", "empty", "missing", "huge", "broken"]'
        path.write_text(path.read_text(encoding="utf-8") + f"[capabilities]\nsecrets = {allowlist}\n", encoding="utf-8")
        h.run(lambda h=h, path=path: h.host.load(path))
        init = next(m for m in scripts[0].received if m.get("method") == "initialize")
        assert ("secrets" in init["params"]["protocol"]["optional_features"]) is offered
        if not offered:
            continue
        parent = h.run(lambda h=h: h.host.start_tool("scripted", "t", {}))
        h.world.settle(0.1)
        for name in (*values, "broken", "undeclared"):
            scripts[0].send(
                {
                    "jsonrpc": "2.0",
                    "id": name,
                    "method": "secret/get",
                    "params": {"parent_request_id": parent.id, "name": name},
                }
            )
        h.world.settle(0.1)
        answers = _child_answers(scripts[0])
        assert answers["token"]["result"] == {"value": "s3cret"}
        assert answers["empty"]["result"] == {"value": ""}
        assert answers["undeclared"]["error"]["code"] == -32602
        assert {answers[n]["error"]["code"] for n in ("missing", "huge", "broken")} == {-32004}
        assert len({answers[n]["error"]["message"] for n in ("missing", "huge", "broken")}) == 1


@pytest.mark.parametrize(
    ("batch", "sent"),
    [
        ({"message_id": "m", "delta": "x", "deltas": 64}, True),
        ({"message_id": "m", "delta": "x", "deltas": 65}, False),
        ({"message_id": "m", "delta": "x", "deltas": 0}, False),
        ({"message_id": "m", "delta": 3, "deltas": 1}, False),
        ({"message_id": "m", "deltas": ["a"] * 1024}, True),
        ({"message_id": "m", "deltas": ["a"] * 1025}, False),
    ],
)
def test_message_batches_are_sent_only_when_gated_and_well_formed(tmp_path: Path, batch: Message, sent: bool) -> None:
    """§1.11: message/updated needs a gate the embedder names (none by default) and one bounded batch."""
    for gates, expected in (({}, False), ({"message/updated": "request_cancellation"}, sent)):
        h = Harness(tmp_path / str(bool(gates)), config=HostConfig(wave1_gates=gates))
        scripts = h.add(Script)
        h.run(lambda h=h: h.host.load(h.manifest()))
        assert h.run(lambda h=h: h.host.notify_wave1("scripted", "message/updated", batch)) is expected
        h.world.settle()
        assert ("message/updated" in scripts[0].methods()) is expected


def test_a_registration_after_initialize_settled_is_refused_not_foreground_owner(tmp_path: Path) -> None:
    """§2/§2.20: its parent (initialize) settled and it names no owner: -32002, never admitted."""
    config = HostConfig(optional_features=("request_progress", "lifecycle_events", "shortcuts"))
    h = Harness(tmp_path, config=config)
    scripts = h.add(Registers)
    h.run(lambda: h.host.load(h.manifest()))
    late = {"parent_request_id": 1, "id": "late", "key": "ctrl+l", "description": "d"}
    scripts[0].send({"jsonrpc": "2.0", "id": "reg-late", "method": "shortcut/register", "params": late})
    h.world.settle(0.1)
    answer = _child_answers(scripts[0])["reg-late"]
    assert answer["error"]["code"] == -32002 and answer["error"]["message"].startswith("not_foreground_owner")
    assert h.run(lambda: h.host.notify_wave1("scripted", "shortcut/trigger", {"id": "late"})) is False


def test_no_message_batch_after_its_message_settled(tmp_path: Path) -> None:
    gates = {"message/updated": "request_cancellation", "message/settled": "request_cancellation"}
    h = Harness(tmp_path, config=HostConfig(wave1_gates=gates))
    h.add(Script)
    h.run(lambda: h.host.load(h.manifest()))
    batch = {"message_id": "m", "delta": "x", "deltas": 1}
    sent = h.run(
        lambda: [
            h.host.notify_wave1("scripted", "message/updated", batch),
            h.host.notify_wave1("scripted", "message/settled", {"message_id": "m"}),
            h.host.notify_wave1("scripted", "message/updated", batch),
        ]
    )
    assert sent == [True, True, False]


@pytest.mark.parametrize(
    ("payload", "ok"),
    [
        ({"kind": "model_turn_start", "run_id": "run:001", "turn_index": 0, "timestamp_ms": 1}, True),
        ({"kind": "model_turn_start", "run_id": "001", "turn_index": 0, "timestamp_ms": 1}, False),
        ({"kind": "model_turn_end", "run_id": "run:001", "turn_index": 0, "timestamp_ms": 1}, False),
        ({"kind": "model_turn_start", "run_id": "run:001", "turn_index": -1, "timestamp_ms": 1}, False),
    ],
)
def test_model_turn_hooks_need_session_entries_and_a_well_formed_payload(payload: Message, ok: bool) -> None:
    """§1.4b: routed only at API 0.4 with session_entries negotiated, with the payload checked."""
    from conformance.reference.host.requests import params_problem

    params = {"hook": "model_turn_start", "payload": payload}
    assert (params_problem("hook/run", params, "0.4", frozenset({"session_entries"})) is None) is ok
    assert params_problem("hook/run", params, "0.4") is not None
    assert params_problem("hook/run", params, "0.2", frozenset({"session_entries"})) is not None


def test_model_turn_answers_take_only_the_plain_envelope() -> None:
    from conformance.reference.host.results import turn_hook_problem

    assert turn_hook_problem({}) is None
    ok = {"disposition": {"action": "continue"}, "notifications": [], "session_operation": {"action": "continue"}}
    assert turn_hook_problem(ok) is None
    for bad in (
        {"disposition": {"action": "deny", "reason": "no"}},
        {"session_operation": {"action": "cancel"}},
        {"session_operation": {"action": "replace_compaction"}},
        {"context": [{"label": "l", "content": "c"}]},
        {"retry": {"after_ms": 5}},
        [],
    ):
        assert turn_hook_problem(bad) is not None, bad
