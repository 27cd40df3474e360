"""The host's answers to the probe's own requests (§2, §2.2, §3)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocol.host_answers import (
    ChildWait,
    ParentInfo,
    Refusal,
    check_child_answer,
    child_answered,
    child_id_legal,
    child_refusals,
)
from conformance.protocol.jsonrpc import ErrorResponse, Response
from conformance.protocol.limits import (
    INPUT_ANSWER_MAX_BYTES,
    MAX_CHILD_IDS_PER_GENERATION,
    MAX_U64,
    SECRET_VALUE_MAX_BYTES,
)
from conformance.protocol.violations import Violation

LIVE_TOOL = ParentInfo("tool/call", None, settled=False, cancelled=False)


def refusals(method: str = "confirmation/request", params: Any = None, cid: Any = 1, **kw: Any) -> tuple[str, ...]:
    args: dict[str, Any] = {"api_version": "0.2", "parent": LIVE_TOOL, "reused": False, "outstanding": 1, "distinct": 1}
    args.update(kw)
    found = child_refusals(method, {"parent_request_id": 2} if params is None else params, cid, **args)
    return tuple(r.requirement for r in found)


@pytest.mark.parametrize(
    ("cid", "ok"),
    [
        (0, True),
        (MAX_U64, True),
        (MAX_U64 + 1, False),
        (-1, False),
        (True, False),
        (1.5, False),
        ("x" * 256, True),
        ("é" * 128, True),
        ("é" * 129, False),
        (None, False),
    ],
)
def test_child_id_legal(cid: Any, ok: bool) -> None:
    assert child_id_legal(cid) is ok


def test_a_valid_child_may_be_admitted() -> None:
    assert refusals() == ()


def test_parent_rules() -> None:
    assert refusals(params={}) == ("EXT-2-host-refuses-missing-parent",)
    assert refusals(params={"parent_request_id": "2"}) == ("EXT-2-host-refuses-missing-parent",)
    assert refusals(parent=None) == ("EXT-2-host-refuses-inactive-parent",)
    assert refusals(parent=ParentInfo("tool/call", None, True, False)) == ("EXT-2-host-refuses-inactive-parent",)
    assert refusals(parent=ParentInfo("tool/call", None, False, True)) == ()  # undecided
    assert refusals(parent=ParentInfo("hook/run", "before_prompt", False, False)) == (
        "EXT-1.2-host-owner-not-authority",
    )
    assert refusals(parent=ParentInfo("hook/run", "before_tool_call", False, False)) == ()
    assert refusals(params={}, api_version="0.1") == ()  # 0.1 confirmations carry no parent
    assert refusals("notification/other", params={}) == ()  # not operation-scoped


@pytest.mark.parametrize(
    "distinct", [MAX_CHILD_IDS_PER_GENERATION - 1, MAX_CHILD_IDS_PER_GENERATION, MAX_CHILD_IDS_PER_GENERATION + 1]
)
def test_distinct_id_budget_n_minus_1_n_n_plus_1(distinct: int) -> None:
    expected = ("EXT-2-host-refuses-over-id-budget",) if distinct > MAX_CHILD_IDS_PER_GENERATION else ()
    assert refusals(distinct=distinct) == expected


def test_wave1_settled_parent_without_owner() -> None:
    settled = ParentInfo("tool/call", None, True, False)
    composer = frozenset({"composer"})
    assert refusals("composer/get", {"parent_request_id": 2}, parent=settled, features=composer) == (
        "EXT-2-host-wave1-owner-precedence",
    )
    owner = {"parent_request_id": 2, "resource_owner": {}}
    # an owner naming no instance and generation this generation issued is never coerced
    assert refusals("composer/get", owner, parent=settled, features=composer) == ("EXT-2-host-owner-never-coerced",)
    issued = {"extension_instance_id": "i-1", "process_generation": 3, "session_id": "s"}
    valid = {"parent_request_id": 2, "resource_owner": issued}
    owners = frozenset({("i-1", 3)})
    # whether the session id is one the host issued is host state: not judged
    assert refusals("composer/get", valid, parent=settled, features=composer, owners=owners) == ()
    stale = {"parent_request_id": 2, "resource_owner": {**issued, "process_generation": 2}}
    assert refusals("composer/get", stale, parent=settled, features=composer, owners=owners) == (
        "EXT-2-host-owner-never-coerced",
    )
    odd = {"parent_request_id": 2, "resource_owner": {"extension_instance_id": [], "process_generation": {}}}
    assert refusals("composer/get", odd, parent=settled, features=composer, owners=owners) == (
        "EXT-2-host-owner-never-coerced",
    )
    # a host that does not serve composer/get may refuse it as an unknown method
    assert refusals("composer/get", {"parent_request_id": 2}, parent=settled) == ()


def broken(method: str, refused: tuple[str, ...], answer: Response | ErrorResponse) -> list[str]:
    findings = check_child_answer(method, tuple(Refusal(r, "a reason") for r in refused), answer)
    return [f.requirement for f in findings if isinstance(f, Violation)]


def test_refused_children_need_an_error_of_any_code() -> None:
    refused = ("EXT-2-host-refuses-missing-parent",)
    assert broken("confirmation/request", refused, Response(1, {"confirmed": True})) == list(refused)
    assert broken("confirmation/request", refused, ErrorResponse(1, -32602, "no parent")) == []


def test_confirmation_answer_shape() -> None:
    assert broken("confirmation/request", (), Response(1, {"confirmed": True})) == []
    assert broken("confirmation/request", (), Response(1, {})) == ["EXT-2.2-host-answer-shape"]
    assert broken("confirmation/request", (), Response(1, True)) == ["EXT-2.2-host-answer-shape"]


@pytest.mark.parametrize(
    ("message", "ok"),
    [
        ("not_foreground_owner", True),
        ("composer/set not_foreground_owner: x", True),
        ("not_foreground_owner: x", True),
        ("", False),
        ("!! x", False),
        (": x", False),
    ],
)
def test_wave1_refusal_format(message: str, ok: bool) -> None:
    assert (broken("composer/set", (), ErrorResponse(1, -32002, message)) == []) is ok


@pytest.mark.parametrize("size", [INPUT_ANSWER_MAX_BYTES - 1, INPUT_ANSWER_MAX_BYTES, INPUT_ANSWER_MAX_BYTES + 1])
def test_input_answer_bound_n_minus_1_n_n_plus_1(size: int) -> None:
    expected = ["EXT-2.7-host-input-answer"] if size > INPUT_ANSWER_MAX_BYTES else []
    assert broken("input/request", (), Response(1, {"value": "v" * size})) == expected


@pytest.mark.parametrize(
    ("result", "ok"),
    [
        ({"value": None}, True),
        ({"value": ""}, True),
        ({"value": None, "cancelled": True}, False),
        ({}, False),
        ({"value": 3}, False),
        ("text", False),
    ],
)
def test_input_answer_shape(result: Any, ok: bool) -> None:
    assert (broken("input/request", (), Response(1, result)) == []) is ok
    assert broken("input/request", (), ErrorResponse(1, -32002, "no frontend")) == []  # a refusal is not judged


SECRETS = frozenset({"secrets"})


def secret_broken(answer: Response | ErrorResponse, features: frozenset[str] = SECRETS) -> list[str]:
    return [f.requirement for f in check_child_answer("secret/get", (), answer, features) if isinstance(f, Violation)]


@pytest.mark.parametrize("size", [SECRET_VALUE_MAX_BYTES - 1, SECRET_VALUE_MAX_BYTES, SECRET_VALUE_MAX_BYTES + 1])
def test_secret_value_bound_n_minus_1_n_n_plus_1(size: int) -> None:
    expected = ["EXT-2.10-host-secret-answers"] if size > SECRET_VALUE_MAX_BYTES else []
    assert secret_broken(Response(1, {"value": "s" * size})) == expected


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        (Response(1, {"value": ""}), True),
        (Response(1, {"value": None}), False),
        (Response(1, {"value": "x", "owner": {}}), False),
        (ErrorResponse(1, -32602, "secret name is not declared"), True),
        (ErrorResponse(1, -32002, "no active owner"), True),
        (ErrorResponse(1, -32004, "secret is unavailable"), True),
        (ErrorResponse(1, -32601, "method not found"), False),
    ],
)
def test_secret_answers(answer: Response | ErrorResponse, ok: bool) -> None:
    assert (secret_broken(answer) == []) is ok
    assert secret_broken(answer, frozenset()) == []  # secrets not negotiated: the host serves no secret/get


@pytest.mark.parametrize(
    ("wait", "ok"),
    [
        (ChildWait("input/request", "i1", answered=True), True),
        (ChildWait("input/request", "i1", answered=False, cancelled=True), True),
        (ChildWait("input/request", "i1", answered=False, ended=True), True),
        (ChildWait("input/request", "i1", answered=False), False),
    ],
)
def test_every_request_of_the_extension_is_answered_or_cancelled(wait: ChildWait, ok: bool) -> None:
    assert [f.requirement for f in child_answered(wait) if isinstance(f, Violation)] == (
        [] if ok else ["JSONRPC-5-host-answers-requests"]
    )
