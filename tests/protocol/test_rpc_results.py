"""Host RPC §4/§5.2/§6/§10: app, workspace, projects, shells and permission shapes."""

from __future__ import annotations

from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given

from conformance.protocol import rpc_results as r
from conformance.protocol.violations import Exercise, Violation

HEALTH = {
    "ok": True,
    "toolBudget": {k: 0 for k in ("active", "queued", "total", "shell", "reads", "mutations", "plugins")},
}
OPTION = {"id": "bash", "label": "Bash", "dialect": "posix", "available": True, "isDefault": True}
CATALOG = {"configuredId": None, "effective": OPTION, "fallback": False, "choices": [OPTION]}
REQUEST = {
    "requestId": "r1",
    "sessionId": "s1",
    "toolCallId": "c1",
    "toolName": "Read",
    "risk": "medium",
    "argsPreview": {"path": "/etc/hosts"},
    "reason": "outside the workspace",
}


def broken(findings: Any) -> list[str]:
    out = list(findings)
    assert any(isinstance(f, Exercise) for f in out)
    return sorted({f.requirement for f in out if isinstance(f, Violation)})


def test_valid_values_pass() -> None:
    assert broken(r.health_result(HEALTH)) == []
    assert broken(r.health_ok({"id": 1, "result": HEALTH})) == []
    assert broken(r.health_ok({"id": 1, "result": {"status": "fine"}})) == []  # no ok member: a result is enough
    assert broken(r.version_result({"version": "1"})) == []
    assert broken(r.version_result("1.0.0")) == []
    for check in (r.workspace_get_result, r.workspace_set_result, r.workspace_clear_result):
        assert broken(check(None)) == [] and broken(check({"path": "/p"})) == []
    assert broken(r.projects_list_result([{"id": "p"}])) == []
    assert broken(r.projects_list_result({"projects": []})) == []
    for created in ("p1", {"id": "p1"}, {"projectId": "p1"}, {"project": {"id": "p1"}}):
        assert broken(r.projects_create_result(created)) == []
    assert broken(r.shell_catalog(CATALOG)) == []
    assert broken(r.shell_catalog({**CATALOG, "configuredId": "cmd", "effective": None, "fallback": True})) == []
    assert broken(r.permission_request_params(REQUEST)) == []
    assert broken(r.permission_resolve_params({"requestId": "r1", "decision": "allow-session"})) == []


@pytest.mark.parametrize("key", ["active", "queued", "total", "shell", "reads", "mutations", "plugins"])
def test_every_budget_counter_is_required(key: str) -> None:
    budget = {k: v for k, v in HEALTH["toolBudget"].items() if k != key}  # type: ignore[attr-defined]
    assert broken(r.health_result({"toolBudget": budget})) == ["RPC-4-app.health"]
    assert broken(r.health_result({"toolBudget": {**budget, key: "3"}})) == ["RPC-4-app.health"]


def test_bad_app_results() -> None:
    assert broken(r.health_result({"ok": True})) == ["RPC-4-app.health"]
    assert broken(r.health_ok({"id": 1, "result": {"ok": False}})) == ["RPC-10-02-health-ok"]
    assert broken(r.health_ok({"id": 1, "error": {"code": 1000}})) == ["RPC-10-02-health-ok"]
    assert broken(r.version_result(3)) == ["RPC-4-app.getVersion"]
    assert broken(r.workspace_get_result("p")) == ["RPC-4-workspace.get"]
    assert broken(r.projects_list_result({"items": []})) == ["RPC-4-projects.list-order"]
    assert broken(r.projects_list_result(["p"])) == ["RPC-4-projects.list-order"]
    assert broken(r.projects_create_result({"ok": True})) == ["RPC-4-projects.create"]
    assert broken(r.projects_create_result({"id": 7})) == ["RPC-4-projects.create"]


@pytest.mark.parametrize(
    "catalog",
    [
        {**CATALOG, "configuredId": "zsh"},
        {k: v for k, v in CATALOG.items() if k != "configuredId"},
        {k: v for k, v in CATALOG.items() if k != "effective"},
        {**CATALOG, "fallback": "no"},
        {**CATALOG, "choices": None},
        {**CATALOG, "choices": [{**OPTION, "dialect": "sh"}]},
        {**CATALOG, "choices": [{**OPTION, "available": 1}]},
        {**CATALOG, "effective": {**OPTION, "label": None}},
        {**CATALOG, "choices": ["bash"]},
    ],
)
def test_bad_shell_catalogs(catalog: dict[str, Any]) -> None:
    assert broken(r.shell_catalog(catalog)) == ["RPC-5.2-catalog-shape"]


@pytest.mark.parametrize("change", [{"risk": "critical"}, {"reason": None}, {"requestId": 1}, {"toolName": []}])
def test_bad_permission_requests(change: dict[str, Any]) -> None:
    assert broken(r.permission_request_params({**REQUEST, **change})) == ["RPC-6-request-shape"]
    missing = {k: v for k, v in REQUEST.items() if k != "argsPreview"}
    assert broken(r.permission_request_params(missing)) == ["RPC-6-request-shape"]


@pytest.mark.parametrize("params", [{"requestId": "r1", "decision": "allow"}, {"decision": "deny"}, []])
def test_bad_resolve_params(params: Any) -> None:
    assert broken(r.permission_resolve_params(params)) == ["RPC-6-resolve-params"]


def _pending(*times: str, session: str = "s1") -> dict[str, Any]:
    return {
        "requests": [
            {**REQUEST, "requestId": f"r{i}", "sessionId": session, "createdAt": t} for i, t in enumerate(times)
        ]
    }


def test_permissions_pending() -> None:
    ordered = _pending("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", "2026-12-01T10:00:01.5+00:00")
    assert broken(r.permissions_pending_result(ordered)) == []
    assert broken(r.permissions_pending_result(ordered, session_id="s1")) == []
    assert broken(r.permissions_pending_result(ordered, session_id="s2")) == ["RPC-6-pending-list"]
    backwards = _pending("2026-12-01T10:00:01Z", "2026-12-01T10:00:00Z")
    assert broken(r.permissions_pending_result(backwards)) == ["RPC-6-pending-list"]
    assert broken(r.permissions_pending_result(_pending("yesterday"))) == ["RPC-6-pending-list"]
    assert broken(r.permissions_pending_result({"requests": [REQUEST]})) == ["RPC-6-pending-list"]  # no createdAt
    assert broken(r.permissions_pending_result({"pending": []})) == ["RPC-6-pending-list"]


CHECKS: list[Any] = [
    r.health_result,
    r.health_ok,
    r.version_result,
    r.workspace_get_result,
    r.projects_list_result,
    r.projects_create_result,
    r.shell_catalog,
    r.permission_request_params,
    r.permission_resolve_params,
    r.permissions_pending_result,
]


@given(
    value=json_values(keys=["toolBudget", "result", "ok", "projects", "choices", "effective", "requests", "createdAt"])
)
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
