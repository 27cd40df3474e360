"""Ending a run on SIGINT, SIGTERM or SIGHUP (a CI cancel, ``timeout``, a
closed terminal) quickly and without a false word.

The handler stops all spawning, kills every live target's process tree and
raises :class:`~conformance.transport.process.Stopping`, a KeyboardInterrupt:
Hypothesis re-raises those (a SystemExit it would take for a failing example,
replay and shrink, spawning new targets). Nothing catches it on the way up,
so no verdict, trace or regression case comes from the interrupted part; the
command line ends with status 128 + the signal number.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

from conformance.transport.process import (
    Stopping,
    kill_orphans,
    kill_spawned_groups,
    spawning_stopped,
    stop_spawning,
)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if spawning_stopped() is not None:
        return  # already stopping: a second signal must not break the clean-up
    stop_spawning(signum)
    kill_spawned_groups()
    raise Stopping(signum)


def install() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_signal)
    sys.unraisablehook = _quiet_when_stopping


def _quiet_when_stopping(unraisable: Any) -> None:
    """The handler's raise can land where Python cannot propagate it (a gc
    callback, ``__del__``): it is dropped there, and Python would print a
    traceback for it. The stop still happens (spawning is refused, and no
    result is committed: raise_if_stopping), so print nothing."""
    if isinstance(unraisable.exc_value, Stopping):
        return
    sys.__unraisablehook__(unraisable)


def finish(exc: Stopping) -> tuple[int, str]:
    """After the stop unwound the run: kill what is left, then the exit status
    and the one line to print."""
    stop_spawning(exc.signum)
    kill_spawned_groups()
    kill_orphans()
    name = signal.Signals(exc.signum).name
    notes = "; ".join(getattr(exc, "__notes__", []))
    return 128 + exc.signum, f"octet-conformance: stopped by {name}; every target killed" + (
        f"; {notes}" if notes else ""
    )
