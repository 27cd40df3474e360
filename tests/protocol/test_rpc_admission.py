"""The judges of protocol/rpc_admission.py on hand-made observations (no
processes): every reading the document allows passes, bounds at N and N+1.
The scenarios that feed them (scenarios/hostcore_*.py) are proven by tests/fixtures/test_faulty_hostcores.py
(one faulty host-core per check) and the reference certification."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocol import rpc_admission as judges
from conformance.protocol.violations import Violation


def broken(findings: Any) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def error(code: int, error_code: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": "x"}
    if error_code is not None:
        body["data"] = {"errorCode": error_code}
    return {"jsonrpc": "2.0", "id": 1, "error": body}


def result(**members: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": members}


def test_final_frame_accepts_an_answer_or_shutting_down() -> None:
    assert not broken(judges.final_frame_answered(result(ok=True)))
    assert not broken(judges.final_frame_answered(error(1001, "HOST_SHUTTING_DOWN")))
    assert broken(judges.final_frame_answered(error(-32700)))
    assert broken(judges.final_frame_answered(None))


def test_session_not_found_readings() -> None:
    for code, name in ((1007, "SESSION_NOT_FOUND"), (1007, "NOT_FOUND"), (1003, "NOT_FOUND")):
        assert not broken(judges.session_not_found("session.get", error(code, name), fallback=False))
    assert not broken(judges.session_not_found("plans.get", error(1015, "PLAN_SESSION_NOT_FOUND"), fallback=False))
    # §5 step 6: a tools.execute legacy fallback is a result, and passes.
    assert not broken(judges.session_not_found("tools.execute", result(ok=True), fallback=True))
    assert broken(judges.session_not_found("session.get", result(session=None), fallback=False))
    assert broken(judges.session_not_found("session.get", error(1000, "INTERNAL"), fallback=False))


def test_overload_refusal_in_either_form() -> None:
    as_error = error(-32029, "HOST_OVERLOADED")
    as_result = result(ok=False, errorCode="HOST_OVERLOADED", content={"retryable": True})
    for refusal in (as_error, as_result):
        assert not broken(judges.overload_named(refusal))
        assert not broken(judges.overload_error_code(refusal))
    assert broken(judges.overload_named(result(ok=False, errorCode="CONFLICT")))
    assert broken(judges.overload_error_code(error(1000, "HOST_OVERLOADED")))


def test_dispatcher_and_queue_bounds_at_n_and_n_plus_one() -> None:
    limit = judges.OVERLOAD_LIMIT
    assert limit == 32 + 16 + 64
    for judge in (judges.dispatcher_bounded, judges.queue_bounded):
        assert not broken(judge(32))  # the reference's reading refuses the 33rd
        assert not broken(judge(limit))  # the widest reading still allows this many
        assert broken(judge(limit + 1))


def test_prompt_waiting_calls_are_bounded_by_the_dispatcher_alone() -> None:
    cap = 32
    assert not broken(judges.dispatcher_bounded(cap, limit=cap))  # the 33rd refused
    assert broken(judges.dispatcher_bounded(cap + 1, limit=cap))  # 33 taken on, none refused


@pytest.mark.parametrize(("count", "bad"), [(1, False), (2, False), (3, True)])
def test_bash_session_budget(count: int, bad: bool) -> None:
    assert bool(broken(judges.bash_per_session({"s": count, "t": 1}))) is bad


@pytest.mark.parametrize(("running", "reported", "bad"), [(3, 4, False), (4, 4, False), (5, 4, True), (4, 5, True)])
def test_bash_global_budget(running: int, reported: int, bad: bool) -> None:
    assert bool(broken(judges.bash_global(running, reported))) is bad


def test_oldest_first_only_blames_an_older_runnable_call() -> None:
    a3, a4, c1 = (judges.Call(n, "s", n, order) for n, order in (("a3", 2), ("a4", 3), ("c1", 8)))
    assert not broken(judges.oldest_first(a3, [a3, a4, c1]))
    assert broken(judges.oldest_first(c1, [a3, c1]))
    assert not broken(judges.oldest_first(a4, [c1]))  # the runnable one is younger


def test_health_counters_match_markers() -> None:
    assert not broken(judges.counters_match({"shell": 4, "queued": 3}, running=4, waiting=3))
    assert broken(judges.counters_match({"shell": 4, "queued": 0}, running=4, waiting=3))
    assert not broken(judges.counters_match(None, running=4, waiting=3))  # no counters: another rule says so
    # active counts admitted reservations: the four running, never the three waiting
    assert not broken(judges.counters_match({"shell": 4, "queued": 3, "active": 4}, running=4, waiting=3))
    assert broken(judges.counters_match({"shell": 4, "queued": 3, "active": 7}, running=4, waiting=3))
    assert not broken(judges.counters_match({"shell": 4, "queued": 3, "active": "?"}, running=4, waiting=3))


def test_invalid_line_diagnostic_never_repeats_the_line() -> None:
    quiet = error(-32700)
    assert not broken(judges.diagnostic_without_text([], "discarding an invalid line of 24 bytes"))
    assert not broken(judges.diagnostic_without_text([quiet], ""))
    assert broken(judges.diagnostic_without_text([], f"bad line {judges.SECRET}"))
    leaky = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": judges.SECRET}}
    assert broken(judges.diagnostic_without_text([leaky], ""))


def test_tools_output_order() -> None:
    def chunk(stream: str, text: str, sid: str = "s") -> dict[str, Any]:
        return {
            "method": "tools.output",
            "params": {"sessionId": sid, "toolCallId": "c", "stream": stream, "chunk": text},
        }

    good = [chunk("stdout", "o1\n"), chunk("stderr", "e1\n"), chunk("stdout", "o2\n"), chunk("stderr", "e2\n")]
    assert not broken(judges.output_in_order(good, "s", "c"))
    assert not broken(judges.output_in_order([], "s", "c"))  # no streaming: judged elsewhere
    assert broken(judges.output_in_order([*good[:1], chunk("stdout", "e1\n"), *good[2:]], "s", "c"))
    assert broken(judges.output_in_order([chunk("stdout", "o1\n", sid="other")], "s", "c"))


def test_a2a_and_history() -> None:
    assert not broken(judges.a2a_refused("a2a.task.send", error(-32601)))
    assert broken(judges.a2a_refused("a2a.task.send", result(tasks=[])))
    assert broken(judges.no_a2a_notifications([{"method": "a2a.push"}]))
    assert not broken(judges.method_present("session.fork", error(1002, "INVALID_PARAMS")))
    assert broken(judges.method_present("session.fork", error(-32601)))


@pytest.mark.parametrize(("running", "bad"), [(3, False), (4, False), (5, True)])
def test_session_budget(running: int, bad: bool) -> None:
    assert bool(broken(judges.session_total(running))) is bad


@pytest.mark.parametrize(("running", "bad"), [(7, False), (8, False), (9, True)])
def test_read_budget(running: int, bad: bool) -> None:
    assert bool(broken(judges.reads_global(running))) is bad


def test_requests_answered_while_a_tool_runs() -> None:
    assert not broken(judges.answered_meanwhile(result(ok=True)))
    assert not broken(judges.answered_meanwhile(error(-32029, "HOST_OVERLOADED")))  # an answer all the same
    assert broken(judges.answered_meanwhile(None))


@pytest.mark.parametrize(("reported", "bad"), [(0, False), (1, False), (2, True), (None, False)])
def test_mutation_session_budget(reported: int | None, bad: bool) -> None:
    assert bool(broken(judges.mutations_per_session(reported))) is bad


@pytest.mark.parametrize(("reported", "bad"), [(1, False), (2, False), (3, True)])
def test_mutation_global_budget(reported: int, bad: bool) -> None:
    assert bool(broken(judges.mutations_global(reported))) is bad


def test_mutations_in_arrival_order() -> None:
    assert not broken(judges.mutations_in_order("3"))
    assert broken(judges.mutations_in_order("2"))
    assert broken(judges.mutations_in_order(None))


def test_sessions_independent() -> None:
    own = result(ok=True, content={"text": "gamma\n"})
    assert not broken(judges.sessions_apart(own, "gamma", leaked_grant=False))
    assert not broken(judges.sessions_apart(result(ok=False, content={}), "gamma", leaked_grant=False))
    assert broken(judges.sessions_apart(result(ok=True, content={"text": "alpha"}), "gamma", leaked_grant=False))
    assert broken(judges.sessions_apart(own, "gamma", leaked_grant=True))
    assert broken(judges.sessions_apart(None, "gamma", leaked_grant=False))


def test_fork_snapshot_and_remapped_ids() -> None:
    source = [{"id": "m1"}, {"id": "m2", "content": [{"type": "toolCall", "id": judges.TOOL_CALL_ID}]}]
    assert not broken(judges.source_unchanged(source, list(source)))
    assert broken(judges.source_unchanged(source, [*source, {"id": "m3"}]))
    assert not broken(judges.ids_remapped(source, [{"id": "c1"}, {"id": "c2", "content": [{"id": "tc-new"}]}]))
    assert broken(judges.ids_remapped(source, [{"id": "m1"}]))
    assert broken(judges.ids_remapped(source, [{"id": "c1", "content": [{"id": judges.TOOL_CALL_ID}]}]))


def test_one_pending_approval() -> None:
    assert not broken(judges.one_pending({"plans": [{"proposalId": "p1"}]}))
    assert not broken(judges.one_pending({"plans": []}))
    assert broken(judges.one_pending({"plans": [{"proposalId": "p1"}, {"proposalId": "p2"}]}))


def test_late_approval_fails_closed() -> None:
    assert not broken(judges.late_refused(error(1015, "PLAN_APPROVAL_INTERRUPTED"), "plan"))
    assert not broken(judges.late_refused(result(ok=False, errorCode="PLAN_APPROVAL_INTERRUPTED"), "plan"))
    assert broken(judges.late_refused(result(ok=True), "plan"))
    assert broken(judges.late_refused(error(1015, "PLAN_APPROVAL_INTERRUPTED"), "agent"))
