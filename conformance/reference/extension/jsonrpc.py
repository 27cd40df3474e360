"""JSON-RPC 2.0 messages as this extension reads and writes them.

§0: every message is a JSON-RPC 2.0 envelope, one JSON object per line. This
module turns one frame's payload into exactly one of five outcomes, so the
server never has to look at raw JSON:

* ``Request`` / ``Notification`` -- work from the host;
* ``Response`` -- the host's answer to one of our child requests (§2);
* ``Rejected`` -- must be answered with an error (-32700 / -32600);
* ``Ignored`` -- must not be answered (a malformed *response*: answering a
  response could start an error ping-pong between the peers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
RequestId: TypeAlias = int | str

# §3 and JSON-RPC 2.0 §5.1.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# §3: -32000..-32099 is reserved for extension-specific server errors; we use
# it for "wrong lifecycle state" (request before / repeated initialize).
SERVER_STATE_ERROR = -32000
# §1.9: a cooperatively cancelled request is answered with -32800.
REQUEST_CANCELLED = -32800


class RpcError(Exception):
    """Raised by a handler to answer its request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class RequestCancelled(Exception):
    """Raised inside a handler once its request's cancellation fired (§1.9)."""


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: Any  # raw: None when absent; the server checks the shape


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    """The host's answer to a child request. A malformed answer to a known id
    is still delivered, as an error, so the waiting handler never hangs."""

    id: RequestId
    result: Any
    error: JsonObject | None


@dataclass(frozen=True)
class Rejected:
    id: RequestId | None
    code: int
    message: str


@dataclass(frozen=True)
class Ignored:
    reason: str


Incoming: TypeAlias = Request | Notification | Response | Rejected | Ignored


def is_valid_id(value: object) -> bool:
    """Ids we accept: integers and strings. ``bool`` is excluded because JSON
    ``true`` is not a number; fractional numbers and null are refused (JSON-RPC
    discourages both and §2 talks only of integer and string ids)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_frame(payload: bytes) -> Incoming:
    """Classify one frame payload (terminator already stripped)."""
    try:
        # Strict UTF-8 on purpose: json.loads(bytes) would also accept UTF-16
        # and a BOM, neither of which is an NDJSON line.
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(None, PARSE_ERROR, f"parse error: frame is not valid UTF-8 ({exc.reason})")
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        return Rejected(None, PARSE_ERROR, f"parse error: {_describe(exc)}")
    return classify(value)


def classify(value: Any) -> Incoming:
    if isinstance(value, list):
        # §0: exactly one JSON object per line, so JSON-RPC batches are not part
        # of this protocol.
        return Rejected(None, INVALID_REQUEST, "invalid request: batches are not supported; send one object per line")
    if not isinstance(value, dict):
        return Rejected(None, INVALID_REQUEST, "invalid request: a message must be a JSON object")
    if "method" in value:
        return _classify_call(value)
    if "result" in value or "error" in value:
        return _classify_response(value)
    return Rejected(_readable_id(value), INVALID_REQUEST, "invalid request: no method, result or error member")


def _classify_call(message: JsonObject) -> Incoming:
    problem = _call_problem(message)
    if problem is not None:
        return Rejected(_readable_id(message), INVALID_REQUEST, f"invalid request: {problem}")
    if "id" not in message:
        return Notification(message["method"], message.get("params"))
    return Request(message["id"], message["method"], message.get("params"))


def _call_problem(message: JsonObject) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be exactly "2.0"'
    if not isinstance(message["method"], str):
        return "method must be a string"
    if "params" in message and not isinstance(message["params"], (dict, list)):
        return "params must be an object or an array"
    if "id" in message and not is_valid_id(message["id"]):
        return "id must be an integer or a string"
    return None


def _classify_response(message: JsonObject) -> Incoming:
    response_id = message.get("id")
    if not is_valid_id(response_id):
        return Ignored(f"response without a usable id: {response_id!r}")
    assert isinstance(response_id, (int, str))
    problem = _response_problem(message)
    if problem is not None:
        error = {"code": INTERNAL_ERROR, "message": f"malformed response from host: {problem}"}
        return Response(response_id, None, error)
    return Response(response_id, message.get("result"), message.get("error"))


def _response_problem(message: JsonObject) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be exactly "2.0"'
    if ("result" in message) == ("error" in message):
        return "exactly one of result and error is required"
    error = message.get("error")
    if "error" in message and not _is_error_object(error):
        return "error must be an object with an integer code and a string message"
    return None


def _is_error_object(error: Any) -> bool:
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    return isinstance(code, int) and not isinstance(code, bool) and isinstance(error.get("message"), str)


def _readable_id(message: JsonObject) -> RequestId | None:
    """JSON-RPC: answer an invalid request with its id when one can be read."""
    value = message.get("id")
    return value if is_valid_id(value) else None


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity, which are not JSON (RFC 8259).
    raise ValueError(f"{name} is not valid JSON")


# Built once: json.loads with options builds a decoder (and its scanner) per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nesting is too deep to decode"
    return str(exc)


def result_message(request_id: RequestId, result: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, code: int, message: str, data: Any = None) -> JsonObject:
    error: JsonObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def request_message(request_id: RequestId, method: str, params: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification_message(method: str, params: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "method": method, "params": params}
