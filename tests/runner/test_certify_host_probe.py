"""The probe and its harness side, with this test playing the host that spawns it.

Every process started here is killed by the fixtures, and each test checks
that the probe (and any grandchild) is gone at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.peers.probe import ProbeLink, ProbeListener
from conformance.protocol.framing import Frame, OversizedFrame
from conformance.transport.target import Received, StdoutClosed

TIMEOUT = 10.0


class MiniHost:
    """The smallest host: spawns the probe from its manifest, own process group."""

    def __init__(self, manifest: Path, env: dict[str, str]) -> None:
        import tomllib

        data = tomllib.loads(manifest.read_text())
        self.proc = subprocess.Popen(
            data["command"],
            cwd=manifest.parent,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def listener() -> Iterator[ProbeListener]:
    with ProbeListener() as made:
        yield made


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "ONLY_THIS": "1"}


@pytest.fixture
def spawned(listener: ProbeListener) -> Iterator[tuple[MiniHost, ProbeLink]]:
    manifest = listener.write_manifest("p1", api_version="0.2", contributes={"tools": ["probe"]})
    host = MiniHost(manifest, _env())
    try:
        link = listener.accept("p1", TIMEOUT)
        assert link is not None, "the probe never connected"
        yield host, link
    finally:
        host.kill()
    for pid in link.pids():
        _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state == "Z":  # dead, waiting for its new parent to reap it
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} outlived the test")


def _frames(link: ProbeLink, count: int) -> list[Frame | OversizedFrame]:
    out: list[Frame | OversizedFrame] = []
    while len(out) < count:
        item = link.next_event(TIMEOUT)
        assert isinstance(item, Received), f"expected a frame, got {item!r}"
        out.append(item.event)
    return out


def test_manifest_runs_the_probe_with_this_interpreter(listener: ProbeListener) -> None:
    path = listener.write_manifest("p9", api_version="0.4", contributes={"tools": ["a", "b"], "context": True})
    text = path.read_text()
    assert 'api_version = "0.4"' in text and 'tools = ["a", "b"]' in text and "context = true" in text
    assert f'command = ["{listener.script}", "--connect"' in text
    assert listener.script.read_text().startswith(f"#!{sys.executable}\n")


def test_hello_reports_identity_and_only_variable_names(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    assert link.pid == host.proc.pid and link.pgid == host.proc.pid  # its own group, as the host made it
    assert "ONLY_THIS" in link.hello["env"] and "1" not in link.hello["env"]
    assert Path(link.hello["cwd"]).name == "p1"


def test_host_bytes_become_frames_whole_split_and_crlf(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    assert host.proc.stdin is not None
    host.proc.stdin.write(b'{"a":1}\r\n{"b":')
    host.proc.stdin.flush()
    host.proc.stdin.write(b'2}\n{"c":3}')
    host.proc.stdin.close()  # a final frame without newline, then EOF
    frames = _frames(link, 3)
    assert [f.payload for f in frames if isinstance(f, Frame)] == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    assert [f.terminator for f in frames if isinstance(f, Frame)] == ["crlf", "lf", "eof"]
    assert isinstance(link.next_event(TIMEOUT), StdoutClosed)


def test_oversized_host_frame_is_bounded(listener: ProbeListener) -> None:
    manifest = listener.write_manifest("p2", api_version="0.2", contributes={})
    host = MiniHost(manifest, _env())
    try:
        link = listener.accept("p2", TIMEOUT)
        assert link is not None and host.proc.stdin is not None
        link.max_frame_bytes = 1000  # a small bound so the test stays cheap
        link.__post_init__()
        host.proc.stdin.write(b"x" * 5000 + b"\n{}\n")
        host.proc.stdin.flush()
        first, second = _frames(link, 2)
        assert isinstance(first, OversizedFrame) and first.size == 5000
        assert isinstance(second, Frame) and second.payload == b"{}"
    finally:
        host.kill()


def test_harness_bytes_reach_stdout_exactly(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    data = b'{"jsonrpc":"2.0","id":1,"result":{}}\n' * 3000  # several relay chunks
    link.write(data, timeout=TIMEOUT)
    link.close_stdin()
    assert host.proc.stdout is not None
    assert host.proc.stdout.read() == data  # nothing else, and EOF after close_stdout


@pytest.mark.parametrize("newlines", [True, False])
def test_stderr_flood_reports_when_drained(spawned: tuple[MiniHost, ProbeLink], newlines: bool) -> None:
    host, link = spawned
    link.command({"t": "flood", "bytes": 300_000, "newlines": newlines})
    assert host.proc.stderr is not None
    drained = host.proc.stderr.read1(1 << 20)
    total = len(drained)
    while total < 300_000:
        total += len(host.proc.stderr.read1(1 << 20))
    report = link.await_report("flooded", TIMEOUT)
    assert report is not None and report["bytes"] == total == 300_000
    assert (b"\n" in drained) is newlines


def test_exit_code_and_channel_end(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    link.command({"t": "exit", "code": 7})
    assert host.proc.wait(timeout=TIMEOUT) == 7
    assert link.wait_exit(TIMEOUT) == 0 and not link.running()
    assert isinstance(link.next_event(TIMEOUT), StdoutClosed)


def test_crash_is_sigkill(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    link.command({"t": "crash"})
    assert host.proc.wait(timeout=TIMEOUT) == -signal.SIGKILL


def test_ignored_sigterm_is_reported_and_survived(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    link.command({"t": "ignore_term"})
    assert link.await_report("ignoring", TIMEOUT) is not None
    os.kill(host.proc.pid, signal.SIGTERM)
    report = link.await_report("signal", TIMEOUT)
    assert report is not None and report["signum"] == signal.SIGTERM
    assert host.proc.poll() is None


def test_grandchild_ignores_sigterm_and_dies_with_the_group(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    link.command({"t": "grandchild"})
    report = link.await_report("grandchild", TIMEOUT)
    assert report is not None and os.getpgid(int(report["pid"])) == host.proc.pid
    # the fixture kills the group and then proves the grandchild is gone too


def test_closed_stdout_then_write_is_reported(spawned: tuple[MiniHost, ProbeLink]) -> None:
    host, link = spawned
    link.close_stdin()
    assert host.proc.stdout is not None and host.proc.stdout.read() == b""
    link.write(b"{}\n", timeout=TIMEOUT)
    assert link.await_report("stdout_broken", TIMEOUT) is not None and host.proc.poll() is None


def test_probe_exits_when_the_harness_goes(listener: ProbeListener) -> None:
    manifest = listener.write_manifest("p3", api_version="0.1", contributes={})
    host = MiniHost(manifest, _env())
    try:
        link = listener.accept("p3", TIMEOUT)
        assert link is not None
        link.sock.close()
        assert host.proc.wait(timeout=TIMEOUT) == 0
    finally:
        host.kill()


def test_probe_without_harness_fails_fast() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.probe", "--connect", "/nonexistent/s", "--token", "x"],
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 3 and proc.stdout == b"" and b"cannot reach the harness" in proc.stderr
