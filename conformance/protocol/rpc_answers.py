"""JSON-RPC 2.0 §5 and §5.1 over what a host-core answers (host RPC §2).

The harness plays the client. Every line it writes goes through
:meth:`AnswerLedger.wrote` (the shared NDJSON decoder splits it, as a
host-core's reader would); every response the host-core writes goes through
:meth:`AnswerLedger.answer`, which returns a :class:`Matched` record -- which
request the response answers, and how -- and the rules below judge it:

* the id echoes the request's id exactly, type included (a string ``"5"``
  does not answer request ``5``); an id no request carried answers nothing;
* no request is answered twice;
* a response has exactly one of ``result`` and ``error``; an error is an
  object with an integer ``code`` and a string ``message``, and inside the
  reserved block -32768..-32000 only the predefined codes and the server
  range -32099..-32000 are used (-32029 HOST_OVERLOADED lies in that range).

A null id is JSON-RPC's answer to a line whose id the server could not read
(invalid JSON, a line over the size it keeps, §7 LIMIT_EXCEEDED): an error
with id null is the host-core saying so, and whether it read the harness's
lines right is for the §2 and §7 framing rules to judge, not this one. A
result with id null answers nothing (the harness never sends a null id). A
response whose
id differs from an open request's only in type is matched to it *loosely*:
the id rule fails, and the harness can still go on with the run (one broken
requirement never hides the others).

The host-core never sends requests, so a client has nothing to answer: the
client side of JSON-RPC §4.1 is :func:`conformance.protocol.rpc_client.request_envelope`'s.
Sans-IO: bytes and parsed messages in, findings out.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .framing import Frame, FrameDecoder, FrameEvent
from .id_peek import peek_id
from .jsonrpc import parse_envelope
from .members import excerpt
from .rpc_limits import ID_PEEK_PREFIX_BYTES, MIB
from .violations import Finding, Violation, exercises_of, rule

# Lines the harness writes longer than this are not parsed here, only peeked
# (the one such line is the 64 MiB + 1 request of the oversized scenario).
PARSED_LINE_BYTES = 1 * MIB

How = Literal["exact", "loose", "again", "unreadable", "none"]  # unreadable: an error with id null


def id_key(rid: object) -> object:
    """Ids compared by value, as JSON knows them: 5 and 5.0 are one id; a
    string never equals a number; true, objects and arrays are no ids at all."""
    if isinstance(rid, bool):
        return ("bool", rid)
    if isinstance(rid, float) and rid.is_integer():
        return int(rid)
    if isinstance(rid, int | float) or rid is None:
        return rid
    # An object or array is no id (JSON-RPC §4), but must still be a key.
    return ("str", rid) if isinstance(rid, str) else ("other", type(rid).__name__)


def _loose_key(rid: object) -> str | None:
    """The text of an id, for pairing one echoed with the wrong type."""
    if isinstance(rid, bool) or not isinstance(rid, int | float | str):
        return None
    return rid if isinstance(rid, str) else str(id_key(rid))


@dataclass(frozen=True)
class Matched:
    """What one response answers. ``request``: the key of the request it is
    taken to answer (None: none); ``sent``: that request's own id."""

    how: How
    rid: object
    request: object = None
    sent: object = None
    method: str | None = None


