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
        yield expected_object(value, "RPC-5.1-proposal-shape", root, path)
        return
    for key in _PROPOSAL_STRINGS:
        yield from string_member(value, key, "RPC-5.1-proposal-shape", root, path, required=True)
    for key in ("createdAt", "updatedAt"):
        yield from string_member(value, key, "RPC-5.1-proposal-shape", root, path, required=True)
    for key in ("expiresAt", "resolvedAt", "errorCode", "executionId"):
        yield from string_member(value, key, "RPC-5.1-proposal-shape", root, path, required=False)
    yield from enum_member(
        value, "kind", rpc_limits.PROPOSAL_KINDS, "RPC-5.1-proposal-shape", root, path, required=True
    )
    yield from enum_member(
        value, "status", rpc_limits.PROPOSAL_STATUSES, "RPC-5.1-proposal-shape", root, path, required=True
    )
    yield from number_member(value, "version", "RPC-5.1-proposal-shape", root, path, required=True)
    yield from enum_member(
        value, "action", rpc_limits.APPROVAL_ACTIONS, "RPC-5.1-proposal-shape", root, path, required=False
    )
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(value, "targetPermissionMode", modes, "RPC-5.1-proposal-shape", root, path, required=False)
    states = rpc_limits.EXECUTION_STATES
    yield from enum_member(value, "executionState", states, "RPC-5.1-proposal-shape", root, path, required=False)
    if value.get("artifact") is not None:
        yield from _artifact_problems(value["artifact"], "RPC-5.1-proposal-shape", root, (*path, "artifact"))


def execution_problems(value: object, root: str, path: Path = ()) -> Iterator[Violation]:
    if not isinstance(value, dict):
        yield expected_object(value, "RPC-5.1-execution-shape", root, path)
        return
    for key in _EXECUTION_STRINGS:
        yield from string_member(value, key, "RPC-5.1-execution-shape", root, path, required=True)
    yield from enum_member(
        value, "kind", rpc_limits.PROPOSAL_KINDS, "RPC-5.1-execution-shape", root, path, required=True
    )
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(value, "targetPermissionMode", modes, "RPC-5.1-execution-shape", root, path, required=True)
    yield from enum_member(
        value, "state", rpc_limits.EXECUTION_STATES, "RPC-5.1-execution-shape", root, path, required=True
    )
    if "artifact" not in value:
        yield Violation("RPC-5.1-execution-shape", f"{name(root, path)} has no artifact; expected an object", path)
    else:
        yield from _artifact_problems(value["artifact"], "RPC-5.1-execution-shape", root, (*path, "artifact"))


@rule("RPC-5.1-proposal-shape")
def proposal_shape(proposal: object) -> Iterator[Violation]:
    yield from proposal_problems(proposal, "proposal")


@rule("RPC-5.1-execution-shape")
def execution_shape(execution: object) -> Iterator[Violation]:
    yield from execution_problems(execution, "execution")


