"""Checks on the notifications a host writes to an extension (§1.9-§1.11).

How to use: ``check_host_notification(method, params, negotiated=...,
shortcuts=...)`` yields the shape and gating rules of one notification frame
(paths relative to ``params``). Which ids a ``$/cancelRequest`` may name is
session memory, judged in :mod:`.host_session`; this module judges the frame.
``NOTIFICATION_SHAPE_RULES`` names the rule a method's frame breaks when the
host sends it with an id (these methods are notifications only).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .describe import kind, utf8_len
from .ext_types import Negotiated
from .limits import LIFECYCLE_EVENTS, MAX_SETTLED_REASON_BYTES, MESSAGE_BATCH_DELTAS
from .members import excerpt, is_integer, is_number
from .violations import Finding, Violation, rule

CANCEL = "$/cancelRequest"
# §1.10: settled outcomes.
OUTCOMES = ("completed", "failed", "cancelled", "interrupted", "frontend_disconnected", "shutdown", "limit_reached")
# §1.11: the Wave-1 notifications and the feature that gates each, where the
# text names it (message/updated's feature is not named: only "some
# negotiated feature", so only the API version gates it here).
WAVE1_FEATURES: Mapping[str, str | None] = {"shortcut/trigger": "shortcuts", "message/updated": None}

NOTIFICATION_SHAPE_RULES: Mapping[str, str] = {
    CANCEL: "EXT-1.9-host-cancel-shape",
    **{event: "EXT-1.10-host-event-identifiers" for event in LIFECYCLE_EVENTS},
    **{method: "EXT-1.11-host-notification-shape" for method in WAVE1_FEATURES},
}


def check_host_notification(
    method: str, params: object, *, negotiated: Negotiated, shortcuts: frozenset[str] = frozenset()
) -> Iterator[Finding]:
    if method == CANCEL:
        yield from no_cancel_0_1(negotiated=negotiated)
        yield from cancel_shape(params)
    elif method in LIFECYCLE_EVENTS:
        yield from _lifecycle(method, params, negotiated)
    elif method in WAVE1_FEATURES:
        yield from _wave1(method, params, negotiated, shortcuts)


# --------------------------------------------------------------------------
# §1.9 $/cancelRequest
# --------------------------------------------------------------------------


@rule("EXT-1.9-host-no-cancel-0.1")
def no_cancel_0_1(*, negotiated: Negotiated) -> Iterator[Violation]:
    """API 0.1 has no cancellation (§0, §1.9)."""
    if negotiated.is_legacy:
        yield Violation("EXT-1.9-host-no-cancel-0.1", "$/cancelRequest was sent to an API 0.1 extension")


@rule("EXT-1.9-host-cancel-shape")
def cancel_shape(params: object) -> Iterator[Violation]:
    """params is an object whose id is an integer or string; reason, when
    present, is a string."""
    if not isinstance(params, dict):
        yield Violation("EXT-1.9-host-cancel-shape", f"params is {kind(params)}; expected an object")
        return
    rid = params.get("id")
    if isinstance(rid, bool) or not (isinstance(rid, str) or is_integer(rid)):
        got = kind(rid) if "id" in params else "absent"
        yield Violation("EXT-1.9-host-cancel-shape", f"params.id is {got}; expected the id of a request", ("id",))
    reason = params.get("reason")
    if reason is not None and not isinstance(reason, str):
        yield Violation("EXT-1.9-host-cancel-shape", f"params.reason is {kind(reason)}; expected a string", ("reason",))


@dataclass(frozen=True)
class CancelWatch:
    """What the probe saw after the host was asked to cancel one of its
    requests that the probe had read and not answered (so writing had begun,
    and no answer could have won the race): the ``$/cancelRequest`` frames
    naming it, and how the watch ended -- ``"cancel"`` (one arrived),
    ``"ended"`` (the host ended the extension first) or ``"patience"`` (the
    harness stopped waiting)."""

    method: str
    wire_id: Any
    cancels: int
    ended: str


@rule("EXT-1.9-host-sends-cancel")
def cancel_sent(watch: CancelWatch) -> Iterator[Violation]:
    """§1.9: the host cancels a request cooperatively, by the notification:
    once the frame is on the wire it is followed by one ``$/cancelRequest``
    (the grace that follows presumes the extension was told). Only a
    request not yet written is dropped silently. How many is
    EXT-1.9-host-one-cancel-notification's concern."""
    if watch.cancels:
        return
    how = "ended the extension instead" if watch.ended == "ended" else "never sent one"
    yield Violation(
        "EXT-1.9-host-sends-cancel",
        f"the host was asked to cancel {watch.method} {excerpt(watch.wire_id)}, which the extension had read and "
        f"not answered, and {how}: no $/cancelRequest named it",
    )


# --------------------------------------------------------------------------
# §1.10 lifecycle notifications
# --------------------------------------------------------------------------


def _lifecycle(method: str, params: object, negotiated: Negotiated) -> Iterator[Finding]:
    yield from subscribed_only(method, negotiated=negotiated)
    yield from event_identifiers(method, params)
    if method.endswith("/settled") and isinstance(params, dict):
        yield from settled_fields(params)
        yield from settled_reason_bound(params)


@rule("EXT-1.10-host-subscribed-only")
def subscribed_only(method: str, *, negotiated: Negotiated) -> Iterator[Violation]:
    if not negotiated.has("lifecycle_events"):
        yield Violation("EXT-1.10-host-subscribed-only", f"{method} was sent, but lifecycle_events was not negotiated")
    elif method not in negotiated.lifecycle_events:
        yield Violation(
            "EXT-1.10-host-subscribed-only", f"{method} was sent, but the extension did not subscribe to it"
        )


