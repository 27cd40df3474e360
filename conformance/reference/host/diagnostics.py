"""Bounded diagnostics: what the host tells its embedder about a child.

Every diagnostic is a small frozen record; each extension keeps a ring of the
most recent ones, so a child that floods (stderr, bad frames, stale ids)
costs a bounded amount of memory however long it runs.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """``kind`` is a stable machine-readable tag (see KINDS); ``message`` is for people."""

    extension: str
    generation: int
    kind: str
    message: str


# The tags this host emits; an embedder may match on them.
KINDS = (
    "stderr",  # a line (or a bounded piece of one) the child wrote on stderr (§0)
    "bad-frame",  # stdout carried something that is not a JSON-RPC message (§0)
    "oversized-frame",  # a stdout line crossed the frame bound (§0)
    "stale-response",  # a response to a tombstoned or never-issued id (§1.9)
    "cancel-grace",  # a cancelled request did not settle within the grace (§1.9)
    "child-request-refused",  # an extension-originated request was refused (§2)
    "progress-ignored",  # $/progress for an inactive request or out of sequence (§2.6)
    "notification-refused",  # an unnegotiated / malformed Wave-1 notification (§1.11)
    "invalid-result",  # a result that breaks its method's rules was refused (§1.2-§1.7)
    "initialize-rejected",  # the initialize response broke a §1.1 rule
    "exit",  # the child exited or was killed
    "shutdown",  # a shutdown stage timed out (§1.8)
    "supervisor",  # backoff, restart, park (§5)
    "presentation-throttled",  # snapshots over the §2.5 rate were coalesced (one per window)
)

DiagnosticSink = Callable[[Diagnostic], None]


def truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + "…"


class DiagnosticRing:
    """The most recent ``capacity`` diagnostics, plus a count of all."""

    def __init__(self, capacity: int) -> None:
        self._items: collections.deque[Diagnostic] = collections.deque(maxlen=capacity)
        self.total = 0

    def add(self, diagnostic: Diagnostic) -> None:
        self._items.append(diagnostic)
        self.total += 1

    def recent(self) -> list[Diagnostic]:
        return list(self._items)
