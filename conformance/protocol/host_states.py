"""The §5 lifecycle of each process generation, as the host reports it (pure data).

How to use (the harness feeds every ``state`` event of the host driver;
nothing here does I/O)::

    states = ReportedStates()
    findings = states.reported("ext-1", 2, "ready")    # Exercise / Violation of EXT-5-host-lifecycle-states

§5 draws one generation's life as a line with a branch::

    starting -> initializing -> ready -> draining -> stopped
                                  |          |
                                  +-> degraded/crashed

What this module judges: the order. A generation only moves forward along
that line, or off it to ``degraded``/``crashed``; nothing follows an end
(``stopped``, ``crashed``) but a repeat of the same report, and only an end
follows ``degraded`` (it is then terminated, §1.9). The driver contract
reports every transition, yet a host may coalesce two (a generation killed
while ready may be reported ``stopped`` without ``draining``): skipping
forward is never judged -- only going back, or leaving an end.

What it does not judge: supervisor states of the extension as a whole
(``backoff``, ``parked``) and a refused load (``rejected``) are not states of
one generation's line; they are ignored here. A crash before ``ready``
(the child died while initializing) is allowed: the text draws the branch
under the live states but no host can keep a dead child initializing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .violations import Exercise, Finding, Violation

LINE = ("starting", "initializing", "ready", "draining", "stopped")
ENDS = frozenset({"stopped", "crashed"})
# Reported about the extension, not about one generation's line.
NOT_GENERATION_STATES = frozenset({"backoff", "parked", "rejected"})

# (from, to) -> allowed. Built from the diagram: forward on the line (skips
# allowed, see above), any live or starting state -> degraded/crashed,
# degraded -> an end, an end -> the same end.
_RANK = {state: index for index, state in enumerate(LINE)}


def allowed(before: str, after: str) -> bool:
    """Whether a generation may be reported ``after`` right after ``before``."""
    if before == after:
        return True  # a repeated report changes nothing
    if before in ENDS:
        return False
    if before == "degraded":
        return after in ENDS
    if after in ("degraded", "crashed"):
        return True
    if before in _RANK and after in _RANK:
        return _RANK[after] > _RANK[before]
    return False


@dataclass
class ReportedStates:
    """The last reported state of every (extension, generation)."""

    last: dict[tuple[str, int], str] = field(default_factory=dict)

    def reported(self, extension: str, generation: int, state: str) -> list[Finding]:
        if state in NOT_GENERATION_STATES:
            return []
        key = (extension, generation)
        before = self.last.get(key)
        self.last[key] = state if before is None or allowed(before, state) else before
        out: list[Finding] = [Exercise("EXT-5-host-lifecycle-states")]
        if before is not None and not allowed(before, state):
            out.append(
                Violation(
                    "EXT-5-host-lifecycle-states",
                    f"generation {generation} of {extension[:80]!r} was reported {state!r} after {before!r}",
                )
            )
        return out
