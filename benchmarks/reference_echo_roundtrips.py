"""Serial echo round trips per second against the reference extension.

Usage: PYTHONPATH=. python benchmarks/reference_echo_roundtrips.py [--api-version 0.2] [--seconds 2]
One request in flight at a time: each echo is sent only after the previous
answer was read, so this measures per-request latency, not throughput.
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-version", default="0.2")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    command = [sys.executable, "-m", "conformance.reference.extension", "--api-version", args.api_version]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    fd, buffer = proc.stdout.fileno(), bytearray()

    def call(request_id: int, method: str, params: dict[str, object]) -> None:
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        proc.stdin.write(json.dumps(frame).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        assert json.loads(read_line(fd, buffer))["id"] == request_id

    try:
        params: dict[str, object] = {"api_version": args.api_version}
        if args.api_version != "0.1":  # §1.1: API 0.1 has no protocol member
            required = ["request_cancellation", "content_parts"]
            params["protocol"] = {"version": args.api_version, "required_features": required}
        call(0, "initialize", params)
        count, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < args.seconds:
            count += 1
            call(count, "tool/call", {"name": "echo", "arguments": {"text": "ping"}})
        print(f"{count} serial echo round trips in {elapsed:.2f} s = {count / elapsed:.0f}/s (API {args.api_version})")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
