"""The test's side of the wire for the reference host-core: a client stand-in.

Hand-written exchanges only (never the harness), so the reference and the
checker can disagree. Every read has a deadline and every process is started
in its own process group and killed by :meth:`HostcorePeer.kill`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODULE = "conformance.reference.hostcore"
READ_TIMEOUT_S = 10.0

Message = dict[str, Any]


class HostcorePeer:
    def __init__(self, data_dir: Path, stderr_path: Path, *extra: str) -> None:
        self._stderr_path = stderr_path
        self._stderr = stderr_path.open("ab")
        env = dict(os.environ, PYTHONPATH=str(REPO))
        command = [sys.executable, "-m", MODULE, "--data-dir", str(data_dir), *extra]
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,  # its own process group, killed as a whole
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self._fd = self.proc.stdout.fileno()
        self._buffer = b""
        self._next_id = 1
        self.notifications: list[Message] = []
        self._answers: dict[Any, Message] = {}

    # -- writing -----------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Message | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        self.send_raw(json.dumps(message).encode() + b"\n")
        return request_id

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    # -- reading -----------------------------------------------------------------

    def read(self, timeout: float = READ_TIMEOUT_S) -> Message:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self._fd], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError(f"no complete line within {timeout} s (buffered {self._buffer[:200]!r})")
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                raise EOFError(f"stdout closed (buffered {self._buffer[:200]!r})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message = json.loads(line)
        assert isinstance(message, dict), line
        return message

    def read_until_eof(self, timeout: float = READ_TIMEOUT_S) -> list[Message]:
        out: list[Message] = []
        try:
            while True:
                out.append(self.read(timeout))
        except EOFError:
            return out

    def response_to(self, request_id: Any, timeout: float = READ_TIMEOUT_S) -> Message:
        """The response for ``request_id``. Notifications read meanwhile are
        kept in order; answers to other ids are kept for their own turn
        (tools.execute runs concurrently, so answers may overtake each other)."""
        deadline = time.monotonic() + timeout
        while request_id not in self._answers:
            message = self.read(max(deadline - time.monotonic(), 0))
            if "method" in message:
                self.notifications.append(message)
            else:
                assert message.get("id") not in self._answers, f"two answers for one id: {message}"
                self._answers[message.get("id")] = message
        return self._answers.pop(request_id)

    def call(self, method: str, params: Message | None = None) -> Message:
        return self.response_to(self.request(method, params))

    def result(self, method: str, params: Message | None = None) -> Any:
        response = self.call(method, params)
        assert "result" in response, response
        return response["result"]

    def error(self, method: str, params: Message | None = None) -> Message:
        response = self.call(method, params)
        assert "error" in response, response
        error: Message = response["error"]
        return error

    def pipeline(self, calls: list[tuple[str, Message]]) -> list[Message]:
        """Write every request at once, then read the answers in order."""
        ids = [self.request(method, params) for method, params in calls]
        return [self.response_to(request_id) for request_id in ids]

    def handshake(self) -> Message:
        return self.result(
            "app.handshake",
            {"protocolVersion": 11, "client": "electron-main", "clientVersion": "1.0.0", "locale": "en"},
        )

    def stderr_text(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")

    # -- ending ------------------------------------------------------------------

    def wait_exit(self, timeout: float = READ_TIMEOUT_S) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(READ_TIMEOUT_S)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._stderr.close()


Spawn = Callable[..., "HostcorePeer"]


def error_code(error: Message) -> tuple[int, str | None]:
    """(numeric code, data.errorCode) of a JSON-RPC error object."""
    data = error.get("data")
    return error["code"], data.get("errorCode") if isinstance(data, dict) else None
