"""What a peer needs from a running target, whether a process or simulated."""

from __future__ import annotations

from typing import Protocol

from conformance.transport.process import Received, StdoutClosed


class Target(Protocol):
    bytes_written: int
    stderr_total: int

    def now(self) -> float:
        """The clock every timestamp of this target is on."""

    def next_event(self, timeout: float) -> Received | StdoutClosed | None: ...

    def write(self, data: bytes, *, timeout: float) -> None: ...

    def close_stdin(self) -> None: ...

    def wait_exit(self, timeout: float) -> int | None: ...

    def kill_group(self) -> None: ...

    def running(self) -> bool: ...

    def group_alive(self) -> bool: ...

    def stderr_excerpt(self, limit: int = 2048) -> str: ...
