"""Host RPC §5.1: proposals, executions, plans.* results, plans.changed, artifacts."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from conformance.strategies import json_values
from hypothesis import given, settings

from conformance.protocol.rpc_plans import (
    artifact_matches,
    execution_shape,
    plans_changed_params,
    plans_pending_result,
    proposal_shape,
    resolution_result,
    resolve_request,
)
from conformance.protocol.violations import Exercise, Violation

MARKDOWN = "# Plan\n\n- step é\n"
DIGEST = hashlib.sha256(MARKDOWN.encode()).hexdigest()
ARTIFACT = {"relativePath": ".pi/plan/2026-plan-1.md", "sha256": DIGEST, "sizeBytes": len(MARKDOWN.encode())}
PROPOSAL = {
    "id": "p1",
    "sessionId": "s1",
    "turnId": "t1",
    "toolCallId": "c1",
    "kind": "plan",
    "plan": MARKDOWN,
    "markdown": MARKDOWN,
    "title": "T",
    "question": "Q?",
    "status": "pending",
    "createdAt": "2026-12-01T10:00:00Z",
    "updatedAt": "2026-12-01T10:00:00Z",
    "expiresAt": "2026-12-01T10:30:00Z",
    "artifact": ARTIFACT,
    "version": 1,
}
EXECUTION = {
    "id": "e1",
    "proposalId": "p1",
    "sessionId": "s1",
    "kind": "plan",
    "plan": MARKDOWN,
    "title": "T",
    "question": "Q?",
    "artifact": ARTIFACT,
    "targetPermissionMode": "accept-edits",
    "state": "queued",
}
APPROVED = {**PROPOSAL, "status": "approved", "action": "approve", "executionId": "e1", "executionState": "queued"}


def broken(findings: Any) -> list[str]:
    out = list(findings)
    assert any(isinstance(f, Exercise) for f in out)
    return sorted({f.requirement for f in out if isinstance(f, Violation)})


def test_valid_shapes_pass() -> None:
    assert broken(proposal_shape(PROPOSAL)) == []
    assert broken(proposal_shape({**APPROVED, "targetPermissionMode": "auto", "version": 2.5})) == []
    assert broken(execution_shape(EXECUTION)) == []
    assert broken(plans_pending_result({"plans": [PROPOSAL], "state": "awaiting_approval", "kind": "plan"})) == []
    assert broken(plans_pending_result({"plans": []})) == []
    resolution = {"ok": True, "proposal": APPROVED, "state": "inactive", "action": "approve", "execution": EXECUTION}
    assert broken(resolution_result(resolution)) == []


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "task"},
        {"status": "done"},
        {"version": "1"},
        {"action": "maybe"},
        {"targetPermissionMode": "yolo"},
        {"executionState": "paused"},
        {"artifact": {"relativePath": ".pi/plan/x.md", "sha256": DIGEST}},
        {"artifact": {**ARTIFACT, "sizeBytes": -1}},
        {"markdown": None},
        {"expiresAt": 5},
    ],
)
def test_bad_proposals(change: dict[str, Any]) -> None:
    assert broken(proposal_shape({**PROPOSAL, **change})) == ["RPC-5.1-proposal-shape"]


@pytest.mark.parametrize(
    "change",
    [{"state": "pending"}, {"kind": None}, {"artifact": None}, {"targetPermissionMode": None}, {"proposalId": 1}],
)
def test_bad_executions(change: dict[str, Any]) -> None:
    assert broken(execution_shape({**EXECUTION, **change})) == ["RPC-5.1-execution-shape"]


def test_pending_result_problems() -> None:
    assert broken(plans_pending_result({"plans": [APPROVED]})) == ["RPC-4-plans.pending"]
    assert broken(plans_pending_result({"plans": [{**PROPOSAL, "kind": 1}]})) == ["RPC-5.1-proposal-shape"]
    assert broken(plans_pending_result({"plans": [], "state": "idle"})) == ["RPC-5.1-pending-result"]
    assert broken(plans_pending_result({})) == ["RPC-5.1-pending-result"]


def test_resolution_result_problems() -> None:
    assert broken(resolution_result({"ok": True, "state": "inactive"})) == ["RPC-5.1-resolution-result"]
    assert broken(resolution_result({"ok": 1, "proposal": PROPOSAL, "state": "inactive"})) == [
        "RPC-5.1-resolution-result"
    ]
    bad_execution = {"ok": True, "proposal": PROPOSAL, "state": "inactive", "execution": {**EXECUTION, "state": 0}}
    assert broken(resolution_result(bad_execution)) == ["RPC-5.1-execution-shape"]


IDENTITY = {"proposalId": "p1", "sessionId": "s1", "turnId": "t1", "toolCallId": "c1", "version": 1}


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({**IDENTITY, "action": "reject"}, True),
        ({**IDENTITY, "action": "approve", "targetPermissionMode": "ask"}, True),
        ({**IDENTITY, "action": "approve"}, False),  # approve needs an explicit mode
        ({**IDENTITY, "action": "approve", "targetPermissionMode": "always"}, False),
        ({**IDENTITY, "action": "accept"}, False),
        ({**IDENTITY, "action": "reject", "version": "1"}, False),
        ({"action": "reject"}, False),
    ],
)
def test_resolve_request(params: dict[str, Any], ok: bool) -> None:
    assert broken(resolve_request(params)) == ([] if ok else ["RPC-5.1-resolve-request"])


CHANGED = {"sessionId": "s1", "state": "awaiting_approval", "kind": "goal", "proposalId": "p1", "proposal": PROPOSAL}


def test_plans_changed() -> None:
    assert broken(plans_changed_params(CHANGED)) == []
    after_resolve = {
        **CHANGED,
        "state": "inactive",
        "action": "reject",
        "targetPermissionMode": None,
        "execution": None,
    }
    assert broken(plans_changed_params(after_resolve, from_resolve=True)) == []
    assert broken(plans_changed_params(CHANGED, from_resolve=True)) == ["RPC-5.1-plans-changed-shape"]
    assert broken(plans_changed_params({**CHANGED, "turnId": "t1"})) == ["RPC-5.1-plans-changed-shape"]  # closed
    assert broken(plans_changed_params({**CHANGED, "state": "open"})) == ["RPC-5.1-plans-changed-shape"]
    assert broken(plans_changed_params({"state": "inactive"})) == ["RPC-5.1-plans-changed-shape"]
    assert broken(plans_changed_params({**CHANGED, "execution": {"id": 1}})) == ["RPC-5.1-execution-shape"]


RAW = MARKDOWN.encode()


@pytest.mark.parametrize("sha", [DIGEST, DIGEST.upper(), base64.b64encode(hashlib.sha256(RAW).digest()).decode()])
def test_artifact_digest_spellings(sha: str) -> None:
    artifact = {**ARTIFACT, "sha256": sha}
    assert broken(artifact_matches(artifact, kind_="plan", markdown=MARKDOWN, file_bytes=RAW)) == []


@pytest.mark.parametrize(
    ("artifact", "kind", "file_bytes"),
    [
        ({**ARTIFACT, "sizeBytes": len(RAW) - 1}, "plan", None),
        ({**ARTIFACT, "sizeBytes": len(RAW) + 1}, "plan", None),
        ({**ARTIFACT, "sizeBytes": True}, "plan", None),
        ({**ARTIFACT, "sha256": hashlib.sha256(RAW + b"\n").hexdigest()}, "plan", None),
        ({**ARTIFACT, "sha256": {"hex": DIGEST}}, "plan", None),
        (ARTIFACT, "goal", None),  # a plan path for a goal submission
        ({**ARTIFACT, "relativePath": ".pi/plan/x.txt"}, "plan", None),
        (ARTIFACT, "plan", RAW.replace(b"\n", b"\r\n")),  # the file's bytes were rewritten
        ("artifact", "plan", None),
    ],
)
def test_artifact_mismatches(artifact: Any, kind: str, file_bytes: bytes | None) -> None:
    got = broken(artifact_matches(artifact, kind_=kind, markdown=MARKDOWN, file_bytes=file_bytes))
    assert got == ["RPC-5.1-artifact-exact-bytes"]


CHECKS: list[Any] = [
    proposal_shape,
    execution_shape,
    plans_pending_result,
    resolution_result,
    resolve_request,
    plans_changed_params,
]


@settings(max_examples=50)  # cheap in CI; the shapes here are shallow
@given(value=json_values(keys=["plans", "proposal", "execution", "artifact", "action", "kind", "status"]))
def test_never_raises_only_yields_findings(value: Any) -> None:
    # One example feeds every check of the module: generating it is the cost.
    for check in CHECKS:
        assert all(isinstance(f, Exercise | Violation) for f in check(value))
