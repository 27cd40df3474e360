"""The judges of protocol/rpc_ending.py on hand-made observations (no
processes): every outcome the document allows passes. The scenarios are
proven by tests/fixtures/test_faulty_hostcores.py and the reference certification."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocol import rpc_ending as judges
from conformance.protocol.violations import Violation
from conformance.scenarios import hostcore_held


def broken(findings: Any) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def error(code: int, error_code: str | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x", "data": {"errorCode": error_code}}}


def result(**members: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": members}


@pytest.mark.parametrize("answer", [None, result(ok=True), error(1001, "HOST_SHUTTING_DOWN")])
def test_drain_answers_that_pass(answer: dict[str, Any] | None) -> None:
    assert broken(judges.refused_as_shutting_down("app.health", answer)) == []


@pytest.mark.parametrize("answer", [error(-32603, "INTERNAL"), error(1001, "UNAUTHORIZED"), error(1001)])
def test_drain_refusals_that_fail(answer: dict[str, Any]) -> None:
    assert broken(judges.refused_as_shutting_down("app.health", answer)) == ["RPC-7-shutting-down"]


def test_an_exit_with_any_status_passes_a_pipe_error() -> None:
    for status in (0, 1, -9):
        assert broken(judges.ended_on_pipe_error(status, 3.0)) == []
    assert broken(judges.ended_on_pipe_error(None, 3.0)) == ["RPC-2-pipe-error-ends-host"]


def test_any_answer_settles_an_admission_wait() -> None:
    assert broken(judges.wait_settled(result(ok=False), 31.0)) == []
    assert broken(judges.wait_settled(error(-32029, "HOST_OVERLOADED"), 31.0)) == []
    assert broken(judges.wait_settled(None, 40.0)) == ["RPC-2.1-wait-timeout"]


def test_a_held_prompt_must_still_be_pending_and_listed() -> None:
    answered = {"jsonrpc": "2.0", "id": 9, "result": {"ok": False, "errorCode": "TOOL_DENIED"}}
    assert broken(judges.still_pending(answered, None)) == [
        "RPC-6-pending-until-decided",
        "RPC-10-04-permission-pending",
    ]
    assert broken(judges.still_pending(None, False)) == ["RPC-6-pending-until-decided"]
    assert not broken(judges.still_pending(None, True))
    assert not broken(judges.still_pending(None, None))  # permissions.pending gave no answer to read
    assert hostcore_held.hold_seconds("default") > 30 > hostcore_held.hold_seconds("quick")
