"""§2 and §2.2: child requests under a call -- headless confirmations, parent
ids, outstanding and distinct child ids, children of a settled or
cancelled parent (§2.10 secrets: :mod:`.host_secrets`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.peers.host_rig import HostRequest, HostRig
from conformance.protocol import jsonrpc
from conformance.protocol.limits import (
    MAX_CHILD_ID_BYTES,
    MAX_CHILD_IDS_PER_GENERATION,
    MAX_OUTSTANDING_CHILDREN,
)
from conformance.protocol.violations import Violation
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import _cancels_of
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import (
    REQUEST_CANCELLED,
    SLACK_S,
    HostRejected,
    ready,
    start_call,
    tool_result,
)

# -- §2.2 ---------------------------------------------------------------------------------


def headless_confirmation(api_version: str) -> Scenario:
    """A confirmation under an active parent is answered on its id; a
    non-interactive frontend denies it."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        params: dict[str, Any] = {"prompt": "Proceed?", "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        answer = rig.ask("confirm-1", "confirmation/request", params)
        rig.recorder.exercise("EXT-2.2-host-answer")
        # Denying is {"confirmed": false}; a refusal (an error answer) also
        # leaves the action unconfirmed, so both pass. Only a confirmation fails.
        result = getattr(answer, "result", None)
        if answer is None or (isinstance(result, dict) and result.get("confirmed") is True):
            rig.recorder.violate(
                Violation("EXT-2.2-host-answer", f"a headless host answered a confirmation with {answer!r}")
            )
        if api_version == "0.1":
            no_parent_0_1(rig, answer)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("headless-confirmation", run)


def under_a_call(name: str, play: Callable[[HostRig, HostRequest], None]) -> Callable[[str], Scenario]:
    """A scenario that plays ``play`` while one tool call is active, then settles it and shuts down."""

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            call, req = start_call(rig)
            play(rig, req)
            rig.respond(req.wire_id, tool_result(api_version))
            rig.settled(call)
            shutdown_with(rig, ack=True, exit_after_ack=True)

        return Scenario(name, run)

    return make


def no_parent_0_1(rig: HostRig, answer: Any) -> None:
    """§2.2: API 0.1 confirmations carry no parent_request_id; a host does not
    refuse one for lacking it (the probe declares confirmations, the id is
    fresh and legal, so nothing else can justify a refusal)."""
    if answer is None:
        return  # unanswered: judged by EXT-2.2-host-answer
    rig.recorder.exercise("EXT-2.2-host-0.1-no-parent")
    if isinstance(answer, jsonrpc.ErrorResponse):
        rig.recorder.violate(
            Violation(
                "EXT-2.2-host-0.1-no-parent",
                f"an API 0.1 confirmation without parent_request_id was refused ({answer.code}: "
                f"{str(answer.message)[:80]})",
            )
        )


def headless_input(rig: HostRig, parent: HostRequest) -> None:
    """§2.7: a headless host answers input/request with value null: headless
    input is cancelled, never guessed (the session judges the answer's shape;
    a refusal is not judged here)."""
    answer = _child(rig, "input-1", "input/request", {"parent_request_id": parent.wire_id, "prompt": "Name?"})
    result = getattr(answer, "result", None)
    if not isinstance(answer, jsonrpc.Response) or not isinstance(result, dict) or "value" not in result:
        return
    rig.recorder.exercise("EXT-2.7-host-input-answer")
    if result["value"] is not None:
        rig.recorder.violate(
            Violation("EXT-2.7-host-input-answer", f"a headless host answered input/request with {result['value']!r}")
        )


