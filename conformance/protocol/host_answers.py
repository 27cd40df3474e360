"""Checks on a host's answers to requests the extension (the probe) made (§2, §2.2, §3).

How to use: ``child_refusals(...)`` says, when the probe writes a child
request, which §2 rules oblige the host to refuse it (empty: the host may
admit it); ``check_child_answer(method, refusals, answer)`` judges the answer
the host later writes. :mod:`.host_session` calls both; they are plain
functions so tests can call them directly.

A refusal is any JSON-RPC error response: §2 names the conditions but, apart
from the Wave-1 owner rule (-32002), no code, so any error code passes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import limits
from .describe import kind, utf8_len
from .jsonrpc import ErrorResponse, Response
from .members import excerpt
from .violations import Exercise, Finding, Violation, rule

NOT_FOREGROUND_OWNER = -32002  # §2: the Wave-1 owner refusal
# §2: requests that act inside one host operation and name it as parent.
OPERATION_SCOPED = frozenset(
    {"confirmation/request", "input/request", "artifact/publish", "policy/evaluate", "secret/get"}
)
# §2: the ten Wave-1 requests that accept an optional resource_owner, with
# the feature that makes a host serve each (§2.19-§2.23 headings).
WAVE1_FEATURES: Mapping[str, str] = {
    "composer/get": "composer",
    "composer/set": "composer",
    "composer/insert": "composer",
    "shortcut/register": "shortcuts",
    "session/append_entry": "session_entries",
    "session/set_name": "session_entries",
    "session/set_label": "session_entries",
    "session/send_message": "message_injection",
    "session/send_user_message": "message_injection",
    "tools/set_active": "active_tools",
}
WAVE1_REQUESTS = frozenset(WAVE1_FEATURES)
# §1.2: model-tool and declared-command requests are active parents; prompt
# and context handlers are not. Other host requests are left undecided.
PARENT_METHODS = frozenset({"tool/call", "command/execute"})
NOT_PARENT_HOOKS = frozenset({"before_prompt", "after_response"})
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")


@dataclass(frozen=True)
class Refusal:
    """A §2 rule that obliges the host to refuse a child request, with why
    (the clause an admitting answer's violation message ends with)."""

    requirement: str
    why: str


@dataclass(frozen=True)
class ParentInfo:
    """What the probe knows of the host request a child names as parent."""

    method: str
    hook: str | None
    settled: bool  # the probe already answered it
    cancelled: bool  # the host already cancelled it (undecided: not judged)


def is_operation_scoped(method: str) -> bool:
    return method in OPERATION_SCOPED or method.startswith("agent/")


def child_id_legal(cid: Any) -> bool:
    """§2: an unsigned 64-bit integer or a string of at most 256 UTF-8 bytes."""
    if isinstance(cid, bool):
        return False
    if isinstance(cid, int):
        return 0 <= cid <= limits.MAX_U64
    if isinstance(cid, str):
        return utf8_len(cid) <= limits.MAX_CHILD_ID_BYTES
    return False


def child_refusals(
    method: str,
    params: object,
    cid: Any,
    *,
    api_version: str,
    parent: ParentInfo | None,
    reused: bool,
    outstanding: int,
    distinct: int,
    features: frozenset[str] = frozenset(),
    owners: frozenset[tuple[str, int]] = frozenset(),
) -> tuple[Refusal, ...]:
    """The rules that oblige the host to refuse this child request.

    ``outstanding`` counts this request with the ones already outstanding;
    ``distinct`` counts this id with the ones already used. ``parent`` is
    None when parent_request_id names no host request of this generation.
    ``features``: what was negotiated; the Wave-1 owner rule (and its -32002)
    binds only a host that serves the request, i.e. negotiated its feature --
    any other host may refuse it as an unknown method. ``owners``: the
    (extension_instance_id, process_generation) pairs the host issued in
    this generation; an explicit owner naming none of them is invalid.
    """
    out: list[Refusal] = []
    if not child_id_legal(cid):
        out.append(
            Refusal(
                "EXT-2-host-refuses-bad-child-id",
                "its id is neither an unsigned 64-bit integer nor a string of at most 256 UTF-8 bytes",
            )
        )
    if reused:
        out.append(Refusal("EXT-2-host-refuses-reused-child-id", "its id was already used in this generation"))
    if outstanding > limits.MAX_OUTSTANDING_CHILDREN:
        out.append(
            Refusal(
                "EXT-2-host-refuses-over-outstanding",
                f"it is over the {limits.MAX_OUTSTANDING_CHILDREN} outstanding child requests",
            )
        )
    if distinct > limits.MAX_CHILD_IDS_PER_GENERATION:
        out.append(
            Refusal(
                "EXT-2-host-refuses-over-id-budget",
                f"it is over the {limits.MAX_CHILD_IDS_PER_GENERATION:,} distinct child ids",
            )
        )
    args = params if isinstance(params, dict) else {}
    if api_version != "0.1" and is_operation_scoped(method):
        out.extend(_parent_refusals(args, parent))
    served = WAVE1_FEATURES.get(method) in features
    if api_version != "0.1" and served and parent is not None and parent.settled:
        if "resource_owner" not in args:
            out.append(
                Refusal("EXT-2-host-wave1-owner-precedence", "its parent settled and it names no resource_owner")
            )
        elif not _issued(args["resource_owner"], owners):
            why = "its parent settled and its resource_owner is not one this generation issued"
            out.append(Refusal("EXT-2-host-owner-never-coerced", why))
    return tuple(out)


def _issued(owner: object, owners: frozenset[tuple[str, int]]) -> bool:
    """The owner names an instance id and process generation the host issued
    (its session id is not judged: the probe cannot tell which the host issued)."""
    instance = owner.get("extension_instance_id") if isinstance(owner, dict) else None
    generation = owner.get("process_generation") if isinstance(owner, dict) else None
    if not isinstance(instance, str) or isinstance(generation, bool) or not isinstance(generation, int):
        return False
    return (instance, generation) in owners


def _parent_refusals(params: Mapping[str, Any], parent: ParentInfo | None) -> list[Refusal]:
    value = params.get("parent_request_id")
    if isinstance(value, bool) or not isinstance(value, int):
        return [Refusal("EXT-2-host-refuses-missing-parent", "it carries no numeric parent_request_id")]
    if parent is None or parent.settled:
        return [Refusal("EXT-2-host-refuses-inactive-parent", "its parent_request_id names no active host request")]
    if parent.cancelled:
        return []  # undecided: the host may still count a cancelled parent as live
    if parent.method in PARENT_METHODS:
        return []
    if parent.method == "context/collect" or (parent.method == "hook/run" and parent.hook in NOT_PARENT_HOOKS):
        return [
            Refusal(
                "EXT-1.2-host-owner-not-authority",
                "its parent is a prompt/context handler, which is not an active parent",
            )
        ]
    return []


def check_child_answer(
    method: str,
    refusals: tuple[Refusal, ...],
    answer: Response | ErrorResponse,
    features: frozenset[str] = frozenset(),
) -> Iterator[Finding]:
    """Judge the host's (first) answer to a child request: every refusal
    ``child_refusals`` named needs an error answer (the Wave-1 owner rule
    needs -32002). ``features``: what was negotiated."""
    for refusal in refusals:
        yield Exercise(refusal.requirement)
        if isinstance(answer, Response):
            message = f"the host admitted {method} {excerpt(answer.id)} although {refusal.why}"
            yield Violation(refusal.requirement, message, ("result",))
        elif refusal.requirement == "EXT-2-host-wave1-owner-precedence" and answer.code != NOT_FOREGROUND_OWNER:
            message = f"refusal of {method} has code {excerpt(answer.code)}; expected {NOT_FOREGROUND_OWNER}"
            yield Violation("EXT-2-host-wave1-owner-precedence", message, ("error", "code"))
    if isinstance(answer, Response) and not refusals and method == "confirmation/request":
        yield from confirmation_answer_shape(answer.result)
    if isinstance(answer, Response) and not refusals and method == "input/request":
        yield from input_answer_shape(answer.result)
    if not refusals and method == "secret/get" and "secrets" in features:
        yield from secret_answer(answer)
    if isinstance(answer, ErrorResponse) and method in WAVE1_REQUESTS:
        yield from wave1_refusal_format(answer)


@dataclass(frozen=True)
class ChildWait:
    """How the probe's wait for the host's answer to one of its requests
    ended: ``answered`` (any response on its id, or id null where allowed),
    ``cancelled`` (a ``$/cancelRequest`` named it), ``ended`` (the generation
    ended or its stdin closed first); none of them: patience ran out."""

    method: str
    cid: Any
    answered: bool
    cancelled: bool = False
    ended: bool = False


@rule("JSONRPC-5-host-answers-requests")
def child_answered(wait: ChildWait) -> Iterator[Violation]:
    """JSON-RPC §5: every request gets a response; the extension protocol
    also lets the host cancel a child request instead (§1.9, §2)."""
    if wait.answered or wait.cancelled or wait.ended:
        return
    yield Violation(
        "JSONRPC-5-host-answers-requests",
        f"{wait.method} {excerpt(wait.cid)} got no response and no $/cancelRequest from the host",
    )


@rule("EXT-2.2-host-answer-shape")
def confirmation_answer_shape(result: object) -> Iterator[Violation]:
    """The answer is an object with a boolean confirmed (§2.2)."""
    if not isinstance(result, dict):
        yield Violation("EXT-2.2-host-answer-shape", f"result is {kind(result)}; expected an object", ("result",))
    elif not isinstance(result.get("confirmed"), bool):
        got = kind(result["confirmed"]) if "confirmed" in result else "absent"
        yield Violation(
            "EXT-2.2-host-answer-shape", f"result.confirmed is {got}; expected a boolean", ("result", "confirmed")
        )


@rule("EXT-2.7-host-input-answer")
def input_answer_shape(result: object) -> Iterator[Violation]:
    """The answer holds exactly ``value``: a string of at most 256 KiB of
    UTF-8, or null (§2.7, §4 ExtensionInputRequest). Whether a headless host
    answered null is judged by the host scenarios, which know the frontend."""
    requirement = "EXT-2.7-host-input-answer"
    if not isinstance(result, dict):
        yield Violation(requirement, f"result is {kind(result)}; expected an object", ("result",))
        return
    extra = sorted(k for k in result if k != "value")
    if extra:
        yield Violation(requirement, f"result has members {extra} beside value", ("result",))
    if "value" not in result:
        yield Violation(requirement, "result.value is absent; expected a string or null", ("result", "value"))
        return
    value = result["value"]
    if value is not None and not isinstance(value, str):
        yield Violation(requirement, f"result.value is {kind(value)}; expected a string or null", ("result", "value"))
    elif isinstance(value, str) and utf8_len(value) > limits.INPUT_ANSWER_MAX_BYTES:
        message = f"result.value is {utf8_len(value):,} UTF-8 bytes; limit {limits.INPUT_ANSWER_MAX_BYTES:,}"
        yield Violation(requirement, message, ("result", "value"))


# §2.10: the only refusals of secret/get: invalid or undeclared name, no
# active owner or service, no value or a failing broker.
SECRET_REFUSALS = (-32602, -32002, -32004)


@rule("EXT-2.10-host-secret-answers")
def secret_answer(answer: Response | ErrorResponse) -> Iterator[Violation]:
    """With secrets negotiated, secret/get is answered with exactly a string
    value of at most 64 KiB of UTF-8, or refused with -32602, -32002 or
    -32004 (§2.10, §4 ExtensionSecretGetRequest). Which refusal a given
    request deserves is host state (the broker), except an undeclared name,
    which the host scenarios judge."""
    requirement = "EXT-2.10-host-secret-answers"
    if isinstance(answer, ErrorResponse):
        if answer.code not in SECRET_REFUSALS:
            codes = ", ".join(map(str, SECRET_REFUSALS))
            yield Violation(
                requirement, f"error.code is {excerpt(answer.code)}; expected one of {codes}", ("error", "code")
            )
        return
    result = answer.result
    if not isinstance(result, dict) or sorted(result) != ["value"]:
        shown = sorted(result) if isinstance(result, dict) else kind(result)
        yield Violation(requirement, f"result is {shown}; expected exactly a value member", ("result",))
        return
    value = result["value"]
    if not isinstance(value, str):
        yield Violation(requirement, f"result.value is {kind(value)}; expected a string", ("result", "value"))
    elif utf8_len(value) > limits.SECRET_VALUE_MAX_BYTES:
        size = f"{utf8_len(value):,} UTF-8 bytes; limit {limits.SECRET_VALUE_MAX_BYTES:,}"
        yield Violation(requirement, f"result.value is {size}", ("result", "value"))


@rule("EXT-3-host-wave1-refusal-format")
def wave1_refusal_format(answer: ErrorResponse) -> Iterator[Violation]:
    """A Wave-1 refusal carries an integer code and a message whose first
    token is a contract name (§3 also lets it be the wire method followed by
    the name, so only the shape of the first token is judged)."""
    message = answer.message
    if not isinstance(message, str) or not message.split():
        yield Violation(
            "EXT-3-host-wave1-refusal-format",
            "error.message is empty; expected a contract name first",
            ("error", "message"),
        )
        return
    first = message.split()[0]
    if not _TOKEN.fullmatch(first.removesuffix(":")):  # "name: detail" is the name and its detail
        shown = excerpt(first)
        yield Violation(
            "EXT-3-host-wave1-refusal-format",
            f"error.message starts {shown}; expected a contract name",
            ("error", "message"),
        )
