"""Host RPC §5.1: Plan/Goal proposals, executions, plans.* results and plans.changed.

Sans-IO and stateless; paths are relative to the value handed in. Nested
proposals and executions are reported under their own requirement ids
(RPC-5.1-proposal-shape, RPC-5.1-execution-shape) wherever they appear.

Decisions where the text leaves room:
* ``version`` is ``number``: any JSON number passes (no integer demand).
* ``sha256`` is a string whose encoding the text does not fix: lowercase or
  uppercase hex, or standard base64, of the digest all pass
  (:func:`artifact_matches`); any other spelling is reported.
* ``relativePath`` must sit under the kind's directory (``.pi/plan/`` or
  ``.pi/goal/``) and end in ``.md``; the unique name is not judged here
  (uniqueness needs two submissions: RPC-5.1-artifact-unique).
* plans.changed is closed ("exactly the fields shown"): another top-level
  member is a violation. ``targetPermissionMode`` and ``execution`` must be
  present (null when empty) only when the caller says the notification
  reports a plans.resolve (``from_resolve``); elsewhere absent and null pass.
* plans.pending returning a non-pending row is reported under
  RPC-4-plans.pending (a separate rule, :func:`plans_pending_only`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator

from . import rpc_limits
from .describe import Path, kind
from .members import enum_member, excerpt, expected_object, integer_member, name, string_member
from .rpc_shapes import array_member, number_member, objects
from .violations import Finding, Violation, rule

PROPOSAL = "RPC-5.1-proposal-shape"
EXECUTION = "RPC-5.1-execution-shape"
PENDING = "RPC-5.1-pending-result"
PENDING_ONLY = "RPC-4-plans.pending"
RESOLUTION = "RPC-5.1-resolution-result"
RESOLVE_REQUEST = "RPC-5.1-resolve-request"
CHANGED = "RPC-5.1-plans-changed-shape"
ARTIFACT = "RPC-5.1-artifact-exact-bytes"

_PROPOSAL_STRINGS = ("id", "sessionId", "turnId", "toolCallId", "plan", "markdown", "title", "question")
_EXECUTION_STRINGS = ("id", "proposalId", "sessionId", "plan", "title", "question")


def _artifact_problems(value: object, requirement: str, root: str, path: Path) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, requirement, root, path)
        return
    for key in ("relativePath", "sha256"):
        yield from string_member(value, key, requirement, root, path, required=True)
    yield from integer_member(value, "sizeBytes", requirement, root, path, required=True, minimum=0)


def proposal_problems(value: object, root: str, path: Path = ()) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, PROPOSAL, root, path)
        return
    for key in _PROPOSAL_STRINGS:
        yield from string_member(value, key, PROPOSAL, root, path, required=True)
    for key in ("createdAt", "updatedAt"):
        yield from string_member(value, key, PROPOSAL, root, path, required=True)
    for key in ("expiresAt", "resolvedAt", "errorCode", "executionId"):
        yield from string_member(value, key, PROPOSAL, root, path, required=False)
    yield from enum_member(value, "kind", rpc_limits.PROPOSAL_KINDS, PROPOSAL, root, path, required=True)
    yield from enum_member(value, "status", rpc_limits.PROPOSAL_STATUSES, PROPOSAL, root, path, required=True)
    yield from number_member(value, "version", PROPOSAL, root, path, required=True)
    yield from enum_member(value, "action", rpc_limits.APPROVAL_ACTIONS, PROPOSAL, root, path, required=False)
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(value, "targetPermissionMode", modes, PROPOSAL, root, path, required=False)
    states = rpc_limits.EXECUTION_STATES
    yield from enum_member(value, "executionState", states, PROPOSAL, root, path, required=False)
    if value.get("artifact") is not None:
        yield from _artifact_problems(value["artifact"], PROPOSAL, root, (*path, "artifact"))


def execution_problems(value: object, root: str, path: Path = ()) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, EXECUTION, root, path)
        return
    for key in _EXECUTION_STRINGS:
        yield from string_member(value, key, EXECUTION, root, path, required=True)
    yield from enum_member(value, "kind", rpc_limits.PROPOSAL_KINDS, EXECUTION, root, path, required=True)
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(value, "targetPermissionMode", modes, EXECUTION, root, path, required=True)
    yield from enum_member(value, "state", rpc_limits.EXECUTION_STATES, EXECUTION, root, path, required=True)
    if "artifact" not in value:
        yield Violation(EXECUTION, f"{name(root, path)} has no artifact; expected an object", path)
    else:
        yield from _artifact_problems(value["artifact"], EXECUTION, root, (*path, "artifact"))


@rule(PROPOSAL)
def proposal_shape(proposal: object) -> Iterator[Violation]:
    yield from proposal_problems(proposal, "proposal")


@rule(EXECUTION)
def execution_shape(execution: object) -> Iterator[Violation]:
    yield from execution_problems(execution, "execution")


@rule(PENDING)
def plans_pending_shape(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, PENDING, "result")
        return
    yield from array_member(result, "plans", PENDING, "result", required=True)
    yield from enum_member(result, "state", rpc_limits.PLANNING_STATES, PENDING, "result", required=False)
    yield from enum_member(result, "kind", rpc_limits.PROPOSAL_KINDS, PENDING, "result", required=False)
    plans = result.get("plans")
    if isinstance(plans, list):
        for index, plan in enumerate(plans):
            yield from proposal_problems(plan, "result", ("plans", index))


@rule(PENDING_ONLY)
def plans_pending_only(result: object) -> Iterator[Violation]:
    plans = result.get("plans") if isinstance(result, dict) else None
    for index, plan in objects(plans):
        status = plan.get("status")
        if status != "pending":
            where = ("plans", index, "status")
            message = f"{name('result', where)} is {excerpt(status)}; plans.pending lists pending rows only"
            yield Violation(PENDING_ONLY, message, where)


def plans_pending_result(result: object) -> Iterator[Finding]:
    """Every rule on a plans.pending result."""
    yield from plans_pending_shape(result)
    yield from plans_pending_only(result)


@rule(RESOLUTION)
def resolution_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, RESOLUTION, "result")
        return
    if not isinstance(result.get("ok"), bool):
        shown = "absent" if "ok" not in result else kind(result["ok"])
        yield Violation(RESOLUTION, f"result.ok is {shown}; expected a boolean", ("ok",))
    if "proposal" not in result:
        yield Violation(RESOLUTION, "result has no proposal; expected an object")
    else:
        yield from proposal_problems(result["proposal"], "result", ("proposal",))
    yield from enum_member(result, "state", rpc_limits.PLANNING_STATES, RESOLUTION, "result", required=True)
    yield from enum_member(result, "action", rpc_limits.APPROVAL_ACTIONS, RESOLUTION, "result", required=False)
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(result, "targetPermissionMode", modes, RESOLUTION, "result", required=False)
    if result.get("execution") is not None:
        yield from execution_problems(result["execution"], "result", ("execution",))


@rule(RESOLVE_REQUEST)
def resolve_request(params: object) -> Iterator[Violation]:
    """plans.resolve params (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, RESOLVE_REQUEST, "params")
        return
    for key in ("proposalId", "sessionId", "turnId", "toolCallId"):
        yield from string_member(params, key, RESOLVE_REQUEST, "params", required=True)
    yield from number_member(params, "version", RESOLVE_REQUEST, "params", required=False)
    actions = rpc_limits.APPROVAL_ACTIONS
    yield from enum_member(params, "action", actions, RESOLVE_REQUEST, "params", required=True)
    if params.get("action") == "approve":
        modes = rpc_limits.PERMISSION_MODES
        yield from enum_member(params, "targetPermissionMode", modes, RESOLVE_REQUEST, "params", required=True)


