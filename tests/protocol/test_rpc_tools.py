"""Host RPC §5/§7: tools.execute params and results, tools.output."""

from __future__ import annotations

from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given, settings

from conformance.protocol.rpc_tools import (
    bash_failure_result,
    execute_params,
    execute_result,
    tool_outcome_not_error,
    tools_output_params,
)
from conformance.protocol.violations import Exercise, Violation

PARAMS = {
    "sessionId": "s1",
    "turnId": "t1",
    "toolCallId": "c1",
    "toolName": "Bash",
    "args": {"command": "echo hi"},
    "requestedMode": "goal",
    "expectedCommandShellId": "bash",
    "expectedCommandShellDialect": "posix",
    "timeoutMs": 5000,
}
RESULT = {"toolCallId": "c1", "ok": True, "content": {"text": "hi"}, "durationMs": 12.5}
FAILED = {
    "toolCallId": "c1",
    "ok": False,
    "isError": True,
    "errorCode": "TOOL_FAILED",
    "content": {"exitCode": 2, "stdout": "", "stderr": "boom"},
    "durationMs": 3,
}
OUTPUT = {"sessionId": "s1", "toolCallId": "c1", "commandShellId": "bash", "stream": "stderr", "chunk": "x\n"}


def broken(findings: Any) -> list[str]:
    out = list(findings)
    assert any(isinstance(f, Exercise) for f in out)
    return [f.requirement for f in out if isinstance(f, Violation)]


def test_valid_values_pass() -> None:
    assert broken(execute_params(PARAMS)) == []
    assert broken(execute_params({"sessionId": "s", "toolCallId": "c", "toolName": "Read"})) == []  # args: unknown
    assert broken(execute_params({**PARAMS, "timeoutMs": 999})) == []  # the range binds the host, not the caller
    assert broken(execute_result(RESULT, tool_call_id="c1")) == []
    assert broken(execute_result({**RESULT, "content": None, "denied": True, "errorCode": "TOOL_DENIED"})) == []
    assert broken(execute_result(FAILED)) == []
    assert broken(execute_result({**RESULT, "errorCode": None})) == []  # optional when ok: null is absent
    assert broken(bash_failure_result(FAILED)) == []
    assert broken(tools_output_params(OUTPUT)) == []


@pytest.mark.parametrize(
    "change",
    [
        {"sessionId": None},
        {"toolCallId": 1},
        {"toolName": ["Bash"]},
        {"requestedMode": "chat"},
        {"expectedCommandShellId": "zsh"},
        {"expectedCommandShellDialect": "fish"},
        {"timeoutMs": "60000"},
        {"turnId": 3},
        {"delegationId": {}},
    ],
)
def test_bad_params(change: dict[str, Any]) -> None:
    assert broken(execute_params({**PARAMS, **change})) == ["RPC-5-execute-params"]


@pytest.mark.parametrize(
    "result",
    [
        {**RESULT, "toolCallId": "other"},
        {k: v for k, v in RESULT.items() if k != "toolCallId"},
        {**RESULT, "ok": "true"},
        {k: v for k, v in RESULT.items() if k != "content"},
        {k: v for k, v in RESULT.items() if k != "durationMs"},
        {**RESULT, "durationMs": "12"},
        {**RESULT, "isError": 1},
        {**RESULT, "denied": "no"},
        {**RESULT, "errorCode": 7},
        # §7: an ok-false outcome names its errorCode (issue 20 item 3, host-core mutant M0039)
        {k: v for k, v in FAILED.items() if k != "errorCode"},
        {**FAILED, "errorCode": None},
        {**RESULT, "ok": False, "isError": True},
        [],
    ],
)
def test_bad_results(result: Any) -> None:
    assert broken(execute_result(result, tool_call_id="c1")) == ["RPC-5-execute-result"]


@pytest.mark.parametrize(
    "change",
    [
        {"ok": True},
        {"ok": 0},  # JSON false is not the number 0
        {"isError": False},
        {"isError": 1},
        {"errorCode": "TOOL_TIMEOUT"},
        {"content": "boom"},
        {"content": {"stdout": "", "stderr": ""}},
        {"content": {"exitCode": 2, "stdout": ""}},
    ],
)
def test_bad_bash_failures(change: dict[str, Any]) -> None:
    assert broken(bash_failure_result({**FAILED, **change})) == ["RPC-5-bash-failure-result"]


def _error(code: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": 1002, "message": code, "data": {"errorCode": code}}}


@pytest.mark.parametrize("code", ["TOOL_DENIED", "PATH_OUTSIDE_WORKSPACE", "COMMAND_SHELL_CHANGED", "TOOL_FAILED"])
def test_tool_outcomes_as_errors_are_flagged(code: str) -> None:
    assert broken(tool_outcome_not_error(_error(code))) == ["RPC-7-tool-outcomes-are-results"]


@pytest.mark.parametrize(
    "response",
    [
        _error("HOST_OVERLOADED"),  # may travel either way (§2.1 vs §7)
        _error("SESSION_NOT_FOUND"),
        _error("PLAN_KIND_MISMATCH"),  # PLAN_* has an error slot: not judged
        {"jsonrpc": "2.0", "id": 1, "result": {**RESULT, "ok": False, "errorCode": "TOOL_DENIED"}},
    ],
)
def test_other_answers_are_not_flagged(response: Any) -> None:
    assert broken(tool_outcome_not_error(response)) == []


@pytest.mark.parametrize(
    "change",
    [{"stream": "both"}, {"commandShellId": "sh"}, {"chunk": None}, {"sessionId": 1}, {"toolCallId": None}],
)
def test_bad_tools_output(change: dict[str, Any]) -> None:
    assert broken(tools_output_params({**OUTPUT, **change})) == ["RPC-5.1-tools-output-shape"]


CHECKS: list[Any] = [execute_params, execute_result, bash_failure_result, tool_outcome_not_error, tools_output_params]


@settings(max_examples=50)  # cheap in CI; the shapes here are shallow
@given(value=json_values(keys=["ok", "content", "error", "data", "errorCode", "stream"]))
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
