"""Params of extension-originated requests (ext_requests): §2.7 input/request."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from conformance.protocol import ext_requests as er
from conformance.protocol import limits
from conformance.protocol.ext_session import HostSession
from conformance.protocol.ext_types import ManifestInfo, Negotiated, Offer
from conformance.protocol.framing import Frame
from conformance.protocol.jsonrpc import decode_frame
from conformance.protocol.strict_json import dumps
from conformance.protocol.violations import Exercise, Finding, Violation

NEGOTIATED = Negotiated("0.2", frozenset({"request_cancellation", "content_parts"}))


def judge(params: Any, negotiated: Negotiated = NEGOTIATED) -> list[Finding]:
    return list(er.check_child_params("input/request", params, context=er.ChildContext(negotiated)))


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


@pytest.mark.parametrize(
    "params",
    [
        {"parent_request_id": 2, "prompt": "Password:", "secret": True},  # the document's example
        {"parent_request_id": 2, "prompt": "  name? "},
        {"parent_request_id": 2, "prompt": "x", "secret": None},
        {"parent_request_id": 2, "prompt": "é" * (limits.INPUT_PROMPT_MAX_BYTES // 2)},  # exactly 16 KiB
    ],
)
def test_valid_input_requests(params: Any) -> None:
    found = judge(params)
    assert Exercise(er.INPUT_REQUEST) in found
    assert broken(found) == []


@pytest.mark.parametrize(
    "params",
    [
        {"parent_request_id": 2},
        {"parent_request_id": 2, "prompt": ""},
        {"parent_request_id": 2, "prompt": " \t\n\u3000"},
        {"parent_request_id": 2, "prompt": 5},
        {"parent_request_id": 2, "prompt": "x", "secret": "yes"},
        {"parent_request_id": 2, "prompt": "x" * (limits.INPUT_PROMPT_MAX_BYTES + 1)},
        {"parent_request_id": 2, "prompt": "é" * (limits.INPUT_PROMPT_MAX_BYTES // 2) + "x"},
        [],
    ],
)
def test_invalid_input_requests(params: Any) -> None:
    assert broken(judge(params)) == [er.INPUT_REQUEST]


def test_prompt_one_below_the_bound_passes() -> None:
    assert broken(judge({"prompt": "x" * (limits.INPUT_PROMPT_MAX_BYTES - 1)})) == []


def test_not_judged_on_api_0_1_nor_for_other_methods() -> None:
    assert judge({"prompt": ""}, Negotiated("0.1")) == []
    assert list(er.check_child_params("tools/set_active", {}, context=er.ChildContext(NEGOTIATED))) == []


def test_session_judges_input_request_params_with_their_path() -> None:
    manifest = ManifestInfo("t", "1", "0.2", {"commands": ["greet"]}, {})
    session = HostSession(manifest, Offer("0.2", "0.2", limits.REQUIRED_FEATURES, (), 8))
    session.sent_request(1, "initialize", {})
    result = {
        "api_version": "0.2",
        "tools": [],
        "commands": [{"name": "greet", "description": "d"}],
        "protocol": {
            "version": "0.2",
            "features": list(limits.REQUIRED_FEATURES),
            "limits": {"max_concurrent_requests": 4},
        },
    }
    assert broken(receive(session, {"id": 1, "result": result})) == []
    session.sent_request(2, "command/execute", {"name": "greet"})
    good = {"id": "input-1", "method": "input/request", "params": {"parent_request_id": 2, "prompt": "Who?"}}
    assert broken(receive(session, good)) == []
    bad = {"id": "input-2", "method": "input/request", "params": {"parent_request_id": 2, "prompt": " "}}
    found = [f for f in receive(session, bad) if isinstance(f, Violation)]
    assert [(f.requirement, f.path) for f in found] == [(er.INPUT_REQUEST, ("params", "prompt"))]


def receive(session: HostSession, msg: dict[str, Any]) -> list[Finding]:
    return session.received(decode_frame(Frame(0, dumps({"jsonrpc": "2.0", **msg}), "lf")))


SECRETS = Negotiated("0.2", NEGOTIATED.features | {"secrets"})
ALLOWED = frozenset({"browser.api_token"})


def secret(params: Any, negotiated: Negotiated = SECRETS) -> list[str]:
    context = er.ChildContext(negotiated, ALLOWED)
    return broken(er.check_child_params("secret/get", params, context=context))


def test_secret_get_for_an_allowlisted_name_passes() -> None:
    assert secret({"parent_request_id": 2, "name": "browser.api_token"}) == []


@pytest.mark.parametrize(
    ("params", "negotiated"),
    [
        ({"parent_request_id": 2, "name": "browser.api_token"}, NEGOTIATED),  # feature not negotiated
        ({"parent_request_id": 2, "name": "browser.API_TOKEN"}, SECRETS),  # exact names only
        ({"parent_request_id": 2, "name": "browser.api_token "}, SECRETS),
        ({"parent_request_id": 2}, SECRETS),
        ({"parent_request_id": 2, "name": 7}, SECRETS),
        ("browser.api_token", SECRETS),
    ],
)
def test_secret_get_violations(params: Any, negotiated: Negotiated) -> None:
    assert secret(params, negotiated) == [er.SECRET_GET]


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        (
            {"parent_request_id": 2, "prompt": "Push?", "detail": "5 commits", "destructive": False, "default": False},
            True,
        ),
        ({"prompt": ""}, True),  # API 0.1 shape; no floor on the prompt
        ({"prompt": "p", "detail": None, "default": None}, True),
        ({"prompt": "p", "destructive": "no"}, False),
        ({"prompt": "p", "default": 0}, False),
        ({"prompt": "p", "detail": 5}, False),
        ({"detail": "d"}, False),
        ("Push?", False),
    ],
)
def test_confirmation_request_shape(params: Any, ok: bool) -> None:
    context = er.ChildContext(Negotiated("0.1"))
    found = broken(er.check_child_params("confirmation/request", params, context=context))
    assert found == ([] if ok else [er.CONFIRMATION_SHAPE])
