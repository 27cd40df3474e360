"""The §7 error table as data, and the checks that read it (host RPC)."""

from __future__ import annotations

from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given, settings

from conformance.protocol import rpc_errors as e
from conformance.protocol.rpc_limits import ID_PEEK_EXPECTED_BYTES
from conformance.protocol.violations import Exercise, Finding, Violation


def err(code: object, error_code: object = None, *, rid: object = 1, data: Any = "unset") -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": "m"}
    if data != "unset":
        error["data"] = data
    elif error_code is not None:
        error["data"] = {"errorCode": error_code, "details": {}}
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def broken(findings: Any) -> list[str]:
    out: list[Finding] = list(findings)
    assert any(isinstance(f, Exercise) for f in out), "every check reports that it ran"
    return [f.requirement for f in out if isinstance(f, Violation)]


def test_every_row_is_well_formed_and_unique() -> None:
    seen = set()
    for row in e.ERROR_TABLE:
        assert (row.code, row.error_code) not in seen
        seen.add((row.code, row.error_code))
        assert row.family == (row.error_code is not None and row.error_code.endswith("*"))
    assert [r.error_code for r in e.ERROR_TABLE if r.retryable] == ["HOST_OVERLOADED"]
    assert e.CODES_WITHOUT_STRING == {-32601, -32700}


@pytest.mark.parametrize(
    ("error_code", "codes"),
    [
        ("NOT_FOUND", {1003, 1007}),  # legacy slot and the current one
        ("PATH_OUTSIDE_WORKSPACE", {1003}),  # the §2 example's pairing
        ("PLAN_APPROVAL_STALE", {1015}),
        ("PLAN_KIND_MISMATCH", {1015}),
        ("WORKTREE_CONFLICT", {1025}),
        ("LIMIT_EXCEEDED", {1002}),
        ("HOST_OVERLOADED", {-32029}),
        ("AGENT_BUSY", {1008}),
        ("WORKSPACE_REQUIRED", None),  # never assigned a number: any code passes
        ("INVALID_ARGUMENT", None),
    ],
)
def test_allowed_codes(error_code: str, codes: set[int] | None) -> None:
    assert e.allowed_codes(error_code) == (frozenset(codes) if codes is not None else None)


def test_legacy_row_is_marked() -> None:
    assert [r.code for r in e.rows_for("NOT_FOUND") if r.legacy] == [1003]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (err(1007, "NOT_FOUND"), []),
        (err(1003, "NOT_FOUND"), []),
        (err(1011, "PROTOCOL_MISMATCH"), []),
        (err(-32601), []),  # unknown method: no string demanded
        (err(-32700, rid=None), []),
        (err(4242, "SOMETHING_NEW"), []),
        (err(1007, "PLAN_APPROVAL_TIMEOUT"), ["RPC-7-code-matches-table"]),
        (err(1000, "INVALID_PARAMS"), ["RPC-7-code-matches-table"]),
        (err(1002), ["RPC-7-error-data-errorcode"]),  # no data at all
        (err(1002, data={"details": {}}), ["RPC-7-error-data-errorcode"]),
        (err(1002, data={"errorCode": 1002}), ["RPC-7-error-data-errorcode"]),
        (err(-32602, data=None), ["RPC-7-error-data-errorcode"]),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, []),  # not an error: nothing to judge
        ({"jsonrpc": "2.0", "id": 1, "error": "boom"}, []),  # envelope rules report this one
    ],
)
def test_check_error_response(response: Any, expected: list[str]) -> None:
    assert broken(e.check_error_response(response)) == expected


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (e.refused_before_handshake, err(1001, "UNAUTHORIZED"), err(1001, "HOST_SHUTTING_DOWN")),
        (e.refused_mismatch, err(1011, "PROTOCOL_MISMATCH"), err(1002, "INVALID_PARAMS")),
        (e.refused_invalid_params, err(1002, "INVALID_ARGUMENT"), err(1000, "INTERNAL")),
        (e.limit_exceeded, err(1002, "LIMIT_EXCEEDED"), err(1002, "INVALID_PARAMS")),
        (e.refused_unknown_method, err(-32601), err(1000, "INTERNAL")),
    ],
)
def test_expected_refusals(check: Any, good: Any, bad: Any) -> None:
    assert broken(check(good)) == []
    assert broken(check(bad)) == [check.requirement]
    assert broken(check({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}})) == [check.requirement]


def test_is_overload_reads_both_forms() -> None:
    assert e.is_overload(err(-32029, "HOST_OVERLOADED"))
    assert e.is_overload({"id": 1, "result": {"ok": False, "errorCode": "HOST_OVERLOADED", "toolCallId": "t"}})
    assert not e.is_overload({"id": 1, "result": {"ok": True, "errorCode": "HOST_OVERLOADED"}})
    assert not e.is_overload(err(1008, "CONFLICT"))
    assert not e.is_overload("junk")


HEAD = b'{"jsonrpc":"2.0","id":"big-1","method":"tools.execute","params":{"args":"xxxx'


@pytest.mark.parametrize(
    ("line_head", "sent_id", "answered", "ok"),
    [
        (HEAD, "big-1", "big-1", True),
        (HEAD, "big-1", None, False),  # the id was in plain sight
        (HEAD, "big-1", "other", False),
        (b'{"id":5,"method":"m",', 5, 5.0, True),  # judged by value
        (b'{"id":5,"method":"m",', 5, "5", False),
        # the id lies beyond what a host must look at: null or the id both pass
        (b'{"method":"m","params":{"a":"' + b"x" * ID_PEEK_EXPECTED_BYTES, 9, None, True),
        (b'{"method":"m","params":{"a":"' + b"x" * ID_PEEK_EXPECTED_BYTES, 9, 9, True),
        (b'{"method":"m","params":{"a":"' + b"x" * ID_PEEK_EXPECTED_BYTES, 9, 10, False),
    ],
)
def test_limit_exceeded_id(line_head: bytes, sent_id: object, answered: object, ok: bool) -> None:
    response = err(1002, "LIMIT_EXCEEDED", rid=answered)
    got = broken(e.check_limit_exceeded_id(response, line_head=line_head, sent_id=sent_id))
    assert got == ([] if ok else ["RPC-7-limit-id-peeked"])


@pytest.mark.parametrize("where", [ID_PEEK_EXPECTED_BYTES - 1, ID_PEEK_EXPECTED_BYTES, ID_PEEK_EXPECTED_BYTES + 1])
def test_peek_expectation_bound_at_n_minus_one_n_n_plus_one(where: int) -> None:
    # The id's closing delimiter lands at byte `where`: inside the expected
    # window (<= N) the id is demanded, past it null is accepted.
    opening = b'{"method":"m","pad":"'
    tail = b'","id":7,'
    pad = b"x" * (where - len(opening) - len(tail))
    line_head = opening + pad + tail
    assert len(line_head) == where
    got = broken(e.check_limit_exceeded_id(err(1002, "LIMIT_EXCEEDED", rid=None), line_head=line_head, sent_id=7))
    assert got == (["RPC-7-limit-id-peeked"] if where <= ID_PEEK_EXPECTED_BYTES else [])


CHECKS: list[Any] = [
    e.check_error_response,
    e.refused_before_handshake,
    e.refused_mismatch,
    e.refused_invalid_params,
    e.refused_unknown_method,
    e.limit_exceeded,
]


@settings(max_examples=50)  # cheap in CI; the shapes here are shallow
@given(value=json_values(keys=["error", "data", "errorCode", "code", "result"]))
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
