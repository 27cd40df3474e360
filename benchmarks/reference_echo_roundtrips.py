"""Serial echo round trips per second against the reference extension.

Usage: PYTHONPATH=. python benchmarks/reference_echo_roundtrips.py [--api-version 0.2] [--seconds 2]
One request in flight at a time: each echo is sent only after the previous
answer was read, so this measures per-request latency, not throughput. The
client is as thin as a client can be (no validation), so next to the raw
echo pair and the harness it tells what the reference itself costs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def read_line(fd: int, buffer: bytearray) -> bytes:
    while (newline := buffer.find(b"\n")) < 0:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("extension closed stdout")
        buffer += chunk
    line = bytes(buffer[:newline])
    del buffer[: newline + 1]
    return line


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class ReferenceClient:
    """The reference extension behind a bare pipe client; a context manager."""

    def __init__(self, api_version: str = "0.2") -> None:
        command = [sys.executable, "-m", "conformance.reference.extension", "--api-version", api_version]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._fd, self._buffer, self._next = self.proc.stdout.fileno(), bytearray(), 0
        params: dict[str, object] = {"api_version": api_version}
        if api_version != "0.1":  # §1.1: API 0.1 has no protocol member
            required = ["request_cancellation", "content_parts"]
            params["protocol"] = {"version": api_version, "required_features": required}
        self.call("initialize", params)

    def call(self, method: str, params: dict[str, object]) -> None:
        self._next += 1
        frame = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()
        assert json.loads(read_line(self._fd, self._buffer))["id"] == self._next

    def serial_echoes(self, seconds: float) -> tuple[int, float]:
        """(round trips, elapsed seconds) of back-to-back echo calls."""
        count, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            count += 1
            self.call("tool/call", {"name": "echo", "arguments": {"text": "ping"}})
        return count, elapsed

    def __enter__(self) -> ReferenceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-version", default="0.2")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    with ReferenceClient(args.api_version) as client:
        before = process_cpu_s(client.proc.pid)
        count, elapsed = client.serial_echoes(args.seconds)
        after = process_cpu_s(client.proc.pid)
    cpu = f", reference CPU {(after - before) / count * 1e6:.0f} us each" if before is not None and after else ""
    print(f"{count} serial echo round trips in {elapsed:.2f} s = {count / elapsed:.0f}/s (API {args.api_version}){cpu}")


if __name__ == "__main__":
    main()
