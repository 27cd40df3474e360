"""One host process generation as the probe extension sees it, as pure state.

How to use (the probe peer feeds it; nothing here does I/O)::

    session = ProbeSession(manifest=info, generation=0)
    findings = session.received(decoded)          # every frame the host wrote
    findings += session.probe_wrote(payload)      # a frame the probe writes (or, typed:
    findings += session.answered(rid, result=r)   #   the probe answered a host request,
    findings += session.sent_child(cid, method, params)   # the probe made a request)
    findings += session.lifecycle_event(LifeInput.STDIN_CLOSED)     # EOF, exits, grace expiry
    session.orphans(), session.open_calls()       # for the clock owner

For a reload or restart, start the next generation with
``ProbeSession(..., generation=n + 1, earlier=old.memory())`` so frames that
cross the generation boundary (§5) are recognised.

What this module is responsible for: judging every frame the host writes
against what the probe has seen -- lifecycle order (:mod:`.host_tables`),
the envelope and the 1 MiB bound (reusing :mod:`.jsonrpc`), request shapes
(:mod:`.host_requests`, :mod:`.host_initialize`), notifications
(:mod:`.host_notifications`), ids (fresh, at most one cancel each, never an
id of another generation), the negotiated concurrency, and the host's
answers to the probe's own requests (:mod:`.host_answers`).

What it is not responsible for: time. Whether the host waited 2 s for the
shutdown ack, cancelled orphaned children "soon", terminated a degraded
generation or backed off between restarts is judged by the peer that owns
a clock, from :meth:`ProbeSession.orphans` and friends. Nor does it decide
what the probe sends; machines do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import host_tables as T
from .ext_initialize import negotiated_from, tools_from
from .ext_types import ManifestInfo, Negotiated, Offer
from .host_answers import ParentInfo, Refusal, check_child_answer, child_id_legal, child_refusals, is_operation_scoped
from .host_initialize import check_initialize_request, must_reject, offer_from
from .host_notifications import CANCEL, NOTIFICATION_SHAPE_RULES, check_host_notification
from .host_requests import SHAPE_RULES, HostView, check_host_request
from .host_supervision import replay_key, replayed
from .host_tables import Call, CallInput, Child, ChildInput, Life, LifeInput, LocalProtocolError
from .jsonrpc import Decoded, ErrorResponse, JsonRpcId, Notification, Request, Response
from .limits import MAX_OUTSTANDING_CHILDREN
from .members import excerpt
from .strict_json import JsonError, parse_json
from .violations import Exercise, Finding, Violation

# §2/§1.2: children name their parent by a number, and these are the
# requests that can be parents.
_PARENT_METHODS = frozenset({"tool/call", "command/execute"})
# Requests that never count against max_concurrent_requests.
_UNCOUNTED = frozenset({"initialize", "shutdown"})


def host_key(rid: Any) -> Any:
    """Ids as dictionary keys: 1 and "1" differ; 1.0 is the number 1."""
    if isinstance(rid, float) and rid.is_integer():
        rid = int(rid)
    if isinstance(rid, int | str | float) and not isinstance(rid, bool):
        return (type(rid).__name__, rid)
    return ("other", repr(rid))


@dataclass
class HostCall:
    id: JsonRpcId
    method: str
    params: Any
    state: Call = Call.PENDING


@dataclass
class ProbeChild:
    id: JsonRpcId
    method: str
    params: Any
    refusals: tuple[Refusal, ...]
    parent: Any = None  # key of the parent host request, if it names one
    state: Child = Child.OUTSTANDING
    seq: int = 0  # order in which the probe sent it


@dataclass(frozen=True)
class GenerationMemory:
    """What the next generation must not see again (§5)."""

    host_ids: frozenset[Any] = frozenset()
    child_ids: frozenset[Any] = frozenset()
    owners: frozenset[tuple[str, int]] = frozenset()  # (extension_instance_id, process_generation)
    confirmations: frozenset[Any] = frozenset()  # child ids of confirmation/request (§2.2 fence)
    unresolved: frozenset[tuple[str, str]] = frozenset()  # replay keys of calls left unanswered (§5, §1.9)


@dataclass
class SessionTally:
    """Counts a generation keeps about frames it could not key by id."""

    oversized_seen: int = 0  # host frames over the bound (not decoded)
    children_sent: int = 0  # child requests the probe sent (their order numbers)


@dataclass
class ProbeSession:
    manifest: ManifestInfo
    generation: int = 0
    earlier: GenerationMemory = field(default_factory=GenerationMemory)
    life: Life = Life.STARTING
    offer: Offer | None = None
    negotiated: Negotiated | None = None
    rejections: tuple[str, ...] = ()
    tools: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()
    calls: dict[Any, HostCall] = field(default_factory=dict)
    children: dict[Any, ProbeChild] = field(default_factory=dict)
    shortcuts: set[str] = field(default_factory=set)
    owners: set[tuple[str, int]] = field(default_factory=set)
    unreadable_sent: int = 0
    accepted_limit: int | None = None  # max_concurrent_requests as the probe accepted it, before the cap
    settled_messages: set[str] = field(default_factory=set)
    tally: SessionTally = field(default_factory=lambda: SessionTally())
    unechoable: list[Any] = field(default_factory=list)  # keys of children sent with an illegal id, unanswered
    # Children in T.UNRESOLVED_CHILDREN, kept as a count (updated by every
    # state change, in _move_child) so §2's outstanding bound costs O(1) per
    # child even at the 65,536 ids one generation may use.
    unresolved: int = 0
    # Operations the harness asked the host for (replay keys of earlier
    # unresolved calls only) whose request has not arrived yet: an identical
    # request then is no replay.
    licensed: dict[tuple[str, str], int] = field(default_factory=dict)

    # -- queries ------------------------------------------------------------
    def call(self, rid: JsonRpcId) -> HostCall | None:
        """The host request ``rid`` of this generation, if the host sent one."""
        return self.calls.get(host_key(rid))

    def open_calls(self) -> list[HostCall]:
        """Host requests the probe has not answered and the host has not cancelled."""
        return [c for c in self.calls.values() if c.state in T.OPEN_CALLS]

    def cancelled_unanswered(self) -> list[HostCall]:
        """Cancelled requests the probe still holds (the §1.9 grace runs)."""
        return [c for c in self.calls.values() if c.state is Call.CANCEL_SENT]

    def orphans(self) -> list[ProbeChild]:
        """Children whose parent settled and that the host has not yet
        cancelled or answered (§2: the host owes them a cancel)."""
        return [c for c in self.children.values() if c.state is Child.ORPHANED]

    def memory(self) -> GenerationMemory:
        return GenerationMemory(
            host_ids=self.earlier.host_ids | frozenset(self.calls),
            child_ids=self.earlier.child_ids | frozenset(self.children),
            owners=self.earlier.owners | frozenset(self.owners),
            confirmations=self.earlier.confirmations
            | frozenset(k for k, c in self.children.items() if c.method == "confirmation/request"),
            unresolved=self.earlier.unresolved | frozenset(self._unresolved_keys()),
        )

    def _unresolved_keys(self) -> Iterator[tuple[str, str]]:
        for call in self.calls.values():
            key = replay_key(call.method, call.params)
            if key is not None and call.state in (Call.PENDING, Call.CANCEL_SENT):
                yield key

    def harness_called(self, method: str, params: Any) -> None:
        """The harness is about to ask the host (through its driver) for this
        operation: one identical request is no replay."""
        key = replay_key(method, params)
        if key is not None and key in self.earlier.unresolved:
            self.licensed[key] = self.licensed.get(key, 0) + 1

    @property
    def view(self) -> HostView:
        negotiated = self.negotiated or Negotiated(self.manifest.api_version)
        return HostView(self.manifest, negotiated, self.tools, self.commands)

    # -- lifecycle ----------------------------------------------------------
    def lifecycle_event(self, event: LifeInput) -> list[Finding]:
        """EOF on stdin, an exit, a kill, or the cancel grace expiring."""
        return self._life(event, "")

    def _life(self, event: LifeInput, what: str) -> list[Finding]:
        step = T.LIFECYCLE.get((self.life, event))
        if step is None:
            raise LocalProtocolError(f"lifecycle: no transition from {self.life.value} on {event.value}")
        before, (self.life, broken) = self.life, step
        out: list[Finding] = [Exercise(r) for r in T.exercised(before, event)]
        if broken is None:
            return out
        cited = self.rejections if broken == "EXT-1.1-host-rejected-child-isolated" and self.rejections else (broken,)
        text = f"{what or event.value} while the child was {before.value}"
        return out + [x for r in cited for x in (Exercise(r), Violation(r, text))]

    # -- the probe's own frames ---------------------------------------------
    def answered(self, rid: JsonRpcId, *, result: Any = None, error: Any = None) -> list[Finding]:
        """The probe answered host request ``rid`` (``error`` set for an error
        answer). Call it before the answer's bytes are written: the host may
        react at once, and its next frame must be judged against the answer."""
        call = self.calls.get(host_key(rid))
        if call is None:
            raise LocalProtocolError(f"the probe answered {rid!r}, which the host never sent")
        call.state = T.CALL[(call.state, CallInput.ANSWER)][0]
        self._parent_ended(host_key(rid))
        if call.method != "initialize" or self.life is not Life.INITIALIZING:
            return []
        return self._initialize_answered(result, error)

    def _initialize_answered(self, result: Any, error: Any) -> list[Finding]:
        offer = self.offer or Offer(self.manifest.api_version, None)
        if error is not None:
            self.rejections = ("EXT-1.1-host-rejected-child-isolated",)
        else:
            self.rejections = must_reject(result, offer=offer, manifest=self.manifest)
            self.negotiated = negotiated_from(result, offer=offer)
            self.accepted_limit = _accepted_limit(result)
            self.tools = frozenset(tools_from(result))
            commands = result.get("commands") if isinstance(result, dict) else None
            names = (c.get("name") for c in commands if isinstance(c, dict)) if isinstance(commands, list) else ()
            self.commands = frozenset(n for n in names if isinstance(n, str))
        event = LifeInput.UNACCEPTABLE if self.rejections else LifeInput.ACCEPTABLE
        self._life(event, "")
        return [Exercise(r) for r in self.rejections]

    def host_reported_ready(self) -> list[Finding]:
        """The driver reported the child as loaded and ready: wrong when its
        initialize answer had to be refused."""
        if self.life is not Life.REJECTED:
            return []
        return [
            x
            for r in self.rejections
            for x in (Exercise(r), Violation(r, "the host reported the child ready after an answer it must refuse"))
        ]

    def probe_wrote(self, payload: bytes) -> list[Finding]:
        """One frame the probe is about to write (without its newline),
        classified: an answer to a host request, a child request, or a frame
        the host cannot read. Notifications need no memory. A convenience for
        peers that script raw bytes; call it before the bytes are written."""
        parsed = parse_json(payload)
        if isinstance(parsed, JsonError) or not isinstance(parsed.value, dict):
            self.sent_unreadable()
            return []
        message = parsed.value
        rid = message.get("id")
        if "method" in message and "id" in message:
            if not isinstance(message["method"], str):
                self.sent_unreadable()
                return []
            return self.sent_child(rid, message["method"], message.get("params"))
        if ("result" in message or "error" in message) and self.call(rid) is not None:
            return self.answered(rid, result=message.get("result"), error=message.get("error"))
        return []

    def sent_unreadable(self) -> None:
        """The probe wrote a frame with no readable id (a host may answer it with id null)."""
        self.unreadable_sent += 1

    def sent_child(self, cid: JsonRpcId, method: str, params: Any) -> list[Finding]:
        """The probe wrote a request to the host; remember what the host owes it."""
        key = host_key(cid)
        args = params if isinstance(params, dict) else {}
        parent_id = args.get("parent_request_id")
        parent_key = host_key(parent_id) if isinstance(parent_id, int) and not isinstance(parent_id, bool) else None
        earlier = self.children.get(key)
        outstanding = self.unresolved + 1
        refusals = child_refusals(
            method,
            params,
            cid,
            api_version=self.view.negotiated.api_version,
            parent=self._parent_info(parent_key),
            reused=earlier is not None and earlier.state not in T.UNRESOLVED_CHILDREN,
            outstanding=outstanding,
            distinct=len(self.children) + (earlier is None),
            features=self.view.negotiated.features,
            owners=frozenset(self.owners),
        )
        if earlier is not None and earlier.state in T.UNRESOLVED_CHILDREN:
            return []  # a duplicate of an outstanding id: answers cannot be told apart, not judged
        # §2: only operation-scoped children die with their parent.
        owner = parent_key if is_operation_scoped(method) else None
        self.children[key] = ProbeChild(cid, method, params, refusals, owner, seq=self.tally.children_sent)
        self.tally.children_sent += 1
        self.unresolved += 1  # a new child is outstanding (an earlier one of this id was resolved)
        if not child_id_legal(cid):
            self.unechoable.append(key)  # §2: the host may answer an id it cannot echo with id null
        return []

    def _parent_info(self, key: Any) -> ParentInfo | None:
        call = self.calls.get(key) if key is not None else None
        if call is None:
            return None
        params = call.params if isinstance(call.params, dict) else {}
        hook = params.get("hook") if isinstance(params.get("hook"), str) else None
        settled = call.state in (Call.ANSWERED, Call.TOMBSTONED)
        return ParentInfo(call.method, hook, settled, call.state is Call.CANCEL_SENT)

    # -- frames the host wrote ------------------------------------------------
    def received(self, decoded: Decoded) -> list[Finding]:
        msg = decoded.message
        side = host_response_rule if isinstance(msg, Response | ErrorResponse) else host_rule
        rules = dict.fromkeys(side(r) for r in decoded.rules)
        findings: list[Finding] = [Exercise(r) for r in rules]
        findings.extend(_host_violation(v, side) for v in decoded.violations)
        if msg is None and "EXT-0-frame-bound" in (v.requirement for v in decoded.violations):
            self.tally.oversized_seen += 1  # its id is unknown: a later cancel may name it
        if isinstance(msg, Request):
            findings.extend(self._on_request(msg))
        elif isinstance(msg, Notification):
            findings.extend(self._on_notification(msg))
        elif isinstance(msg, Response | ErrorResponse):
            findings.extend(self._on_answer(msg))
        return [f.in_frame(decoded.frame_index) if isinstance(f, Violation) else f for f in findings]

    def _on_request(self, msg: Request) -> list[Finding]:
        event = {"initialize": LifeInput.INITIALIZE, "shutdown": LifeInput.SHUTDOWN}.get(msg.method, LifeInput.REQUEST)
        out = self._life(event, f"{msg.method} arrived")
        out.extend(self._request_id(msg))
        if msg.method in NOTIFICATION_SHAPE_RULES:
            rule_id = NOTIFICATION_SHAPE_RULES[msg.method]
            out += [Exercise(rule_id), Violation(rule_id, f"{msg.method} was sent with an id; it is a notification")]
        if msg.method == "initialize":
            out.extend(_params(check_initialize_request(msg.params, manifest=self.manifest)))
            self.offer = offer_from(msg.params)
        elif self.life in T.LIVE:
            out.extend(_params(check_host_request(msg.method, msg.params, view=self.view)))
            out.extend(self._owner_fences(msg))
        if msg.method not in _UNCOUNTED and self.life in T.LIVE:
            out.extend(self._concurrency(msg))
        out.extend(self._replay(msg))
        self.calls[host_key(msg.id)] = HostCall(msg.id, msg.method, msg.params)
        return out

    def _replay(self, msg: Request) -> list[Finding]:
        """§5: nothing an earlier generation left unresolved is sent again."""
        key = replay_key(msg.method, msg.params)
        if key is None or not self.earlier.unresolved:
            return []
        licensed = self.licensed.get(key, 0)
        if key in self.earlier.unresolved and licensed > 0:
            self.licensed[key] = licensed - 1
        return list(replayed(key, unresolved=self.earlier.unresolved, licensed=licensed))

    def _request_id(self, msg: Request) -> list[Finding]:
        out: list[Finding] = [Exercise("EXT-0-host-request-ids-distinct"), Exercise("EXT-0-host-request-ids-fresh")]
        if self.manifest.api_version != "0.1":
            out.append(Exercise("EXT-1.9-host-no-tombstone-reuse"))
        if msg.method in _PARENT_METHODS and self.manifest.api_version != "0.1":
            out.append(Exercise("EXT-2-host-numeric-request-ids"))
            if isinstance(msg.id, bool) or not isinstance(msg.id, int):
                text = f"{msg.method} id {excerpt(msg.id)} is not an integer; children could not name it as parent"
                out.append(Violation("EXT-2-host-numeric-request-ids", text, ("id",)))
        key = host_key(msg.id)
        if key in self.earlier.host_ids and key not in self.calls:
            return out  # a new generation may count from 1 again; only ids within one are judged
        prior = self.calls.get(key)
        if prior is None:
            return out
        if prior.state in T.OPEN_CALLS:
            out.append(
                Violation(
                    "EXT-0-host-request-ids-distinct", f"request id {excerpt(msg.id)} is still outstanding", ("id",)
                )
            )
        elif prior.state in T.CANCELLED_CALLS:
            out.append(
                Violation("EXT-1.9-host-no-tombstone-reuse", f"request id {excerpt(msg.id)} is a tombstone", ("id",))
            )
        else:
            out.append(
                Violation(
                    "EXT-0-host-request-ids-fresh",
                    f"request id {excerpt(msg.id)} was already used in this generation",
                    ("id",),
                )
            )
        return out

    def _concurrency(self, msg: Request) -> list[Finding]:
        negotiated = self.negotiated
        if negotiated is None or negotiated.is_legacy or negotiated.max_concurrent_requests is None:
            return []
        limit = negotiated.max_concurrent_requests
        busy = sum(c.method not in _UNCOUNTED for c in self.open_calls()) + 1
        out: list[Finding] = [Exercise("EXT-0-host-concurrency-admission")]
        # §1.1: the host caps the accepted value at its own limit; going past
        # the cap but not past what the probe accepted breaks the cap rule.
        capped = self.accepted_limit is not None and self.accepted_limit > limit
        if capped:
            out.append(Exercise("EXT-1.1-host-caps-max-concurrent"))
        if busy <= limit:
            return out
        if capped and self.accepted_limit is not None and busy <= self.accepted_limit:
            out.append(
                Violation(
                    "EXT-1.1-host-caps-max-concurrent",
                    f"{busy} requests outstanding; the host offered {limit}, the probe accepted more",
                )
            )
        else:
            out.append(
                Violation(
                    "EXT-0-host-concurrency-admission",
                    f"{msg.method} makes {busy} requests outstanding; negotiated {limit}",
                )
            )
        return out

    def _owner_fences(self, msg: Request) -> list[Finding]:
        params = msg.params if isinstance(msg.params, dict) else {}
        context = params.get("context")
        owner = context.get("resource_owner") if isinstance(context, dict) else None
        if not isinstance(owner, dict):
            return []
        instance, gen = owner.get("extension_instance_id"), owner.get("process_generation")
        if not isinstance(instance, str) or isinstance(gen, bool) or not isinstance(gen, int):
            return []
        self.owners.add((instance, gen))
        out: list[Finding] = [Exercise("EXT-1.2-host-owner-fences")]
        if (instance, gen) in self.earlier.owners:
            message = f"resource_owner repeats process_generation {gen} of an earlier generation of this instance"
            out.append(Violation("EXT-1.2-host-owner-fences", message, ("params", "context", "resource_owner")))
        if len({g for i, g in self.owners if i == instance}) > 1:
            message = "resource_owner.process_generation changed within one process generation"
            out.append(Violation("EXT-1.2-host-owner-fences", message, ("params", "context", "resource_owner")))
        return out

    def _on_notification(self, msg: Notification) -> list[Finding]:
        if self._cancels_initialize(msg):
            return []  # giving up on an unanswered initialize, like a shutdown would
        out = self._life(LifeInput.NOTIFICATION, f"{msg.method} arrived")
        if msg.method in SHAPE_RULES:
            rule_id = SHAPE_RULES[msg.method]
            out += [Exercise(rule_id), Violation(rule_id, f"{msg.method} was sent without an id; it is a request")]
            return out
        if self.life not in T.LIVE:
            return out
        out.extend(
            _params(
                check_host_notification(
                    msg.method, msg.params, negotiated=self.view.negotiated, shortcuts=frozenset(self.shortcuts)
                )
            )
        )
        if msg.method == CANCEL and isinstance(msg.params, dict) and "id" in msg.params:
            out.extend(self._on_cancel(msg.params["id"]))
        elif msg.method in ("message/updated", "message/settled"):
            out.extend(self._message_order(msg.method, msg.params))
        return out

    def _message_order(self, method: str, params: Any) -> list[Finding]:
        """§1.11: every batch of a message precedes its message/settled."""
        mid = params.get("message_id") if isinstance(params, dict) else None
        if not isinstance(mid, str):
            return []
        if method == "message/settled":
            self.settled_messages.add(mid)
            return []
        out: list[Finding] = [Exercise("EXT-1.11-host-batches-before-settled")]
        if mid in self.settled_messages:
            text = f"message/updated for {excerpt(mid)} arrived after its message/settled"
            out.append(Violation("EXT-1.11-host-batches-before-settled", text, ("params", "message_id")))
        return out

    def _cancels_initialize(self, msg: Notification) -> bool:
        """API 0.2+ makes cancellation a required feature, so a host may
        cancel its own initialize before the answer (never stricter)."""
        if msg.method != CANCEL or self.life is not Life.INITIALIZING or self.manifest.api_version == "0.1":
            return False
        target = self.call(msg.params.get("id")) if isinstance(msg.params, dict) else None
        return target is not None and target.method == "initialize"

    def _on_cancel(self, rid: Any) -> list[Finding]:
        key = host_key(rid)
        out: list[Finding] = [Exercise("EXT-1.9-host-cancel-known-id"), *self._boundary_exercised()]
        call, child = self.calls.get(key), self.children.get(key)
        if call is not None and (call.state in T.OPEN_CALLS or child is None):
            out.append(Exercise("EXT-1.9-host-one-cancel-notification"))
            call.state, broken = T.CALL[(call.state, CallInput.CANCEL)]
            self._parent_ended(key)  # §1.9: its unresolved children are owed a cancel too
        elif child is not None:
            out.append(Exercise("EXT-1.9-host-one-cancel-notification"))
            broken = self._move_child(child, ChildInput.CANCEL)
        elif key in self.earlier.host_ids or key in self.earlier.child_ids:
            return [*out, Violation("EXT-5-host-generation-boundary", _crossed("cancel", rid), _CANCEL_ID)]
        elif self.tally.oversized_seen:
            return out  # possibly the id of an oversized request the probe could not read (judged by the bound)
        else:
            return [
                *out,
                Violation(
                    "EXT-1.9-host-cancel-known-id",
                    f"$/cancelRequest names {excerpt(rid)}, an id never used",
                    _CANCEL_ID,
                ),
            ]
        if broken is None:
            return out
        return [*out, Violation(broken, f"a second $/cancelRequest for {excerpt(rid)}", _CANCEL_ID)]

    def _on_answer(self, msg: Response | ErrorResponse) -> list[Finding]:
        out = self._life(LifeInput.ANSWER, "an answer arrived")
        key = host_key(msg.id)
        if msg.id is None and self.unechoable and key not in self.children:
            key = self.unechoable[0]  # the refusal of the oldest child sent with an illegal id
        if key in self.unechoable:
            self.unechoable.remove(key)
        child = self.children.get(key)
        out += [
            Exercise("JSONRPC-5-host-one-response"),
            Exercise("JSONRPC-5-host-id-echo"),
            Exercise("JSONRPC-4.1-host-no-reply"),
            *self._boundary_exercised(),
        ]
        if child is None:
            return out + self._unmatched_answer(msg)
        first = child.state in T.UNRESOLVED_CHILDREN or child.state is Child.CANCELLED
        broken = self._move_child(child, ChildInput.ANSWER)
        if broken is not None:
            out.append(Violation(broken, f"{child.method} {excerpt(msg.id)} was answered a second time"))
        if first:
            refusals = self._outstanding_when_answered(child)
            if refusals != child.refusals:
                out.append(Exercise("EXT-2-host-refuses-over-outstanding"))  # judged; the host was within the bound
            out.extend(check_child_answer(child.method, refusals, msg, self.view.negotiated.features))
            self._admitted(child, msg)
        return out

    def _outstanding_when_answered(self, child: ProbeChild) -> tuple[Refusal, ...]:
        """The outstanding bound, re-counted when the answer arrives: the
        children sent before this one whose answers have not arrived yet were
        unanswered when the host wrote this answer, so also when it admitted
        this child. Answers that crossed the probe's writes may have freed
        slots the count at sending did not see; the host is not blamed for them."""
        over = "EXT-2-host-refuses-over-outstanding"
        if over not in (r.requirement for r in child.refusals):
            return child.refusals
        before = sum(c.seq < child.seq and c.state in T.UNRESOLVED_CHILDREN for c in self.children.values())
        if before + 1 > MAX_OUTSTANDING_CHILDREN:
            return child.refusals
        return tuple(r for r in child.refusals if r.requirement != over)

    def _unmatched_answer(self, msg: Response | ErrorResponse) -> list[Finding]:
        key = host_key(msg.id)
        if msg.id is None and self.unreadable_sent:
            self.unreadable_sent -= 1
            return []
        if msg.id is None:
            return [Violation("JSONRPC-4.1-host-no-reply", "a response with id null answers no request the probe made")]
        if key in self.earlier.child_ids:
            out: list[Finding] = [Violation("EXT-5-host-generation-boundary", _crossed("answer", msg.id), _ID)]
            if key in self.earlier.confirmations:
                text = f"confirmation {excerpt(msg.id)} of an earlier generation was answered to its replacement"
                out.append(Violation("EXT-2.2-host-generation-fence", text, _ID))
            return out
        twin = self._same_value_other_type(msg.id)
        if twin is not None:
            text = f"the response id is {_id_kind(msg.id)}; the request's id is {_id_kind(twin)}"
            return [Violation("JSONRPC-5-host-id-echo", text, _ID)]
        return [
            Violation(
                "JSONRPC-5-host-id-echo", f"the host answered id {excerpt(msg.id)}, which the probe never used", _ID
            )
        ]

    def _same_value_other_type(self, rid: Any) -> Any:
        """The id of a child request that ``rid`` names by value in another
        JSON type (7 for "7", "7" for 7), if any."""
        for child in self.children.values():
            cid = child.id
            if isinstance(cid, str) != isinstance(rid, str) and str(cid) == str(rid):
                return cid
        return None

    def _boundary_exercised(self) -> list[Finding]:
        if not (self.earlier.host_ids or self.earlier.child_ids):
            return []
        fence = [Exercise("EXT-2.2-host-generation-fence")] if self.earlier.confirmations else []
        return [Exercise("EXT-5-host-generation-boundary"), *fence]

    def _parent_ended(self, key: Any) -> None:
        for child in self.children.values():
            if child.parent == key:
                self._move_child(child, ChildInput.PARENT_SETTLED)

    def _move_child(self, child: ProbeChild, event: ChildInput) -> str | None:
        """Every change of a child's state goes through here (the count of
        unresolved children follows it); returns the requirement broken."""
        before = child.state in T.UNRESOLVED_CHILDREN
        child.state, broken = T.CHILD[(child.state, event)]
        self.unresolved += (child.state in T.UNRESOLVED_CHILDREN) - before
        return broken

    def _admitted(self, child: ProbeChild, msg: Response | ErrorResponse) -> None:
        params = child.params if isinstance(child.params, dict) else {}
        if child.method == "shortcut/register" and isinstance(msg, Response) and isinstance(params.get("id"), str):
            self.shortcuts.add(params["id"])


_ID = ("id",)
_CANCEL_ID = ("params", "id")


def _id_kind(rid: Any) -> str:
    return f"the string {excerpt(rid)}" if isinstance(rid, str) else f"the number {excerpt(rid)}"


def _crossed(what: str, rid: Any) -> str:
    return f"{what} names {excerpt(rid)}, an id of an earlier generation"


def _accepted_limit(result: Any) -> int | None:
    protocol = result.get("protocol") if isinstance(result, dict) else None
    limits = protocol.get("limits") if isinstance(protocol, dict) else None
    value = limits.get("max_concurrent_requests") if isinstance(limits, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@functools.cache  # called for every rule of every host frame
def host_rule(requirement: str) -> str:
    """The host-side entry of a frame or envelope rule of jsonrpc.decode_*.

    Those rules are catalogued per side; on a host frame each is reported
    under its host-side entry. (A line that is not complete JSON text is a
    torn or interleaved frame: the single writer's rule, §0.)
    """
    host_side = {
        "EXT-0-frame-bound": "EXT-0-host-frame-bound",
        "EXT-0-json-text": "EXT-0-host-single-writer",
        "EXT-0-diagnostics-stderr": "EXT-0-host-one-object-per-line",
        "EXT-0-one-object-per-line": "EXT-0-host-one-object-per-line",
        "EXT-0-unique-member-names": "EXT-0-host-unique-member-names",
        "JSONRPC-4-jsonrpc-member": "JSONRPC-4-host-envelope",
        "JSONRPC-4-method-string": "JSONRPC-4-host-envelope",
        "JSONRPC-4-params-structured": "JSONRPC-4-host-envelope",
        "JSONRPC-4-id-type": "JSONRPC-4-host-envelope",
        "JSONRPC-4-id-not-fractional": "JSONRPC-4-host-id-not-fractional",
        "JSONRPC-5-result-xor-error": "JSONRPC-5-host-responses",
        "JSONRPC-5.1-error-object": "JSONRPC-5.1-host-error-object",
        "JSONRPC-5.1-reserved-codes": "JSONRPC-5.1-host-reserved-codes",
    }
    return host_side.get(requirement, requirement)


@functools.cache
def host_response_rule(requirement: str) -> str:
    """:func:`host_rule` for a response the host wrote: its members are §5's
    (jsonrpc, and an id that must echo the request's), not §4's."""
    response_side = {
        "JSONRPC-4-jsonrpc-member": "JSONRPC-5-host-responses",
        "JSONRPC-4-id-type": "JSONRPC-5-host-id-echo",
        "JSONRPC-4-id-not-fractional": "JSONRPC-5-host-id-echo",
    }
    return response_side.get(requirement) or host_rule(requirement)


def _host_violation(v: Violation, side: Callable[[str], str] = host_rule) -> Violation:
    renamed = side(v.requirement)
    return v if renamed == v.requirement else Violation(renamed, v.message, v.path, v.frame_index)


def _params(findings: Any) -> list[Finding]:
    return [f.at("params") if isinstance(f, Violation) else f for f in findings]