def child_parents(api_version: str) -> Scenario:
    """§2: confirmations under an active parent, no parent, a never-issued
    parent and a settled parent, and one reusing a finished child's id; the
    session judges every answer (refusals by the §2 rules, the §2.2 shape)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        # §2: a child id is a u64 or a string; the number is echoed as a number (JSON-RPC §5).
        cases: list[tuple[Any, Any]] = [("confirm-1", req.wire_id), (7, req.wire_id)]
        if api_version != "0.1":
            cases += [("confirm-2", None), ("confirm-3", 9_000_000)]
        for cid, parent in cases:
            _confirm(rig, cid, parent)
        _confirm(rig, BAD_CHILD_ID, req.wire_id)  # §2: neither a u64 nor a string of at most 256 bytes
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        if api_version != "0.1":
            _confirm(rig, "confirm-4", req.wire_id)  # its parent settled
        later, req2 = start_call(rig)
        _confirm(rig, "confirm-1", req2.wire_id)  # the id of a finished child, reused
        rig.respond(req2.wire_id, tool_result(api_version))
        rig.settled(later)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("child-parents", run)


# §2: one byte over the 256-byte bound of a string child id.
BAD_CHILD_ID = "b" * (MAX_CHILD_ID_BYTES + 1)


def _confirm(rig: HostRig, cid: Any, parent: Any) -> Any:
    params: dict[str, Any] = {"prompt": "Proceed?", "default": False}
    if parent is not None:
        params["parent_request_id"] = parent
    return _child(rig, cid, "confirmation/request", params)


def _child(rig: HostRig, cid: Any, method: str, params: dict[str, Any]) -> Any:
    """Send one child request and wait for its answer (judged: it must come)."""
    return rig.ask(cid, method, params)


def _answer_kind(answer: Any) -> str:
    code = getattr(answer, "code", None)
    return "nothing" if answer is None else ("result" if code is None else f"error {code}")


def wave1_owner_optional(rig: HostRig, parent: HostRequest) -> None:
    """§2: a Wave-1 request (composer/get) under a live parent, once without and
    once with a resource_owner (the one the host issued on the parent): the
    live parent's owner wins and the explicit field is ignored, so both get
    the same kind of answer (both admitted, or both refused with one code).
    Only the kind is compared: composer text may change between the two."""
    context = parent.params.get("context") if isinstance(parent.params, dict) else None
    owner = context.get("resource_owner") if isinstance(context, dict) else None
    plain = _child(rig, "composer-1", "composer/get", {"parent_request_id": parent.wire_id})
    if not isinstance(owner, dict):
        return  # no owner was issued on the parent: nothing to repeat
    owned = _child(rig, "composer-2", "composer/get", {"parent_request_id": parent.wire_id, "resource_owner": owner})
    if plain is None or owned is None:
        return  # an unanswered request is judged elsewhere
    rig.recorder.exercise("EXT-2-host-wave1-owner-optional")
    if _answer_kind(plain) != _answer_kind(owned):
        rig.recorder.violate(
            Violation(
                "EXT-2-host-wave1-owner-optional",
                f"composer/get under a live parent got {_answer_kind(plain)} without resource_owner "
                f"and {_answer_kind(owned)} with the owner the host issued",
            )
        )


# -- §2 outstanding children -----------------------------------------------------------------


def outstanding_children(api_version: str) -> Scenario:
    """§2 (API 0.2+): 128 confirmations under one active call, then an
    input/request. A host whose frontend still holds 128 of them refuses the
    input; one that answered some already may admit it. The session judges
    the input's answer against the children still unanswered when it arrives
    (those were outstanding when the host admitted it)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        held = [f"hold-{index}" for index in range(MAX_OUTSTANDING_CHILDREN)]
        for cid in held:
            rig.child_request(cid, "confirmation/request", {"prompt": "Hold?", "parent_request_id": req.wire_id})
        _child(rig, "one-more", "input/request", {"parent_request_id": req.wire_id, "prompt": "One more?"})
        rig.respond(req.wire_id, tool_result(api_version))  # the held ones are answered or cancelled now
        rig.settled(call)
        rig.until(lambda: all(cid in rig.answers or _cancels_of(rig, cid) for cid in held), SLACK_S)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("outstanding-children", run)


# -- §2 distinct child ids ---------------------------------------------------------------------

# At most this many of the budget's children are unanswered at once: well
# under §2's 128 outstanding, so only the id budget is ever at stake.
BUDGET_WINDOW = 64


