"""End-to-end checks of the reference extension, spawned as a real process.

Every read has a deadline (select on the pipe), and every process is killed in
a fixture finaliser, so no test can hang on a misbehaving extension.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import select
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.reference.extension import CallContext, ReferenceExtension, run
from conformance.reference.extension.catalog import ALL_TOOLS, tools_for
from conformance.reference.extension.schema import SUPPORTED_KEYWORDS

REPO = Path(__file__).resolve().parents[2]
MODULE = "conformance.reference.extension"
MANIFESTS = REPO / "conformance" / "reference" / "extension" / "manifests"
API_VERSIONS = ("0.1", "0.2", "0.4")
NEGOTIATED_APIS = ("0.2", "0.4")
READ_TIMEOUT_S = 5.0
REQUIRED = ["request_cancellation", "content_parts"]
OPTIONAL = ["request_progress", "lifecycle_events"]
# §2.8-§2.12: offered only where a test answers the requests they lead to.
SERVICES = ["policy_intents", "artifacts", "dynamic_tools"]

Message = dict[str, Any]


class LineReader:
    """NDJSON lines from a file descriptor, each read bounded by a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def read(self, timeout: float = READ_TIMEOUT_S) -> Message:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError(f"no complete frame within {timeout} s (buffered {self.buffer[:200]!r})")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError(f"stream closed (buffered {self.buffer[:200]!r})")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line)
        assert isinstance(message, dict), line
        return message


class Peer:
    """The test's side of the wire: a host stand-in talking to one process."""

    def __init__(self, api_version: str, stderr_path: Path) -> None:
        self.api_version = api_version
        self._stderr = stderr_path.open("wb")
        env = dict(os.environ, PYTHONPATH=str(REPO))
        command = [sys.executable, "-m", MODULE, "--api-version", api_version]
        self.proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.reader = LineReader(self.proc.stdout.fileno())
        self._next_id = 1

    # -- writing
    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Message) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def request(self, method: str, params: Message | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        return request_id

    def notify(self, method: str, params: Message) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -- reading
    def read(self, timeout: float = READ_TIMEOUT_S) -> Message:
        return self.reader.read(timeout)

    def response_to(self, request_id: Any, timeout: float = READ_TIMEOUT_S) -> tuple[Message, list[Message]]:
        """The response for ``request_id`` and every other message before it."""
        deadline = time.monotonic() + timeout
        others: list[Message] = []
        while True:
            message = self.read(max(deadline - time.monotonic(), 0))
            if message.get("id") == request_id and "method" not in message:
                return message, others
            others.append(message)

    def call(self, method: str, params: Message | None = None) -> Message:
        response, _ = self.response_to(self.request(method, params))
        return response

    def assert_silent(self, seconds: float) -> None:
        with pytest.raises(TimeoutError):
            message = self.read(seconds)
            pytest.fail(f"unexpected message: {message}")

    def initialize(self, protocol: Message | None = None, **extra: Any) -> Message:
        params: Message = {"api_version": self.api_version, "octet_version": "0.8.0", "workspace": str(REPO), **extra}
        if self.api_version != "0.1":
            offered = list(OPTIONAL) + (["tool_prompt_metadata_v1"] if self.api_version == "0.4" else [])
            params["protocol"] = protocol or {
                "version": self.api_version,
                "required_features": REQUIRED,
                "optional_features": offered,
                "limits": {"max_concurrent_requests": 64},
            }
        response = self.call("initialize", params)
        assert "result" in response, response
        result: Message = response["result"]
        return result

    def tool(self, name: str, arguments: Message) -> int:
        return self.request("tool/call", {"name": name, "arguments": arguments})

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[[str], Peer]]:
    peers: list[Peer] = []

    def _spawn(api_version: str) -> Peer:
        peer = Peer(api_version, tmp_path / f"stderr-{len(peers)}.log")
        peers.append(peer)
        return peer

    try:
        yield _spawn
    finally:
        for peer in peers:
            peer.kill()


