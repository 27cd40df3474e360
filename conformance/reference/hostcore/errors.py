"""§7 error codes: a numeric JSON-RPC code plus the string ``data.errorCode``.

Several string codes share one numeric slot; the string is the contract. A
handler raises :class:`HostError` with the string code and the dispatcher
turns it into a JSON-RPC error object. Tool outcomes (TOOL_DENIED,
PATH_OUTSIDE_WORKSPACE, ...) are never raised: tools.execute returns them in
its result (§7, last paragraph).
"""

from __future__ import annotations

from typing import Any

# JSON-RPC 2.0 §5.1 codes the §7 table uses without a string code.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
HOST_OVERLOADED_CODE = -32029

# §7: string code -> numeric slot. NOT_FOUND uses 1007; 1003 is the legacy slot.
NUMERIC_CODES: dict[str, int] = {
    "INTERNAL": 1000,
    "UNAUTHORIZED": 1001,
    "HOST_SHUTTING_DOWN": 1001,
    "INVALID_PARAMS": 1002,
    "LIMIT_EXCEEDED": 1002,
    # §4 (todos.get, search.*) names INVALID_ARGUMENT, which the §7 table
    # lacks; this host files it in the INVALID_PARAMS slot.
    "INVALID_ARGUMENT": 1002,
    "NOT_FOUND": 1007,
    "SESSION_NOT_FOUND": 1007,
    "CONFLICT": 1008,
    "AGENT_BUSY": 1008,
    "PROTOCOL_MISMATCH": 1011,
    "HOST_OVERLOADED": HOST_OVERLOADED_CODE,
}
WORKTREE_SLOT = 1025  # every WORKTREE_* code
PLAN_SLOT = 1015  # every PLAN_* code


def numeric_code(error_code: str) -> int:
    if error_code.startswith("WORKTREE_"):
        return WORKTREE_SLOT
    if error_code.startswith("PLAN_"):
        return PLAN_SLOT
    return NUMERIC_CODES.get(error_code, NUMERIC_CODES["INTERNAL"])


class HostError(Exception):
    """Raised by a handler; answered as a §7 JSON-RPC error."""

    def __init__(self, error_code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.details = details

    def to_error(self) -> dict[str, Any]:
        data: dict[str, Any] = {"errorCode": self.error_code}
        if self.details:
            data["details"] = self.details
        return {"code": numeric_code(self.error_code), "message": self.message, "data": data}


def invalid_params(message: str) -> HostError:
    return HostError("INVALID_PARAMS", message)


def not_found(message: str) -> HostError:
    return HostError("NOT_FOUND", message)