@rule("RPC-5.1-pending-result")
def plans_pending_shape(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-5.1-pending-result", "result")
        return
    yield from array_member(result, "plans", "RPC-5.1-pending-result", "result", required=True)
    yield from enum_member(
        result, "state", rpc_limits.PLANNING_STATES, "RPC-5.1-pending-result", "result", required=False
    )
    yield from enum_member(
        result, "kind", rpc_limits.PROPOSAL_KINDS, "RPC-5.1-pending-result", "result", required=False
    )
    plans = result.get("plans")
    if isinstance(plans, list):
        for index, plan in enumerate(plans):
            yield from proposal_problems(plan, "result", ("plans", index))


@rule("RPC-4-plans.pending")
def plans_pending_only(result: object) -> Iterator[Violation]:
    plans = result.get("plans") if isinstance(result, dict) else None
    for index, plan in objects(plans):
        status = plan.get("status")
        if status != "pending":
            where = ("plans", index, "status")
            message = f"{name('result', where)} is {excerpt(status)}; plans.pending lists pending rows only"
            yield Violation("RPC-4-plans.pending", message, where)


def plans_pending_result(result: object) -> Iterator[Finding]:
    """Every rule on a plans.pending result."""
    yield from plans_pending_shape(result)
    yield from plans_pending_only(result)


@rule("RPC-5.1-resolution-result")
def resolution_result(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-5.1-resolution-result", "result")
        return
    if not isinstance(result.get("ok"), bool):
        shown = "absent" if "ok" not in result else kind(result["ok"])
        yield Violation("RPC-5.1-resolution-result", f"result.ok is {shown}; expected a boolean", ("ok",))
    if "proposal" not in result:
        yield Violation("RPC-5.1-resolution-result", "result has no proposal; expected an object")
    else:
        yield from proposal_problems(result["proposal"], "result", ("proposal",))
    yield from enum_member(
        result, "state", rpc_limits.PLANNING_STATES, "RPC-5.1-resolution-result", "result", required=True
    )
    yield from enum_member(
        result, "action", rpc_limits.APPROVAL_ACTIONS, "RPC-5.1-resolution-result", "result", required=False
    )
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(result, "targetPermissionMode", modes, "RPC-5.1-resolution-result", "result", required=False)
    if result.get("execution") is not None:
        yield from execution_problems(result["execution"], "result", ("execution",))


@rule("RPC-5.1-resolve-request")
def resolve_request(params: object) -> Iterator[Violation]:
    """plans.resolve params (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-5.1-resolve-request", "params")
        return
    for key in ("proposalId", "sessionId", "turnId", "toolCallId"):
        yield from string_member(params, key, "RPC-5.1-resolve-request", "params", required=True)
    yield from number_member(params, "version", "RPC-5.1-resolve-request", "params", required=False)
    actions = rpc_limits.APPROVAL_ACTIONS
    yield from enum_member(params, "action", actions, "RPC-5.1-resolve-request", "params", required=True)
    if params.get("action") == "approve":
        modes = rpc_limits.PERMISSION_MODES
        yield from enum_member(
            params, "targetPermissionMode", modes, "RPC-5.1-resolve-request", "params", required=True
        )


@rule("RPC-5.1-plans-changed-shape")
def plans_changed_params(params: object, *, from_resolve: bool = False) -> Iterator[Violation]:
    """The params of one plans.changed notification."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-5.1-plans-changed-shape", "params")
        return
    for key in params:
        if key not in rpc_limits.PLANS_CHANGED_FIELDS:
            yield Violation(
                "RPC-5.1-plans-changed-shape",
                f"params has member {excerpt(key)}; plans.changed carries only its listed fields",
            )
    yield from string_member(params, "sessionId", "RPC-5.1-plans-changed-shape", "params", required=True)
    yield from enum_member(
        params, "state", rpc_limits.PLANNING_STATES, "RPC-5.1-plans-changed-shape", "params", required=True
    )
    yield from enum_member(
        params, "kind", rpc_limits.PROPOSAL_KINDS, "RPC-5.1-plans-changed-shape", "params", required=False
    )
    yield from string_member(params, "proposalId", "RPC-5.1-plans-changed-shape", "params", required=False)
    yield from enum_member(
        params, "action", rpc_limits.APPROVAL_ACTIONS, "RPC-5.1-plans-changed-shape", "params", required=False
    )
    modes = rpc_limits.PERMISSION_MODES
    yield from enum_member(
        params, "targetPermissionMode", modes, "RPC-5.1-plans-changed-shape", "params", required=False
    )
    if params.get("proposal") is not None:
        yield from proposal_problems(params["proposal"], "params", ("proposal",))
    if params.get("execution") is not None:
        yield from execution_problems(params["execution"], "params", ("execution",))
    if from_resolve:
        for key in ("targetPermissionMode", "execution"):
            if key not in params:
                message = f"params has no {key}; after plans.resolve it is sent, as null when empty"
                yield Violation("RPC-5.1-plans-changed-shape", message)


def _digest_spellings(data: bytes) -> set[str]:
    digest = hashlib.sha256(data).digest()
    return {digest.hex(), digest.hex().upper(), base64.b64encode(digest).decode()}


@rule("RPC-5.1-artifact-exact-bytes")
def artifact_matches(
    artifact: object, *, kind_: str, markdown: str, file_bytes: bytes | None = None
) -> Iterator[Violation]:
    """A submitted artifact against the Markdown that was submitted (and,
    when the harness could read it, the file's bytes)."""
    if not isinstance(artifact, dict):
        yield expected_object(artifact, "RPC-5.1-artifact-exact-bytes", "artifact")
        return
    wanted = markdown.encode("utf-8", "surrogatepass")
    directory = rpc_limits.ARTIFACT_DIRS.get(kind_, "")
    path = artifact.get("relativePath")
    if not (isinstance(path, str) and path.startswith(directory) and path.endswith(".md")):
        message = f"artifact.relativePath is {excerpt(path)}; expected a .md file under {directory}"
        yield Violation("RPC-5.1-artifact-exact-bytes", message, ("relativePath",))
    if artifact.get("sizeBytes") != len(wanted) or isinstance(artifact.get("sizeBytes"), bool):
        message = f"artifact.sizeBytes is {excerpt(artifact.get('sizeBytes'))}; the Markdown is {len(wanted):,} bytes"
        yield Violation("RPC-5.1-artifact-exact-bytes", message, ("sizeBytes",))
    sha = artifact.get("sha256")
    if not isinstance(sha, str) or sha not in _digest_spellings(wanted):
        message = f"artifact.sha256 is {excerpt(artifact.get('sha256'))}; it is not the digest of the Markdown"
        yield Violation("RPC-5.1-artifact-exact-bytes", message, ("sha256",))
    if file_bytes is not None and file_bytes != wanted:
        message = f"the artifact file holds {len(file_bytes):,} bytes that differ from the {len(wanted):,} submitted"
        yield Violation("RPC-5.1-artifact-exact-bytes", message)