@pytest.fixture(params=API_VERSIONS)
def peer(request: pytest.FixtureRequest, spawn: Callable[[str], Peer]) -> Peer:
    p = spawn(request.param)
    p.initialize()
    return p


@pytest.fixture(params=NEGOTIATED_APIS)
def peer02(request: pytest.FixtureRequest, spawn: Callable[[str], Peer]) -> Peer:
    p = spawn(request.param)
    p.initialize()
    return p


def text_of(peer: Peer, result: Message) -> str:
    if peer.api_version == "0.1":
        assert isinstance(result["content"], str)
        return result["content"]
    parts = result["content"]
    assert isinstance(parts, list) and parts and all(part["type"] == "text" for part in parts)
    return "".join(part["text"] for part in parts)


def error_code(response: Message) -> int:
    assert "error" in response and "result" not in response, response
    code: int = response["error"]["code"]
    return code


# -- initialize -------------------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", API_VERSIONS)
def test_initialize_round_trip(spawn: Callable[[str], Peer], api_version: str) -> None:
    peer = spawn(api_version)
    result = peer.initialize()
    manifest = tomllib.loads((MANIFESTS / f"api-{api_version}" / "extension.toml").read_text())
    assert manifest["api_version"] == api_version == result["api_version"]
    assert [tool["name"] for tool in result["tools"]] == manifest["contributes"]["tools"]
    assert [command["name"] for command in result["commands"]] == manifest["contributes"]["commands"]
    for tool in result["tools"]:
        assert tool["description"] and tool["parameters"]["type"] == "object"
        assert api_version != "0.1" or "output_schema" not in tool
    if api_version == "0.1":
        assert "protocol" not in result
        return
    protocol = result["protocol"]
    offered = set(REQUIRED) | set(OPTIONAL) | ({"tool_prompt_metadata_v1"} if api_version == "0.4" else set())
    assert protocol["version"] == api_version
    assert set(REQUIRED) <= set(protocol["features"]) <= offered
    assert len(set(protocol["features"])) == len(protocol["features"])
    assert 0 < protocol["limits"]["max_concurrent_requests"] <= 64
    has_metadata = "prompt_snippet" in result["tools"][0]
    assert has_metadata == (api_version == "0.4")


@pytest.mark.parametrize("api_version", NEGOTIATED_APIS)
def test_initialize_takes_only_offered_features(spawn: Callable[[str], Peer], api_version: str) -> None:
    peer = spawn(api_version)
    offer = {"version": "9.9", "required_features": REQUIRED, "limits": {"max_concurrent_requests": 2}}
    protocol = peer.initialize(offer)["protocol"]
    assert protocol == {"version": "9.9", "features": REQUIRED, "limits": {"max_concurrent_requests": 2}}
    assert "prompt_snippet" not in peer.call("tool/call", {"name": "echo", "arguments": {"text": "x"}})["result"]


