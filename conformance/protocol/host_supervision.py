"""§5 reload and supervision, judged on what the probe and the driver showed (pure data).

How to use: the lifecycle scenarios (:mod:`conformance.scenarios.host_lifecycle`)
watch a reload or a crash and build a record; each judge here takes one
record and yields violations::

    recorder.add(restarted(RestartWatch(relaunched=False, waited_s=10.5)))
    recorder.add(drained(DrainWatch(drain_s=0.3, first_end_s=0.01, ended="cancel")))

:class:`conformance.protocol.host_session.ProbeSession` calls
:func:`replayed` on every request of a generation that follows one which
left calls unresolved, with :func:`replay_key` naming the operation.

What is judged, and what is left alone (the readings are in docs/catalog.md):

* a generation that initialized and then died unexpectedly is restarted:
  at least one attempt, whatever its delay (the delay is EXT-5-host-backoff's);
* a reload's drain lasts at least the drain the driver was given: no
  in-flight call of N ends (cancelled, failed) sooner than that after the
  probe answered N+1's initialize -- the host cannot start draining N before
  it read that answer, so the measured gap only overstates the host's wait;
  without a ``drain_ms`` (the text gives no number) the length is not judged;
* a call N left unresolved (the probe never answered it) is never sent again
  to a later generation unless the harness asked for an identical one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .members import excerpt
from .violations import Violation, rule

# Operations with effects: a replay of one of these could run it twice.
# Collections and renders are side-effect free (§1.5-§1.7) and not judged.
REPLAYABLE = frozenset({"tool/call", "command/execute"})


def replay_key(method: str, params: Any) -> tuple[str, str] | None:
    """What makes two requests the same operation: the method, the tool or
    command name and its arguments (the host's own context, ids and catalog
    revision differ between generations). None for other methods."""
    if method not in REPLAYABLE or not isinstance(params, dict):
        return None
    return method, json.dumps([params.get("name"), params.get("arguments")], sort_keys=True, default=repr)


@rule("EXT-5-host-no-replay-on-reload")
def replayed(key: tuple[str, str], *, unresolved: frozenset[tuple[str, str]], licensed: int) -> Iterator[Violation]:
    """§5 (and §1.9: an ambiguous unsafe operation is never replayed): a
    request on a new generation that repeats an operation an earlier
    generation left unresolved is a replay, unless the harness asked the
    host for that operation again (``licensed``: such requests not yet seen)."""
    if key in unresolved and licensed <= 0:
        method, what = key
        yield Violation(
            "EXT-5-host-no-replay-on-reload",
            f"{method} {excerpt(what)} repeats a call an earlier generation left unresolved; nobody asked for it again",
        )


@dataclass(frozen=True)
class RestartWatch:
    """After the probe of a ready generation crashed: whether the host started
    it again (a new probe connected) within ``waited_s``, and whether the
    driver reported the extension ``parked`` meanwhile."""

    relaunched: bool
    waited_s: float
    parked: bool = False


@rule("EXT-5-host-restarts-after-exit")
def restarted(watch: RestartWatch) -> Iterator[Violation]:
    """§5: after an unexpected exit of a generation that initialized, the
    supervisor backs off and attempts a reload; a fresh extension has its
    whole budget of attempts, and a crash is no permanent error, so at least
    one attempt is owed."""
    if watch.relaunched:
        return
    how = "parked it instead" if watch.parked else "never started it again"
    yield Violation(
        "EXT-5-host-restarts-after-exit",
        f"after the first unexpected exit of a ready generation the host {how}",
    )


@dataclass(frozen=True)
class DrainWatch:
    """A reload with calls in flight on generation N: the drain the driver was
    given (``drain_s``), and the seconds from the probe answering N+1's
    initialize to the first sign that an in-flight call of N ended other than
    by its answer (``first_end_s``; None: none before N's shutdown request),
    with what that sign was (``ended``: ``"cancel"``, ``"cancelled"``, ``"failed"``)."""

    drain_s: float
    first_end_s: float | None
    ended: str = ""


@rule("EXT-5-host-reload-drain-sequence")
def drained(watch: DrainWatch) -> Iterator[Violation]:
    """§5: N is marked draining and its calls get the bounded drain before the
    remainder is cancelled: cancelling (or failing) them at once is no drain."""
    if watch.first_end_s is None or watch.first_end_s >= watch.drain_s:
        return
    sign = {"cancel": "got a $/cancelRequest", "cancelled": "settled cancelled"}.get(watch.ended, "settled failed")
    yield Violation(
        "EXT-5-host-reload-drain-sequence",
        f"an in-flight call of generation N {sign} before the drain it was given ran out",
    )