@rule(CHANGED)
def plans_changed_params(params: object, *, from_resolve: bool = False) -> Iterator[Violation]:
    """The params of one plans.changed notification."""
    if not isinstance(params, dict):
        yield expected_object(params, CHANGED, "params")
        return
    for key in params:
        if key not in rpc_limits.PLANS_CHANGED_FIELDS:
            yield Violation(CHANGED, f"params has member {excerpt(key)}; plans.changed carries only its listed fields")
    yield from string_member(params, "sessionId", CHANGED, "params", required=True)
    yield from enum_member(params, "state", rpc_limits.PLANNING_STATES, CHANGED, "params", required=True)
    yield from enum_member(params, "kind", rpc_limits.PROPOSAL_KINDS, CHANGED, "params", required=False)
    yield from string_member(params, "proposalId", CHANGED, "params", required=False)
    yield from enum_member(params, "action", rpc_limits.APPROVAL_ACTIONS, CHANGED, "params", required=False)
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(params, "targetPermissionMode", modes, CHANGED, "params", required=False)
    if params.get("proposal") is not None:
        yield from proposal_problems(params["proposal"], "params", ("proposal",))
    if params.get("execution") is not None:
        yield from execution_problems(params["execution"], "params", ("execution",))
    if from_resolve:
        for key in ("targetPermissionMode", "execution"):
            if key not in params:
                message = f"params has no {key}; after plans.resolve it is sent, as null when empty"
                yield Violation(CHANGED, message)


def _digest_spellings(data: bytes) -> set[str]:
    digest = hashlib.sha256(data).digest()
    return {digest.hex(), digest.hex().upper(), base64.b64encode(digest).decode()}


@rule(ARTIFACT)
def artifact_matches(
    artifact: object, *, kind_: str, markdown: str, file_bytes: bytes | None = None
) -> Iterator[Violation]:
    """A submitted artifact against the Markdown that was submitted (and,
    when the harness could read it, the file's bytes)."""
    if not isinstance(artifact, dict):
        yield expected_object(artifact, ARTIFACT, "artifact")
        return
    wanted = markdown.encode("utf-8", "surrogatepass")
    directory = rpc_limits.ARTIFACT_DIRS.get(kind_, "")
    path = artifact.get("relativePath")
    if not (isinstance(path, str) and path.startswith(directory) and path.endswith(".md")):
        message = f"artifact.relativePath is {excerpt(path)}; expected a .md file under {directory}"
        yield Violation(ARTIFACT, message, ("relativePath",))
    if artifact.get("sizeBytes") != len(wanted) or isinstance(artifact.get("sizeBytes"), bool):
        message = f"artifact.sizeBytes is {excerpt(artifact.get('sizeBytes'))}; the Markdown is {len(wanted):,} bytes"
        yield Violation(ARTIFACT, message, ("sizeBytes",))
    sha = artifact.get("sha256")
    if not isinstance(sha, str) or sha not in _digest_spellings(wanted):
        message = f"artifact.sha256 is {excerpt(artifact.get('sha256'))}; it is not the digest of the Markdown"
        yield Violation(ARTIFACT, message, ("sha256",))
    if file_bytes is not None and file_bytes != wanted:
        message = f"the artifact file holds {len(file_bytes):,} bytes that differ from the {len(wanted):,} submitted"
        yield Violation(ARTIFACT, message)