def test_initialize_rejects_missing_required_feature(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.2")
    params = {"api_version": "0.2", "protocol": {"version": "0.2", "required_features": ["content_parts"]}}
    assert error_code(peer.call("initialize", params)) == -32602
    # Still usable: a correct offer afterwards initializes.
    assert peer.initialize()["api_version"] == "0.2"


def test_request_before_initialize_is_refused(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.2")
    assert error_code(peer.call("tool/call", {"name": "echo", "arguments": {"text": "x"}})) == -32000


# -- tools -----------------------------------------------------------------------------------------


def test_echo(peer: Peer) -> None:
    text = "héllo \u2028 wörld ✓"
    response = peer.call("tool/call", {"name": "echo", "arguments": {"text": text}})
    assert text_of(peer, response["result"]) == text
    assert response["result"]["is_error"] is False


def test_echo_truncates_huge_text(peer: Peer) -> None:
    response = peer.call("tool/call", {"name": "echo", "arguments": {"text": "é" * 100_000}})
    assert len(text_of(peer, response["result"]).encode()) <= 64 * 1024


def test_failing(peer: Peer) -> None:
    result = peer.call("tool/call", {"name": "failing", "arguments": {}})["result"]
    assert result["is_error"] is True and text_of(peer, result)


def test_structured(peer02: Peer) -> None:
    result = peer02.call("tool/call", {"name": "structured", "arguments": {"text": "abc"}})["result"]
    assert result["structured_content"] == {"length": 3, "upper": "ABC"}


def test_structured_absent_on_0_1(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.1")
    peer.initialize()
    assert error_code(peer.call("tool/call", {"name": "structured", "arguments": {"text": "a"}})) == -32602


@pytest.mark.parametrize(
    "params",
    [
        {"name": "nope", "arguments": {}},
        {"name": "echo", "arguments": {}},
        {"name": "echo", "arguments": {"text": 3}},
        {"name": "echo", "arguments": {"text": "a", "extra": 1}},
        {"name": "slow", "arguments": {"steps": 11}},
        {"name": "slow", "arguments": {"steps": True}},
    ],
)
def test_invalid_tool_call_is_invalid_params(peer: Peer, params: Message) -> None:
    response = peer.call("tool/call", params)
    assert error_code(response) == -32602 and response["error"]["message"]


# -- JSON-RPC errors ---------------------------------------------------------------------------------


def test_unknown_method(peer: Peer) -> None:
    response = peer.call("no/such/method", {})
    assert error_code(response) == -32601


def test_parse_error_has_null_id(peer: Peer) -> None:
    peer.send_raw(b'{"jsonrpc":"2.0","id":7,"method":\n')
    response = peer.read()
    assert response["id"] is None and error_code(response) == -32700


@pytest.mark.parametrize(
    ("frame", "expected_id"),
    [
        (b"[]", None),
        (b"42", None),
        (b'{"jsonrpc":"1.0","id":9,"method":"tool/call"}', 9),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tool/call"}', None),
        (b'{"jsonrpc":"2.0","id":10,"method":5}', 10),
        (b'{"jsonrpc":"2.0","id":11}', 11),
    ],
)
def test_invalid_request(peer: Peer, frame: bytes, expected_id: Any) -> None:
    peer.send_raw(frame + b"\n")
    response = peer.read()
    assert response["id"] == expected_id and error_code(response) == -32600


def test_oversized_frame_then_recovery(peer: Peer) -> None:
    peer.send_raw(b'{"pad":"' + b"x" * (1024 * 1024) + b'"}\n')
    response = peer.read()
    assert response["id"] is None and error_code(response) == -32600
    assert text_of(peer, peer.call("tool/call", {"name": "echo", "arguments": {"text": "ok"}})["result"]) == "ok"


def test_notifications_are_never_answered(peer: Peer) -> None:
    peer.notify("no/such/notification", {})
    peer.notify("turn/started", {"session_id": "s", "run_id": "r", "turn_id": "t"})
    request_id = peer.tool("echo", {"text": "after"})
    message = peer.read()
    assert message["id"] == request_id


def test_crlf_frames_are_accepted(peer: Peer) -> None:
    peer.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"context/collect","params":{}}\r\n')
    response = peer.read()
    assert response["id"] == "crlf" and response["result"][0]["placement"] == "system_suffix"


# -- cancellation and progress -----------------------------------------------------------------------


def test_slow_cancel(peer02: Peer) -> None:
    request_id = peer02.tool("slow", {"steps": 10, "delay_ms": 100})
    peer02.read()  # the first progress event: the handler is running
    peer02.notify("$/cancelRequest", {"id": request_id, "reason": "user"})
    response, _ = peer02.response_to(request_id, timeout=2.0)
    assert "result" in response or error_code(response) == -32800
    # Nothing about this request may follow its answer.
    echo_id = peer02.tool("echo", {"text": "next"})
    assert peer02.read()["id"] == echo_id


def test_cancel_of_queued_request(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.2")
    peer.initialize({"version": "0.2", "required_features": REQUIRED, "limits": {"max_concurrent_requests": 1}})
    running = peer.tool("slow", {"steps": 3, "delay_ms": 100})
    queued = peer.tool("slow", {"steps": 3, "delay_ms": 100})
    peer.notify("$/cancelRequest", {"id": queued, "reason": "user"})
    response, _ = peer.response_to(queued, timeout=1.0)
    assert error_code(response) == -32800
    assert "result" in peer.response_to(running)[0]


def test_progress_sequence(peer02: Peer) -> None:
    request_id = peer02.tool("slow", {"steps": 4, "delay_ms": 10})
    response, before = peer02.response_to(request_id)
    assert "result" in response
    progress = [m["params"] for m in before if m.get("method") == "$/progress"]
    assert [p["sequence"] for p in progress] == [1, 2, 3, 4]
    assert all(p["request_id"] == request_id and p["event"]["type"] == "status" for p in progress)
    assert [p["event"]["current"] for p in progress] == [1, 2, 3, 4]
    peer02.assert_silent(0.1)


def test_no_progress_or_cancellation_on_0_1(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.1")
    peer.initialize()
    request_id = peer.tool("slow", {"steps": 3, "delay_ms": 20})
    peer.notify("$/cancelRequest", {"id": request_id, "reason": "user"})
    response, before = peer.response_to(request_id)
    assert "result" in response and before == []


def test_concurrency_limit_is_honoured(spawn: Callable[[str], Peer]) -> None:
    peer = spawn("0.2")
    offer = {"version": "0.2", "required_features": REQUIRED, "optional_features": ["request_progress"],
             "limits": {"max_concurrent_requests": 1}}  # fmt: skip
    peer.initialize(offer)
    first = peer.tool("slow", {"steps": 2, "delay_ms": 50})
    second = peer.tool("slow", {"steps": 2, "delay_ms": 50})
    _, before_second = peer.response_to(second)
    order = [m["params"]["request_id"] if "method" in m else ("answer", m["id"]) for m in before_second]
    assert order == [first, first, ("answer", first), second, second]


# -- confirmation (child requests) -------------------------------------------------------------------


@pytest.mark.parametrize("confirmed", [True, False])
def test_confirm_round_trip(peer: Peer, confirmed: bool) -> None:
    request_id = peer.tool("confirm", {"question": "Proceed?"})
    child = peer.read()
    assert child["method"] == "confirmation/request" and isinstance(child["id"], str)
    params = child["params"]
    assert params["prompt"] == "Proceed?" and params["destructive"] is False and params["default"] is False
    assert ("parent_request_id" in params) == (peer.api_version != "0.1")
    if peer.api_version != "0.1":
        assert params["parent_request_id"] == request_id
    peer.send({"jsonrpc": "2.0", "id": child["id"], "result": {"confirmed": confirmed}})
    response, _ = peer.response_to(request_id)
    assert text_of(peer, response["result"]) == ("confirmed" if confirmed else "declined")


def test_confirm_ids_are_fresh_and_errors_decline(peer: Peer) -> None:
    seen: set[str] = set()
    for _ in range(3):
        request_id = peer.tool("confirm", {"question": "?"})
        child = peer.read()
        assert child["id"] not in seen
        seen.add(child["id"])
        peer.send({"jsonrpc": "2.0", "id": child["id"], "error": {"code": -32001, "message": "non-interactive"}})
        assert text_of(peer, peer.response_to(request_id)[0]["result"]) == "declined"


def test_confirm_cancelled_while_waiting(peer02: Peer) -> None:
    request_id = peer02.tool("confirm", {"question": "Proceed?"})
    child = peer02.read()
    peer02.notify("$/cancelRequest", {"id": request_id, "reason": "user"})
    response, before = peer02.response_to(request_id, timeout=2.0)
    assert error_code(response) == -32800
    cancels = [m for m in before if m.get("method") == "$/cancelRequest"]
    assert [m["params"]["id"] for m in cancels] == [child["id"]]
    # A late answer to the cancelled child is ignored, never answered.
    peer02.send({"jsonrpc": "2.0", "id": child["id"], "result": {"confirmed": True}})
    peer02.assert_silent(0.2)


# -- other methods -----------------------------------------------------------------------------------


def test_other_methods(peer: Peer) -> None:
    greet = peer.response_to(peer.request("command/execute", {"name": "greet", "arguments": ["Ada"]}))
    assert greet[0]["result"]["text"] == "Hello, Ada!"
    # §2.1, §2.3, §2.4: pushed as notifications; no snapshot without contributes.presentation.
    assert [m["method"] for m in greet[1]] == ["notification", "context/contribution", "status/contribution"]
    for hook in ("before_prompt", "after_response", "before_tool_call", "after_tool_call"):
        result = peer.call("hook/run", {"hook": hook, "payload": {}})["result"]
        assert result["disposition"] == {"action": "continue"}
    assert error_code(peer.call("hook/run", {"hook": "provider_retry", "payload": {}})) == -32602
    assert peer.call("status/collect", {"surface": "status"})["result"]["surface"] == "status"
    assert peer.call("status/collect", {"surface": "footer"})["result"] is None
    render = peer.call("tool/render", {"name": "echo", "arguments": {}, "output": "hi", "is_error": False})
    assert render["result"]["segments"][0]["text"]


def test_greet_asks_publishes_and_menu(spawn: Callable[[str], Peer]) -> None:
    """§2.7 input/request without arguments, §2.5 snapshots with rising
    revisions when presentation is declared, §1.6b a menu of declared commands."""
    peer = spawn("0.2")
    peer.initialize(contributes={"presentation": True, "menu": True, "commands": ["greet"]})
    request_id = peer.request("command/execute", {"name": "greet", "arguments": []})
    child = peer.read()
    assert child["method"] == "input/request"
    assert child["params"]["parent_request_id"] == request_id and child["params"]["prompt"].strip()
    peer.send({"jsonrpc": "2.0", "id": child["id"], "result": {"value": "Ada"}})
    response, before = peer.response_to(request_id)
    assert response["result"]["text"] == "Hello, Ada!"
    snapshots = [m["params"] for m in before if m["method"] == "presentation/update"]
    assert [s["parent_request_id"] for s in snapshots] == [request_id]
    again = peer.request("command/execute", {"name": "greet", "arguments": ["Bo"]})
    _, before = peer.response_to(again)
    revisions = [snapshots[0]["snapshot"]["revision"]]
    revisions += [m["params"]["snapshot"]["revision"] for m in before if m["method"] == "presentation/update"]
    assert revisions == sorted(revisions) and len(set(revisions)) == 2
    menu = peer.call("menu/collect", {"context": {}})["result"]
    assert {item["command"] for item in menu["items"] if "command" in item} == {"greet"}


def test_greet_uses_the_services(spawn: Callable[[str], Peer]) -> None:
    """§2.9 policy/evaluate, §2.8 artifact/publish (inline: no scratch
    directory here), §2.11 tools/register of the picture tool, then a call
    to it under the new epoch (§1.2) and one under an epoch never published."""
    peer = spawn("0.2")
    offer = {"version": "0.2", "required_features": REQUIRED, "optional_features": SERVICES}
    assert set(peer.initialize(offer)["protocol"]["features"]) == set(REQUIRED) | set(SERVICES)

    def next_request() -> Message:  # notifications in between are §2.1-§2.4 pushes
        while "id" not in (message := peer.read()):
            pass
        return message

    request_id = peer.request("command/execute", {"name": "greet", "arguments": ["Ada"]})
    policy = next_request()
    assert policy["method"] == "policy/evaluate" and policy["params"]["parent_request_id"] == request_id
    assert {"kind", "operation"} <= set(policy["params"]["intent"])
    peer.send({"jsonrpc": "2.0", "id": policy["id"], "result": {"decision": "allow"}})
    publish = next_request()
    assert publish["method"] == "artifact/publish"
    data = base64.b64decode(publish["params"]["data"]["data"])
    assert publish["params"]["size"] == len(data) and data.startswith(b"\x89PNG")
    assert publish["params"]["sha256"] == hashlib.sha256(data).hexdigest()
    peer.send({"jsonrpc": "2.0", "id": publish["id"], "result": {"artifact_id": "card-1"}})
    register = next_request()
    assert register["method"] == "tools/register" and "parent_request_id" not in register["params"]
    assert [tool["name"] for tool in register["params"]["tools"]] == ["picture"]
    catalog = ["confirm", "echo", "failing", "picture", "slow", "structured"]
    peer.send({"jsonrpc": "2.0", "id": register["id"], "result": {"revision": 1, "tools": catalog}})
    response, _ = peer.response_to(request_id)
    assert response["result"]["text"] == "Hello, Ada!"
    call = peer.request("tool/call", {"name": "picture", "arguments": {}, "catalog_revision": 1})
    child = next_request()
    assert child["method"] == "artifact/publish"
    peer.send({"jsonrpc": "2.0", "id": child["id"], "result": {"artifact_id": "picture-1"}})
    response, _ = peer.response_to(call)
    image = response["result"]["content"][1]
    assert image == {"type": "image", "artifact_id": "picture-1", "mime_type": "image/png", "alt": "a tiny picture"}
    older = peer.call("tool/call", {"name": "picture", "arguments": {}, "catalog_revision": 0})
    assert error_code(older) == -32602  # epoch 0 has no picture tool
    unknown = peer.call("tool/call", {"name": "echo", "arguments": {"text": "x"}, "catalog_revision": 7})
    assert error_code(unknown) == -32602


# -- process lifecycle -------------------------------------------------------------------------------


def test_shutdown_exits_promptly(peer: Peer) -> None:
    peer.tool("slow", {"steps": 10, "delay_ms": 100})
    shutdown_id = peer.request("shutdown", {})
    # §1.8: the host waits 2 s for the reply, then 2 s for the exit.
    response, _ = peer.response_to(shutdown_id, timeout=2.0)
    assert response["result"] == {}
    assert peer.proc.wait(timeout=2.0) == 0


def test_stdin_eof_exits(peer: Peer) -> None:
    peer.tool("slow", {"steps": 10, "delay_ms": 100})
    peer.close_stdin()
    assert peer.proc.wait(timeout=2.0) == 0


# -- static and in-process checks --------------------------------------------------------------------


def test_manifests_match_catalog() -> None:
    for api_version in API_VERSIONS:
        manifest = tomllib.loads((MANIFESTS / f"api-{api_version}" / "extension.toml").read_text())
        assert manifest["command"][-1] == manifest["api_version"] == api_version
        assert manifest["contributes"]["tools"] == list(tools_for(api_version))


def test_tool_schemas_stay_within_the_validator() -> None:
    def keywords(schema: Message) -> set[str]:
        nested = schema.get("properties", {}).values()
        return set(schema).union(*(keywords(sub) for sub in nested))

    for tool in ALL_TOOLS:
        assert keywords(tool.parameters) <= SUPPORTED_KEYWORDS, tool.name


class WrongEcho(ReferenceExtension):
    """How fixtures inject one fault: override exactly one handler."""

    def tool_echo(self, arguments: Message, ctx: CallContext) -> Message:
        return self.tool_result("not what you sent")


def test_subclass_overrides_one_handler_in_process() -> None:
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    with os.fdopen(out_write, "wb") as stdout:
        worker = threading.Thread(target=run, args=(WrongEcho("0.1"), in_read, stdout), daemon=True)
        worker.start()
        reader = LineReader(out_read)
        try:
            os.write(in_write, b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"api_version":"0.1"}}\n')
            assert reader.read()["result"]["api_version"] == "0.1"
            os.write(in_write, b'{"jsonrpc":"2.0","id":2,"method":"tool/call",'
                               b'"params":{"name":"echo","arguments":{"text":"x"}}}\n')  # fmt: skip
            assert reader.read()["result"]["content"] == "not what you sent"
        finally:
            os.close(in_write)
            worker.join(timeout=2.0)
            os.close(in_read)
    assert not worker.is_alive()
    os.close(out_read)


# -- §1.11, §2.19-§2.24: Wave-1 ----------------------------------------------------------

WAVE1 = ["composer", "shortcuts", "session_entries", "message_injection", "active_tools", "terminal_handoff"]


def wave1_protocol() -> Message:
    return {"version": "0.2", "required_features": REQUIRED, "optional_features": WAVE1}


def test_shortcut_registered_inside_initialize_and_triggered_once_admitted(spawn: Callable[[str], Peer]) -> None:
    p = spawn("0.2")
    init = p.request("initialize", {"api_version": "0.2", "octet_version": "0.8.0", "protocol": wave1_protocol()})
    register = p.read()  # §2.20: written before the initialize answer, parented on it
    assert register["method"] == "shortcut/register"
    assert register["params"]["parent_request_id"] == init
    answer, others = p.response_to(init)
    assert set(WAVE1) <= set(answer["result"]["protocol"]["features"]) and others == []
    p.notify("shortcut/trigger", {"id": register["params"]["id"]})  # not admitted yet: fails closed
    p.assert_silent(0.3)
    p.send({"jsonrpc": "2.0", "id": register["id"], "result": {}})
    p.notify("shortcut/trigger", {"id": "never-registered"})
    p.assert_silent(0.3)
    p.notify("shortcut/trigger", {"id": register["params"]["id"]})
    assert p.read()["method"] == "notification"


def test_no_shortcut_unless_offered(spawn: Callable[[str], Peer]) -> None:
    p = spawn("0.2")
    result = p.initialize()
    assert "shortcuts" not in result["protocol"]["features"]


def test_greet_uses_each_wave1_service_parented_on_the_command(spawn: Callable[[str], Peer]) -> None:
    p = spawn("0.2")
    init = p.request("initialize", {"api_version": "0.2", "octet_version": "0.8.0", "protocol": wave1_protocol()})
    register = p.read()
    p.response_to(init)
    p.send({"jsonrpc": "2.0", "id": register["id"], "result": {}})
    greet = p.request("command/execute", {"name": "greet", "arguments": ["ada"]})
    answers = {
        "composer/get": {"text": ""},
        "session/append_entry": {"entry_id": "entry-1"},
        "terminal/acquire": {"grant_id": "grant-1", "columns": 80, "rows": 24},
    }
    methods = []
    while True:
        message = p.read()
        if message.get("id") == greet and "method" not in message:
            break
        if "id" in message and "method" in message:
            methods.append(message["method"])
            if message["method"] in WAVE1_METHODS:
                assert message["params"]["parent_request_id"] == greet
            p.send({"jsonrpc": "2.0", "id": message["id"], "result": answers.get(message["method"], {})})
    assert [m for m in methods if m in WAVE1_METHODS] == list(WAVE1_METHODS)


WAVE1_METHODS = (
    "composer/get",
    "composer/insert",
    "session/append_entry",
    "session/set_label",
    "session/send_message",
    "tools/set_active",
    "terminal/acquire",
    "terminal/release",
)
