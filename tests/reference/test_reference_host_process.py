"""The reference host over real pipes and process groups.

The reference extension at every API version, plus one small hostile script
(written to a temporary folder) whose behaviour is picked by its argv: it
floods stderr, leaves a SIGTERM-ignoring grandchild, never acknowledges
shutdown, or reports its environment and working directory. Every test ends
by proving that no process group it started is left.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.reference.host import CallWaits, HostConfig, LoadError, ProcessLauncher, ReferenceHost, ShutdownTiming
from conformance.reference.host.channel import ProcessChannel

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "conformance" / "reference" / "extension" / "manifests"

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time
    mode = sys.argv[1]
    if mode == "grandchild":
        subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
    if mode == "env":
        with open(sys.argv[2], "w") as out:
            json.dump({"env": dict(os.environ), "cwd": os.getcwd()}, out)
    if mode in ("flood-lines", "flood-raw"):
        piece = ("x" * 1000 + "\\n") if mode == "flood-lines" else "y" * 1001
        for _ in range(8000):  # 8 MB, far beyond any pipe buffer
            sys.stderr.write(piece)
        sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            tools = [{"name": "t", "description": "d", "parameters": {"type": "object"}}] if mode == "deaf" else []
            result = {"api_version": "0.2", "tools": tools, "commands": [],
                      "protocol": {"version": "0.2", "features": ["request_cancellation", "content_parts"],
                                   "limits": {"max_concurrent_requests": 1}}}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
            if mode == "deaf":  # never reads stdin again
                time.sleep(60)
            if mode == "orphan":  # a descendant keeps stdout open; the leader exits
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                sys.exit(3)
        elif method == "shutdown" and mode not in ("grandchild",):
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}), flush=True)
            break
    """
)


def group_gone(pgid: int) -> bool:
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def host() -> Iterator[ReferenceHost]:
    # Short stages: a hostile child costs tenths of a second, not 4 s.
    reference = ReferenceHost(
        config=HostConfig(shutdown=ShutdownTiming(stage_s=0.3), waits=CallWaits(request_timeout_s=10.0))
    )
    yield reference
    reference.shutdown()


def scripted(tmp: Path, mode: str, *extra: str, environment: str = "") -> Path:
    folder = tmp / mode
    folder.mkdir()
    (folder / "hostile.py").write_text(SCRIPT, encoding="utf-8")
    argv = json.dumps([sys.executable, "hostile.py", mode, *extra])
    capabilities = f"[capabilities]\nenvironment = {environment}\n" if environment else ""
    if mode == "deaf":
        capabilities = '[contributes]\ntools = ["t"]\n' + capabilities
    (folder / "extension.toml").write_text(
        f'name = "{mode}"\nversion = "1.0.0"\napi_version = "0.2"\nrequires_octet = "0.8.0"\n'
        f"command = {argv}\n{capabilities}",
        encoding="utf-8",
    )
    return folder / "extension.toml"


def pgid_of(host: ReferenceHost, name: str) -> int:
    pid = host.inspect(name).pid
    assert pid is not None
    return pid


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_reference_extension_round_trip_cancel_and_shutdown(host: ReferenceHost, api: str) -> None:
    status = host.load(MANIFESTS / f"api-{api}" / "extension.toml")
    pgid = pgid_of(host, status.name)
    assert host.call_tool(status.name, "echo", {"text": "hi"}).ok
    slow = host.start_tool(status.name, "slow", {"steps": 10, "delay_ms": 100})
    time.sleep(0.05)
    slow.cancel()
    assert slow.wait(0).status == "cancelled"
    assert host.call_tool(status.name, "echo", {"text": "after"}).ok
    host.shutdown()
    assert host.inspect(status.name).state == "stopped"
    assert group_gone(pgid)
    launcher = host.launcher
    assert isinstance(launcher, ProcessLauncher) and launcher.spawned == [pgid]


def test_a_grandchild_ignoring_sigterm_dies_with_the_group(host: ReferenceHost, tmp_path: Path) -> None:
    status = host.load(scripted(tmp_path, "grandchild"))
    pgid = pgid_of(host, status.name)
    started = time.monotonic()
    host.shutdown(status.name)  # no ack, no exit: both stages time out, then the group is killed
    assert time.monotonic() - started < 2.0
    assert group_gone(pgid)
    assert any(d.kind == "shutdown" for d in host.inspect(status.name).diagnostics)


