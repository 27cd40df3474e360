"""The host's view of one extension process generation, as pure state.

What this module is responsible for: remembering what the host (the
harness) sent -- requests, cancellations, unreadable frames -- and judging
every frame the extension writes against that memory: does a response answer
a live request, once; is progress tied to a live request with rising
sequence numbers; do child requests use legal, fresh ids under the bounds;
does each result have the shape its method and the negotiation demand.

What it is not responsible for: time. Deadlines (the 2 s cancellation grace,
"every request is answered", exit after shutdown) are judged by the peer that
owns a clock, using :meth:`HostSession.unanswered` and friends. Nor does it
decide what to send; machines do.

Per-request states (h2 style; anything missing from the table is a
violation named by the table):

      PENDING --written--> WRITTEN --cancel--> CANCEL_SENT
                              |                    |
                           response             response
                              v                    v
                           SETTLED <-----------TOMBSTONED (settled after cancel)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import limits
from .ext_answers import ERROR_ANSWERS, INTENT_ANSWERS, cancelled_answer, shutdown_acknowledged
from .ext_contributions import (
    SnapshotContext,
    check_presentation,
    context_contribution,
    revision_of,
    status_contribution,
)
from .ext_initialize import check_initialize_result, negotiated_from, tools_from
from .ext_menu import check_menu_result
from .ext_notifications import check_notification, check_progress_event
from .ext_requests import (
    ChildContext,
    artifact_bytes,
    artifact_file,
    canonical,
    check_child_params,
    no_batch,
    owner_field_scope,
    request_id_not_null,
    reserved_method_prefix,
)
from .ext_results import (
    check_command_result,
    check_context_result,
    check_hook_result,
    check_render_result,
    check_status_result,
    check_tool_result,
    is_error_result,
)
from .ext_types import IssuedArtifact, ManifestInfo, Negotiated, Offer, ToolInfo
from .ext_wave1 import PARENTED_WAVE1, ParentView, shortcut_bounds, wave1_parent
from .jsonrpc import (
    INVALID_PARAMS,
    Decoded,
    ErrorResponse,
    JsonRpcId,
    Notification,
    Request,
    Response,
)
from .members import is_integer
from .violations import Exercise, Finding, Violation, exercise_of, exercises_of


class RequestState(enum.Enum):
    PENDING = "pending"  # decided, not yet written (a scheduler may still skip it)
    WRITTEN = "written"
    CANCEL_SENT = "cancel-sent"
    SETTLED = "settled"
    TOMBSTONED = "tombstoned"


class RequestInput(enum.Enum):
    WRITTEN = "written"
    CANCEL = "cancel"
    RESPONSE = "response"
    PROGRESS = "progress"


S, In = RequestState, RequestInput
# (state, input) -> (next state, requirement violated or None)
REQUEST_TRANSITIONS: dict[tuple[RequestState, RequestInput], tuple[RequestState, str | None]] = {
    (S.PENDING, In.WRITTEN): (S.WRITTEN, None),
    (S.PENDING, In.CANCEL): (S.TOMBSTONED, None),  # §1.9: an unwritten frame is skipped
    (S.PENDING, In.RESPONSE): (S.PENDING, "JSONRPC-5-id-echo"),
    (S.PENDING, In.PROGRESS): (S.PENDING, "EXT-2.6-progress-active-request"),
    (S.WRITTEN, In.WRITTEN): (S.WRITTEN, None),
    (S.WRITTEN, In.CANCEL): (S.CANCEL_SENT, None),
    (S.WRITTEN, In.RESPONSE): (S.SETTLED, None),
    (S.WRITTEN, In.PROGRESS): (S.WRITTEN, None),
    (S.CANCEL_SENT, In.WRITTEN): (S.CANCEL_SENT, None),
    (S.CANCEL_SENT, In.CANCEL): (S.CANCEL_SENT, None),
    (S.CANCEL_SENT, In.RESPONSE): (S.TOMBSTONED, None),  # result or -32800: either may win (§1.9)
    (S.CANCEL_SENT, In.PROGRESS): (S.CANCEL_SENT, None),  # the extension has not seen the cancel yet
    (S.SETTLED, In.WRITTEN): (S.SETTLED, None),
    (S.SETTLED, In.CANCEL): (S.SETTLED, None),  # cancel after the reply: the extension ignores it
    (S.SETTLED, In.RESPONSE): (S.SETTLED, "JSONRPC-5-one-response"),
    (S.SETTLED, In.PROGRESS): (S.SETTLED, "EXT-2.6-progress-active-request"),
    (S.TOMBSTONED, In.WRITTEN): (S.TOMBSTONED, None),
    (S.TOMBSTONED, In.CANCEL): (S.TOMBSTONED, None),
    (S.TOMBSTONED, In.RESPONSE): (S.TOMBSTONED, "JSONRPC-5-one-response"),
    (S.TOMBSTONED, In.PROGRESS): (S.TOMBSTONED, "EXT-2.6-progress-active-request"),
}
ACTIVE = frozenset({S.WRITTEN, S.CANCEL_SENT})


class Lifecycle(enum.Enum):
    """§5: starting -> initializing -> ready -> draining -> stopped, with
    degraded/crashed reachable from the live states."""

    STARTING = "starting"
    INITIALIZING = "initializing"
    READY = "ready"
    DRAINING = "draining"
    STOPPED = "stopped"
    DEGRADED = "degraded"
    CRASHED = "crashed"


class LifecycleInput(enum.Enum):
    INITIALIZE_SENT = "initialize-sent"
    INITIALIZED = "initialized"
    SHUTDOWN_SENT = "shutdown-sent"
    EXITED = "exited"
    GRACE_EXPIRED = "grace-expired"


L, LI = Lifecycle, LifecycleInput
LIFECYCLE_TRANSITIONS: dict[tuple[Lifecycle, LifecycleInput], Lifecycle] = {
    (L.STARTING, LI.INITIALIZE_SENT): L.INITIALIZING,
    (L.STARTING, LI.EXITED): L.CRASHED,
    (L.INITIALIZING, LI.INITIALIZED): L.READY,
    (L.INITIALIZING, LI.EXITED): L.CRASHED,
    (L.INITIALIZING, LI.SHUTDOWN_SENT): L.DRAINING,
    (L.READY, LI.SHUTDOWN_SENT): L.DRAINING,
    (L.READY, LI.EXITED): L.CRASHED,
    (L.READY, LI.GRACE_EXPIRED): L.DEGRADED,
    (L.DRAINING, LI.EXITED): L.STOPPED,
    (L.DRAINING, LI.GRACE_EXPIRED): L.DEGRADED,
    (L.DEGRADED, LI.EXITED): L.STOPPED,
    (L.DEGRADED, LI.SHUTDOWN_SENT): L.DEGRADED,
    (L.DEGRADED, LI.GRACE_EXPIRED): L.DEGRADED,
}


class LocalProtocolError(RuntimeError):
    """The harness misused the session (a bug in the suite, not the target)."""


# §2: requests that act inside one host operation name it as their parent.
OPERATION_SCOPED = frozenset(
    {"confirmation/request", "input/request", "artifact/publish", "policy/evaluate", "secret/get"}
)
# §1.2: only these host requests are active parents of the extension's
# operation-scoped requests; prompt and context handlers (hook/run,
# context/collect) and process-scoped ones (status, render) are not.
ACTIVE_PARENT_METHODS = frozenset({"tool/call", "command/execute"})
# §2.20: the one documented exception to "nothing before initialize completes".
SHORTCUT_REGISTER = "shortcut/register"
ALLOWED_BEFORE_READY = frozenset({SHORTCUT_REGISTER})

Intent = str | None  # "unknown-method" | "invalid-params" | "oversize" | None (a valid call)
# A request carried by a frame over the 1 MiB bound (§0): the extension may
# refuse it any way it likes, silence included, so it is never owed an answer
# (an answer, with its id or with id null, is still accepted and judged).
OPTIONAL_ANSWER: frozenset[str] = frozenset({"oversize"})
# A probe request written right behind host notifications (§1.10, §1.11;
# an unknown method, answered like one): its missing answer breaks the rule
# of the notifications it follows rather than the generic one, so replaying
# the trace judges the same requirement (conformance/runner/wave1.py).
UNANSWERED_BREAKS: Mapping[str, str] = {
    "after-lifecycle": "EXT-1.10-keeps-serving",
    "after-trigger": "EXT-1.11-keeps-serving",
}


@dataclass
class HostRequest:
    id: JsonRpcId
    method: str
    params: Any
    intent: Intent = None
    state: RequestState = RequestState.WRITTEN
    last_sequence: int | None = None
    response: Response | ErrorResponse | None = None
    # Position among the frames the host wrote (requests and cancellations
    # count), and that of this request's first cancellation: §1.9 is judged
    # by what the extension provably read before it answered.
    order: int = 0
    cancel_order: int | None = None


@dataclass
class ChildRequest:
    id: JsonRpcId
    method: str
    params: Any
    parent: JsonRpcId | None


@dataclass
class HostSession:
    manifest: ManifestInfo
    offer: Offer
    lifecycle: Lifecycle = Lifecycle.STARTING
    negotiated: Negotiated | None = None
    tools: dict[str, ToolInfo] = field(default_factory=dict)
    requests: dict[Any, HostRequest] = field(default_factory=dict)
    children: dict[Any, ChildRequest] = field(default_factory=dict)
    child_ids_used: set[Any] = field(default_factory=set)
    unreadable_sent: int = 0
    exercised_before_ready: bool = False
    written: int = 0  # host frames registered so far (see HostRequest.order)
    # The highest ``order`` of a host request the extension has shown it read
    # (answered it, reported progress on it, or named it as a parent). Input
    # is read in order, so every frame written up to there was read too.
    read_through: int = 0
    # Command names the initialize result returned (§2.5 actions may name
    # these or the manifest's), and the highest §2.5 snapshot revision seen.
    commands: frozenset[str] = frozenset()
    last_revision: int | None = None
    shortcuts_registered: int = 0  # §2.20: shortcut/register frames of this generation
    # §2.8: artifacts the host issued to this generation, by id.
    artifacts: dict[str, IssuedArtifact] = field(default_factory=dict)
    # §2.11/§2.12: every catalog epoch the host published (0 = initialize),
    # and the current one; ``tools`` always holds the current epoch's.
    epochs: dict[int, dict[str, ToolInfo]] = field(default_factory=dict)
    catalog_revision: int = 0
    # §2.9: intents the host answered ask with an approval token, by token.
    approvals: dict[str, str] = field(default_factory=dict)

    # -- what the host did -------------------------------------------------
    def advance(self, event: LifecycleInput) -> None:
        key = (self.lifecycle, event)
        if key not in LIFECYCLE_TRANSITIONS:
            raise LocalProtocolError(f"lifecycle: no transition from {self.lifecycle.value} on {event.value}")
        self.lifecycle = LIFECYCLE_TRANSITIONS[key]

    def sent_request(self, rid: JsonRpcId, method: str, params: Any, *, intent: Intent = None) -> HostRequest:
        if _key(rid) in self.requests:
            raise LocalProtocolError(f"request id {rid!r} reused by the harness")
        self.written += 1
        req = HostRequest(rid, method, params, intent, order=self.written)
        self.requests[_key(rid)] = req
        if method == "initialize":
            self.advance(LifecycleInput.INITIALIZE_SENT)
        elif method == "shutdown":
            self.advance(LifecycleInput.SHUTDOWN_SENT)
        return req

    def sent_cancel(self, rid: JsonRpcId) -> None:
        self.written += 1
        req = self.requests.get(_key(rid))
        if req is not None:
            if req.cancel_order is None:
                req.cancel_order = self.written
            self._step(req, RequestInput.CANCEL, None)

    def cancel_read(self, req: HostRequest) -> bool:
        """True once the extension provably read ``req``'s cancellation: it
        has shown it read a request written after it (§1.9)."""
        return req.cancel_order is not None and self.read_through > req.cancel_order

    def _read(self, req: HostRequest) -> None:
        self.read_through = max(self.read_through, req.order)

    def sent_unreadable(self) -> None:
        """A frame with no readable id was written: one id-null reply is fine."""
        self.unreadable_sent += 1

    def child_answered(self, cid: JsonRpcId, reply: Any = None) -> None:
        """The host answered child ``cid`` with ``reply`` (the frame as a
        dict): what a successful answer issued is remembered for later
        judgements (artifacts, catalog epochs, approval tokens)."""
        child = self.children.pop(_key(cid), None)
        result = reply.get("result") if isinstance(reply, dict) else None
        if child is None or not isinstance(result, dict):
            return
        params = child.params if isinstance(child.params, dict) else {}
        if child.method == "artifact/publish" and isinstance(result.get("artifact_id"), str):
            mime, size = params.get("mime_type"), params.get("size")
            self.artifacts[result["artifact_id"]] = IssuedArtifact(
                result["artifact_id"], mime if isinstance(mime, str) else "", size if isinstance(size, int) else 0
            )
        elif child.method in ("tools/register", "tools/unregister") and is_integer(result.get("revision")):
            self._publish_epoch(int(result["revision"]), child.method, params, result.get("tools"))
        elif child.method == "policy/evaluate" and isinstance(result.get("approval_token"), str):
            self.approvals[result["approval_token"]] = canonical(params.get("intent"))

    def _publish_epoch(self, revision: int, method: str, params: dict[str, Any], accepted: Any) -> None:
        current = dict(self.tools)
        if method == "tools/register":
            current.update(tools_from(params))
        else:
            names = params.get("names")
            for name in names if isinstance(names, list) else []:
                if isinstance(name, str):
                    current.pop(name, None)
        if isinstance(accepted, list):  # authoritative: policy may omit requested tools
            current = {n: t for n, t in current.items() if n in accepted}
        self.epochs[revision] = current
        self.catalog_revision = revision
        self.tools = current

    def artifact_read(self, cid: JsonRpcId, content: bytes | None, problem: str = "") -> list[Finding]:
        """The harness read the scratch file a path publication names
        (``content``), or could not (``problem``): judge it against the
        declared size, digest and media type."""
        child = self.children.get(_key(cid))
        params = child.params if child is not None and isinstance(child.params, dict) else {}
        found = artifact_file(problem) if content is None else artifact_bytes(params, content)
        return [f.at("params") if isinstance(f, Violation) else f for f in found]

    # -- queries for the clock owner ----------------------------------------
    def unanswered(self) -> list[HostRequest]:
        """Requests still owed an answer (not those whose answer is optional)."""
        return [r for r in self.requests.values() if r.state in ACTIVE and r.intent not in OPTIONAL_ANSWER]

    def request(self, rid: JsonRpcId) -> HostRequest | None:
        return self.requests.get(_key(rid))

    # -- what the extension wrote -------------------------------------------
    def received(self, decoded: Decoded) -> list[Finding]:
        findings: list[Finding] = list(exercises_of(decoded.rules))
        findings.extend(decoded.violations)
        msg = decoded.message
        if decoded.raw is not None or msg is not None:
            findings.extend(no_batch(decoded.raw))
        if isinstance(msg, Request | Notification):
            findings.extend(reserved_method_prefix(msg.method))
            if self.offer.api_version != "0.1":
                findings.extend(owner_field_scope(msg.method, msg.params))
        if isinstance(msg, Response | ErrorResponse):
            findings.extend(self._on_response(msg))
        elif isinstance(msg, Request):
            findings.extend(self._before_ready(msg.method))
            findings.extend(self._on_child_request(msg))
            findings.extend(self._on_contribution(msg.method, msg.params, as_request=True))
            findings.extend(request_id_not_null(msg.id))
            negotiated = self.negotiated or Negotiated(self.offer.api_version)
            context = ChildContext(
                negotiated,
                self.manifest.secret_names(),
                catalog=frozenset(self.tools),
                approvals=self.approvals,
            )
            findings.extend(
                f.at("params") if isinstance(f, Violation) else f
                for f in check_child_params(msg.method, msg.params, context=context)
            )
            if msg.method == SHORTCUT_REGISTER:
                findings.extend(self._shortcut_register(msg.params, as_request=True))
            elif msg.method in PARENTED_WAVE1 and not negotiated.is_legacy:
                findings.extend(self._wave1_parent(msg.method, msg.params))
        elif isinstance(msg, Notification):
            findings.extend(self._before_ready(msg.method))
            findings.extend(self._on_notification(msg))
            if msg.method == SHORTCUT_REGISTER:
                findings.extend(self._shortcut_register(msg.params, as_request=False))
        return [f.in_frame(decoded.frame_index) if isinstance(f, Violation) else f for f in findings]

    def _step(self, req: HostRequest, event: RequestInput, requirement_text: str | None) -> list[Violation]:
        nxt, broken = REQUEST_TRANSITIONS[(req.state, event)]
        req.state = nxt
        if broken is None:
            return []
        return [
            Violation(broken, requirement_text or f"{event.value} for request {req.id!r} in state {req.state.value}")
        ]

    def _before_ready(self, method: str) -> list[Finding]:
        """§0 and §2 each say it: messages to the host follow the initialize
        answer (shortcut/register excepted, §2.20)."""
        out: list[Finding] = [exercise_of("EXT-2-after-initialize-completes")]
        if self.lifecycle in (Lifecycle.STARTING, Lifecycle.INITIALIZING) and method not in ALLOWED_BEFORE_READY:
            message = f"{method} was sent before the extension answered initialize"
            out.append(Violation("EXT-0-messages-after-initialize", message))
            out.append(Violation("EXT-2-after-initialize-completes", message))
        return out

    # responses ---------------------------------------------------------------
    def _on_response(self, msg: Response | ErrorResponse) -> list[Finding]:
        req = self.requests.get(_key(msg.id))
        if req is None:
            return self._unmatched(msg)
        findings: list[Finding] = [exercise_of("JSONRPC-5-id-echo"), exercise_of("JSONRPC-5-one-response")]
        first = req.state in ACTIVE
        # Judged before this answer counts as proof of reading: it answers a
        # request written before its own cancellation.
        was_cancelled = req.state is RequestState.CANCEL_SENT and self.cancel_read(req)
        self._read(req)
        findings.extend(
            self._step(req, RequestInput.RESPONSE, f"request {msg.id!r} ({req.method}) answered a second time")
        )
        if not first:
            return findings
        req.response = msg
        intent_rule = INTENT_ANSWERS.get(req.intent) if req.intent is not None else None
        if intent_rule is not None:
            findings.extend(intent_rule(req.method, msg))
        if req.method == "tool/call":
            findings.extend(self._catalog_rules(req, msg))
        if isinstance(msg, ErrorResponse):
            findings.extend(self._error_rules(req, msg, was_cancelled))
        else:
            findings.extend(self._result_rules(req, msg.result))
        return findings

    def _unmatched(self, msg: Response | ErrorResponse) -> list[Finding]:
        if msg.id is None:
            if self.unreadable_sent:
                self.unreadable_sent -= 1
                return [Exercise("JSONRPC-5-null-id-on-parse-error")]
            return [
                Exercise("JSONRPC-4.1-no-reply-to-notification"),
                Violation(
                    "JSONRPC-4.1-no-reply-to-notification",
                    "a response with id null arrived, but every frame the host sent was readable: "
                    "it answers a notification",
                ),
            ]
        if self.unreadable_sent:
            self.unreadable_sent -= 1
            return [
                Exercise("JSONRPC-5-null-id-on-parse-error"),
                Violation(
                    "JSONRPC-5-null-id-on-parse-error",
                    f"reply to an unreadable frame carries id {msg.id!r}; it must be null",
                ),
            ]
        return [
            Exercise("JSONRPC-5-id-echo"),
            Violation("JSONRPC-5-id-echo", f"response id {msg.id!r} matches no request the host sent"),
        ]

    def _error_rules(self, req: HostRequest, msg: ErrorResponse, was_cancelled: bool) -> list[Finding]:
        """``was_cancelled``: the extension had provably read the call's
        cancellation before answering. An error written before it could
        have read it wins the race like a result does (§1.9), whatever its
        code, so only the provable case is held to -32800."""
        out: list[Finding] = []
        if was_cancelled and req.intent is None:
            out.extend(cancelled_answer(req.method, req.id, msg))
        judge = ERROR_ANSWERS.get(req.method)
        if judge is not None:
            out.extend(judge(msg))
        return out

    def _result_rules(self, req: HostRequest, result: Any) -> list[Finding]:
        row = RESULT_CHECKS.get(req.method)
        if row is None or (row.valid_calls_only and req.intent is not None):
            return []
        return [f.at("result") if isinstance(f, Violation) else f for f in row.check(self, req, result)]

    def _tool_result(self, req: HostRequest, result: Any) -> Iterable[Finding]:
        if self.negotiated is None:
            return ()
        params = req.params if isinstance(req.params, dict) else {}
        name = params.get("name")
        tool = self._catalog_of(params).get(name) if isinstance(name, str) else None
        return check_tool_result(result, negotiated=self.negotiated, tool=tool, artifacts=self.artifacts)

    # §1.2, §2.12: catalog epochs -------------------------------------------------
    def _catalog_of(self, params: dict[str, Any]) -> dict[str, ToolInfo]:
        """The tools of the epoch a call names (the current one without a
        catalog_revision, or when it names no published epoch)."""
        revision = params.get("catalog_revision")
        if not isinstance(revision, int | float) or not is_integer(revision):
            return self.tools
        return self.epochs.get(int(revision), self.tools)

    def _catalog_rules(self, req: HostRequest, msg: Response | ErrorResponse) -> list[Finding]:
        """A call under an epoch never published is refused with -32602; a
        call under a published epoch is dispatched against that epoch's
        catalog, so a tool it does not hold is never run. Refusing an older
        epoch (-32602, retired) is always allowed.

        §2.12 names -32602 only for an unknown or retired epoch: how a call
        for a tool a known epoch lacks is turned down is not stated, so a
        JSON-RPC error and a tool error result (``is_error: true``, §1.2) both
        pass. Only a successful result shows that some handler outside the
        snapshot ran."""
        params = req.params if isinstance(req.params, dict) else {}
        revision, name = params.get("catalog_revision"), params.get("name")
        if self.negotiated is None or not self.negotiated.has("dynamic_tools"):
            return []
        if not isinstance(revision, int | float) or not is_integer(revision):
            return []
        epoch = self.epochs.get(int(revision))
        if epoch is None:
            return self._unknown_epoch(req, msg, revision)
        if revision == self.catalog_revision and name in epoch:
            return []  # an ordinary call under the current catalog
        out: list[Finding] = [Exercise("EXT-1.2-catalog-revision-snapshot")]
        if name not in epoch and isinstance(msg, Response) and not is_error_result(msg.result):
            out.append(
                Violation(
                    "EXT-1.2-catalog-revision-snapshot",
                    f"tool/call {req.id!r} for {name!r} under catalog_revision {revision}, whose catalog does not "
                    "hold that tool, was answered with a successful result: it was dispatched against another "
                    "catalog (a JSON-RPC error or an is_error result would decline it)",
                    ("result",),
                )
            )
        return out

    def _unknown_epoch(self, req: HostRequest, msg: Response | ErrorResponse, revision: Any) -> list[Finding]:
        out: list[Finding] = [Exercise("EXT-1.2-catalog-revision-dispatch")]
        published = ", ".join(str(r) for r in sorted(self.epochs))
        if isinstance(msg, Response):
            out.append(
                Violation(
                    "EXT-1.2-catalog-revision-dispatch",
                    f"tool/call {req.id!r} under catalog_revision {revision}, which was never published "
                    f"(published: {published}), was answered with a result; expected error {INVALID_PARAMS}",
                    ("result",),
                )
            )
        elif msg.code != INVALID_PARAMS:
            out.append(
                Violation(
                    "EXT-1.2-catalog-revision-dispatch",
                    f"tool/call {req.id!r} under the unpublished catalog_revision {revision} was refused with "
                    f"code {msg.code!r}; expected {INVALID_PARAMS}",
                    ("error", "code"),
                )
            )
        return out

    def _on_initialized(self, result: Any) -> list[Finding]:
        out: list[Finding] = list(check_initialize_result(result, offer=self.offer, manifest=self.manifest))
        self.negotiated = negotiated_from(result, offer=self.offer)
        self.tools = tools_from(result)
        self.epochs = {0: dict(self.tools)}  # §2.12: the initialize catalog is epoch 0
        self.commands = _command_names(result)
        out.append(Exercise("EXT-0-messages-after-initialize"))
        # Every shortcut/register of the initialize scope has been judged by
        # now; any later one is judged as it comes (and breaks the rule).
        out.append(Exercise("EXT-2.20-shortcut-register"))
        self.advance(LifecycleInput.INITIALIZED)
        return out

    # requests from the extension ---------------------------------------------
    def _on_child_request(self, msg: Request) -> list[Finding]:
        out: list[Finding] = [
            Exercise("EXT-2-child-id-type"),
            Exercise("EXT-2-child-id-unique"),
            Exercise("EXT-2-child-id-no-reuse"),
            Exercise("EXT-2-child-max-outstanding"),
            Exercise("EXT-2-child-max-ids"),
        ]
        cid, key = msg.id, _key(msg.id)
        if not _legal_child_id(cid):
            out.append(
                Violation(
                    "EXT-2-child-id-type",
                    f"extension request id {cid!r:.80} is neither an unsigned 64-bit integer nor a string "
                    f"of at most {limits.MAX_CHILD_ID_BYTES} UTF-8 bytes",
                    ("id",),
                )
            )
        if key in self.children:
            out.append(
                Violation("EXT-2-child-id-unique", f"id {cid!r} is already used by an outstanding request", ("id",))
            )
        elif key in self.child_ids_used:
            out.append(Violation("EXT-2-child-id-no-reuse", f"id {cid!r} was already used in this generation", ("id",)))
        self.child_ids_used.add(key)
        if len(self.child_ids_used) > limits.MAX_CHILD_IDS_PER_GENERATION:
            out.append(
                Violation(
                    "EXT-2-child-max-ids",
                    f"{len(self.child_ids_used):,} distinct child ids in one generation; "
                    f"limit {limits.MAX_CHILD_IDS_PER_GENERATION:,}",
                )
            )
        params = msg.params if isinstance(msg.params, dict) else {}
        parent = params.get("parent_request_id")
        self.children[key] = ChildRequest(cid, msg.method, msg.params, parent)
        if len(self.children) > limits.MAX_OUTSTANDING_CHILDREN:
            out.append(
                Violation(
                    "EXT-2-child-max-outstanding",
                    f"{len(self.children)} child requests outstanding; limit {limits.MAX_OUTSTANDING_CHILDREN}",
                )
            )
        out.extend(self._parent_rules(msg.method, params))
        return out

    def _parent_rules(self, method: str, params: dict[str, Any]) -> list[Finding]:
        api = self.negotiated.api_version if self.negotiated else self.offer.api_version
        scoped = method in OPERATION_SCOPED or method.startswith("agent/")
        if not scoped:
            return []
        if api == "0.1":
            if method != "confirmation/request":
                return []
            out: list[Finding] = [Exercise("EXT-2.2-confirmation-0.1-no-parent")]
            if "parent_request_id" in params:
                out.append(
                    Violation(
                        "EXT-2.2-confirmation-0.1-no-parent",
                        "API 0.1 confirmation/request carries parent_request_id",
                        ("params", "parent_request_id"),
                    )
                )
            return out
        out = [Exercise("EXT-2-parent-request-id")]
        parent = params.get("parent_request_id")
        where = ("params", "parent_request_id")
        if isinstance(parent, bool) or not isinstance(parent, int):
            got = "absent" if "parent_request_id" not in params else repr(parent)
            out.append(
                Violation("EXT-2-parent-request-id", f"{method} needs a numeric parent_request_id; got {got}", where)
            )
            return out
        req = self.requests.get(_key(parent))
        if req is not None:
            self._read(req)  # naming it as a parent shows it was read
        if req is None or req.state not in ACTIVE:
            state = "never sent" if req is None else f"already {req.state.value}"
            out.append(
                Violation(
                    "EXT-2-parent-request-id",
                    f"{method} names parent_request_id {parent}, which is {state}, not an active host request",
                    where,
                )
            )
        elif req.method not in ACTIVE_PARENT_METHODS:
            out.append(
                Violation(
                    "EXT-2-parent-request-id",
                    f"{method} names parent_request_id {parent}, a {req.method} request; only tool/call and "
                    "command/execute requests are active parents (§1.2)",
                    where,
                )
            )
        return out

    # §2 intro: Wave-1 owners --------------------------------------------------
    def _wave1_parent(self, method: str, params: Any) -> list[Finding]:
        """What the named parent is, as far as this session knows it."""
        pid = params.get("parent_request_id") if isinstance(params, dict) else None
        req = self.requests.get(_key(pid)) if is_integer(pid) else None
        view = None
        if req is not None:
            self._read(req)  # naming it as a parent shows it was read
            hook = req.params.get("hook") if isinstance(req.params, dict) else None
            view = ParentView(req.method, hook if isinstance(hook, str) else None, req.state in ACTIVE)
        return [f.at("params") if isinstance(f, Violation) else f for f in wave1_parent(method, params, parent=view)]

    # §2.20 ---------------------------------------------------------------------
    def _shortcut_register(self, params: Any, *, as_request: bool) -> list[Finding]:
        """A request, only while initialize is unanswered, parented on the
        initialize request, and only when the host offered ``shortcuts``;
        within the §2.20 bounds (64 per generation)."""
        out: list[Finding] = [Exercise("EXT-2.20-shortcut-register")]
        out.extend(f.at("params") if isinstance(f, Violation) else f for f in shortcut_bounds(params))
        self.shortcuts_registered += 1
        if self.shortcuts_registered > limits.SHORTCUTS_PER_GENERATION:
            out.append(
                Violation(
                    "EXT-2.20-shortcut-bounds",
                    f"{self.shortcuts_registered} shortcut registrations in one generation; "
                    f"limit {limits.SHORTCUTS_PER_GENERATION}",
                )
            )
        problems: list[tuple[str, tuple[str | int, ...]]] = []
        if not as_request:
            problems.append(("shortcut/register was sent as a notification; §2.20 makes it a request", ()))
        if "shortcuts" not in self.offer.offered:
            problems.append(("shortcut/register was sent, but the host did not offer the shortcuts feature", ()))
        init = self._open_initialize()
        if init is None:
            problems.append(("shortcut/register was sent outside the initialize request's scope", ()))
        parent = params.get("parent_request_id") if isinstance(params, dict) else None
        if as_request and init is not None and (not is_integer(parent) or _key(parent) != _key(init.id)):
            got = "absent" if parent is None else repr(parent)
            where: tuple[str | int, ...] = ("params", "parent_request_id")
            expected = f"expected the initialize id {init.id!r}"
            problems.append((f"shortcut/register parent_request_id is {got}; {expected}", where))
        out.extend(Violation("EXT-2.20-shortcut-register", message, path) for message, path in problems)
        return out

    def _open_initialize(self) -> HostRequest | None:
        """The initialize request while it is still unanswered, else None."""
        if self.lifecycle is not Lifecycle.INITIALIZING:
            return None
        return next((r for r in self.requests.values() if r.method == "initialize" and r.state in ACTIVE), None)

    # notifications from the extension ----------------------------------------
    def _on_notification(self, msg: Notification) -> list[Finding]:
        if msg.method == "$/progress":
            return self._on_progress(msg.params)
        if msg.method == "notification":
            return [f.at("params") if isinstance(f, Violation) else f for f in check_notification(msg.params)]
        return self._on_contribution(msg.method, msg.params, as_request=False)

    def _on_contribution(self, method: str, params: Any, *, as_request: bool) -> list[Finding]:
        """§2.3-§2.5: pushed contributions, notifications by definition (one
        sent as a request is judged too, and flagged). Params that are not
        structured are the envelope's fault (JSONRPC-4-params-structured)
        and are not judged again here."""
        judge = CONTRIBUTION_CHECKS.get(method)
        if judge is None or (params is not None and not isinstance(params, dict | list)):
            return []
        found = judge(self, params, as_request)
        return [f.at("params") if isinstance(f, Violation) and f.path[:1] != ("params",) else f for f in found]

    def _presentation(self, params: Any, as_request: bool) -> list[Finding]:
        found = list(check_presentation(params, as_request=as_request, context=self._snapshot_context()))
        revision = revision_of(params)
        if revision is not None:
            self.last_revision = revision if self.last_revision is None else max(revision, self.last_revision)
        return found

    def _declared_commands(self) -> frozenset[str]:
        """Commands an action may route to: the manifest's, plus those the
        initialize result returned (runtime_commands makes that list the
        authority; without it the two lists are equal anyway)."""
        return self.commands | frozenset(self.manifest.declared_names("commands"))

    def _snapshot_context(self) -> SnapshotContext:
        active = frozenset(
            r.id for r in self.requests.values() if r.state in ACTIVE and is_integer(r.id) and isinstance(r.id, int)
        )
        return SnapshotContext(
            negotiated=self.negotiated or Negotiated(self.offer.api_version),
            presentation_declared=self.manifest.contributes.get("presentation") is True,
            commands=self._declared_commands(),
            active_requests=active,
            last_revision=self.last_revision,
        )

    def _on_progress(self, params: Any) -> list[Finding]:
        negotiated = self.negotiated or Negotiated(self.offer.api_version)
        out: list[Finding] = [
            f.at("params") if isinstance(f, Violation) else f
            for f in check_progress_event(params, negotiated=negotiated)
        ]
        if not isinstance(params, dict) or not negotiated.has("request_progress"):
            return out
        rid, seq = params.get("request_id"), params.get("sequence")
        req = self.requests.get(_key(rid)) if isinstance(rid, int | str) and not isinstance(rid, bool) else None
        out.append(Exercise("EXT-2.6-progress-active-request"))
        if req is not None:
            self._read(req)
        if req is None:
            out.append(
                Violation(
                    "EXT-2.6-progress-active-request",
                    f"progress names request_id {rid!r:.60}, which the host never sent",
                    ("params", "request_id"),
                )
            )
            return out
        out.extend(
            v.at("params", "request_id")
            for v in self._step(
                req,
                RequestInput.PROGRESS,
                f"progress for request {rid!r} arrived after it was answered ({req.state.value})",
            )
        )
        if isinstance(seq, int) and not isinstance(seq, bool):
            out.append(Exercise("EXT-2.6-sequence-increasing"))
            if req.last_sequence is not None and seq <= req.last_sequence:
                out.append(
                    Violation(
                        "EXT-2.6-sequence-increasing",
                        f"progress sequence {seq} for request {rid!r} does not exceed the previous {req.last_sequence}",
                        ("params", "sequence"),
                    )
                )
            req.last_sequence = seq if req.last_sequence is None else max(seq, req.last_sequence)
        return out


@dataclass(frozen=True)
class ResultRow:
    """How the result of one host method is judged. ``valid_calls_only``:
    not for a call the host sent with a deliberate fault (its intent)."""

    check: Callable[[HostSession, HostRequest, Any], Iterable[Finding]]
    valid_calls_only: bool = False


# method -> how its result is judged (§1.1-§1.8); adding a method is one row.
# A method without a row (an unknown one, for instance) has no result rules.
RESULT_CHECKS: Mapping[str, ResultRow] = {
    "initialize": ResultRow(lambda session, req, result: session._on_initialized(result)),
    "tool/call": ResultRow(HostSession._tool_result, valid_calls_only=True),
    "command/execute": ResultRow(lambda session, req, result: check_command_result(result), valid_calls_only=True),
    "hook/run": ResultRow(
        lambda session, req, result: check_hook_result(result, hook=_member(req.params, "hook")), valid_calls_only=True
    ),
    "context/collect": ResultRow(lambda session, req, result: check_context_result(result)),
    "status/collect": ResultRow(lambda session, req, result: check_status_result(result)),
    "tool/render": ResultRow(lambda session, req, result: check_render_result(result)),
    "menu/collect": ResultRow(
        lambda session, req, result: check_menu_result(result, commands=session._declared_commands())
    ),
    "shutdown": ResultRow(lambda session, req, result: shutdown_acknowledged(result)),
}


# method -> how a pushed contribution is judged (§2.3-§2.5; the flag: it came
# as a request); adding a contribution kind is one row.
CONTRIBUTION_CHECKS: Mapping[str, Callable[[HostSession, Any, bool], Iterable[Finding]]] = {
    "context/contribution": lambda session, params, as_request: context_contribution(params, as_request=as_request),
    "status/contribution": lambda session, params, as_request: status_contribution(params, as_request=as_request),
    "presentation/update": HostSession._presentation,
}


def _member(params: Any, key: str) -> Any:
    return params.get(key) if isinstance(params, dict) else None


def _command_names(result: Any) -> frozenset[str]:
    commands = result.get("commands") if isinstance(result, dict) else None
    if not isinstance(commands, list):
        return frozenset()
    return frozenset(c["name"] for c in commands if isinstance(c, dict) and isinstance(c.get("name"), str))


def _legal_child_id(cid: Any) -> bool:
    if isinstance(cid, bool):
        return False
    if isinstance(cid, int):
        return 0 <= cid <= limits.MAX_U64
    if isinstance(cid, str):
        return len(cid.encode("utf-8", "surrogatepass")) <= limits.MAX_CHILD_ID_BYTES
    return False


def _key(rid: Any) -> Any:
    """Ids as dictionary keys: 1 and "1" differ; 1.0 is the number 1 (JSON
    has one number type, so an answer to 1 written as 1.0 echoes it)."""
    kind = type(rid)
    if kind is int or kind is str:  # the usual ids, as the general case keys them
        return (kind.__name__, rid)
    if isinstance(rid, float) and rid.is_integer():
        rid = int(rid)
    return (
        (type(rid).__name__, rid)
        if isinstance(rid, int | str | float) and not isinstance(rid, bool)
        else ("other", repr(rid))
    )
