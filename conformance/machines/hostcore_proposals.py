"""Tool rules about plan proposals (§10 items 11 and 12): submissions,
their artifacts, resolution, execution and interruption."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from conformance.machines.hostcore_modes import ModeRules
from conformance.machines.hostcore_world import KINDS, MARKDOWN, SECRET, World, _code, _mentions, survives
from conformance.protocol import rpc_errors, rpc_limits, rpc_plans
from conformance.protocol.violations import Violation


class ProposalRules(ModeRules):
    """§10 items 11 and 12: submissions, resolution, interruption."""

    # -- §10 items 11 and 12: submissions, resolution, interruption -----------------------
    def _submit(self, sid: str, turn: str, kind: str, *, method: bool = False) -> tuple[str, dict[str, Any]] | None:
        """Run the kind's submit tool (or, with ``method``, call plans.submit
        with the same fields); the pending proposal it created (found
        through plans.pending, judged by RPC-5.1-pending-result and
        RPC-5.1-proposal-shape) with its tool-call id. RPC-4-plans.submit:
        the submission succeeds from the running turn in the kind's mode."""
        args = {"title": f"A {kind} title", "markdown": MARKDOWN, "question": f"Approve this {kind}?"}
        call_id = self._call_id()
        if method:
            ids = {"sessionId": sid, "turnId": turn, "toolCallId": call_id, "kind": kind}
            response = self._call("plans.submit", ids | args)
            result = response.get("result") if response is not None else None
            failed = None if isinstance(result, dict) and result.get("ok") is not False else "plans.submit"
            code: object = rpc_errors.error_code_of(response.get("error")) if response is not None else None
        else:
            done = self._execute(sid, rpc_limits.SUBMIT_TOOLS[kind], args, turnId=turn, toolCallId=call_id)
            response, code = done.response, _code(done.result)
            failed = (
                None if done.result is not None and done.result.get("ok") is True else rpc_limits.SUBMIT_TOOLS[kind]
            )
        if response is None:
            return None
        self.recorder.exercise("RPC-4-plans.submit")
        if failed is not None:
            message = f"{failed} in {kind} mode from the running turn failed: {code!r}"
            self.peer.violate(Violation("RPC-4-plans.submit", message))
            return None
        return self._pending_proposal(sid, call_id, kind, args)

    def _pending_proposal(
        self, sid: str, call_id: str, kind: str, args: dict[str, str]
    ) -> tuple[str, dict[str, Any]] | None:
        pending = self._pending(sid)
        if pending is None:
            return None  # unanswered (reported) or its params refused (untested)
        plans = pending.get("plans") if isinstance(pending, dict) else None
        found = [p for p in plans or [] if isinstance(p, dict) and p.get("toolCallId") == call_id]
        self.recorder.exercise("RPC-4-plans.pending")
        if not found:
            message = "plans.pending does not list the proposal just submitted"
            self.peer.violate(Violation("RPC-4-plans.pending", message))
            return None
        proposal = found[0]
        self.peer.add(rpc_plans.proposal_shape(proposal))
        self.recorder.exercise("RPC-10-11-submit-artifacts")
        carried = (proposal.get("kind"), proposal.get("title"), proposal.get("question"))
        if carried != (kind, args["title"], args["question"]):
            message = f"the pending {kind} proposal does not carry the submitted kind, title and question"
            self.peer.violate(Violation("RPC-10-11-submit-artifacts", message))
        return call_id, proposal

    def _artifact_bytes(self, root: Path, proposal: dict[str, Any]) -> bytes | None:
        artifact = proposal.get("artifact")
        path = artifact.get("relativePath") if isinstance(artifact, dict) else None
        if not isinstance(path, str) or os.path.isabs(path) or ".." in Path(path).parts:
            return None
        try:
            return (root / path).read_bytes()
        except OSError:
            return None

    def _judge_artifact(self, root: Path, proposal: dict[str, Any], kind: str) -> None:
        """RPC-5.1-artifact-exact-bytes and RPC-10-11-submit-artifacts."""
        found = self._artifact_bytes(root, proposal)
        artifact = proposal.get("artifact")
        findings = list(rpc_plans.artifact_matches(artifact, kind_=kind, markdown=MARKDOWN, file_bytes=found))
        self.peer.add(findings)
        self.recorder.exercise("RPC-10-11-submit-artifacts")
        if found is None:
            message = f"the {kind} artifact {artifact!r} is not a readable file under the session root"
            self.peer.violate(Violation("RPC-5.1-artifact-exact-bytes", message))
        if found is None or any(isinstance(f, Violation) for f in findings):
            self.peer.violate(
                Violation("RPC-10-11-submit-artifacts", f"the {kind} artifact does not hold the exact bytes")
            )

    def _resolve(self, proposal: dict[str, Any], call_id: str, action: str, **changes: Any) -> dict[str, Any] | None:
        params: dict[str, Any] = {
            "proposalId": proposal.get("id"),
            "sessionId": proposal.get("sessionId"),
            "turnId": proposal.get("turnId"),
            "toolCallId": call_id,
            "version": proposal.get("version"),
            "action": action,
        }
        if action == "approve":
            params["targetPermissionMode"] = "auto"
        return self._call("plans.resolve", params | changes)

    def _refused(self, response: dict[str, Any] | None, requirement: str, what: str) -> None:
        if response is None:
            return
        result = response.get("result")
        self.recorder.exercise(requirement)
        if "error" not in response and not (isinstance(result, dict) and result.get("ok") is False):
            self.peer.violate(Violation(requirement, f"{what} was accepted"))

    @rule(kind=KINDS)
    @survives
    def submit_and_resolve(self, kind: str) -> None:
        """RPC-10-11-submit-artifacts: the other kind's submit tool fails with
        PLAN_KIND_MISMATCH and writes nothing (RPC-5.1-kind-mismatch); the
        artifact holds the exact bytes (RPC-5.1-artifact-exact-bytes), each
        submission its own file (RPC-5.1-artifact-unique); only a matching
        answer resolves (RPC-5.1-resolve-matching-only); rejection keeps the
        contract mode (RPC-5.1-reject-effects), approval queues an execution
        and stores the chosen permission mode (RPC-5.1-approve-effects,
        RPC-4-plans.resolve, RPC-5.1-resolution-result); the execution is
        listed, claimed and finished (RPC-4-plans.queuedExecutions,
        RPC-4-plans.claimExecution, RPC-4-plans.finishExecution,
        RPC-5.1-execution-shape); auto mode then runs an outside Read and a
        Plan-mode Bash without prompting (RPC-5-outside-path-permission,
        RPC-5-plan-goal-bash-permission).
        Submissions (RPC-4-plans.submit) are found through plans.pending
        (RPC-4-plans.pending, RPC-5.1-pending-result, RPC-5.1-proposal-shape);
        every plans.changed is judged by RPC-5.1-plans-changed-shape."""
        if not self._guard():
            return
        world = self.world()
        sid = self._session_in(world.a)
        turn = self._begin(sid) if sid is not None else None
        if sid is None or turn is None or not self._enter(sid, turn, kind):
            return
        self._kind_mismatch(sid, turn, kind, world.a)
        first = self._submit(sid, turn, kind)
        if first is None:
            return
        call_id, proposal = first
        self._judge_artifact(world.a, proposal, kind)
        first_bytes = self._artifact_bytes(world.a, proposal)
        for changes, what in (
            ({"version": _bumped(proposal.get("version"))}, "a resolution naming another version"),
            ({"turnId": "turn-that-never-ran"}, "a resolution naming another turn"),
            ({"toolCallId": "call-that-never-was"}, "a resolution naming another tool call"),
        ):
            self._refused(self._resolve(proposal, call_id, "reject", **changes), "RPC-5.1-resolve-matching-only", what)
        if not self._still_listed(sid, proposal):
            return
        start = len(self.peer.notifications)
        rejected = self._resolution(self._resolve(proposal, call_id, "reject"), "rejected")
        if rejected is None:
            return
        self._changed(start, sid, "a rejection", from_resolve=True)
        if not self._contract_mode_kept(sid, kind, "RPC-5.1-reject-effects", "a rejection"):
            return  # the next submission needs the contract mode
        second = self._submit(sid, turn, kind)
        if second is None:
            return
        self._unique(world.a, proposal, second[1], first_bytes)
        self._artifacts_listed(sid, proposal, second[1])
        self._approve(sid, turn, kind, second, world)

    def _kind_mismatch(self, sid: str, turn: str, kind: str, root: Path) -> None:
        other = "goal" if kind == "plan" else "plan"
        folder = root / rpc_limits.ARTIFACT_DIRS[other]
        before = sorted(folder.iterdir()) if folder.is_dir() else []
        args = {"title": "wrong kind", "markdown": MARKDOWN, "question": "?"}
        done = self._execute(sid, rpc_limits.SUBMIT_TOOLS[other], args, turnId=turn)
        response = done.response
        if response is None:
            return
        refused: dict[str, Any] = done.result or {}
        if done.result is None:  # PLAN_* has a §7 error slot too (1015): an error answer passes
            refused = {"ok": False, "errorCode": rpc_errors.error_code_of(response.get("error"))}
        for requirement in ("RPC-5.1-kind-mismatch", "RPC-10-11-submit-artifacts"):
            self.recorder.exercise(requirement)
        after = sorted(folder.iterdir()) if folder.is_dir() else []
        if refused.get("ok") is not False or refused.get("errorCode") != "PLAN_KIND_MISMATCH" or after != before:
            wrote = "; it wrote an artifact" if after != before else ""
            message = (
                f"{rpc_limits.SUBMIT_TOOLS[other]} in {kind} mode answered ok {refused.get('ok')!r}, "
                f"errorCode {refused.get('errorCode')!r}{wrote}; expected PLAN_KIND_MISMATCH and no artifact"
            )
            for requirement in ("RPC-5.1-kind-mismatch", "RPC-10-11-submit-artifacts"):
                self.peer.violate(Violation(requirement, message))

    def _still_listed(self, sid: str, proposal: dict[str, Any]) -> bool:
        pending = self._pending(sid)
        listed = [p for p in (pending.get("plans") or []) if isinstance(p, dict)] if isinstance(pending, dict) else []
        same = [p for p in listed if p.get("id") == proposal.get("id")]
        if not same or same[0].get("status") != "pending":
            message = "after refused resolutions the proposal is no longer pending"
            self.peer.violate(Violation("RPC-5.1-resolve-matching-only", message))
            return False
        return True

    def _resolution(self, response: dict[str, Any] | None, status: str) -> dict[str, Any] | None:
        """A matching resolution's result (RPC-4-plans.resolve,
        RPC-5.1-resolution-result) whose proposal is now ``status``."""
        if response is None:
            return None
        self.recorder.exercise("RPC-4-plans.resolve")
        result = response.get("result")
        if not isinstance(result, dict):
            code = rpc_errors.error_code_of(response.get("error"))
            self.peer.violate(Violation("RPC-4-plans.resolve", f"a matching {status} resolution was refused: {code}"))
            return None
        self.peer.add(rpc_plans.resolution_result(result))
        proposal = result.get("proposal")
        if result.get("ok") is not True or not isinstance(proposal, dict) or proposal.get("status") != status:
            got = proposal.get("status") if isinstance(proposal, dict) else None
            message = f"a matching resolution answered ok {result.get('ok')!r}, status {got!r}; expected {status}"
            self.peer.violate(Violation("RPC-4-plans.resolve", message))
            return None
        return result

    def _contract_mode_kept(self, sid: str, kind: str, requirement: str, after: str) -> bool:
        pending = self._pending(sid)
        self.recorder.exercise(requirement)
        if isinstance(pending, dict) and (pending.get("state"), pending.get("kind")) != ("planning", kind):
            got = (pending.get("state"), pending.get("kind"))
            message = f"after {after} plans.pending shows state/kind {got}; the session stays in {kind} (planning)"
            self.peer.violate(Violation(requirement, message))
            return False
        return True

    def _unique(self, root: Path, first: dict[str, Any], second: dict[str, Any], first_bytes: bytes | None) -> None:
        """RPC-5.1-artifact-unique: a new file; the first one unchanged."""
        paths = [
            p.get("artifact", {}).get("relativePath") if isinstance(p.get("artifact"), dict) else None
            for p in (first, second)
        ]
        self.recorder.exercise("RPC-5.1-artifact-unique")
        if paths[0] == paths[1] or self._artifact_bytes(root, first) != first_bytes:
            message = f"a second submission reused or changed the first artifact ({paths[0]!r})"
            self.peer.violate(Violation("RPC-5.1-artifact-unique", message))

    def _artifacts_listed(self, sid: str, *proposals: dict[str, Any]) -> None:
        """RPC-4-artifacts.list: both submissions' artifacts are listed."""
        response = self._call("artifacts.list", {"sessionId": sid})
        if response is None:
            return  # unanswered (reported) or its params refused (untested)
        listed = response.get("result")
        self.recorder.exercise("RPC-4-artifacts.list")
        for proposal in proposals:
            artifact = proposal.get("artifact")
            path = artifact.get("relativePath") if isinstance(artifact, dict) else None
            if isinstance(path, str) and not _mentions(listed, path):
                self.peer.violate(Violation("RPC-4-artifacts.list", f"artifacts.list lacks the artifact {path}"))

    def _approve(self, sid: str, turn: str, kind: str, submitted: tuple[str, dict[str, Any]], world: World) -> None:
        call_id, proposal = submitted
        start = len(self.peer.notifications)
        approved = self._resolution(self._resolve(proposal, call_id, "approve"), "approved")
        if approved is None:
            return
        self._changed(start, sid, "an approval", from_resolve=True)
        execution = approved.get("execution")
        self.recorder.exercise("RPC-5.1-approve-effects")
        state = execution.get("state") if isinstance(execution, dict) else None
        if state != "queued" or approved.get("proposal", {}).get("executionId") in (None, ""):
            message = f"an approval answered execution state {state!r} without an execution id; expected queued"
            self.peer.violate(Violation("RPC-5.1-approve-effects", message))
        pending = self._pending(sid)
        if isinstance(pending, dict) and pending.get("state") in ("planning", "awaiting_approval"):
            message = (
                f"after an approval plans.pending shows state {pending.get('state')!r}; the session is Agent again"
            )
            self.peer.violate(Violation("RPC-5.1-approve-effects", message))
        stale = self._resolve(proposal, call_id, "reject")
        self._refused(stale, "RPC-5.1-resolve-matching-only", "a second answer to a settled proposal")
        if isinstance(execution, dict):
            self._execution_flow(sid, proposal, execution)
        self._auto_mode(sid, turn, kind, world)

    def _execution_flow(self, sid: str, proposal: dict[str, Any], execution: dict[str, Any]) -> None:
        """The params and result shapes of these three are not documented:
        an INVALID_PARAMS-class refusal is not judged (the guess was wrong)."""
        listed = self._call("plans.queuedExecutions", {"sessionId": sid})
        if listed is not None and not _guessed_wrong(listed):
            self.recorder.exercise("RPC-4-plans.queuedExecutions")
            if not _mentions(listed.get("result"), str(execution.get("id"))):
                message = "plans.queuedExecutions does not list the execution an approval just queued"
                self.peer.violate(Violation("RPC-4-plans.queuedExecutions", message))
        ids = {"executionId": execution.get("id"), "proposalId": proposal.get("id"), "sessionId": sid}
        for method, requirement, state in (
            ("plans.claimExecution", "RPC-4-plans.claimExecution", "running"),
            ("plans.finishExecution", "RPC-4-plans.finishExecution", "completed"),
        ):
            response = self._call(method, ids)
            if response is None or _guessed_wrong(response):
                return
            self.recorder.exercise(requirement)
            result = response.get("result")
            moved = result.get("execution", result) if isinstance(result, dict) else None
            if isinstance(moved, dict) and "state" in moved:
                self.peer.add(rpc_plans.execution_shape(moved))
            elif "result" in response and requirement == "RPC-4-plans.finishExecution":
                continue  # the claim reports the execution (§4); a finish need not
            if not isinstance(moved, dict) or moved.get("state") != state or moved.get("kind") != execution.get("kind"):
                got = moved.get("state") if isinstance(moved, dict) else response.get("error")
                message = f"{method} answered {got!r}; expected the execution, now {state}, of its kind"
                self.peer.violate(Violation(requirement, message))

    def _auto_mode(self, sid: str, turn: str, kind: str, world: World) -> None:
        """The approval chose auto (stored on the session): an outside Read
        runs unprompted, and so does Bash once the session plans again."""
        done = self._execute(sid, "Read", {"path": str(world.outside / SECRET)}, answer="deny")
        if done.result is not None:
            self.recorder.exercise("RPC-5-outside-path-permission")
            if done.request is not None or done.result.get("ok") is not True:
                message = "after an approval choosing auto, an outside Read was prompted or refused"
                for requirement in ("RPC-5-outside-path-permission", "RPC-5.1-approve-effects"):
                    self.peer.violate(Violation(requirement, message))
        self._end(sid, turn)
        again = self._begin(sid)
        if again is None or not self._enter(sid, again, kind):
            return
        bash = self._bash(sid, "echo auto", answer="deny", turnId=again)
        if bash is not None and bash.result is not None:
            self.recorder.exercise("RPC-5-plan-goal-bash-permission")
            if bash.request is not None or bash.result.get("ok") is not True:
                message = f"Bash in {kind} mode under auto was prompted or refused ({_code(bash.result)!r})"
                self.peer.violate(Violation("RPC-5-plan-goal-bash-permission", message))
        self._end(sid, again)

    @rule(kind=KINDS, how=st.sampled_from(("abort", "restart-pending", "restart-queued")))
    @survives
    def plan_interrupted(self, kind: str, how: str) -> None:
        """RPC-10-12-plan-statuses: plans.abort (RPC-4-plans.abort) and a host
        restart (RPC-5.1-startup-interrupts) interrupt a pending proposal or
        a queued execution (RPC-5.1-interrupted): no longer pending or
        queued, a late answer fails closed, a pending session keeps its
        contract mode and an approved one stays Agent; abort emits
        plans.changed (RPC-5.1-plans-changed-emitted)."""
        if not self._guard():
            return
        world = self.world()
        sid = self._session_in(world.a)
        turn = self._begin(sid) if sid is not None else None
        if sid is None or turn is None or not self._enter(sid, turn, kind):
            return
        # The abort case submits through plans.submit, the others with the tool.
        submitted = self._submit(sid, turn, kind, method=how == "abort")
        if submitted is None:
            return
        call_id, proposal = submitted
        execution = None
        if how == "restart-queued":
            approved = self._resolution(self._resolve(proposal, call_id, "approve"), "approved")
            execution = approved.get("execution") if approved is not None else None
        requirements = ["RPC-10-12-plan-statuses", "RPC-5.1-interrupted"]
        if how == "abort":
            start = len(self.peer.notifications)
            response = self._call("plans.abort", {"sessionId": sid})
            requirements.append("RPC-4-plans.abort")
            if response is None:
                return
            if "result" not in response:
                self.peer.violate(Violation("RPC-4-plans.abort", "plans.abort of a pending proposal was refused"))
            self._changed(start, sid, "an abort")
        else:
            self._restart()
            requirements.append("RPC-5.1-startup-interrupts")
            if not self._guard():
                return
        self._interrupted(sid, kind, proposal, call_id, execution, requirements, how)
        self._end(sid, turn)

    def _interrupted(
        self,
        sid: str,
        kind: str,
        proposal: dict[str, Any],
        call_id: str,
        execution: object,
        requirements: list[str],
        how: str,
    ) -> None:
        self.recorder.exercise(*requirements)
        problems: list[str] = []
        pending = self._pending(sid)
        if _mentions(pending.get("plans") if isinstance(pending, dict) else None, str(proposal.get("id"))):
            problems.append("the proposal is still pending")
        if how == "restart-queued":
            queued = self._result("plans.queuedExecutions", {"sessionId": sid})
            if isinstance(execution, dict) and _mentions(queued, str(execution.get("id"))):
                problems.append("the execution is still queued")
            if isinstance(pending, dict) and pending.get("state") in ("planning", "awaiting_approval"):
                problems.append(f"the approved session is back in state {pending.get('state')!r}")
        elif isinstance(pending, dict) and "RPC-5.1-startup-interrupts" in requirements:
            if (pending.get("state"), pending.get("kind")) != ("planning", kind):
                problems.append(f"the session left its {kind} contract mode (state {pending.get('state')!r})")
        late = self._resolve(proposal, call_id, "approve")
        if (
            late is not None
            and "result" in late
            and isinstance(late["result"], dict)
            and late["result"].get("ok") is not False
        ):
            problems.append("a late approval was accepted")
        for problem in problems:
            for requirement in requirements:
                self.peer.violate(Violation(requirement, f"after {how} of a {kind}: {problem}"))


def _guessed_wrong(response: dict[str, Any]) -> bool:
    """An error saying the params were invalid, to a call whose params the
    document does not spell out."""
    return rpc_errors.error_code_of(response.get("error")) in rpc_errors.INVALID_INPUT_CODES


def _bumped(version: object) -> object:
    return version + 1 if isinstance(version, int | float) and not isinstance(version, bool) else 99
