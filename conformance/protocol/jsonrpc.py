"""JSON-RPC 2.0 envelopes: a frame in, a typed message and violations out.

Frame-level rules of the extension wire protocol (§0: one JSON object per
line, the 1 MiB bound) and the JSON-RPC 2.0 envelope rules (4, 4.1, 5, 5.1)
are checked here, for every frame, in either direction. What a message
*means* (is this id pending? was progress negotiated?) is session state's
business, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .framing import Frame, FrameEvent, OversizedFrame
from .strict_json import JsonError, parse_json
from .violations import Violation

JsonRpcId = int | float | str | None

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800  # §1.9
_PREDEFINED = {PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR}
_RESERVED = range(-32768, -32000 + 1)
_SERVER_ERRORS = range(-32099, -32000 + 1)


@dataclass(frozen=True)
class Request:
    id: JsonRpcId
    method: str
    params: Any


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    id: JsonRpcId
    result: Any


@dataclass(frozen=True)
class ErrorResponse:
    id: JsonRpcId
    code: Any
    message: Any
    data: Any = None


Message = Request | Notification | Response | ErrorResponse


@dataclass(frozen=True)
class Decoded:
    """One frame after decoding. ``message`` is None when the frame could not
    be read as a JSON-RPC message at all; ``size`` is its payload length."""

    frame_index: int
    size: int
    message: Message | None
    violations: tuple[Violation, ...]
    raw: Any = None

    @property
    def rules(self) -> tuple[str, ...]:
        """The requirement ids this decode evaluated: the frame rules on every
        frame, the request rules on calls, the error-object rules on errors."""
        frame = (
            "EXT-0-frame-bound",
            "EXT-0-json-text",
            "EXT-0-diagnostics-stderr",
            "EXT-0-no-blank-lines",
            "EXT-0-one-object-per-line",
            "EXT-0-unique-member-names",
            "JSONRPC-4-jsonrpc-member",
            "JSONRPC-5-result-xor-error",
        )
        if isinstance(self.message, Request | Notification):
            return (
                *frame,
                "JSONRPC-4-method-string",
                "JSONRPC-4-params-structured",
                "JSONRPC-4-id-type",
                "JSONRPC-4-id-not-fractional",
            )
        if isinstance(self.message, ErrorResponse):
            return (*frame, "JSONRPC-5.1-error-object", "JSONRPC-5.1-reserved-codes")
        return frame


def decode_event(event: FrameEvent) -> Decoded:
    if isinstance(event, OversizedFrame):
        # No size in the message: whether the decoder saw the whole frame or
        # reported it as soon as it passed the bound depends on how the bytes
        # were chunked, and the same frame must give the same evidence. The
        # size seen travels as Decoded.size (traces record it).
        v = Violation(
            "EXT-0-frame-bound", f"frame is longer than the {event.limit:,}-byte limit", frame_index=event.index
        )
        return Decoded(event.index, event.size, None, (v,))
    return decode_frame(event)


def decode_frame(frame: Frame) -> Decoded:
    parsed = parse_json(frame.payload)
    index = frame.index
    if isinstance(parsed, JsonError):
        v = _unreadable(frame.payload, parsed.reason)
        return Decoded(index, len(frame.payload), None, (v.in_frame(index),))
    violations = [
        Violation("EXT-0-unique-member-names", f"member name {k!r} appears more than once in one object")
        for k in parsed.duplicate_keys
    ]
    message, more = parse_envelope(parsed.value)
    violations.extend(more)
    located = tuple([v.in_frame(index) for v in violations]) if violations else ()
    return Decoded(index, len(frame.payload), message, located, parsed.value)


def _unreadable(payload: bytes, reason: str) -> Violation:
    # A line that does not even start like a JSON object or array is a log
    # line written to stdout ("INFO ...", "fetching ...", "true story"); name
    # that rule. A broken object or array is a malformed frame.
    head = payload.lstrip()[:1]
    excerpt = payload[:80].decode("utf-8", "replace")
    if not head:
        # Nothing but the terminator (or whitespace): no message and no
        # diagnostic either, so it is neither of those rules' business.
        return Violation("EXT-0-no-blank-lines", f"stdout line is blank ({len(payload)} whitespace byte(s))")
    if head not in (b"{", b"["):
        return Violation("EXT-0-diagnostics-stderr", f"stdout line is not a protocol frame: {excerpt!r}")
    return Violation("EXT-0-json-text", f"{reason}; line starts {excerpt!r}")


def parse_envelope(value: Any) -> tuple[Message | None, list[Violation]]:
    """Classify a parsed JSON value as a JSON-RPC message, yielding every
    envelope violation found (not just the first)."""
    if not isinstance(value, dict):
        kind = "array (batch)" if isinstance(value, list) else type(value).__name__
        return None, [
            Violation("EXT-0-one-object-per-line", f"frame is a JSON {kind}; one object per line is required")
        ]
    violations: list[Violation] = []
    if value.get("jsonrpc") != "2.0":
        got = repr(value["jsonrpc"]) if "jsonrpc" in value else "absent"
        violations.append(Violation("JSONRPC-4-jsonrpc-member", f'jsonrpc must be "2.0"; got {got}', ("jsonrpc",)))
    if "method" in value:
        message = _parse_call(value, violations)
    elif "result" in value or "error" in value:
        message = _parse_response(value, violations)
    else:
        violations.append(
            Violation("JSONRPC-5-result-xor-error", "object has neither method nor result nor error; it is no message")
        )
        message = None
    return message, violations


def _parse_call(value: dict[str, Any], violations: list[Violation]) -> Message | None:
    method = value["method"]
    if not isinstance(method, str):
        violations.append(
            Violation("JSONRPC-4-method-string", f"method must be a string; got {_kind(method)}", ("method",))
        )
        return None
    params = value.get("params")
    if "params" in value and not isinstance(params, dict | list):
        violations.append(
            Violation(
                "JSONRPC-4-params-structured", f"params must be an object or array; got {_kind(params)}", ("params",)
            )
        )
    if "result" in value or "error" in value:
        violations.append(Violation("JSONRPC-5-result-xor-error", "a request must not carry result or error"))
    if "id" not in value:
        return Notification(method, params)
    violations.extend(check_id(value["id"]))
    return Request(value["id"], method, params)


def _parse_response(value: dict[str, Any], violations: list[Violation]) -> Message | None:
    if "result" in value and "error" in value:
        violations.append(Violation("JSONRPC-5-result-xor-error", "response carries both result and error"))
    if "id" not in value:
        violations.append(Violation("JSONRPC-4-id-type", "response has no id member (null is required when unknown)"))
    rid = value.get("id")
    violations.extend(check_id(rid))
    if "result" in value:
        return Response(rid, value["result"])
    error = value["error"]
    violations.extend(check_error_object(error))
    if not isinstance(error, dict):
        return ErrorResponse(rid, None, None)
    return ErrorResponse(rid, error.get("code"), error.get("message"), error.get("data"))


def check_id(rid: Any) -> list[Violation]:
    if isinstance(rid, bool) or not isinstance(rid, int | float | str | type(None)):
        return [Violation("JSONRPC-4-id-type", f"id must be a string, number or null; got {_kind(rid)}", ("id",))]
    # Judged by value: 5.0 and 1e3 name whole numbers (JSON does not tell
    # them from 5 and 1000), so only a true fraction is flagged.
    if isinstance(rid, float) and not rid.is_integer():
        return [Violation("JSONRPC-4-id-not-fractional", f"id {rid!r} is a fractional number", ("id",))]
    return []


def check_error_object(error: Any) -> list[Violation]:
    if not isinstance(error, dict):
        return [Violation("JSONRPC-5.1-error-object", f"error must be an object; got {_kind(error)}", ("error",))]
    violations = []
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, int):
        violations.append(
            Violation(
                "JSONRPC-5.1-error-object", f"error.code must be an integer; got {_kind(code)}", ("error", "code")
            )
        )
    elif code in _RESERVED and code not in _PREDEFINED and code not in _SERVER_ERRORS:
        violations.append(
            Violation(
                "JSONRPC-5.1-reserved-codes",
                f"error.code {code} lies in the reserved block -32768..-32000 but is not a defined code",
                ("error", "code"),
            )
        )
    if not isinstance(error.get("message"), str):
        violations.append(
            Violation(
                "JSONRPC-5.1-error-object",
                f"error.message must be a string; got {_kind(error.get('message'))}",
                ("error", "message"),
            )
        )
    return violations


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    return "array" if isinstance(value, list) else "object"


def request(id: JsonRpcId, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(id: JsonRpcId, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error(id: JsonRpcId, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": err}
