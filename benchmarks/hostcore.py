"""The reference host-core: Read round trips per second beside the raw echo pair,
and the peak RSS growth while it drains an oversized line.

Usage: PYTHONPATH=. python benchmarks/hostcore.py [--seconds 2] [--line-mib 128] [--json out.json]

* ``read_rps``: serial tools.execute Read calls (one in flight at a time)
  against a session whose project holds a small file; ``echo_rps``: the raw
  echo pair (benchmarks/echo_child.py) measured in the same run, so the
  ratio means something on a noisy machine.
* ``drain``: after the handshake, one request line of ``--line-mib`` MiB is
  written (over the 64 MiB bound) and the LIMIT_EXCEEDED answer awaited;
  the host-core's peak RSS (VmHWM) minus its RSS before is the growth. Issue
  10's goal for a 128 MiB line is under 16 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MIB = 1024 * 1024


def read_line(fd: int, buffer: bytearray) -> bytes:
    while (newline := buffer.find(b"\n")) < 0:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("peer closed stdout")
        buffer += chunk
    line = bytes(buffer[:newline])
    del buffer[: newline + 1]
    return line


class Pipe:
    def __init__(self, command: list[str]) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._fd, self._buffer, self._next = self.proc.stdout.fileno(), bytearray(), 0

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self._next += 1
        self.write(
            json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}).encode() + b"\n"
        )
        while True:
            message = json.loads(read_line(self._fd, self._buffer))
            if message.get("id") == self._next:
                return message

    def read(self) -> Any:
        return json.loads(read_line(self._fd, self._buffer))

    def status_kib(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
        raise KeyError(field)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def serial_rate(seconds: float, once: Any) -> float:
    count, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        once()
        count += 1
    return count / elapsed


def echo_rps(seconds: float) -> float:
    pipe = Pipe([sys.executable, str(HERE / "echo_child.py")])
    try:
        return serial_rate(seconds, lambda: pipe.call("echo", {"text": "ping"}))
    finally:
        pipe.close()


def hostcore(work: Path) -> Pipe:
    pipe = Pipe([sys.executable, "-m", "conformance.reference.hostcore", "--data-dir", str(work / "data")])
    hello = {"protocolVersion": 11, "client": "electron-main", "clientVersion": "bench"}
    assert "result" in pipe.call("app.handshake", hello)
    return pipe


def read_rps(seconds: float, work: Path) -> float:
    project = work / "project"
    project.mkdir()
    (project / "file.txt").write_text("hello\n" * 20)
    pipe = hostcore(work)
    try:
        session = pipe.call("session.create", {"projectPath": str(project), "permissionMode": "ask"})
        sid = session["result"]["session"]["id"]
        calls = iter(range(1 << 62))

        def once() -> None:
            params = {
                "sessionId": sid,
                "toolCallId": f"c{next(calls)}",
                "toolName": "Read",
                "args": {"path": "file.txt"},
            }
            assert pipe.call("tools.execute", params)["result"]["ok"] is True

        return serial_rate(seconds, once)
    finally:
        pipe.close()


def drain(line_mib: int, work: Path) -> dict[str, float]:
    pipe = hostcore(work)
    try:
        before = pipe.status_kib("VmRSS:")
        block = b"x" * MIB
        started = time.perf_counter()
        pipe.write(b'{"jsonrpc":"2.0","id":"big","method":"app.health","params":{"pad":"')
        for _ in range(line_mib):
            pipe.write(block)
        pipe.write(b'"}}\n')
        answer = pipe.read()
        seconds = time.perf_counter() - started
        assert answer["id"] == "big" and answer["error"]["data"]["errorCode"] == "LIMIT_EXCEEDED", answer
        growth = (pipe.status_kib("VmHWM:") - before) / 1024
        return {"line_mib": line_mib, "seconds": round(seconds, 3), "peak_rss_growth_mib": round(growth, 2)}
    finally:
        pipe.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--line-mib", type=int, default=128)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        echo = echo_rps(args.seconds)
        (Path(tmp) / "r").mkdir()
        reads = read_rps(args.seconds, Path(tmp) / "r")
        (Path(tmp) / "d").mkdir()
        drained = drain(args.line_mib, Path(tmp) / "d")
    report = {
        "echo_rps": round(echo),
        "read_rps": round(reads),
        "read_vs_echo": round(reads / echo, 3),
        "drain": drained,
        "load_avg": os.getloadavg()[0],
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