@pytest.mark.parametrize("mode", ["flood-lines", "flood-raw"])
def test_a_stderr_flood_never_blocks_the_child_nor_grows_memory(host: ReferenceHost, tmp_path: Path, mode: str) -> None:
    status = host.load(scripted(tmp_path, mode))  # it floods before it can answer initialize
    assert status.state == "ready"
    connection = host._extensions[status.name].connection  # noqa: SLF001 -- inspecting the bound
    assert connection is not None
    deadline = time.monotonic() + 5.0
    while connection.log.stderr.total_bytes < 8_000_000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert connection.log.stderr.total_bytes >= 8_000_000
    kept = connection.log.diagnostics.recent()
    assert len(kept) <= host.config.memory.diagnostics_kept
    assert all(len(d.message.encode()) <= host.config.memory.stderr_line_bytes + 32 for d in kept)
    if mode == "flood-raw":  # no newline at all: one cut piece, the rest counted and dropped
        assert connection.log.diagnostics.total == 1


def test_environment_is_sanitized_and_cwd_is_the_manifest_folder(tmp_path: Path) -> None:
    report = tmp_path / "env.json"
    environ = {"PATH": os.environ["PATH"], "HOME": "/home/x", "API_TOKEN": "secret", "SSH_AUTH_SOCK": "/tmp/agent"}
    host = ReferenceHost(environ=environ, config=HostConfig(shutdown=ShutdownTiming(stage_s=0.3)))
    try:
        manifest = scripted(tmp_path, "env", str(report), environment='["SSH_AUTH_SOCK"]')
        host.load(manifest)
        seen = json.loads(report.read_text())
        assert seen["cwd"] == str(manifest.parent)
        assert "API_TOKEN" not in seen["env"] and seen["env"]["HOME"] == "/home/x"
        assert seen["env"]["SSH_AUTH_SOCK"] == "/tmp/agent"  # declared (§1.1) and present
    finally:
        host.shutdown()


def test_ssh_auth_sock_is_withheld_unless_declared(tmp_path: Path) -> None:
    report = tmp_path / "env.json"
    host = ReferenceHost(environ={"PATH": os.environ["PATH"], "SSH_AUTH_SOCK": "/tmp/agent"})
    try:
        host.load(scripted(tmp_path, "env", str(report)))
        assert "SSH_AUTH_SOCK" not in json.loads(report.read_text())["env"]
    finally:
        host.shutdown()


def test_a_missing_program_is_a_load_error_and_starts_nothing(host: ReferenceHost, tmp_path: Path) -> None:
    folder = tmp_path / "missing"
    folder.mkdir()
    (folder / "extension.toml").write_text(
        'name = "missing"\nversion = "1"\napi_version = "0.2"\nrequires_octet = "0.8.0"\ncommand = ["./nope"]\n'
    )
    with pytest.raises(LoadError, match="cannot start"):
        host.load(folder / "extension.toml")
    assert host.inspect("missing").parked


def test_the_process_channel_kill_is_idempotent(tmp_path: Path) -> None:
    host = ReferenceHost()
    status = host.load(MANIFESTS / "api-0.2" / "extension.toml")
    connection = host._extensions[status.name].connection  # noqa: SLF001
    assert connection is not None and isinstance(connection.channel, ProcessChannel)
    connection.channel.kill_group()
    connection.channel.kill_group()
    deadline = time.monotonic() + 5.0
    while host.inspect(status.name).state == "ready" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert host.inspect(status.name).state in ("crashed", "ready")  # the supervisor may already have restarted it
    host.shutdown()


def test_an_exit_is_noticed_even_when_a_descendant_holds_stdout_open(host: ReferenceHost, tmp_path: Path) -> None:
    status = host.load(scripted(tmp_path, "orphan"))
    host._extensions[status.name].supervised = False  # noqa: SLF001 -- no restarts: this test is about one exit
    first = host._extensions[status.name].connection  # noqa: SLF001 -- generation 1, before any restart
    assert first is not None
    assert first.wait_ended(5.0)
    assert first.state == "crashed" and "descendant" in (first.ending.reason or "")
    assert first.channel.pid is not None and group_gone(first.channel.pid)


def test_a_child_that_stops_reading_never_blocks_the_caller(host: ReferenceHost, tmp_path: Path) -> None:
    status = host.load(scripted(tmp_path, "deaf"))
    pgid = pgid_of(host, status.name)
    big = {"blob": "x" * (512 * 1024)}  # far more than a pipe holds
    started = time.monotonic()
    first = host.start_tool(status.name, "t", big)
    assert time.monotonic() - started < 1.0  # the caller did not wait for the pipe
    assert first.wait(0.3).status == "timeout"
    host.shutdown(status.name)  # ack and exit stages time out; the group is killed
    assert group_gone(pgid)
