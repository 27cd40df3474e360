"""Host RPC §3: app.handshake params and result."""

from __future__ import annotations

from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given, settings

from conformance.protocol.rpc_handshake import handshake_params, handshake_result
from conformance.protocol.violations import Exercise, Violation

PARAMS = {"protocolVersion": 11, "client": "electron-main", "clientVersion": "1.2.3", "locale": "en"}
RESULT = {
    "protocolVersion": 11,
    "host": "rust-host-core",
    "hostVersion": "0.9.0",
    "features": ["notifications"],
    "capabilities": ["tools"],
}


def broken(findings: Any) -> list[str]:
    out = list(findings)
    assert any(isinstance(f, Exercise) for f in out)
    return [f.requirement for f in out if isinstance(f, Violation)]


def test_valid_params_and_result_pass() -> None:
    assert broken(handshake_params(PARAMS)) == []
    assert broken(handshake_params({**PARAMS, "protocolVersion": 11.0})) == []  # judged by value
    assert broken(handshake_params({k: v for k, v in PARAMS.items() if k != "locale"})) == []  # has a default
    assert broken(handshake_result(RESULT)) == []
    assert broken(handshake_result({**RESULT, "extra": 1})) == []  # types are not closed


@pytest.mark.parametrize(
    "change",
    [
        {"protocolVersion": 10},
        {"protocolVersion": 12},
        {"protocolVersion": "11"},
        {"protocolVersion": True},
        {"client": "other-client"},
        {"clientVersion": 3},
        {"locale": 5},
    ],
)
def test_bad_params(change: dict[str, Any]) -> None:
    assert broken(handshake_params({**PARAMS, **change})) == ["RPC-3-handshake-params"]


@pytest.mark.parametrize("missing", ["protocolVersion", "client", "clientVersion"])
def test_missing_params(missing: str) -> None:
    assert broken(handshake_params({k: v for k, v in PARAMS.items() if k != missing})) == ["RPC-3-handshake-params"]


@pytest.mark.parametrize(
    "change",
    [
        {"protocolVersion": 10},
        {"host": "rust-host"},
        {"hostVersion": None},
        {"features": "tools"},
        {"capabilities": ["tools", 3]},
    ],
)
def test_bad_result(change: dict[str, Any]) -> None:
    assert broken(handshake_result({**RESULT, **change})) == ["RPC-3-handshake-result"]


def test_a2a_capability_is_flagged_on_its_own() -> None:
    violations = [f for f in handshake_result({**RESULT, "capabilities": ["tools", "a2a"]}) if isinstance(f, Violation)]
    assert [(v.requirement, v.path) for v in violations] == [("RPC-3-no-a2a-capability", ("capabilities", 1))]


@pytest.mark.parametrize("value", [None, [], "x", 11])
def test_non_objects(value: object) -> None:
    assert broken(handshake_params(value)) == ["RPC-3-handshake-params"]
    assert broken(handshake_result(value)) == ["RPC-3-handshake-result"]


CHECKS: list[Any] = [handshake_params, handshake_result]


@settings(max_examples=50)  # cheap in CI; the shapes here are shallow
@given(value=json_values(keys=["protocolVersion", "client", "host", "capabilities", "features"]))
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
