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


@rule("RPC-5-execute-params")
def execute_params(params: object) -> Iterator[Violation]:
    """What a client sends with tools.execute (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-5-execute-params", "params")
        return
    for key in ("sessionId", "toolCallId", "toolName"):
        yield from string_member(params, key, "RPC-5-execute-params", "params", required=True)
    for key in ("turnId", "delegationId"):
        yield from string_member(params, key, "RPC-5-execute-params", "params", required=False)
    yield from enum_member(
        params, "requestedMode", rpc_limits.SESSION_MODES, "RPC-5-execute-params", "params", required=False
    )
    shells = rpc_limits.COMMAND_SHELL_IDS
    yield from enum_member(params, "expectedCommandShellId", shells, "RPC-5-execute-params", "params", required=False)
    dialects = rpc_limits.SHELL_DIALECTS
    yield from enum_member(
        params, "expectedCommandShellDialect", dialects, "RPC-5-execute-params", "params", required=False
    )
    yield from number_member(params, "timeoutMs", "RPC-5-execute-params", "params", required=False)


@rule("RPC-5-execute-result")
def execute_result(result: object, *, tool_call_id: str | None = None) -> Iterator[Violation]:
    """A tools.execute result; ``tool_call_id`` is the id the call carried."""
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-5-execute-result", "result")
        return
    yield from string_member(result, "toolCallId", "RPC-5-execute-result", "result", required=True)
    echoed = result.get("toolCallId")
    if tool_call_id is not None and isinstance(echoed, str) and echoed != tool_call_id:
        message = f"result.toolCallId is {excerpt(echoed)}; the call's toolCallId is {excerpt(tool_call_id)}"
        yield Violation("RPC-5-execute-result", message, ("toolCallId",))
    if not isinstance(result.get("ok"), bool):
        shown = "absent" if "ok" not in result else kind(result["ok"])
        yield Violation("RPC-5-execute-result", f"result.ok is {shown}; expected a boolean", ("ok",))
    yield from required_member(result, "content", "RPC-5-execute-result", "result")
    yield from number_member(result, "durationMs", "RPC-5-execute-result", "result", required=True)
    yield from bool_member(result, "isError", "RPC-5-execute-result", "result")
    yield from bool_member(result, "denied", "RPC-5-execute-result", "result")
    # §7: a tool outcome is a result with ok false *and* its errorCode; the
    # type leaves errorCode optional only for the ok outcomes. Null counts as
    # absent, as for every optional member.
    yield from string_member(result, "errorCode", "RPC-5-execute-result", "result", required=result.get("ok") is False)


@rule("RPC-5-bash-failure-result")
def bash_failure_result(result: object) -> Iterator[Violation]:
    """The result of a Bash command known to have exited non-zero."""
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-5-bash-failure-result", "result")
        return
    # `is` for the booleans: 0 == False in Python, but not in JSON.
    expected = (("ok", result.get("ok") is False, "false"), ("isError", result.get("isError") is True, "true"))
    for key, good, wanted in (*expected, ("errorCode", result.get("errorCode") == "TOOL_FAILED", "'TOOL_FAILED'")):
        if not good:
            shown = "absent" if key not in result else excerpt(result[key])
            yield Violation("RPC-5-bash-failure-result", f"result.{key} is {shown}; expected {wanted}", (key,))
    content = result.get("content")
    if not isinstance(content, dict):
        yield Violation(
            "RPC-5-bash-failure-result",
            f"result.content is {kind(content)}; expected an object with exitCode",
            ("content",),
        )
        return
    yield from number_member(content, "exitCode", "RPC-5-bash-failure-result", "result", ("content",), required=True)
    for key in ("stdout", "stderr"):
        yield from string_member(content, key, "RPC-5-bash-failure-result", "result", ("content",), required=True)


@rule("RPC-7-tool-outcomes-are-results")
def tool_outcome_not_error(response: object) -> Iterator[Violation]:
    """A whole tools.execute response: tool outcomes never come as errors."""
    if not isinstance(response, dict) or "error" not in response:
        return
    code = error_code_of(response["error"])
    if code in TOOL_OUTCOMES:
        message = f"tools.execute answered with a JSON-RPC error {code}; tool outcomes are results with ok false"
        yield Violation("RPC-7-tool-outcomes-are-results", message, ("error", "data", "errorCode"))


@rule("RPC-5.1-tools-output-shape")
def tools_output_params(params: object) -> Iterator[Violation]:
    """The params of one tools.output notification."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-5.1-tools-output-shape", "params")
        return
    for key in ("sessionId", "toolCallId", "chunk"):
        yield from string_member(params, key, "RPC-5.1-tools-output-shape", "params", required=True)
    yield from enum_member(
        params, "commandShellId", rpc_limits.COMMAND_SHELL_IDS, "RPC-5.1-tools-output-shape", "params", required=True
    )
    yield from enum_member(
        params, "stream", rpc_limits.OUTPUT_STREAMS, "RPC-5.1-tools-output-shape", "params", required=True
    )
