"""Host RPC §2.1 retry policy and §3 handshake order, judged over a client's exchange."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocol import rpc_client, rpc_limits
from conformance.protocol.rpc_client import Attempt, judge_before_handshake, judge_retries, retry_chains
from conformance.protocol.violations import Exercise, Violation

CALL = {"jsonrpc": "2.0", "method": "session.list", "params": {}}
OVERLOADED = {
    "jsonrpc": "2.0",
    "id": 1,
    "error": {"code": -32029, "message": "m", "data": {"errorCode": "HOST_OVERLOADED"}},
}
OVERLOADED_RESULT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"ok": False, "errorCode": "HOST_OVERLOADED", "toolCallId": "t"},
}
CONFLICT = {"jsonrpc": "2.0", "id": 1, "error": {"code": 1008, "message": "m", "data": {"errorCode": "CONFLICT"}}}
OK = {"jsonrpc": "2.0", "id": 1, "result": {}}


def chain(waits_ms: list[float], answers: list[Any]) -> list[Attempt]:
    """Attempts of one call: answer i is written 10 ms after attempt i; the
    next attempt follows waits_ms[i] after that answer."""
    out, t = [], 0.0
    for i, answer in enumerate(answers):
        answered = None if answer is None else t + 0.010
        out.append(Attempt(t, {**CALL, "id": i}, answered, answer))
        if i < len(waits_ms):
            t = (answered if answered is not None else t + 1.0) + waits_ms[i] / 1000
    return out


def broken(findings: Any) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def test_the_documented_policy_passes() -> None:
    attempts = chain([50, 100, 200, 400], [OVERLOADED] * 4 + [OVERLOADED])
    findings = list(judge_retries(attempts))
    assert broken(findings) == []
    assert {f.requirement for f in findings if isinstance(f, Exercise)} == {
        "RPC-2.1-client-retry-delays",
        "RPC-2.1-client-retry-max-four",
        "RPC-2.1-client-retry-only-overloaded",
    }


def test_no_retry_exercises_nothing() -> None:
    assert list(judge_retries(chain([], [OVERLOADED]))) == []


def test_either_overload_form_may_be_retried() -> None:
    assert broken(judge_retries(chain([50], [OVERLOADED_RESULT, OK]))) == []


@pytest.mark.parametrize(
    ("retries", "ok"),
    [(rpc_limits.MAX_RETRIES - 1, True), (rpc_limits.MAX_RETRIES, True), (rpc_limits.MAX_RETRIES + 1, False)],
)
def test_retry_count_at_n_minus_one_n_n_plus_one(retries: int, ok: bool) -> None:
    waits = [*rpc_limits.RETRY_DELAYS_MS, 400, 400][:retries]
    attempts = chain(waits, [OVERLOADED] * (retries + 1))
    assert broken(judge_retries(attempts)) == ([] if ok else ["RPC-2.1-client-retry-max-four"])


@pytest.mark.parametrize("answer", [CONFLICT, OK, None])
def test_only_overload_is_retried(answer: Any) -> None:
    got = broken(judge_retries(chain([50], [answer, OK])))
    assert got == ["RPC-2.1-client-retry-only-overloaded"]


TOL, SLACK = rpc_limits.RETRY_EARLY_TOLERANCE_MS, rpc_limits.RETRY_LATE_SLACK_MS


@pytest.mark.parametrize("retry", [1, 2, 3, 4])
@pytest.mark.parametrize(
    ("offset", "ok"),
    [(-TOL - 1, False), (-TOL, True), (0, True), (SLACK, True), (SLACK + 1, False)],
)
def test_each_delay_at_its_bounds(retry: int, offset: float, ok: bool) -> None:
    waits = [float(d) for d in rpc_limits.RETRY_DELAYS_MS][:retry]
    waits[-1] += offset
    attempts = chain(waits, [OVERLOADED] * (retry + 1))
    assert broken(judge_retries(attempts)) == ([] if ok else ["RPC-2.1-client-retry-delays"])


def test_tolerances_are_parameters() -> None:
    attempts = chain([40], [OVERLOADED, OK])
    assert broken(judge_retries(attempts)) == ["RPC-2.1-client-retry-delays"]
    assert broken(judge_retries(attempts, early_tolerance_ms=15)) == []


def test_chains_split_on_method_or_params() -> None:
    a = Attempt(0, {"method": "x", "params": {"a": 1, "b": 2}})
    b = Attempt(1, {"method": "x", "params": {"b": 2, "a": 1}})  # same params, other key order
    c = Attempt(2, {"method": "x", "params": {"a": 2}})
    d = Attempt(3, {"method": "y", "params": {"a": 2}})
    assert [len(c) for c in retry_chains([a, b, c, d])] == [2, 1, 1]


# -- handshake order -------------------------------------------------------------------

HS = {"method": "app.handshake", "id": 0}
LIST = {"method": "session.list", "id": 1}
GOOD = {"id": 0, "result": {"protocolVersion": 11}}
V10 = {"id": 0, "result": {"protocolVersion": 10}}
REFUSED = {"id": 0, "error": {"code": 1011, "message": "m", "data": {"errorCode": "PROTOCOL_MISMATCH"}}}


@pytest.mark.parametrize(
    ("requests", "answered_after", "answer", "expected"),
    [
        ([HS, LIST], 1, GOOD, []),
        ([HS], None, None, []),
        ([LIST, HS], 2, GOOD, ["RPC-3-client-handshake-first", "RPC-3-client-no-calls-before-handshake"]),
        ([HS, LIST], None, None, ["RPC-3-client-no-calls-before-handshake"]),
        ([HS, LIST], 2, GOOD, ["RPC-3-client-no-calls-before-handshake"]),  # sent before the answer
        ([HS, LIST], 1, V10, ["RPC-3-client-aborts-on-mismatch"]),
        ([HS, LIST], 1, REFUSED, ["RPC-3-client-aborts-on-mismatch"]),
        ([HS, HS], 1, REFUSED, []),  # handshaking again is not a call into a missing domain
        ([], None, None, []),
    ],
)
def test_handshake_order(requests: list[Any], answered_after: int | None, answer: Any, expected: list[str]) -> None:
    assert broken(judge_before_handshake(requests, answered_after=answered_after, answer=answer)) == expected


# -- the client-side judges of a certification run -------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [(2, []), (1, []), (-9, []), (0, ["RPC-3-client-exit-actionable"]), (None, ["RPC-3-client-exit-actionable"])],
)
def test_exit_after_a_failed_handshake(status: int | None, expected: list[str]) -> None:
    assert broken(rpc_client.exits_after_failed_handshake(status, waited_s=2)) == expected


@pytest.mark.parametrize(
    ("first", "ready", "expected"),
    [
        ("app.handshake", True, []),
        (None, False, ["RPC-10-01-handshake"]),
        ("app.handshake", False, ["RPC-10-01-handshake"]),
        ("session.list", False, []),  # another first call is RPC-3-client-handshake-first's business
    ],
)
def test_handshake_completed(first: str | None, ready: bool, expected: list[str]) -> None:
    assert broken(rpc_client.handshake_completed(first, ready=ready, waited_s=1)) == expected


@pytest.mark.parametrize(
    ("message", "bad"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "app.health"}, False),
        ({"jsonrpc": "2.0", "id": "a", "method": "x", "params": []}, False),
        ({"jsonrpc": "2.0", "method": "x", "params": {}}, False),  # a notification
        ({"jsonrpc": "1.0", "id": 1, "method": "x"}, True),
        ({"id": 1, "method": "x"}, True),
        ({"jsonrpc": "2.0", "id": 1}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": "s"}, True),
        ({"jsonrpc": "2.0", "id": None, "method": "x"}, False),  # discouraged, not forbidden
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, False),  # a should not
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, True),
        ({"jsonrpc": "2.0", "id": [1], "method": "x"}, True),
        ([1], True),
    ],
)
def test_request_envelope(message: Any, bad: bool) -> None:
    assert broken(rpc_client.request_envelope(message)) == (["RPC-2-jsonrpc-2.0"] * bad if bad else [])


LIMIT = rpc_limits.MAX_LINE_BYTES


@pytest.mark.parametrize(
    ("sizes", "refused", "resent"),
    [([], False, False), ([LIMIT + 1], True, False), ([LIMIT + 1, LIMIT + 1], True, True)],
)
def test_oversized_lines(sizes: list[int], refused: bool, resent: bool) -> None:
    got = broken(rpc_client.no_oversized_lines("m", sizes))
    assert bool(got) == refused and set(got) <= {"RPC-7-client-refuses-oversized"}
    assert broken(rpc_client.oversized_not_resent("m", sizes)) == (
        ["RPC-0-client-oversized-not-retried"] if resent else []
    )


RESULT = {"ok": True, "step": "s"}


@pytest.mark.parametrize(
    "judge",
    [
        rpc_client.crlf_answer_read,
        rpc_client.answer_after_invalid_line_read,
        rpc_client.separators_kept,
        rpc_client.final_frame_read,
        rpc_client.notifications_accepted,
    ],
)
@pytest.mark.parametrize(
    ("outcome", "ok"),
    [
        ({"kind": "result", "result": RESULT}, True),
        ({"kind": "result", "result": {**RESULT, "step": "t"}}, False),
        ({"kind": "timeout"}, False),
        ({"kind": "closed"}, False),
        (None, False),
    ],
)
def test_outcome_judges(judge: Any, outcome: Any, ok: bool) -> None:
    findings = list(judge(outcome, RESULT))
    assert isinstance(findings[0], Exercise)
    assert broken(findings) == ([] if ok else [findings[0].requirement])


def test_diagnostic_never_repeats_the_line() -> None:
    assert broken(rpc_client.diagnostic_without_payload("line of 40 bytes is not JSON", "MARK")) == []
    assert broken(rpc_client.diagnostic_without_payload("bad line: {MARK", "MARK")) == ["RPC-2-invalid-json-diagnostic"]


@pytest.mark.parametrize(
    ("payload", "ok"),
    [("café ✓ 𝄞".encode(), True), (b"plain", True), ("café".encode("latin-1"), False), (b"\xed\xa0\x80", False)],
)
def test_utf8_frame(payload: bytes, ok: bool) -> None:
    assert broken(rpc_client.utf8_frame(payload)) == ([] if ok else ["RPC-2-utf8"])
