"""The restart policy of §5, sans-IO: when to retry, how long to wait, when to park.

* delay: full jitter -- uniform in [0, min(cap, base * 2**attempt)] with a
  250 ms base and a 30 s cap;
* eight failed restart attempts park the extension -- an attempt counts as
  failed unless its generation then stays ready for 30 s, so a child that
  initializes and dies at once exhausts the budget like one that never
  initializes;
* 30 s continuously ready resets the budget;
* a permanent manifest/version/re-registration error parks at once;
* an extension that never initialized is not supervised (it is reported as
  a generation-0 parked entry instead).

The random source and the clock are the caller's, so tests run the policy on
a virtual clock with a seeded RNG.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .config import HostConfig


@dataclass
class RestartBudget:
    config: HostConfig
    rng: random.Random = field(default_factory=random.Random)
    failed: int = 0  # failed restart attempts since the budget was last reset
    parked: bool = False
    park_reason: str | None = None

    def on_unexpected_end(self, ready_since: float | None, now: float) -> None:
        """A live generation died. Long enough ready resets the budget."""
        if ready_since is not None and now - ready_since >= self.config.restarts.ready_reset_s:
            self.failed = 0

    def next_delay(self) -> float | None:
        """Seconds to wait before the next attempt, or None when parked."""
        if self.parked:
            return None
        if self.failed >= self.config.restarts.max_failed_restarts:
            self.park(f"{self.failed} failed restart attempts")
            return None
        ceiling = min(self.config.restarts.backoff_cap_s, self.config.restarts.backoff_base_s * (2**self.failed))
        return self.rng.uniform(0.0, ceiling)

    def on_attempt(self) -> None:
        self.failed += 1

    def on_attempt_failed(self, *, permanent: bool, reason: str) -> None:
        if permanent:
            self.park(f"permanent error: {reason}")

    def park(self, reason: str) -> None:
        self.parked = True
        self.park_reason = reason

    def revive(self) -> None:
        """§5: a manual generation change revives a parked watcher."""
        self.parked = False
        self.park_reason = None
        self.failed = 0