def child_id_budget(api_version: str) -> Scenario:
    """§2: one generation uses all 65,536 distinct child ids (a method no host
    serves, answered at once with an error; written in pipelined batches, at
    most :data:`BUDGET_WINDOW` unanswered), then a confirmation the host would
    otherwise admit, under an active call: it is the 65,537th id, so the host
    refuses it (the session judges the answer). Costs tens of thousands of
    frames: played only when selected (:data:`ON_REQUEST`)."""

    def run(rig: HostRig) -> None:
        ready(rig, api_version)
        call, req = start_call(rig)
        session = rig.session
        assert session is not None
        for start in range(0, MAX_CHILD_IDS_PER_GENERATION, BUDGET_WINDOW // 2):
            rig.until(lambda: session.unresolved <= BUDGET_WINDOW // 2)
            if session.unresolved > BUDGET_WINDOW // 2:
                raise HostRejected(f"the host stopped answering child requests after {start:,} of them")
            end = min(start + BUDGET_WINDOW // 2, MAX_CHILD_IDS_PER_GENERATION)
            rig.child_requests((f"id-{n}", SYNC_METHOD, {}) for n in range(start, end))
        rig.until(lambda: session.unresolved == 0)
        params: dict[str, Any] = {"prompt": "One id too many?", "default": False}
        if api_version != "0.1":
            params["parent_request_id"] = req.wire_id
        _child(rig, "id-over-budget", "confirmation/request", params)
        rig.respond(req.wire_id, tool_result(api_version))
        rig.settled(call)
        shutdown_with(rig, ack=True, exit_after_ack=True)

    return Scenario("child-id-budget", run)


# Scenarios that cost far more than the rest: played by a certification with
# the thorough profile, or when a run names them (``only``, a fixture's
# ``scenarios``); otherwise their requirements stay untested, never pass.
ON_REQUEST = ("child-id-budget",)


# -- §1.9, §2: children of a settled or cancelled parent ------------------------------------


# A method no host serves: any host answers it at once (an error), which tells
# the probe that every frame it wrote before has been read.
SYNC_METHOD = "probe/sync"


def orphaned_children(*, cancel: bool) -> Callable[[str], Scenario]:
    """§2 (parent answered) / §1.9 (parent cancelled), API 0.2+: a confirmation
    under an active tool call, then the parent ends. Once the driver reports
    the parent settled, the child must be answered or named by a
    ``$/cancelRequest`` within a slack: the host cancels unresolved children
    when their parent ends. (A host that answered the child first is fine.)"""
    requirement = "EXT-1.9-host-cancels-children" if cancel else "EXT-2-host-cancels-children-on-settle"

    def make(api_version: str) -> Scenario:
        def run(rig: HostRig) -> None:
            ready(rig, api_version)
            call, req = start_call(rig)
            cid = "orphan-1"
            rig.child_request(cid, "confirmation/request", {"prompt": "Go?", "parent_request_id": req.wire_id})
            if cancel:
                # The cancel goes through the driver, not the probe's pipe: first
                # make sure the host read the child (it answered a later frame).
                _child(rig, "sync-1", SYNC_METHOD, {})
                rig.op("cancel", {"call": call, "reason": "user"})
            else:
                rig.respond(req.wire_id, tool_result(api_version))
            if rig.settled(call) is None:
                shutdown_with(rig, ack=True, exit_after_ack=True)
                return  # never settled: judged by the §1.9/§1.2 rules
            if cancel:  # a cooperative extension settles the cancelled call (no grace expires)
                rig.respond_error(req.wire_id, REQUEST_CANCELLED, "cancelled")
            rig.recorder.exercise(requirement)

            def resolved() -> bool:
                return cid in rig.answers or bool(_cancels_of(rig, cid))

            if not rig.until(resolved, SLACK_S):
                ended = "was cancelled" if cancel else "settled"
                rig.recorder.violate(
                    Violation(requirement, f"the parent {ended}, but its confirmation {cid!r} was neither answered "
                              "nor cancelled"),
                    measured={"waited_s": SLACK_S},
                )  # fmt: skip
            shutdown_with(rig, ack=True, exit_after_ack=True)

        return Scenario("orphaned-children[cancelled]" if cancel else "orphaned-children[settled]", run)

    return make
