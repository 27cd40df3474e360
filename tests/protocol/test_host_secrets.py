"""§2.10 secret/get judges on hand-made lookups (host_secrets)."""

from __future__ import annotations

import pytest

from conformance.protocol.host_secrets import (
    SecretLookup,
    brokered_value,
    inactive_owner_refused,
    unavailable_uniform,
    undeclared_refused,
    value_not_logged,
)
from conformance.protocol.jsonrpc import ErrorResponse, Response
from conformance.protocol.violations import Exercise, Finding, Violation


def found(findings: object) -> list[Violation]:
    out: list[Finding] = list(findings)  # type: ignore[call-overload]
    assert isinstance(out[0], Exercise)
    return [f for f in out if isinstance(f, Violation)]


def error(code: object, message: object = "secret is unavailable", data: object = None) -> ErrorResponse:
    return ErrorResponse("s-1", code, message, data)


def value(result: object) -> Response:
    return Response("s-1", result)


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        (error(-32602, "secret name is not declared"), True),
        (error(-32002), False),  # the right refusal is the one that names the cause
        (error(-32004), False),
        (error("-32602"), False),
        (value({"value": "leaked"}), False),
    ],
)
def test_a_name_outside_the_allowlist_is_refused_with_invalid_params(
    answer: Response | ErrorResponse, ok: bool
) -> None:
    for name in ("not_declared", "PROBE_TOKEN", 7):
        got = found(undeclared_refused(SecretLookup(name, answer)))
        assert [v.requirement for v in got] == ([] if ok else ["EXT-2.10-host-secret-undeclared"])
    if not ok:
        assert "expected error -32602" in got[0].message


@pytest.mark.parametrize(
    ("answer", "ok"),
    [(error(-32002, "no active owner"), True), (error(-32602), False), (value({"value": "v"}), False)],
)
def test_no_active_owner_is_refused_with_minus_32002(answer: Response | ErrorResponse, ok: bool) -> None:
    got = found(inactive_owner_refused(SecretLookup("probe_token", answer)))
    assert [v.requirement for v in got] == ([] if ok else ["EXT-2.10-host-secret-no-owner"])


def test_every_broker_failure_gets_one_and_the_same_minus_32004() -> None:
    same = (SecretLookup("absent", error(-32004)), SecretLookup("failing", error(-32004)))
    assert found(unavailable_uniform(same)) == []
    assert found(unavailable_uniform(same[:1])) == []  # one lookup: nothing to compare, the code still judged


def test_unavailable_answers_may_name_the_secret_asked_for() -> None:
    # Naming the requested secret is no provider detail: "the same" response up to its own name passes.
    named = tuple(
        SecretLookup(name, error(-32004, f"secret {name} is unavailable", {"name": name}))
        for name in ("probe.absent", "probe-failing")
    )
    assert found(unavailable_uniform(named)) == []


@pytest.mark.parametrize(
    "failing",
    [
        error(-32004, "secret is unavailable: provider timed out"),  # the message tells the kinds apart
        error(-32004, "secret is unavailable", {"provider": "vault"}),  # so does data
        error(-32603, "internal error"),  # a different code
        value({"value": ""}),  # an empty value is not "unavailable"
    ],
)
def test_broker_failures_told_apart_or_not_minus_32004_fail(failing: Response | ErrorResponse) -> None:
    got = found(unavailable_uniform((SecretLookup("absent", error(-32004)), SecretLookup("failing", failing))))
    assert got and {v.requirement for v in got} == {"EXT-2.10-host-secret-unavailable-uniform"}


def test_a_missing_value_not_answered_minus_32004_fails_even_alone() -> None:
    got = found(unavailable_uniform((SecretLookup("absent", error(-32002)),)))
    assert [v.message for v in got] == ["secret/get for 'absent', which the broker cannot serve, got error -32002; "
                                        "expected error -32004"]  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        (value({"value": "s3cr3t-value"}), True),
        (value({"value": "s3cr3t-valu"}), False),  # truncated
        (value({"value": "s3cr3t-value", "name": "probe_token"}), False),  # not exactly value
        (value("s3cr3t-value"), False),
        (error(-32004), False),
    ],
)
def test_a_held_name_is_answered_with_exactly_the_brokers_value(answer: Response | ErrorResponse, ok: bool) -> None:
    got = found(brokered_value(SecretLookup("probe_token", answer), expected="s3cr3t-value"))
    assert [v.requirement for v in got] == ([] if ok else ["EXT-2.10-host-secret-value"])
    assert not any("s3cr3t" in v.message for v in got)  # evidence never quotes a secret


def test_the_value_must_not_appear_in_any_log_and_is_never_quoted() -> None:
    logs = {"driver's stderr": "starting\nloaded ext\n", "driver's events": '{"kind": "stderr"}'}
    assert found(value_not_logged("s3cr3t-value", logs=logs)) == []
    leaked = {**logs, "driver's stderr": "debug: child answer {'value': 's3cr3t-value'}\n"}
    got = found(value_not_logged("s3cr3t-value", logs=leaked))
    assert [v.message for v in got] == ["the secret's value appears in the driver's stderr"]
    both = {"a": "xs3cr3t-valuex", "b": "s3cr3t-value"}
    assert len(found(value_not_logged("s3cr3t-value", logs=both))) == 2


def test_an_empty_value_is_not_looked_for() -> None:
    assert found(value_not_logged("", logs={"driver's stderr": "anything"})) == []
