"""Error answers and the shutdown acknowledgement (§1.1, §1.8, §1.9, §3)."""

from __future__ import annotations

from collections.abc import Iterable

from conformance.protocol.ext_answers import (
    ERROR_ANSWERS,
    INTENT_ANSWERS,
    cancelled_answer,
    invalid_params_answer,
    shutdown_acknowledged,
    unknown_method_answer,
)
from conformance.protocol.jsonrpc import ErrorResponse, Response
from conformance.protocol.violations import Exercise, Finding, Violation


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def exercised(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Exercise)]


def test_unknown_method_needs_minus_32601() -> None:
    assert broken(unknown_method_answer("x/y", ErrorResponse(1, -32601, "no"))) == []
    assert broken(unknown_method_answer("x/y", ErrorResponse(1, -32600, "no"))) == ["EXT-3-unknown-method-code"]
    assert broken(unknown_method_answer("x/y", Response(1, {}))) == ["EXT-3-unknown-method-code"]


def test_invalid_params_judges_refusals_only() -> None:
    assert broken(invalid_params_answer("tool/call", ErrorResponse(1, -32602, "bad"))) == []
    assert broken(invalid_params_answer("tool/call", ErrorResponse(1, -32603, "bad"))) == ["EXT-3-invalid-params-code"]
    assert list(invalid_params_answer("tool/call", Response(1, {"content": "ok"}))) == []  # not exercised either


def test_shutdown_is_acknowledged_with_an_object() -> None:
    assert exercised(list(shutdown_acknowledged({}))) == ["EXT-1.8-shutdown-ack"]
    assert broken(shutdown_acknowledged({})) == []
    assert broken(shutdown_acknowledged(None)) == ["EXT-1.8-shutdown-ack"]
    assert broken(ERROR_ANSWERS["shutdown"](ErrorResponse(2, -32603, "busy"))) == ["EXT-1.8-shutdown-ack"]


def test_initialize_is_not_refused() -> None:
    assert broken(ERROR_ANSWERS["initialize"](ErrorResponse(0, -32603, "no"))) == ["EXT-1.1-result-shape"]


def test_a_read_cancellation_is_answered_with_minus_32800() -> None:
    assert broken(cancelled_answer("tool/call", 3, ErrorResponse(3, -32800, "cancelled"))) == []
    assert broken(cancelled_answer("tool/call", 3, ErrorResponse(3, -32603, "x"))) == ["EXT-1.9-cancel-reply-code"]


def test_every_intent_the_machines_send_has_a_row() -> None:
    assert set(INTENT_ANSWERS) == {"unknown-method", "invalid-params", "after-lifecycle", "after-trigger"}
