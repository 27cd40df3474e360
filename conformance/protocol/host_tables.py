"""Transition tables of a host as the probe extension sees it (pure data).

How to use: :mod:`.host_session` looks every event up here; a property test
feeds every state x input. Each table maps ``(state, input)`` to ``(next
state, requirement the host broke or None)``. A missing key is a misuse by
the harness itself (:class:`LocalProtocolError`), never a verdict on the
host: the probe cannot, for instance, answer an initialize it never got.

Lifecycle of one generation (§5), seen from the probe's side of the pipe::

    STARTING --initialize--> INITIALIZING --probe answers, acceptable--> READY
                                  |                                        |
                                  +--probe answers, must be refused--> REJECTED
                                                                           |
                     READY --shutdown--> DRAINING --EOF/exit--> STOPPED    |
                     READY --cancel grace expired--> DEGRADED              |
                     any live state --probe exits on its own--> CRASHED    |

What the probe can judge from the states: nothing before initialize (§1.1),
nothing but shutdown/teardown while initialize is unanswered, nothing routed
to a child whose initialize must be refused (§1.1), no new request after the
shutdown request (§1.8), and stdin closed only as teardown (§0, §1.8).

Per host request (a request the host wrote to the probe)::

    PENDING --cancel--> CANCEL_SENT --probe answers--> TOMBSTONED
       |                                                   ^
    probe answers --> ANSWERED --cancel (raced the answer)-+

A second ``$/cancelRequest`` for the same id breaks §1.9 in every state.

Per child request (a request the probe wrote to the host)::

    OUTSTANDING --parent settled--> ORPHANED (the host owes a cancel, §2)
         |  \\                          |
      answer  cancel --> CANCELLED <----+ cancel
         v                  | answer
      ANSWERED        CANCELLED_ANSWERED
"""

from __future__ import annotations

import enum


class LocalProtocolError(RuntimeError):
    """The harness misused the session (a bug in the suite, not the host)."""


class Life(enum.Enum):
    STARTING = "starting"
    INITIALIZING = "initializing"
    READY = "ready"
    REJECTED = "rejected"
    DRAINING = "draining"
    DEGRADED = "degraded"
    STOPPED = "stopped"
    CRASHED = "crashed"


class LifeInput(enum.Enum):
    INITIALIZE = "initialize"  # the host wrote an initialize request
    REQUEST = "request"  # any other request but shutdown
    NOTIFICATION = "notification"
    SHUTDOWN = "shutdown"  # the host wrote a shutdown request
    ANSWER = "answer"  # the host answered a probe child request
    ACCEPTABLE = "acceptable"  # the probe answered initialize with a result the host may accept
    UNACCEPTABLE = "unacceptable"  # ... with one (or an error) the host must refuse
    GRACE_EXPIRED = "grace-expired"  # a cancelled request stayed unsettled past the §1.9 grace
    STDIN_CLOSED = "stdin-closed"  # EOF on the probe's stdin while the host still runs
    HOST_GONE = "host-gone"  # the host process itself ended (transport loss)
    PROBE_EXITED = "probe-exited"  # the probe exited by itself (scripted crash or after the ack)
    PROBE_KILLED = "probe-killed"  # the host killed the probe's process group


L, LI = Life, LifeInput
_FRAMES = (LI.INITIALIZE, LI.REQUEST, LI.NOTIFICATION, LI.SHUTDOWN, LI.ANSWER)
_ENDINGS = {LI.STDIN_CLOSED: L.STOPPED, LI.HOST_GONE: L.STOPPED, LI.PROBE_KILLED: L.STOPPED, LI.PROBE_EXITED: L.CRASHED}

Step = tuple[Life, str | None]


