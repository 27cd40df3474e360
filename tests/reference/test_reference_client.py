"""The reference host RPC client (§2.1 retries, §3 handshake, §7 line limit).

Library tests run the client against a scripted fake host-core (which logs
what it received) or the reference host-core; retry delays are recorded by an
injected sleep, so nothing here waits them out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol import rpc_limits as checker
from conformance.reference.client import (
    CallTimedOut,
    HandshakeFailed,
    HostClient,
    NotConnected,
    OversizedRequest,
    RpcError,
)
from conformance.reference.client import limits as reference
from conformance.reference.client.connection import encode_request

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE = HERE / "fake_hostcore.py"


class Recorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def fake(tmp_path: Path, scenario: str, sleep: Recorder | None = None) -> tuple[HostClient, Path]:
    log = tmp_path / f"{scenario}.log"
    log.touch()
    client = HostClient([sys.executable, str(FAKE), scenario, str(log)], sleep=sleep or Recorder())
    return client, log


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_handshake_comes_first_and_calls_wait_for_it(tmp_path: Path) -> None:
    client, log = fake(tmp_path, "ok")
    with client:
        with pytest.raises(NotConnected):
            client.call("app.health")  # refused locally, never written
        result = client.handshake(client_version="1.2.3")
        assert result["protocolVersion"] == 11
        assert client.call("app.health") == {"echo": "app.health"}
    assert [r["method"] for r in received(log)] == ["app.handshake", "app.health"]


@pytest.mark.parametrize(("scenario", "why"), [("mismatch", "protocol 10"), ("a2a", "a2a"), ("refuse", "refused")])
def test_failed_handshake_aborts_and_sends_nothing_else(tmp_path: Path, scenario: str, why: str) -> None:
    client, log = fake(tmp_path, scenario)
    with client:
        with pytest.raises(HandshakeFailed, match=why) as caught:
            client.handshake(client_version="1")
        assert "Install a host-core" in str(caught.value)  # actionable
        with pytest.raises(NotConnected):
            client.call("app.health")
    assert [r["method"] for r in received(log)] == ["app.handshake"]


@pytest.mark.parametrize(("overloads", "attempts"), [(3, 4), (4, 5)])
def test_overload_is_retried_with_the_documented_delays(tmp_path: Path, overloads: int, attempts: int) -> None:
    sleep = Recorder()
    client, log = fake(tmp_path, f"overload-{overloads}", sleep)
    with client:
        client.handshake(client_version="1")
        assert client.call("session.list") == {"echo": "session.list"}
        assert client.attempts_of_last_call == attempts
    assert sleep.delays == [0.05, 0.1, 0.2, 0.4][:overloads]
    sent = [r for r in received(log) if r["method"] == "session.list"]
    assert len(sent) == attempts and len({r["id"] for r in sent}) == attempts  # a new id each time


def test_at_most_four_retries_then_the_structured_error(tmp_path: Path) -> None:
    sleep = Recorder()
    client, log = fake(tmp_path, "overload-9", sleep)
    with client:
        client.handshake(client_version="1")
        with pytest.raises(RpcError) as caught:
            client.call("session.list")
    assert caught.value.error_code == "HOST_OVERLOADED" and caught.value.attempts == 5
    assert sleep.delays == [0.05, 0.1, 0.2, 0.4]
    assert sum(r["method"] == "session.list" for r in received(log)) == 5


def test_overloaded_tool_result_is_retried_too(tmp_path: Path) -> None:
    sleep = Recorder()
    client, _ = fake(tmp_path, "tool-overload-1", sleep)
    with client:
        client.handshake(client_version="1")
        assert client.call("tools.execute", {"sessionId": "s"}) == {"echo": "tools.execute"}
    assert sleep.delays == [0.05]


def test_other_errors_and_timeouts_are_never_retried(tmp_path: Path) -> None:
    sleep = Recorder()
    client, log = fake(tmp_path, "internal", sleep)
    with client:
        client.handshake(client_version="1")
        with pytest.raises(RpcError) as caught:
            client.call("session.list")
        assert caught.value.error_code == "INTERNAL" and caught.value.attempts == 1
    silent, silent_log = fake(tmp_path, "silent", sleep)
    with silent:
        silent.handshake(client_version="1")
        with pytest.raises(CallTimedOut):
            silent.call("session.list", timeout_s=0.2)
    assert sleep.delays == []
    assert sum(r["method"] == "session.list" for r in received(log) + received(silent_log)) == 2


# the compact line this client writes for app.health with an empty pad, as request id 2
ENVELOPE = len('{"jsonrpc":"2.0","id":2,"method":"app.health","params":{"pad":""}}')
SMALL_BOUND = 1024


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_encode_request_at_the_line_bound(monkeypatch: pytest.MonkeyPatch, extra: int) -> None:
    # N-1/N/N+1 at a small bound (the code reads the bound at call time); the
    # real 64 MiB bound is crossed over a pipe below.
    monkeypatch.setattr(reference, "MAX_LINE_BYTES", SMALL_BOUND)
    pad = "x" * (SMALL_BOUND - ENVELOPE + extra)  # the line is the bound + extra
    if extra <= 0:
        assert len(encode_request(2, "app.health", {"pad": pad})) == SMALL_BOUND + extra + 1  # + LF
    else:
        with pytest.raises(OversizedRequest) as caught:
            encode_request(2, "app.health", {"pad": pad})
        assert (caught.value.size, caught.value.limit) == (SMALL_BOUND + 1, SMALL_BOUND)
        assert "app.health" in str(caught.value) and "xxx" not in str(caught.value)


def test_the_bound_counts_utf8_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference, "MAX_LINE_BYTES", SMALL_BOUND)
    pad = "é" * ((SMALL_BOUND - ENVELOPE) // 2 + 1)  # fits in characters, not in bytes
    with pytest.raises(OversizedRequest):
        encode_request(2, "app.health", {"pad": pad})


def test_a_line_over_the_limit_is_never_written(tmp_path: Path) -> None:
    client, log = fake(tmp_path, "ok")
    with client:
        client.handshake(client_version="1")
        pad = "x" * (reference.MAX_LINE_BYTES - ENVELOPE + 1)
        with pytest.raises(OversizedRequest):  # refused once, not retried
            client.call("app.health", {"pad": pad})
        assert client.call("app.getVersion") == {"echo": "app.getVersion"}  # still usable
    assert [r["method"] for r in received(log)] == ["app.handshake", "app.getVersion"]


def test_client_against_the_reference_hostcore(tmp_path: Path) -> None:
    notes: list[dict[str, Any]] = []
    command = [sys.executable, "-m", "conformance.reference.hostcore", "--data-dir", str(tmp_path / "data")]
    with HostClient(command, on_notification=notes.append) as client:
        client.handshake(client_version="1")
        session = client.call("session.create", {"title": "via client"})["session"]
        assert client.call("session.get", {"sessionId": session["id"]})["session"]["title"] == "via client"
        with pytest.raises(RpcError) as caught:
            client.call("session.get", {"sessionId": "nope"})
        assert (caught.value.code, caught.value.error_code) == (1007, "NOT_FOUND")


def test_command_runs_calls_from_stdin(tmp_path: Path) -> None:
    lines = [
        {"method": "app.health"},
        {"method": "app.health", "padBytes": reference.MAX_LINE_BYTES},
        {"method": "x.y"},
    ]
    hostcore = [sys.executable, "-m", "conformance.reference.hostcore", "--data-dir", str(tmp_path / "d")]
    done = subprocess.run(
        [sys.executable, "-m", "conformance.reference.client", "--", *hostcore],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["kind"] for r in records] == ["handshake", "result", "refused", "error"]
    assert records[1]["result"]["ok"] is True and records[3]["error"]["code"] == -32601


def test_command_exits_2_when_the_handshake_fails(tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = subprocess.run(
        [sys.executable, "-m", "conformance.reference.client", "--", sys.executable, str(FAKE), "mismatch", str(log)],
        input='{"method": "app.health"}\n',
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 2 and "protocol 10" in done.stderr and done.stdout == ""
    assert [r["method"] for r in received(log)] == ["app.handshake"]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("PROTOCOL_VERSION", "PROTOCOL_VERSION"),
        ("MAX_LINE_BYTES", "MAX_LINE_BYTES"),
        ("CLIENT_NAME", "HANDSHAKE_CLIENT"),
    ],
)
def test_client_and_checker_read_the_same_bounds(ours: str, theirs: str) -> None:
    assert getattr(reference, ours) == getattr(checker, theirs)


def test_client_retry_delays_match_the_checker() -> None:
    assert [round(d * 1000) for d in reference.RETRY_DELAYS_S] == list(checker.RETRY_DELAYS_MS)
