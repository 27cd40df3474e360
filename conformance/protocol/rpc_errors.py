"""The host RPC §7 error table as data, and the checks that read it.

Host-core JSON-RPC errors carry a numeric ``code`` and a stable string
``data.errorCode``; several strings share one number, and the string is what
callers rely on. The table below is that section, row for row, in the suite's
words. Both readings are kept where the document disagrees with itself:

* NOT_FOUND has two rows: 1003 (a legacy slot for old callers) and 1007.
* The §2 example error pairs code 1003 with PATH_OUTSIDE_WORKSPACE, a string
  §7 lists as a tool outcome; :data:`EXAMPLE_CODES` keeps the example's
  pairing so an error spelled like it is accepted.
* HOST_OVERLOADED is error -32029 here (dispatcher full) and a retryable tool
  result in §2.1 (queue full): :data:`TOOL_RESULT_ALSO` lists it, so
  :func:`is_overload` recognises both.
* An unparseable line gets -32700 here and is silently discarded in §2; the
  checks of that rule accept either (RPC-2-invalid-json-diagnostic).

Strings the table does not list (WORKSPACE_REQUIRED, INVALID_ARGUMENT,
COMMAND_SHELL_INVALID, PROVIDER_OWNED_BY_PLUGIN, ...) are accepted with any
numeric code: the document never assigns them one. The PLAN_* and WORKTREE_*
families do have a slot each (1015, 1025).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .describe import kind
from .id_peek import peek_id
from .members import excerpt
from .rpc_limits import ID_PEEK_EXPECTED_BYTES, UNSPECIFIED_ARGS_TOOLS, UNSPECIFIED_PARAMS_METHODS
from .violations import Finding, Violation, rule


@dataclass(frozen=True)
class ErrorRow:
    """One row of the §7 table. ``error_code`` is None for the two rows that
    carry no string; a ``family`` row matches every string with its prefix
    (``PLAN_*``). ``legacy`` marks a slot kept only for old callers."""

    code: int
    error_code: str | None
    meaning: str
    retryable: bool = False
    legacy: bool = False
    family: bool = False

    def matches(self, error_code: str) -> bool:
        if self.error_code is None:
            return False
        if self.family:
            return error_code.startswith(self.error_code.rstrip("*"))
        return error_code == self.error_code


ERROR_TABLE: tuple[ErrorRow, ...] = (
    ErrorRow(1000, "INTERNAL", "the host failed unexpectedly"),
    ErrorRow(1001, "UNAUTHORIZED", "no valid handshake, or a capability is missing"),
    ErrorRow(1001, "HOST_SHUTTING_DOWN", "refused while draining after stdin EOF"),
    ErrorRow(1002, "INVALID_PARAMS", "params failed validation"),
    ErrorRow(1002, "MODEL_ALIAS_TOO_LONG", "a provider alias is over 60 code points"),
    ErrorRow(1002, "MODEL_BINDINGS_DEGRADED", "stored model bindings unreadable; array replacement refused"),
    ErrorRow(1002, "LIMIT_EXCEEDED", "a request line over 64 MiB (drained; id kept when peekable)"),
    ErrorRow(1003, "NOT_FOUND", "missing entity (old slot)", legacy=True),
    ErrorRow(1006, "RATE_LIMITED", "a per-caller budget window ran out"),
    ErrorRow(1007, "NOT_FOUND", "missing entity"),
    ErrorRow(1007, "SESSION_NOT_FOUND", "no such session; tool calls do not fall back"),
    ErrorRow(1008, "CONFLICT", "busy or conflicting state"),
    ErrorRow(1008, "AGENT_BUSY", "the session is running a turn"),
    ErrorRow(1009, "PLUGIN_INVALID", "plugin manifest or validation failure"),
    ErrorRow(1010, "PLUGIN_LOAD_FAILED", "plugin enable or load failure"),
    ErrorRow(1011, "PROTOCOL_MISMATCH", "handshake protocol version differs"),
    ErrorRow(1012, "PLUGIN_INTEGRITY", "package checksum or signature differs"),
    ErrorRow(1013, "PLUGIN_PERMISSION_DENIED", "the plugin lacks a needed permission"),
    ErrorRow(1014, "PLUGIN_NETWORK", "marketplace download or catalog fetch failed"),
    ErrorRow(1015, "MCP_INVALID", "a user MCP server definition is invalid"),
    ErrorRow(1015, "PLAN_*", "any Plan/Goal checkpoint failure", family=True),
    ErrorRow(1016, "SKILL_INVALID", "a user skill document is invalid"),
    ErrorRow(1017, "SUBAGENT_INVALID", "a user subagent document is invalid"),
    ErrorRow(1018, "CAPABILITY_INVALID", "a capability root or scope setting is invalid"),
    ErrorRow(1019, "PLUGIN_CANCELLED", "the user cancelled a marketplace download"),
    ErrorRow(1020, "PLUGIN_MARKET_NOT_PUBLISHED", "version known but not offered yet"),
    ErrorRow(1021, "PLUGIN_MARKET_ARCHIVED", "plugin withdrawn from the platform"),
    ErrorRow(1022, "PLUGIN_MARKET_NOT_FOUND", "plugin or version unknown to the platform"),
    ErrorRow(1023, "PLUGIN_MARKET_RATE_LIMITED", "the download endpoint asked for a wait"),
    ErrorRow(1024, "PLUGIN_MARKET_NO_SOURCE", "no distribution target can serve the package"),
    ErrorRow(1025, "WORKTREE_*", "any isolated-session worktree failure", family=True),
    ErrorRow(-32029, "HOST_OVERLOADED", "the dispatcher is at capacity", retryable=True),
    ErrorRow(-32601, None, "unknown method"),
    ErrorRow(-32700, None, "the request line could not be parsed"),
)

UNKNOWN_METHOD = -32601  # RPC-7-unknown-method
PARSE_ERROR = -32700  # RPC-7-parse-error
HOST_OVERLOADED = "HOST_OVERLOADED"  # RPC-2.1-overloaded-retryable, RPC-7-overloaded-code
HOST_OVERLOADED_CODE = -32029  # RPC-7-overloaded-code
LIMIT_EXCEEDED = "LIMIT_EXCEEDED"  # RPC-7-limit-exceeded
# Rows without a string: data.errorCode is not demanded with these codes.
CODES_WITHOUT_STRING = frozenset(r.code for r in ERROR_TABLE if r.error_code is None)

# The §2 example's pairing (error code 1003 with PATH_OUTSIDE_WORKSPACE).
EXAMPLE_CODES: Mapping[str, frozenset[int]] = {"PATH_OUTSIDE_WORKSPACE": frozenset({1003})}

# Outcomes §7 names as tools.execute results, never JSON-RPC errors (its list
# ends with an ellipsis; only the named ones are judged), plus TOOL_FAILED,
# which §5 defines as a result.
TOOL_OUTCOMES = (
    "TOOL_DENIED",
    "TOOL_TIMEOUT",
    "PATH_OUTSIDE_WORKSPACE",
    "WORKSPACE_PATH_DENIED",
    "WRITE_DISABLED_IN_PLAN",
    "SHELL_NOT_FOUND",
    "COMMAND_SHELL_CHANGED",
    "TOOL_FAILED",
)  # RPC-7-tool-outcomes-are-results
# Strings that may travel either way (§2.1 tool result vs §7 error).
TOOL_RESULT_ALSO = (HOST_OVERLOADED,)  # RPC-2.1-overloaded-retryable
# Strings validation failures are documented with besides INVALID_PARAMS
# (todos.get and search.* say INVALID_ARGUMENT; the 1002 slot holds the rest).
INVALID_INPUT_CODES = ("INVALID_PARAMS", "INVALID_ARGUMENT", "MODEL_ALIAS_TOO_LONG", "MODEL_BINDINGS_DEGRADED")


def rows_for(error_code: str) -> tuple[ErrorRow, ...]:
    """Every row whose string (or family prefix) is ``error_code``."""
    return tuple(r for r in ERROR_TABLE if r.matches(error_code))


def allowed_codes(error_code: str) -> frozenset[int] | None:
    """The numeric codes the document allows with ``error_code``; ``None``
    when it assigns none (then any code is accepted)."""
    codes = {r.code for r in rows_for(error_code)} | set(EXAMPLE_CODES.get(error_code, ()))
    return frozenset(codes) if codes else None


def is_retryable(error_code: str) -> bool:
    return any(r.retryable for r in rows_for(error_code))


def error_code_of(error: object) -> str | None:
    """``error.data.errorCode`` when it is a string, else None."""
    if not isinstance(error, dict):
        return None
    data = error.get("data")
    code = data.get("errorCode") if isinstance(data, dict) else None
    return code if isinstance(code, str) else None


def is_overload(response: object) -> bool:
    """Whether a response is an explicit HOST_OVERLOADED answer, in either of
    the document's forms: a JSON-RPC error, or a tools.execute result with
    ok false (RPC-2.1-overloaded-retryable)."""
    if not isinstance(response, dict):
        return False
    if "error" in response:
        return error_code_of(response["error"]) == HOST_OVERLOADED
    result = response.get("result")
    return isinstance(result, dict) and result.get("ok") is False and result.get("errorCode") == HOST_OVERLOADED


def invalid_input_refusal(response: object) -> str | None:
    """The errorCode of a refusal for invalid input (INVALID_PARAMS and its
    kin, :data:`INVALID_INPUT_CODES`), whether a JSON-RPC error or a
    tools.execute result with ok false; None for any other answer. A call
    whose shape the document leaves open, refused this way, judges nothing
    (docs/hostcore-requests.md)."""
    if not isinstance(response, dict):
        return None
    result = response.get("result")
    if "error" in response:
        code: object = error_code_of(response["error"])
    elif isinstance(result, dict) and result.get("ok") is False:
        code = result.get("errorCode")
    else:
        return None
    return code if isinstance(code, str) and code in INVALID_INPUT_CODES else None


def shape_refusal(method: str, params: object, response: object) -> str | None:
    """Why ``response`` judges nothing: the host-core refused, as invalid
    input, a request whose shape the document leaves to the suite -- params
    of a method §4 does not spell out, or the arguments of a tool it does
    not (docs/hostcore-requests.md). None for any other answer."""
    code = invalid_input_refusal(response)
    if code is None:
        return None
    if method in UNSPECIFIED_PARAMS_METHODS:
        return f"the host-core refused {method} with the params the suite chose ({code}); the document names none"
    tool = params.get("toolName") if isinstance(params, dict) and method == "tools.execute" else None
    if tool in UNSPECIFIED_ARGS_TOOLS:
        return f"the host-core refused {tool} with the arguments the suite chose ({code}); the document names none"
    return None


# -- checks over one error response -----------------------------------------------------
# Each takes the whole parsed response object ({"jsonrpc", "id", "error"});
# paths are relative to it.


def _error(response: object) -> dict[str, Any] | None:
    if isinstance(response, dict) and isinstance(response.get("error"), dict):
        return response["error"]
    return None


@rule("RPC-7-error-data-errorcode")
def error_data_errorcode(response: object) -> Iterator[Violation]:
    error = _error(response)
    if error is None:
        return  # not an error response: the JSON-RPC envelope rules report a bad one
    code = error.get("code")
    if code in CODES_WITHOUT_STRING:
        return
    data = error.get("data")
    if not isinstance(data, dict):
        yield Violation(
            "RPC-7-error-data-errorcode",
            f"error.data is {kind(data) if 'data' in error else 'absent'}; expected an object with a string errorCode",
            ("error", "data"),
        )
    elif not isinstance(data.get("errorCode"), str):
        shown = "absent" if "errorCode" not in data else kind(data["errorCode"])
        yield Violation(
            "RPC-7-error-data-errorcode",
            f"error.data.errorCode is {shown}; expected a string",
            ("error", "data", "errorCode"),
        )


@rule("RPC-7-code-matches-table")
def code_matches_table(response: object) -> Iterator[Violation]:
    error = _error(response)
    error_code = error_code_of(error)
    if error is None or error_code is None:
        return
    allowed = allowed_codes(error_code)
    code = error.get("code")
    if allowed is not None and code not in allowed:
        listing = " or ".join(str(c) for c in sorted(allowed))
        yield Violation(
            "RPC-7-code-matches-table",
            f"error.code is {excerpt(code)} with errorCode {excerpt(error_code)}; §7 gives {listing}",
            ("error", "code"),
        )


def check_error_response(response: object) -> Iterator[Finding]:
    """The §7 rules every host-core error response must satisfy."""
    yield from error_data_errorcode(response)
    yield from code_matches_table(response)


def _expect_error(response: object, requirement: str, wanted: tuple[str, ...]) -> Iterator[Violation]:
    listing = " or ".join(wanted)
    if not isinstance(response, dict) or "error" not in response:
        yield Violation(requirement, f"the call got a result; expected an error with errorCode {listing}")
        return
    got = error_code_of(response["error"])
    if got not in wanted:
        shown = excerpt(got) if got is not None else "absent"
        yield Violation(requirement, f"error.data.errorCode is {shown}; expected {listing}", ("error", "data"))


@rule("RPC-3-calls-require-handshake")
def refused_before_handshake(response: object) -> Iterator[Violation]:
    """The answer to a call made before a successful handshake."""
    yield from _expect_error(response, "RPC-3-calls-require-handshake", ("UNAUTHORIZED",))


@rule("RPC-3-host-refuses-mismatch")
def refused_mismatch(response: object) -> Iterator[Violation]:
    """The answer to app.handshake with a protocolVersion other than 11."""
    yield from _expect_error(response, "RPC-3-host-refuses-mismatch", ("PROTOCOL_MISMATCH",))


@rule("RPC-7-invalid-params")
def refused_invalid_params(response: object) -> Iterator[Violation]:
    """The answer to a call whose params break its documented shape."""
    yield from _expect_error(response, "RPC-7-invalid-params", INVALID_INPUT_CODES)


@rule("RPC-7-unknown-method")
def refused_unknown_method(response: object) -> Iterator[Violation]:
    """The answer to a method no version of the protocol defines."""
    error = _error(response)
    if error is None:
        yield Violation("RPC-7-unknown-method", f"an unknown method got a result; expected error {UNKNOWN_METHOD}")
    elif error.get("code") != UNKNOWN_METHOD:
        shown = excerpt(error.get("code"))
        yield Violation("RPC-7-unknown-method", f"error.code is {shown}; expected {UNKNOWN_METHOD}", ("error", "code"))


@rule("RPC-7-limit-exceeded")
def limit_exceeded(response: object) -> Iterator[Violation]:
    """The answer to a request line over the 64 MiB bound."""
    yield from _expect_error(response, "RPC-7-limit-exceeded", (LIMIT_EXCEEDED,))


@rule("RPC-7-limit-id-peeked")
def check_limit_exceeded_id(response: object, *, line_head: bytes, sent_id: object) -> Iterator[Violation]:
    """The id of the LIMIT_EXCEEDED answer to an oversized line that began
    with ``line_head`` and carried ``sent_id``.

    The id is demanded only when it is visible within the first
    ``ID_PEEK_EXPECTED_BYTES`` of the line; past that, the document does not
    say how far a host looks, so the true id and null both pass.
    """
    if not isinstance(response, dict) or "id" not in response:
        return  # the envelope rules report a response without an id
    got = response["id"]
    peeked = peek_id(line_head[:ID_PEEK_EXPECTED_BYTES])
    if peeked is not None:
        if not _same_id(got, peeked.value):
            yield Violation(
                "RPC-7-limit-id-peeked",
                f"id is {excerpt(got)}; the line starts with id {excerpt(peeked.value)} within "
                f"{ID_PEEK_EXPECTED_BYTES} bytes",
                ("id",),
            )
    elif got is not None and not _same_id(got, sent_id):
        yield Violation(
            "RPC-7-limit-id-peeked",
            f"id is {excerpt(got)}; expected null or the request's id {excerpt(sent_id)}",
            ("id",),
        )


def _same_id(a: object, b: object) -> bool:
    # Judged by value, as elsewhere: 5 and 5.0 are one id; a string never
    # equals a number.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b