def _lifecycle() -> dict[tuple[Life, LifeInput], Step]:
    t: dict[tuple[Life, LifeInput], Step] = {}
    for state in (L.STARTING, L.INITIALIZING, L.READY, L.REJECTED, L.DRAINING, L.DEGRADED):
        for event, end in _ENDINGS.items():
            t[(state, event)] = (end, None)
    t.update(
        {
            (L.STARTING, LI.INITIALIZE): (L.INITIALIZING, None),
            (L.STARTING, LI.REQUEST): (L.STARTING, "EXT-1.1-host-initialize-first"),
            (L.STARTING, LI.NOTIFICATION): (L.STARTING, "EXT-1.1-host-initialize-first"),
            (L.STARTING, LI.SHUTDOWN): (L.DRAINING, "EXT-1.1-host-initialize-first"),
            (L.STARTING, LI.ANSWER): (L.STARTING, None),  # to a child the probe sent too early
            (L.INITIALIZING, LI.INITIALIZE): (L.INITIALIZING, "EXT-1.1-host-awaits-initialize"),
            (L.INITIALIZING, LI.REQUEST): (L.INITIALIZING, "EXT-1.1-host-awaits-initialize"),
            (L.INITIALIZING, LI.NOTIFICATION): (L.INITIALIZING, "EXT-1.1-host-awaits-initialize"),
            (L.INITIALIZING, LI.SHUTDOWN): (L.DRAINING, None),  # giving up on the child is fine
            (L.INITIALIZING, LI.ANSWER): (L.INITIALIZING, None),
            (L.INITIALIZING, LI.ACCEPTABLE): (L.READY, None),
            (L.INITIALIZING, LI.UNACCEPTABLE): (L.REJECTED, None),
            # §1.1 does not forbid a second initialize to a ready child.
            (L.READY, LI.INITIALIZE): (L.READY, None),
            (L.READY, LI.REQUEST): (L.READY, None),
            (L.READY, LI.NOTIFICATION): (L.READY, None),
            (L.READY, LI.SHUTDOWN): (L.DRAINING, None),
            (L.READY, LI.ANSWER): (L.READY, None),
            (L.READY, LI.GRACE_EXPIRED): (L.DEGRADED, None),
            (L.READY, LI.STDIN_CLOSED): (L.STOPPED, "EXT-0-host-graceful-shutdown-request"),
            (L.REJECTED, LI.INITIALIZE): (L.REJECTED, "EXT-1.1-host-rejected-child-isolated"),
            (L.REJECTED, LI.REQUEST): (L.REJECTED, "EXT-1.1-host-rejected-child-isolated"),
            (L.REJECTED, LI.NOTIFICATION): (L.REJECTED, "EXT-1.1-host-rejected-child-isolated"),
            (L.REJECTED, LI.SHUTDOWN): (L.DRAINING, None),  # cleanup of a refused child
            (L.REJECTED, LI.ANSWER): (L.REJECTED, None),
            (L.DRAINING, LI.INITIALIZE): (L.DRAINING, "EXT-1.8-host-nothing-after-shutdown"),
            (L.DRAINING, LI.REQUEST): (L.DRAINING, "EXT-1.8-host-nothing-after-shutdown"),
            (L.DRAINING, LI.SHUTDOWN): (L.DRAINING, "EXT-1.8-host-nothing-after-shutdown"),
            # Cancellations and lifecycle terminals may trail the request (§1.8, §5).
            (L.DRAINING, LI.NOTIFICATION): (L.DRAINING, None),
            (L.DRAINING, LI.ANSWER): (L.DRAINING, None),
            (L.DRAINING, LI.GRACE_EXPIRED): (L.DEGRADED, None),
            (L.DRAINING, LI.PROBE_EXITED): (L.STOPPED, None),  # the expected exit after the ack
            # A degraded generation is about to be terminated (§1.9); its
            # termination is judged by the clock owner, not by frames.
            (L.DEGRADED, LI.INITIALIZE): (L.DEGRADED, None),
            (L.DEGRADED, LI.REQUEST): (L.DEGRADED, None),
            (L.DEGRADED, LI.NOTIFICATION): (L.DEGRADED, None),
            (L.DEGRADED, LI.SHUTDOWN): (L.DEGRADED, None),
            (L.DEGRADED, LI.ANSWER): (L.DEGRADED, None),
            (L.DEGRADED, LI.GRACE_EXPIRED): (L.DEGRADED, None),
        }
    )
    for state in (L.STOPPED, L.CRASHED):
        for event in _ENDINGS:
            t[(state, event)] = (state, None)  # a second report of the same end
    return t


LIFECYCLE: dict[tuple[Life, LifeInput], Step] = _lifecycle()
LIVE = frozenset({L.READY, L.DRAINING, L.DEGRADED})
FRAMES = frozenset(_FRAMES)
ENDINGS = frozenset(_ENDINGS)


def exercised(state: Life, event: LifeInput) -> tuple[str, ...]:
    """The lifecycle rules a step evaluates, violated or not: a well-behaved
    host gets ``pass`` for them, not ``untested``."""
    out: list[str] = []
    if state is L.STARTING and event in FRAMES:
        out.append("EXT-1.1-host-initialize-first")
    if state is L.INITIALIZING and event in FRAMES:
        out.append("EXT-1.1-host-awaits-initialize")
    if event is LI.SHUTDOWN or (state is L.DRAINING and event in FRAMES):
        out.append("EXT-1.8-host-nothing-after-shutdown")
    if event in ENDINGS and state in (L.READY, L.DRAINING, L.DEGRADED):
        out.append("EXT-0-host-graceful-shutdown-request")
    return tuple(out)


