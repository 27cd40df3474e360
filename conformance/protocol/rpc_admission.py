"""Judges of the host-core's transport, admission and history (host RPC §2,
§2.1, §3, §7, §8), one per requirement, fed what a fixed scenario observed
(conformance/scenarios/hostcore_*.py). Pure functions of records: no I/O."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from conformance.protocol import rpc_errors, rpc_limits
from conformance.protocol.violations import Violation, rule

SECRET = "octet-secret-7f3a"  # text of an invalid line that no diagnostic may repeat
TOOL_CALL_ID = "octet-tool-call-1"
# More calls taken on at once than any reading of §2.1 allows (see RPC-2.1-dispatcher-cap).
OVERLOAD_LIMIT = rpc_limits.MAX_TOOL_EXECUTIONS + rpc_limits.MAX_QUEUED_TOOLS + rpc_limits.MAX_ACTIVE_REQUESTS


@dataclass
class Call:
    name: str
    session: str
    rid: object
    order: int
    tool: str = ""
    answer: dict[str, Any] | None = None


# -- judges: one per requirement, fed what a scenario observed ------------------------------


def _code(response: dict[str, Any] | None) -> tuple[object, str | None]:
    error = response.get("error") if isinstance(response, dict) else None
    return (error.get("code") if isinstance(error, dict) else None), rpc_errors.error_code_of(error)


@rule("RPC-8-notifications-after-handshake")
def no_notification_before_handshake(notifications: list[dict[str, Any]]) -> Iterator[Violation]:
    for note in notifications[:1]:
        method = note.get("method")
        yield Violation("RPC-8-notifications-after-handshake", f"notification {method!r} came before the handshake")


@rule("RPC-3-a2a-withdrawn")
def a2a_refused(method: str, response: dict[str, Any] | None) -> Iterator[Violation]:
    if response is not None and "error" not in response:
        yield Violation("RPC-3-a2a-withdrawn", f"{method} got a result; version 11 has no a2a.* methods")


@rule("RPC-3-no-a2a-notifications")
def no_a2a_notifications(notifications: list[dict[str, Any]]) -> Iterator[Violation]:
    for note in notifications:
        if note.get("method") in rpc_limits.WITHDRAWN_NOTIFICATIONS:
            yield Violation("RPC-3-no-a2a-notifications", f"the host-core sent a {note['method']} notification")
            return


@rule("RPC-3-cumulative-versions")
def method_present(method: str, response: dict[str, Any] | None) -> Iterator[Violation]:
    if _code(response)[0] == rpc_errors.UNKNOWN_METHOD:
        yield Violation("RPC-3-cumulative-versions", f"{method} is unknown (-32601); an earlier version requires it")


@rule("RPC-2-line-separators-are-payload")
def separators_answered(response: dict[str, Any] | None, stray: dict[str, Any] | None) -> Iterator[Violation]:
    if response is None:
        yield Violation("RPC-2-line-separators-are-payload", "a request with U+2028/U+2029 in a string got no answer")
    elif _code(response)[0] == rpc_errors.PARSE_ERROR or stray is not None:
        yield Violation("RPC-2-line-separators-are-payload", "U+2028/U+2029 inside a string ended a frame")


@rule("RPC-2-utf8-split-reads")
def title_intact(sent: str, listed: object) -> Iterator[Violation]:
    if listed != sent:
        yield Violation(
            "RPC-2-utf8-split-reads", f"a title written one byte per write came back as {listed!r}; sent {sent!r}"
        )


@rule("RPC-2-invalid-json-diagnostic")
def diagnostic_without_text(answers: list[dict[str, Any]], stderr: str) -> Iterator[Violation]:
    for answer in answers:
        if SECRET in json.dumps(answer):
            yield Violation("RPC-2-invalid-json-diagnostic", "the answer to an invalid line repeats its text")
    if SECRET in stderr:
        yield Violation("RPC-2-invalid-json-diagnostic", "the stderr diagnostic of an invalid line repeats its text")


@rule("RPC-2-final-unterminated-frame")
def final_frame_answered(response: dict[str, Any] | None) -> Iterator[Violation]:
    """A normal answer or HOST_SHUTTING_DOWN (draining after EOF) passes."""
    if response is None:
        yield Violation("RPC-2-final-unterminated-frame", "a last request without LF before EOF got no answer")
    elif "error" in response and _code(response)[1] != "HOST_SHUTTING_DOWN":
        code, error_code = _code(response)
        yield Violation(
            "RPC-2-final-unterminated-frame",
            f"a last request without LF was refused with {code} {error_code}; expected an answer",
        )


@rule("RPC-7-session-not-found")
def session_not_found(method: str, response: dict[str, Any] | None, *, fallback: bool) -> Iterator[Violation]:
    """``fallback``: a result is a legacy fallback §5 allows (tools.execute)."""
    if response is None:
        return
    if "error" not in response:
        if not fallback:
            yield Violation("RPC-7-session-not-found", f"{method} for a session that does not exist got a result")
        return
    error_code = _code(response)[1]
    if error_code not in ("SESSION_NOT_FOUND", "NOT_FOUND", "PLAN_SESSION_NOT_FOUND"):
        yield Violation(
            "RPC-7-session-not-found",
            f"{method} for a missing session got errorCode {error_code}; expected SESSION_NOT_FOUND or NOT_FOUND",
        )


@rule("RPC-2.1-bash-session-budget")
def bash_per_session(running: dict[str, int]) -> Iterator[Violation]:
    for count in running.values():
        if count > rpc_limits.MAX_BASH_PER_SESSION:
            yield Violation(
                "RPC-2.1-bash-session-budget",
                f"{count} Bash commands of one session ran at once; limit {rpc_limits.MAX_BASH_PER_SESSION}",
            )
            return


@rule("RPC-2.1-bash-global-budget")
def bash_global(running: int, reported: object) -> Iterator[Violation]:
    for seen, how in ((running, "ran"), (reported, "were admitted (app.health shell)")):
        if isinstance(seen, int) and seen > rpc_limits.MAX_BASH_GLOBAL:
            yield Violation(
                "RPC-2.1-bash-global-budget", f"{seen} Bash commands {how} at once; limit {rpc_limits.MAX_BASH_GLOBAL}"
            )
            return


@rule("RPC-2.1-session-budget")
def session_total(running: int) -> Iterator[Violation]:
    if running > rpc_limits.MAX_TOOLS_PER_SESSION:
        yield Violation(
            "RPC-2.1-session-budget",
            f"{running} tool calls of one session ran at once; limit {rpc_limits.MAX_TOOLS_PER_SESSION}",
        )


@rule("RPC-2.1-read-budget")
def reads_global(running: int) -> Iterator[Violation]:
    if running > rpc_limits.MAX_READ_TOOLS:
        yield Violation("RPC-2.1-read-budget", f"{running} Read calls ran at once; limit {rpc_limits.MAX_READ_TOOLS}")


@rule("RPC-2.1-mutation-session-budget")
def mutations_per_session(reported: object) -> Iterator[Violation]:
    """``reported``: toolBudget.mutations while only one session has Write calls."""
    if isinstance(reported, int) and reported > rpc_limits.MAX_MUTATING_PER_SESSION:
        yield Violation(
            "RPC-2.1-mutation-session-budget",
            f"toolBudget.mutations is {reported} with Writes of one session only; "
            f"limit {rpc_limits.MAX_MUTATING_PER_SESSION} per session",
        )


@rule("RPC-2.1-mutation-global-budget")
def mutations_global(reported: object) -> Iterator[Violation]:
    if isinstance(reported, int) and reported > rpc_limits.MAX_MUTATING_GLOBAL:
        yield Violation(
            "RPC-2.1-mutation-global-budget",
            f"toolBudget.mutations is {reported}; limit {rpc_limits.MAX_MUTATING_GLOBAL}",
        )


@rule("RPC-8-mutations-fifo")
def mutations_in_order(content: object) -> Iterator[Violation]:
    """``content``: the file two queued Writes of one session wrote "2" then "3" to."""
    if content != "3":
        yield Violation(
            "RPC-8-mutations-fifo", f"after Writes of '2' then '3' in one session the file holds {content!r}"
        )


@rule("RPC-8-sessions-independent")
def sessions_apart(read: dict[str, Any] | None, wanted: str, *, leaked_grant: bool) -> Iterator[Violation]:
    """``read``: session B's Read of notes.txt while A's Bash call runs;
    ``leaked_grant``: B's Write ran unprompted after A got an allow-session
    grant for Write (A's own Write was prompted)."""
    if read is None:
        yield Violation("RPC-8-sessions-independent", "a Read of one session got no answer while another ran Bash")
        return
    result = read.get("result")
    if isinstance(result, dict) and result.get("ok") is True and wanted not in json.dumps(result.get("content")):
        yield Violation("RPC-8-sessions-independent", "a Read of notes.txt did not come from its session's own project")
    if leaked_grant:
        yield Violation(
            "RPC-8-sessions-independent", "an allow-session grant for Write in one session let another session write"
        )


@rule("RPC-8-fork-snapshot")
def source_unchanged(before: object, after: object) -> Iterator[Violation]:
    if before != after:
        yield Violation("RPC-8-fork-snapshot", "session.fork changed the source session's transcript")


@rule("RPC-8-message-fork-isolated")
def ids_remapped(source: list[dict[str, Any]], child: list[dict[str, Any]]) -> Iterator[Violation]:
    kept = {m.get("id") for m in source} & {m.get("id") for m in child}
    if kept - {None}:
        yield Violation("RPC-8-message-fork-isolated", "a message-scoped fork kept the source's message ids")
    if TOOL_CALL_ID in json.dumps(child):
        yield Violation("RPC-8-message-fork-isolated", "a message-scoped fork kept the source's tool-call id")


@rule("RPC-8-one-approval-per-session")
def one_pending(pending: object) -> Iterator[Violation]:
    """``pending``: plans.pending's result after two SubmitPlan calls of one turn."""
    plans = pending.get("plans") if isinstance(pending, dict) else None
    if isinstance(plans, list) and len(plans) > 1:
        yield Violation("RPC-8-one-approval-per-session", f"one session has {len(plans)} pending approvals")


@rule("RPC-8-late-response-fails-closed")
def late_refused(response: dict[str, Any] | None, mode: object) -> Iterator[Violation]:
    """``response``: plans.resolve approving a proposal left pending across a
    restart; ``mode``: the session's mode read afterwards."""
    result = response.get("result") if response else None
    if isinstance(result, dict) and result.get("ok") is not False:
        yield Violation("RPC-8-late-response-fails-closed", "approving a proposal interrupted by a restart succeeded")
    if mode is not None and mode != "plan":
        yield Violation(
            "RPC-8-late-response-fails-closed", f"after an interrupted Plan approval the session's mode is {mode!r}"
        )


@rule("RPC-8-concurrent-requests")
def answered_meanwhile(response: dict[str, Any] | None) -> Iterator[Violation]:
    if response is None:
        yield Violation("RPC-8-concurrent-requests", "app.health got no answer while one Bash call was running")


@rule("RPC-2.1-queued-holds-nothing")
def read_not_held(answer: dict[str, Any] | None, queued: int) -> Iterator[Violation]:
    if answer is None:
        yield Violation(
            "RPC-2.1-queued-holds-nothing",
            f"a Read in a session with 2 Bash running and {queued} queued was not answered; "
            "queued calls hold no capacity",
        )


@rule("RPC-2.1-no-head-of-line-blocking")
def not_blocked_behind(waiting: list[str]) -> Iterator[Violation]:
    if waiting:
        yield Violation(
            "RPC-2.1-no-head-of-line-blocking",
            f"{len(waiting)} Bash call(s) of another session stayed queued behind a session-blocked call "
            "although shell slots were free",
        )


@rule("RPC-2.1-health-counters")
def counters_match(budget: dict[str, Any] | None, *, running: int, waiting: int) -> Iterator[Violation]:
    """``running``: blockers whose markers exist; ``waiting``: the rest of the
    unanswered ones (every unanswered call is a Bash blocker). ``active``
    counts admitted reservations only, so never more than run (§2.1: queued
    calls are counted apart)."""
    if budget is None:
        return
    if budget.get("shell") != running or budget.get("queued") != waiting:
        yield Violation(
            "RPC-2.1-health-counters",
            f"toolBudget says shell {budget.get('shell')!r}, queued {budget.get('queued')!r}; "
            f"{running} Bash commands run and {waiting} wait",
        )
    elif isinstance(budget.get("active"), int) and budget["active"] > running:
        yield Violation(
            "RPC-2.1-health-counters",
            f"toolBudget says active {budget['active']!r} with {running} Bash commands admitted and {waiting} waiting; "
            "active counts admitted reservations only",
        )


@rule("RPC-2.1-oldest-runnable-first")
def oldest_first(started: Call, runnable: list[Call]) -> Iterator[Violation]:
    """``runnable``: calls that were queued and runnable when the slot freed."""
    older = [c for c in runnable if c.order < started.order]
    if older:
        yield Violation(
            "RPC-2.1-oldest-runnable-first",
            f"queued Bash call {started.name} was admitted before {older[0].name}, older and runnable",
        )


@rule("RPC-2.1-waiter-release")
def waiter_released(answer: dict[str, Any] | None, queued: object, expected: int) -> Iterator[Violation]:
    if answer is None:
        yield Violation("RPC-2.1-waiter-release", "a queued call aborted with tools.abort was never settled")
    elif isinstance(queued, int) and queued > expected:
        yield Violation(
            "RPC-2.1-waiter-release", f"after aborting a queued call toolBudget.queued is {queued}; {expected} wait"
        )


@rule("RPC-2.1-permission-no-slot")
def prompts_hold_nothing(budget: dict[str, Any] | None, started: int, wanted: int) -> Iterator[Violation]:
    if budget is not None and (budget.get("shell") or budget.get("active")):
        yield Violation(
            "RPC-2.1-permission-no-slot",
            f"with only permission prompts open toolBudget shows active {budget.get('active')!r}",
        )
    elif started < wanted:
        yield Violation(
            "RPC-2.1-permission-no-slot",
            f"only {started} of {wanted} Bash commands started while other calls waited on permission prompts",
        )


@rule("RPC-2.1-overloaded-retryable")
def overload_named(refusal: dict[str, Any]) -> Iterator[Violation]:
    if not rpc_errors.is_overload(refusal):
        yield Violation(
            "RPC-2.1-overloaded-retryable",
            "a call refused at capacity lacks HOST_OVERLOADED",
        )


@rule("RPC-7-overloaded-code")
def overload_error_code(refusal: dict[str, Any]) -> Iterator[Violation]:
    """As a JSON-RPC error, the refusal is -32029; as a tool result (§2.1) it passes."""
    code, _ = _code(refusal)
    if "error" in refusal and code != rpc_errors.HOST_OVERLOADED_CODE:
        yield Violation(
            "RPC-7-overloaded-code",
            f"a call refused at capacity got {code}; expected {rpc_errors.HOST_OVERLOADED_CODE}",
        )


@rule("RPC-2.1-dispatcher-cap")
def dispatcher_bounded(outstanding: int, *, limit: int = OVERLOAD_LIMIT) -> Iterator[Violation]:
    """``outstanding``: calls taken on before the first refusal; ``limit``:
    the most that any reading lets the calls of the scenario be taken on."""
    if outstanding <= limit:
        return
    yield Violation(
        "RPC-2.1-dispatcher-cap", f"{outstanding} calls were taken on at once and none refused; limit {limit}"
    )


@rule("RPC-2.1-queue-bound")
def queue_bounded(outstanding: int) -> Iterator[Violation]:
    if outstanding <= OVERLOAD_LIMIT:
        return
    yield Violation(
        "RPC-2.1-queue-bound",
        f"{outstanding} tool calls wait or run at once and none was refused; no reading allows more than "
        f"{rpc_limits.MAX_ACTIVE_REQUESTS} + {rpc_limits.MAX_TOOL_EXECUTIONS} + {rpc_limits.MAX_QUEUED_TOOLS}",
    )


@rule("RPC-8-abort-idempotent")
def abort_settled(first: dict[str, Any] | None, second: dict[str, Any] | None, survivor: bool) -> Iterator[Violation]:
    for nth, answer in (("first", first), ("second", second)):
        if answer is None or "error" in answer:
            yield Violation("RPC-8-abort-idempotent", f"the {nth} tools.abort of one call got no result")
            return
    if survivor:
        yield Violation("RPC-8-abort-idempotent", "a child process of the aborted Bash command was still running")


@rule("RPC-8-tools-output-order")
def output_in_order(notes: list[dict[str, Any]], sid: str, call: str) -> Iterator[Violation]:
    streams: dict[str, str] = {}
    for note in notes:
        params = note.get("params")
        if not isinstance(params, dict) or params.get("toolCallId") != call:
            continue
        if params.get("sessionId") != sid:
            yield Violation("RPC-8-tools-output-order", "a tools.output chunk names another session")
            return
        stream, chunk = params.get("stream"), params.get("chunk")
        if isinstance(stream, str) and isinstance(chunk, str):
            streams[stream] = streams.get(stream, "") + chunk
    wanted = {"stdout": "o1\no2\n", "stderr": "e1\ne2\n"}
    if streams and streams != wanted:
        yield Violation(
            "RPC-8-tools-output-order", f"tools.output streams carried {streams!r}; the command wrote {wanted!r}"
        )