def identifiers_of(method: str) -> tuple[str, ...]:
    """§1.10: session events carry the session id, turn events add run and
    turn ids, tool events add the tool call id and tool name."""
    if method.startswith("session/"):
        return ("session_id",)
    if method.startswith("turn/"):
        return ("session_id", "run_id", "turn_id")
    return ("session_id", "run_id", "turn_id", "tool_call_id", "tool_name")


@rule("EXT-1.10-host-event-identifiers")
def event_identifiers(method: str, params: object) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield Violation("EXT-1.10-host-event-identifiers", f"{method} params is {kind(params)}; expected an object")
        return
    for member in identifiers_of(method):
        if not isinstance(params.get(member), str):
            got = kind(params[member]) if member in params else "absent"
            yield Violation(
                "EXT-1.10-host-event-identifiers", f"{method} params.{member} is {got}; expected a string", (member,)
            )


@rule("EXT-1.10-host-settled-fields")
def settled_fields(params: Mapping[str, Any]) -> Iterator[Violation]:
    outcome = params.get("outcome")
    if outcome not in OUTCOMES:
        shown = excerpt(outcome) if isinstance(outcome, str) else kind(outcome)
        yield Violation(
            "EXT-1.10-host-settled-fields",
            f"params.outcome is {shown}; expected one of {', '.join(OUTCOMES)}",
            ("outcome",),
        )
    # duration_ms: the example is whole milliseconds, but no sentence rules
    # out a fraction, so any non-negative number passes.
    duration = params.get("duration_ms")
    if not is_number(duration) or not isinstance(duration, int | float) or duration < 0:
        shown = excerpt(duration) if isinstance(duration, int | float) else kind(duration)
        yield Violation(
            "EXT-1.10-host-settled-fields", f"params.duration_ms is {shown}; expected a number >= 0", ("duration_ms",)
        )
    reason = params.get("reason")
    if reason is not None and not isinstance(reason, str):
        yield Violation(
            "EXT-1.10-host-settled-fields", f"params.reason is {kind(reason)}; expected a string or null", ("reason",)
        )


@rule("EXT-1.10-host-settled-reason-bound")
def settled_reason_bound(params: Mapping[str, Any]) -> Iterator[Violation]:
    reason = params.get("reason")
    if isinstance(reason, str) and utf8_len(reason) > MAX_SETTLED_REASON_BYTES:
        message = f"params.reason is {utf8_len(reason):,} UTF-8 bytes; limit {MAX_SETTLED_REASON_BYTES:,}"
        yield Violation("EXT-1.10-host-settled-reason-bound", message, ("reason",))


# --------------------------------------------------------------------------
# §1.11 Wave-1 notifications
# --------------------------------------------------------------------------


def _wave1(method: str, params: object, negotiated: Negotiated, shortcuts: frozenset[str]) -> Iterator[Finding]:
    yield from wave1_negotiated(method, negotiated=negotiated)
    yield from wave1_shape(method, params)
    if not isinstance(params, dict):
        return
    if method == "shortcut/trigger":
        if negotiated.has("shortcuts"):  # else the negotiation rule above already failed it
            yield from trigger_registered(params, shortcuts=shortcuts)
    else:
        yield from message_batch_shape(params)


@rule("EXT-1.11-host-negotiated-only")
def wave1_negotiated(method: str, *, negotiated: Negotiated) -> Iterator[Violation]:
    feature = WAVE1_FEATURES[method]
    if negotiated.is_legacy:
        yield Violation("EXT-1.11-host-negotiated-only", f"{method} was sent to an API 0.1 extension")
    elif feature is not None and not negotiated.has(feature):
        yield Violation("EXT-1.11-host-negotiated-only", f"{method} was sent, but {feature} was not negotiated")


@rule("EXT-1.11-host-notification-shape")
def wave1_shape(method: str, params: object) -> Iterator[Violation]:
    """A plain object payload (the frame being a notification is checked by
    the session, which sees the id)."""
    if not isinstance(params, dict):
        yield Violation("EXT-1.11-host-notification-shape", f"{method} params is {kind(params)}; expected an object")


@rule("EXT-1.11-host-trigger-registered")
def trigger_registered(params: Mapping[str, Any], *, shortcuts: frozenset[str]) -> Iterator[Violation]:
    """The id names a shortcut whose shortcut/register the host admitted."""
    sid = params.get("id")
    if not isinstance(sid, str) or sid not in shortcuts:
        shown = excerpt(sid) if isinstance(sid, str) else kind(sid)
        yield Violation(
            "EXT-1.11-host-trigger-registered",
            f"shortcut/trigger names {shown}, which no admitted registration has",
            ("id",),
        )


@rule("EXT-1.11-host-message-batch-shape")
def message_batch_shape(params: Mapping[str, Any]) -> Iterator[Violation]:
    """message_id and delta are strings; deltas counts 1..64 coalesced
    deltas (a batch is flushed at 64). An array under deltas is the
    SDK-shaped batch §1.11 also accepts; its bound is the bridge's, not
    judged here."""
    deltas = params.get("deltas")
    if isinstance(deltas, list):
        return
    for member in ("message_id", "delta"):
        if not isinstance(params.get(member), str):
            got = kind(params[member]) if member in params else "absent"
            yield Violation(
                "EXT-1.11-host-message-batch-shape", f"params.{member} is {got}; expected a string", (member,)
            )
    if not is_integer(deltas) or not isinstance(deltas, int | float) or not 1 <= deltas <= MESSAGE_BATCH_DELTAS:
        shown = excerpt(deltas) if isinstance(deltas, int | float) else kind(deltas)
        message = f"params.deltas is {shown}; expected an integer from 1 to {MESSAGE_BATCH_DELTAS}"
        yield Violation("EXT-1.11-host-message-batch-shape", message, ("deltas",))
