"""JSON-RPC 2.0 §5 / §5.1 over host-core answers (conformance/protocol/rpc_answers.py)."""

from __future__ import annotations

import json
from typing import Any

from conformance.protocol.rpc_answers import PARSED_LINE_BYTES, AnswerLedger, id_key, judge_response
from conformance.protocol.violations import Violation


def line(rid: object, method: str = "app.health") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}).encode() + b"\n"


def broken(findings: list[Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        if isinstance(f, Violation):
            out.setdefault(f.requirement, []).append(f.message)
    return out


def answer(ledger: AnswerLedger, rid: object, **body: Any) -> tuple[str, dict[str, list[str]]]:
    message = {"jsonrpc": "2.0", "id": rid, **(body or {"result": {}})}
    matched, findings = judge_response(ledger, message)
    return matched.how, broken(findings)


def test_an_exact_echo_passes_and_is_exercised() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(1) + line("crlf")[:-1] + b"\r\n")
    matched, findings = judge_response(ledger, {"jsonrpc": "2.0", "id": 1, "result": {}})
    assert matched.how == "exact" and matched.method == "app.health" and not broken(findings)
    exercised = {f.requirement for f in findings}
    assert {"JSONRPC-5-hostcore-id-echo", "JSONRPC-5-hostcore-one-response"} <= exercised
    assert answer(ledger, "crlf") == ("exact", {})


def test_ids_are_compared_by_value_and_type() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(5) + line(6))
    assert answer(ledger, 5.0) == ("exact", {})
    how, flagged = answer(ledger, "6")
    assert how == "loose" and list(flagged) == ["JSONRPC-5-hostcore-id-echo"]
    assert "another JSON type" in flagged["JSONRPC-5-hostcore-id-echo"][0]
    assert id_key(True) != id_key(1) and id_key("1") != id_key(1) and id_key(2.0) == id_key(2)


def test_a_second_answer_is_flagged_once_per_extra_answer() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(1))
    assert answer(ledger, 1) == ("exact", {})
    how, flagged = answer(ledger, 1)
    assert how == "again" and list(flagged) == ["JSONRPC-5-hostcore-one-response"]


def test_an_id_never_sent_answers_nothing() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(1))
    how, flagged = answer(ledger, 99)
    assert how == "none" and "matches no request" in flagged["JSONRPC-5-hostcore-id-echo"][0]
    how, flagged = answer(ledger, {"no": "id"})
    assert how == "none" and list(flagged) == ["JSONRPC-5-hostcore-id-echo"]


def test_an_error_with_a_null_id_says_a_line_was_unreadable_and_a_result_with_one_answers_nothing() -> None:
    ledger = AnswerLedger()
    ledger.wrote(b'{"jsonrpc":"2.0","id":\n' + line(1))
    # Whether the host-core read the line right is the framing rules' matter.
    for _ in range(2):
        assert answer(ledger, None, error={"code": -32700, "message": "parse error"}) == ("unreadable", {})
    how, flagged = answer(ledger, None)
    assert how == "none" and "id null answers no request" in flagged["JSONRPC-5-hostcore-id-echo"][0]


def test_a_line_split_across_writes_and_a_final_unterminated_line_are_requests() -> None:
    ledger = AnswerLedger()
    for byte in line("split"):
        ledger.wrote(bytes([byte]))
    ledger.wrote(line("final")[:-1])
    ledger.closed()
    assert answer(ledger, "split") == ("exact", {})
    assert answer(ledger, "final") == ("exact", {})


def test_a_long_line_may_be_answered_with_its_peeked_id_or_null() -> None:
    head = b'{"jsonrpc":"2.0","id":"oversized","method":"app.health","params":{"pad":"'
    for reply in ("oversized", None):
        ledger = AnswerLedger()
        ledger.wrote(head + b"x" * PARSED_LINE_BYTES + b'"}}\n')
        assert answer(ledger, reply, error={"code": 1002, "message": "too long"})[1] == {}
    ledger = AnswerLedger()
    ledger.wrote_long_line(head)
    assert answer(ledger, "oversized", error={"code": 1002, "message": "too long"}) == ("exact", {})


def test_the_envelope_rules_bind_under_the_hostcore_entries() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(1) + line(2) + line(3) + line(4))
    _, both = answer(ledger, 1, result={}, error={"code": 1000, "message": "x"})
    assert list(both) == ["JSONRPC-5-hostcore-result-xor-error"]
    _, neither = answer(ledger, 2, jsonrpc="2.0")
    assert list(neither) == ["JSONRPC-5-hostcore-result-xor-error"]
    _, bad = answer(ledger, 3, error={"code": "1000", "message": 7})
    assert bad.keys() == {"JSONRPC-5.1-hostcore-error-object"} and len(bad["JSONRPC-5.1-hostcore-error-object"]) == 2
    _, reserved = answer(ledger, 4, error={"code": -32100, "message": "x"})
    assert list(reserved) == ["JSONRPC-5.1-hostcore-reserved-codes"]


def test_the_codes_the_document_uses_are_not_reserved_misuse() -> None:
    ledger = AnswerLedger()
    ledger.wrote(line(1) + line(2) + line(3))
    for rid, code in ((1, -32029), (2, -32601), (3, -32700)):
        assert answer(ledger, rid, error={"code": code, "message": "x"}) == ("exact", {})
