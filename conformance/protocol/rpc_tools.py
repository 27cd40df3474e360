"""Host RPC §5 / §7: tools.execute params and results, tools.output.

Sans-IO and stateless; paths are relative to the ``params`` or ``result``
value handed in. Unknown members are allowed (the types are not closed).

Decisions where the text leaves room:
* ``args`` is ``unknown`` in the type, so it may be any JSON value or absent.
* ``timeoutMs`` on the client side is judged as a number only: the range
  1,000..21,600,000 is what host-core *accepts* (RPC-5-bash-timeout-override),
  not a rule the text puts on the caller.
* ``content`` is ``unknown`` but not optional: it must be present.
* ``durationMs`` is a number; negative values are not called out by the text
  and are not flagged.
* A Bash failure (RPC-5-bash-failure-result) is judged only when the caller
  knows the command exited non-zero; ``exitCode`` is a number and
  ``stdout``/``stderr`` are strings inside ``content``.
* Tool outcomes (§7) are the strings the section names plus TOOL_FAILED (§5);
  HOST_OVERLOADED may travel either way (§2.1 vs §7) and is never flagged.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import rpc_limits
from .describe import kind
from .members import bool_member, enum_member, excerpt, expected_object, string_member
from .rpc_errors import TOOL_OUTCOMES, error_code_of
from .rpc_shapes import number_member, required_member
from .violations import Violation, rule

PARAMS = "RPC-5-execute-params"
RESULT = "RPC-5-execute-result"
BASH_FAILURE = "RPC-5-bash-failure-result"
OUTCOMES = "RPC-7-tool-outcomes-are-results"
OUTPUT = "RPC-5.1-tools-output-shape"


@rule(PARAMS)
def execute_params(params: object) -> Iterator[Violation]:
    """What a client sends with tools.execute (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, PARAMS, "params")
        return
    for key in ("sessionId", "toolCallId", "toolName"):
        yield from string_member(params, key, PARAMS, "params", required=True)
    for key in ("turnId", "delegationId"):
        yield from string_member(params, key, PARAMS, "params", required=False)
    yield from enum_member(params, "requestedMode", rpc_limits.SESSION_MODES, PARAMS, "params", required=False)
    shells = rpc_limits.COMMAND_SHELL_IDS
    yield from enum_member(params, "expectedCommandShellId", shells, PARAMS, "params", required=False)
    dialects = rpc_limits.SHELL_DIALECTS
    yield from enum_member(params, "expectedCommandShellDialect", dialects, PARAMS, "params", required=False)
    yield from number_member(params, "timeoutMs", PARAMS, "params", required=False)


@rule(RESULT)
def execute_result(result: object, *, tool_call_id: str | None = None) -> Iterator[Violation]:
    """A tools.execute result; ``tool_call_id`` is the id the call carried."""
    if not isinstance(result, dict):
        yield expected_object(result, RESULT, "result")
        return
    yield from string_member(result, "toolCallId", RESULT, "result", required=True)
    echoed = result.get("toolCallId")
    if tool_call_id is not None and isinstance(echoed, str) and echoed != tool_call_id:
        message = f"result.toolCallId is {excerpt(echoed)}; the call's toolCallId is {excerpt(tool_call_id)}"
        yield Violation(RESULT, message, ("toolCallId",))
    if not isinstance(result.get("ok"), bool):
        shown = "absent" if "ok" not in result else kind(result["ok"])
        yield Violation(RESULT, f"result.ok is {shown}; expected a boolean", ("ok",))
    yield from required_member(result, "content", RESULT, "result")
    yield from number_member(result, "durationMs", RESULT, "result", required=True)
    yield from bool_member(result, "isError", RESULT, "result")
    yield from bool_member(result, "denied", RESULT, "result")
    yield from string_member(result, "errorCode", RESULT, "result", required=False)


@rule(BASH_FAILURE)
def bash_failure_result(result: object) -> Iterator[Violation]:
    """The result of a Bash command known to have exited non-zero."""
    if not isinstance(result, dict):
        yield expected_object(result, BASH_FAILURE, "result")
        return
    # `is` for the booleans: 0 == False in Python, but not in JSON.
    expected = (("ok", result.get("ok") is False, "false"), ("isError", result.get("isError") is True, "true"))
    for key, good, wanted in (*expected, ("errorCode", result.get("errorCode") == "TOOL_FAILED", "'TOOL_FAILED'")):
        if not good:
            shown = "absent" if key not in result else excerpt(result[key])
            yield Violation(BASH_FAILURE, f"result.{key} is {shown}; expected {wanted}", (key,))
    content = result.get("content")
    if not isinstance(content, dict):
        yield Violation(
            BASH_FAILURE, f"result.content is {kind(content)}; expected an object with exitCode", ("content",)
        )
        return
    yield from number_member(content, "exitCode", BASH_FAILURE, "result", ("content",), required=True)
    for key in ("stdout", "stderr"):
        yield from string_member(content, key, BASH_FAILURE, "result", ("content",), required=True)


@rule(OUTCOMES)
def tool_outcome_not_error(response: object) -> Iterator[Violation]:
    """A whole tools.execute response: tool outcomes never come as errors."""
    if not isinstance(response, dict) or "error" not in response:
        return
    code = error_code_of(response["error"])
    if code in TOOL_OUTCOMES:
        message = f"tools.execute answered with a JSON-RPC error {code}; tool outcomes are results with ok false"
        yield Violation(OUTCOMES, message, ("error", "data", "errorCode"))


@rule(OUTPUT)
def tools_output_params(params: object) -> Iterator[Violation]:
    """The params of one tools.output notification."""
    if not isinstance(params, dict):
        yield expected_object(params, OUTPUT, "params")
        return
    for key in ("sessionId", "toolCallId", "chunk"):
        yield from string_member(params, key, OUTPUT, "params", required=True)
    yield from enum_member(params, "commandShellId", rpc_limits.COMMAND_SHELL_IDS, OUTPUT, "params", required=True)
    yield from enum_member(params, "stream", rpc_limits.OUTPUT_STREAMS, OUTPUT, "params", required=True)
