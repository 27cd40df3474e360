"""What a peer needs from a running target, whether a process or simulated.

The interface and the events it yields live here; the concrete transports
(:mod:`.process`, :mod:`.simulated`) import them, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from conformance.protocol.framing import FrameEvent


@dataclass(frozen=True)
class Received:
    """One frame event from the target's stdout, with when it arrived."""

    event: FrameEvent
    at: float


@dataclass(frozen=True)
class StdoutClosed:
    at: float


class Target(Protocol):
    bytes_written: int

    @property
    def stderr_total(self) -> int:
        """Bytes the target wrote to stderr so far."""

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