class Call(enum.Enum):
    """A request the host wrote to the probe."""

    PENDING = "pending"
    CANCEL_SENT = "cancel-sent"
    ANSWERED = "answered"
    TOMBSTONED = "tombstoned"


class CallInput(enum.Enum):
    CANCEL = "cancel"  # the host wrote $/cancelRequest for it
    ANSWER = "answer"  # the probe answered it


C, CI = Call, CallInput
CALL: dict[tuple[Call, CallInput], tuple[Call, str | None]] = {
    (C.PENDING, CI.CANCEL): (C.CANCEL_SENT, None),
    (C.PENDING, CI.ANSWER): (C.ANSWERED, None),
    (C.CANCEL_SENT, CI.CANCEL): (C.CANCEL_SENT, "EXT-1.9-host-one-cancel-notification"),
    (C.CANCEL_SENT, CI.ANSWER): (C.TOMBSTONED, None),  # a late answer the host must ignore
    (C.ANSWERED, CI.CANCEL): (C.TOMBSTONED, None),  # the cancel raced the answer
    (C.ANSWERED, CI.ANSWER): (C.ANSWERED, None),  # the probe may answer twice on purpose
    (C.TOMBSTONED, CI.CANCEL): (C.TOMBSTONED, "EXT-1.9-host-one-cancel-notification"),
    (C.TOMBSTONED, CI.ANSWER): (C.TOMBSTONED, None),
}
# The host still waits for these (they hold a concurrency slot, §0).
OPEN_CALLS = frozenset({C.PENDING})
CANCELLED_CALLS = frozenset({C.CANCEL_SENT, C.TOMBSTONED})


class Child(enum.Enum):
    """A request the probe wrote to the host."""

    OUTSTANDING = "outstanding"
    ORPHANED = "orphaned"  # its parent settled; the host owes a cancel (§2)
    CANCELLED = "cancelled"
    ANSWERED = "answered"
    CANCELLED_ANSWERED = "cancelled-answered"


class ChildInput(enum.Enum):
    ANSWER = "answer"  # the host answered it
    CANCEL = "cancel"  # the host wrote $/cancelRequest for it
    PARENT_SETTLED = "parent-settled"  # the probe answered the parent request


K, KI = Child, ChildInput
CHILD: dict[tuple[Child, ChildInput], tuple[Child, str | None]] = {
    (K.OUTSTANDING, KI.ANSWER): (K.ANSWERED, None),
    (K.OUTSTANDING, KI.CANCEL): (K.CANCELLED, None),
    (K.OUTSTANDING, KI.PARENT_SETTLED): (K.ORPHANED, None),
    (K.ORPHANED, KI.ANSWER): (K.ANSWERED, None),
    (K.ORPHANED, KI.CANCEL): (K.CANCELLED, None),
    (K.ORPHANED, KI.PARENT_SETTLED): (K.ORPHANED, None),
    (K.CANCELLED, KI.ANSWER): (K.CANCELLED_ANSWERED, None),
    (K.CANCELLED, KI.CANCEL): (K.CANCELLED, "EXT-1.9-host-one-cancel-notification"),
    (K.CANCELLED, KI.PARENT_SETTLED): (K.CANCELLED, None),
    (K.ANSWERED, KI.ANSWER): (K.ANSWERED, "JSONRPC-5-host-one-response"),
    (K.ANSWERED, KI.CANCEL): (K.ANSWERED, None),  # harmless: nothing left to cancel
    (K.ANSWERED, KI.PARENT_SETTLED): (K.ANSWERED, None),
    (K.CANCELLED_ANSWERED, KI.ANSWER): (K.CANCELLED_ANSWERED, "JSONRPC-5-host-one-response"),
    (K.CANCELLED_ANSWERED, KI.CANCEL): (K.CANCELLED_ANSWERED, "EXT-1.9-host-one-cancel-notification"),
    (K.CANCELLED_ANSWERED, KI.PARENT_SETTLED): (K.CANCELLED_ANSWERED, None),
}
UNRESOLVED_CHILDREN = frozenset({K.OUTSTANDING, K.ORPHANED})
