"""When each harness frame is written, relative to what the target wrote.

A :class:`Schedule` is data: a sequence of :class:`Write` s, each carrying one
or more frames (several frames in one write = *coalesced*), optionally held
until the target has written N more frames or until named requests are
answered (*delay until frame N*, *hold*), optionally cut into pieces written
separately (*split at byte K*); the order of the writes is the *order* (any
reordering is just another schedule). Peers execute schedules (see
``ExtensionHostPeer.perform``); strategies generate them
(``conformance.strategies.schedules``); traces record their effect, and replay
re-executes them with the same holds. Nothing here does I/O, so the same
schedules serve the harness whichever role it plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["request", "cancel", "unreadable", "raw"]


@dataclass(frozen=True)
class Outgoing:
    """One frame the harness will write, and what it means (registered with
    the session only when it is actually written)."""

    data: bytes
    kind: Kind = "raw"
    id: Any = None
    method: str | None = None
    params: Any = None
    intent: str | None = None


@dataclass(frozen=True)
class Write:
    frames: tuple[Outgoing, ...]
    after: int = 0  # hold until this many more target frames were observed (since the schedule began)
    awaits: tuple[Any, ...] = ()  # hold until these requests are answered
    split_at: tuple[int, ...] = ()  # byte offsets (sorted, inside the data) where the write is cut

    @property
    def data(self) -> bytes:
        return b"".join(f.data for f in self.frames)

    def pieces(self) -> list[bytes]:
        data = self.data
        cuts = [0, *(k for k in self.split_at if 0 < k < len(data)), len(data)]
        return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


@dataclass(frozen=True)
class Schedule:
    writes: tuple[Write, ...]

    @property
    def frames(self) -> tuple[Outgoing, ...]:
        return tuple(f for w in self.writes for f in w.frames)
