"""Host notifications (§1.9-§1.11)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocol.ext_types import Negotiated
from conformance.protocol.host_notifications import CancelWatch, cancel_sent, check_host_notification
from conformance.protocol.limits import LIFECYCLE_EVENTS, MAX_SETTLED_REASON_BYTES, MESSAGE_BATCH_DELTAS
from conformance.protocol.violations import Exercise, Violation

LIFE = Negotiated("0.2", frozenset({"lifecycle_events", "shortcuts"}), 4, LIFECYCLE_EVENTS)


def broken(
    method: str, params: Any, negotiated: Negotiated = LIFE, shortcuts: frozenset[str] = frozenset()
) -> list[str]:
    out = check_host_notification(method, params, negotiated=negotiated, shortcuts=shortcuts)
    return [f.requirement for f in out if isinstance(f, Violation)]


def settled(**extra: Any) -> dict[str, Any]:
    return {"session_id": "s", "run_id": "r", "turn_id": "t", "outcome": "completed", "duration_ms": 5, **extra}


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"id": 1}, True),
        ({"id": "a", "reason": "user"}, True),
        ({"id": True}, False),
        ({}, False),
        ({"id": 1, "reason": 3}, False),
        ([], False),
    ],
)
def test_cancel_shape(params: Any, ok: bool) -> None:
    assert (broken("$/cancelRequest", params) == []) is ok


def test_cancel_on_0_1() -> None:
    assert broken("$/cancelRequest", {"id": 1}, Negotiated("0.1")) == ["EXT-1.9-host-no-cancel-0.1"]


def test_lifecycle_subscription() -> None:
    assert broken("turn/settled", settled()) == []
    assert broken("turn/settled", settled(), Negotiated("0.2")) == ["EXT-1.10-host-subscribed-only"]
    only_tools = Negotiated("0.2", frozenset({"lifecycle_events"}), 4, ("tool/started",))
    assert broken("turn/settled", settled(), only_tools) == ["EXT-1.10-host-subscribed-only"]


def test_identifiers_per_event_kind() -> None:
    assert broken("session/started", {"session_id": "s"}) == []
    assert broken("turn/started", {"session_id": "s"}) == ["EXT-1.10-host-event-identifiers"] * 2
    assert broken("tool/started", {"session_id": "s", "run_id": "r", "turn_id": "t", "tool_name": "x"}) == [
        "EXT-1.10-host-event-identifiers"
    ]


@pytest.mark.parametrize(
    ("extra", "ok"),
    [
        ({"outcome": "aborted"}, False),
        ({"duration_ms": -1}, False),
        ({"duration_ms": 1.5}, True),
        ({"duration_ms": "5"}, False),
        ({"reason": None}, True),
        ({"reason": 7}, False),
    ],
)
def test_settled_fields(extra: dict[str, Any], ok: bool) -> None:
    assert (broken("turn/settled", settled(**extra)) == []) is ok


@pytest.mark.parametrize("size", [MAX_SETTLED_REASON_BYTES - 1, MAX_SETTLED_REASON_BYTES, MAX_SETTLED_REASON_BYTES + 1])
def test_reason_bound_n_minus_1_n_n_plus_1(size: int) -> None:
    got = broken("turn/settled", settled(reason="é" * (size // 2) + "a" * (size % 2)))
    assert got == (["EXT-1.10-host-settled-reason-bound"] if size > MAX_SETTLED_REASON_BYTES else [])


def test_wave1() -> None:
    assert broken("shortcut/trigger", {"id": "k"}, shortcuts=frozenset({"k"})) == []
    assert broken("shortcut/trigger", {"id": "k"}) == ["EXT-1.11-host-trigger-registered"]
    assert broken("shortcut/trigger", {"id": "k"}, Negotiated("0.2"), frozenset({"k"})) == [
        "EXT-1.11-host-negotiated-only"
    ]
    assert broken("shortcut/trigger", "k", shortcuts=frozenset({"k"})) == ["EXT-1.11-host-notification-shape"]
    assert (
        broken("message/updated", {"id": 1}, Negotiated("0.1"))
        == ["EXT-1.11-host-negotiated-only"] + ["EXT-1.11-host-message-batch-shape"] * 3
    )


@pytest.mark.parametrize(
    ("deltas", "ok"),
    [
        (0, False),
        (1, True),
        (MESSAGE_BATCH_DELTAS - 1, True),
        (MESSAGE_BATCH_DELTAS, True),
        (MESSAGE_BATCH_DELTAS + 1, False),
    ],
)
def test_message_batch_deltas(deltas: int, ok: bool) -> None:
    assert (broken("message/updated", {"message_id": "m", "delta": "abc", "deltas": deltas}) == []) is ok


def test_sdk_shaped_batches_are_not_judged() -> None:
    assert broken("message/updated", {"message_id": "m", "deltas": ["a", "b"]}) == []


def test_an_unnegotiated_trigger_is_reported_once() -> None:
    """Without shortcuts negotiated no registration can exist: the negotiation rule alone fails it."""
    assert broken("shortcut/trigger", {"id": "k"}, Negotiated("0.2")) == ["EXT-1.11-host-negotiated-only"]


@pytest.mark.parametrize(
    ("cancels", "ended", "ok"),
    [(1, "cancel", True), (2, "cancel", True), (0, "ended", False), (0, "patience", False)],
)
def test_a_cancelled_request_on_the_wire_is_followed_by_a_cancel(cancels: int, ended: str, ok: bool) -> None:
    findings = list(cancel_sent(CancelWatch("tool/call", 2, cancels, ended)))
    violations = [f for f in findings if isinstance(f, Violation)]
    assert findings[0] == Exercise("EXT-1.9-host-sends-cancel")
    assert (not violations) == ok
    if not ok:
        assert (
            "ended the extension" in violations[0].message
            if ended == "ended"
            else "never sent" in violations[0].message
        )
