"""JSON-RPC 2.0 as this host reads and writes it (§0: one object per line).

``parse(payload)`` turns one stdout frame of a child into exactly one of
:class:`Incoming` (a request or a notification from the extension),
:class:`Reply` (a response to one of our requests) or :class:`Junk` (anything
else, diagnosed and dropped: a host never answers a malformed response).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias

from conformance.protocol.framing import encode_frame
from conformance.protocol.limits import MAX_CHILD_ID_BYTES, MAX_U64

JsonObject: TypeAlias = dict[str, Any]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800  # §1.9
NOT_AVAILABLE = -32002  # §1.1/§2: no bound service / owner for this call


@dataclass(frozen=True)
class Incoming:
    """A request (``id`` present) or notification from the extension."""

    method: str
    params: Any
    id: Any
    has_id: bool


@dataclass(frozen=True)
class Reply:
    id: Any
    result: Any
    error: JsonObject | None


@dataclass(frozen=True)
class Junk:
    reason: str


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(payload: bytes) -> Incoming | Reply | Junk:
    try:
        message = json.loads(payload.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Junk(f"not JSON: {str(exc)[:120]}")
    if not isinstance(message, dict):
        return Junk(f"a JSON {type(message).__name__}, not an object")
    if message.get("jsonrpc") != "2.0":
        return Junk('jsonrpc is not "2.0"')
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return Junk("method is not a string")
        return Incoming(method, message.get("params"), message.get("id"), "id" in message)
    if "id" not in message:
        return Junk("neither a request, a notification nor a response")
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        return Junk("a response needs exactly one of result and error")
    error = message.get("error")
    if has_error and not (
        isinstance(error, dict) and _is_int(error.get("code")) and isinstance(error.get("message"), str)
    ):
        return Junk("error is not an object with an integer code and a string message")
    return Reply(message["id"], message.get("result"), error if has_error else None)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def valid_child_id(value: object) -> bool:
    """§2: an unsigned 64-bit integer, or a string of at most 256 UTF-8 bytes."""
    if _is_int(value):
        return 0 <= value <= MAX_U64  # type: ignore[operator]
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass")) <= MAX_CHILD_ID_BYTES
    return False


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def frame(message: JsonObject) -> bytes:
    """One message as the bytes of one frame (compact JSON never holds a raw LF)."""
    text = _ENCODER.encode(message)
    try:
        return encode_frame(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: escape it instead
        return encode_frame(json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii"))


def request(request_id: int, method: str, params: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result(request_id: Any, value: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, code: int, message: str) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