@dataclass
class AnswerLedger:
    """The requests one generation of a host-core was sent, and their answers."""

    open: dict[object, tuple[object, str | None]] = field(default_factory=dict)  # key -> (id, method)
    answered: dict[object, str | None] = field(default_factory=dict)  # key -> method
    _decoder: FrameDecoder = field(
        default_factory=lambda: FrameDecoder(max_frame_bytes=PARSED_LINE_BYTES, prefix_bytes=ID_PEEK_PREFIX_BYTES)
    )

    def wrote(self, data: bytes) -> None:
        """Bytes the harness wrote to the host-core's stdin."""
        self._take(self._decoder.feed(data))

    def closed(self) -> None:
        """The harness closed stdin: a last line without LF is a frame too (§2)."""
        self._take(self._decoder.close())

    def _take(self, events: list[FrameEvent]) -> None:
        for event in events:
            if isinstance(event, Frame):
                self._line(event.payload)
            else:
                self.wrote_long_line(event.prefix)

    def wrote_long_line(self, head: bytes) -> None:
        """A line over PARSED_LINE_BYTES that starts with ``head`` (written in
        pieces, never whole): its answer may carry the id peeked from its
        start, or null (§7 LIMIT_EXCEEDED)."""
        peeked = peek_id(head[:ID_PEEK_PREFIX_BYTES])
        if peeked is not None and peeked.value is not None:
            self._sent(peeked.value, None)

    def _line(self, payload: bytes) -> None:
        if not payload.strip():
            return  # a blank line is no frame
        try:
            message = json.loads(payload)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return  # its answer, if any, carries id null
        if isinstance(message, dict) and "id" in message and "method" in message:
            method = message["method"]
            self._sent(message["id"], method if isinstance(method, str) else None)

    def _sent(self, rid: object, method: str | None) -> None:
        self.open[id_key(rid)] = (rid, method)

    def answer(self, rid: object, *, error: bool) -> Matched:
        """Record one response carrying ``rid`` (``error``: an error
        response); what it answers."""
        key = id_key(rid)
        if key in self.open:
            sent, method = self.open.pop(key)
            self.answered[key] = method
            return Matched("exact", rid, key, sent, method)
        if key in self.answered:
            return Matched("again", rid, key, rid, self.answered[key])
        if rid is None and error:
            return Matched("unreadable", rid)
        loose = _loose_key(rid)
        for other, (sent, method) in list(self.open.items()):
            if loose is not None and _loose_key(sent) == loose:
                del self.open[other]
                self.answered[other] = method
                return Matched("loose", rid, other, sent, method)
        return Matched("none", rid)


def _what(matched: Matched) -> str:
    return f"request {excerpt(matched.sent)}" + (f" ({matched.method})" if matched.method else "")


@rule("JSONRPC-5-hostcore-id-echo")
def id_echoed(matched: Matched) -> Iterator[Violation]:
    if matched.how == "loose":
        yield Violation(
            "JSONRPC-5-hostcore-id-echo",
            f"the answer to {_what(matched)} carries id {excerpt(matched.rid)}: same text, another JSON type",
            ("id",),
        )
    elif matched.how == "none" and matched.rid is None:
        yield Violation("JSONRPC-5-hostcore-id-echo", "a result with id null answers no request", ("id",))
    elif matched.how == "none":
        yield Violation("JSONRPC-5-hostcore-id-echo", f"response id {excerpt(matched.rid)} matches no request", ("id",))


@rule("JSONRPC-5-hostcore-one-response")
def answered_once(matched: Matched) -> Iterator[Violation]:
    if matched.how == "again":
        yield Violation("JSONRPC-5-hostcore-one-response", f"{_what(matched)} was answered a second time", ("id",))


@functools.cache  # called for every violation of every response
def hostcore_rule(requirement: str) -> str | None:
    """The host-core entry of an envelope rule of jsonrpc.parse_envelope
    (None: not judged that way here). Its id rules are left out: the ledger
    judges ids against what was sent, which says more."""
    return {
        "JSONRPC-4-jsonrpc-member": "RPC-2-jsonrpc-2.0",
        "JSONRPC-5-result-xor-error": "JSONRPC-5-hostcore-result-xor-error",
        "JSONRPC-5.1-error-object": "JSONRPC-5.1-hostcore-error-object",
        "JSONRPC-5.1-reserved-codes": "JSONRPC-5.1-hostcore-reserved-codes",
    }.get(requirement)


_RESPONSE_RULES = ("JSONRPC-5-hostcore-result-xor-error",)
_ERROR_RULES = (*_RESPONSE_RULES, "JSONRPC-5.1-hostcore-error-object", "JSONRPC-5.1-hostcore-reserved-codes")


def response_envelope(message: Mapping[str, Any]) -> Iterator[Finding]:
    """§5 and §5.1 over one response object (``message`` has no method)."""
    yield from exercises_of(_ERROR_RULES if "error" in message else _RESPONSE_RULES)
    _, violations = parse_envelope(dict(message))
    for v in violations:
        renamed = hostcore_rule(v.requirement)
        if renamed is not None:
            yield Violation(renamed, v.message, v.path, v.frame_index)


def judge_response(ledger: AnswerLedger, message: Mapping[str, Any]) -> tuple[Matched, list[Finding]]:
    """Every JSON-RPC rule over one host-core response, and what it answers."""
    if "id" not in message:
        matched = Matched("none", None)
        missing = Violation("JSONRPC-5-hostcore-id-echo", "a response has no id member (null when unknown)", ("id",))
        findings: list[Finding] = [*exercises_of(("JSONRPC-5-hostcore-id-echo",)), missing]
    else:
        matched = ledger.answer(message["id"], error="error" in message)
        findings = [*id_echoed(matched), *answered_once(matched)]
    findings.extend(response_envelope(message))
    return matched, findings
