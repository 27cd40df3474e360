"""The reference host-core's tools, permissions and admission, over real pipes.

tools.execute (§5), permissions (§6), admission and backpressure (§2.1),
tools.abort (§8.5), todos, commandShells.list (§5.2). Tests named
``test_acceptance_NN_*`` cover §10 acceptance item NN.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hostcore_peer import HostcorePeer, Message, Spawn, error_code

from conformance.reference.hostcore.tools import parse_call

PIN = {"expectedCommandShellId": "bash", "expectedCommandShellDialect": "posix"}
POLL_S = 0.02
WAIT_S = 10.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "outside.txt").write_text("secret outside\n")
    return root


def _session(hostcore: HostcorePeer, root: Path | None, **params: Any) -> str:
    if root is not None:
        params["projectPath"] = str(root)
    sid: str = hostcore.result("session.create", params)["session"]["id"]
    return sid


_calls = iter(range(1, 1_000_000))


def _execute(hostcore: HostcorePeer, sid: str, tool: str, args: Message, **extra: Any) -> int:
    params = {"sessionId": sid, "toolCallId": f"call-{next(_calls)}", "toolName": tool, "args": args, **extra}
    return hostcore.request("tools.execute", params)


def _run(hostcore: HostcorePeer, sid: str, tool: str, args: Message, **extra: Any) -> Message:
    response = hostcore.response_to(_execute(hostcore, sid, tool, args, **extra), timeout=WAIT_S)
    assert "result" in response, response
    result: Message = response["result"]
    return result


def _prompt(hostcore: HostcorePeer) -> Message:
    """The next server message, which must be a permissions.request."""
    message = hostcore.read()
    assert message.get("method") == "permissions.request", message
    params: Message = message["params"]
    return params


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(POLL_S)


# -- §5 paths and permissions -------------------------------------------------------


def test_acceptance_03_denied_tool_path_returns_tool_denied(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    request_id = _execute(hostcore, sid, "Read", {"path": "../outside.txt"})
    prompt = _prompt(hostcore)
    assert prompt["toolName"] == "Read" and prompt["sessionId"] == sid
    assert set(prompt) == {"requestId", "sessionId", "toolCallId", "toolName", "risk", "argsPreview", "reason"}
    assert hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "deny"}) == {
        "ok": True
    }
    result = hostcore.response_to(request_id)["result"]
    assert result["ok"] is False and result["errorCode"] == "TOOL_DENIED" and result["denied"] is True
    assert "secret" not in str(result)  # not executed
    # a late answer to a settled request fails closed
    assert hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "allow-once"}) == {
        "ok": False
    }


@pytest.mark.parametrize("spelling", ["dotdot", "absolute", "symlink"])
def test_outside_paths_are_classified_alike(hostcore: HostcorePeer, project: Path, spelling: str) -> None:
    outside = project.parent / "outside.txt"
    (project / "link.txt").symlink_to(outside)
    (project / "inner-link.txt").symlink_to(project / "notes.txt")
    path = {"dotdot": "sub/../../outside.txt", "absolute": str(outside), "symlink": "link.txt"}[spelling]
    ask = _session(hostcore, project, permissionMode="ask")
    verdict = hostcore.result("permissions.evaluate", {"sessionId": ask, "toolName": "Read", "args": {"path": path}})
    assert verdict["decision"] == "ask" and verdict["outside"] is True
    inner = {"sessionId": ask, "toolName": "Read", "args": {"path": "inner-link.txt"}}
    assert hostcore.result("permissions.evaluate", inner)["decision"] == "allow"
    # auto executes it; the result names the canonical absolute path (§5 step 3)
    auto = _session(hostcore, project, permissionMode="auto")
    result = _run(hostcore, auto, "Read", {"path": path})
    assert result["ok"] is True and result["content"]["path"] == str(outside.resolve())
    assert hostcore.notifications == []  # no prompt under auto


def test_acceptance_04_unresolved_permission_remains_pending(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    first = _execute(hostcore, sid, "Write", {"path": "new.txt", "content": "x"})
    prompt = _prompt(hostcore)
    for _ in range(3):  # other traffic does not settle it, and no deadline does
        assert hostcore.result("app.health")["ok"] is True
        pending = hostcore.result("permissions.pending", {"sessionId": sid})["requests"]
        assert [p["requestId"] for p in pending] == [prompt["requestId"]] and "createdAt" in pending[0]
    assert not (project / "new.txt").exists()
    assert hostcore.result("permissions.pending", {"sessionId": "ses_other"})["requests"] == []
    assert hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "allow-once"})["ok"]
    assert hostcore.response_to(first)["result"]["ok"] is True
    assert (project / "new.txt").read_text() == "x"
    # cancellation is the other way out
    second = _execute(hostcore, sid, "Write", {"path": "other.txt", "content": "y"})
    prompt = _prompt(hostcore)
    call_id = prompt["toolCallId"]
    assert hostcore.result("tools.abort", {"sessionId": sid, "toolCallId": call_id, "toolName": "Write"})["ok"]
    result = hostcore.response_to(second)["result"]
    assert result["errorCode"] == "TOOL_DENIED" and not (project / "other.txt").exists()
    assert hostcore.result("permissions.pending")["requests"] == []


def test_allow_session_grants_later_calls(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    first = _execute(hostcore, sid, "Write", {"path": "a.txt", "content": "1"})
    prompt = _prompt(hostcore)
    hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "allow-session"})
    assert hostcore.response_to(first)["result"]["ok"] is True
    assert _run(hostcore, sid, "Write", {"path": "b.txt", "content": "2"})["ok"] is True  # no second prompt
    assert hostcore.notifications == []


def test_permissions_resolve_validates_its_decision(hostcore: HostcorePeer) -> None:
    error = hostcore.error("permissions.resolve", {"requestId": "perm_x", "decision": "maybe"})
    assert error_code(error) == (1002, "INVALID_PARAMS")
    assert hostcore.result("permissions.resolve", {"requestId": "perm_x", "decision": "deny"}) == {"ok": False}


def test_acceptance_05_workspace_switch_does_not_change_tool_root(
    hostcore: HostcorePeer, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "b"
    other.mkdir()
    (other / "notes.txt").write_text("from B\n")
    hostcore.result("workspace.set", {"path": str(project)})
    sid = _session(hostcore, project, permissionMode="ask")
    hostcore.result("workspace.set", {"path": str(other)})  # the user switches tabs
    result = _run(hostcore, sid, "Read", {"path": "notes.txt"})
    assert result["content"]["text"] == "alpha\nbeta\n"
    assert result["content"]["path"] == str((project / "notes.txt").resolve())


def test_pathless_session_gets_workspace_required(hostcore: HostcorePeer, project: Path) -> None:
    hostcore.result("workspace.set", {"path": str(project)})  # never inherited (§5 step 5)
    sid = _session(hostcore, None, permissionMode="auto")
    assert _run(hostcore, sid, "Read", {"path": "notes.txt"})["errorCode"] == "WORKSPACE_REQUIRED"


def test_missing_session_never_falls_back(hostcore: HostcorePeer, project: Path) -> None:
    hostcore.result("workspace.set", {"path": str(project)})
    params = {"sessionId": "ses_gone", "toolCallId": "c", "toolName": "Read", "args": {"path": "notes.txt"}}
    assert error_code(hostcore.error("tools.execute", params)) == (1007, "SESSION_NOT_FOUND")


def test_file_tools_round_trip(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="auto")
    written = _run(hostcore, sid, "Write", {"path": "src/app.py", "content": "x = 1\ny = 2\n"})
    assert written["ok"] is True and written["content"]["details"]["review"]["previousSha256"] is None
    edited = _run(hostcore, sid, "Edit", {"path": "src/app.py", "old_string": "y = 2", "new_string": "y = 3"})
    assert edited["ok"] is True and edited["content"]["replacements"] == 1
    assert _run(hostcore, sid, "Read", {"path": "src/app.py"})["content"]["text"] == "x = 1\ny = 3\n"
    missing = _run(hostcore, sid, "Edit", {"path": "src/app.py", "old_string": "zzz", "new_string": ""})
    assert missing["ok"] is False and missing["errorCode"] == "TOOL_FAILED"
    globbed = _run(hostcore, sid, "Glob", {"pattern": "**/*.py"})["content"]["matches"]
    assert globbed == [str((project / "src" / "app.py").resolve())]
    grepped = _run(hostcore, sid, "Grep", {"pattern": "y = [0-9]"})["content"]["matches"]
    assert [(Path(m["path"]).name, m["line"]) for m in grepped] == [("app.py", 2)]
    assert _run(hostcore, sid, "Frobnicate", {})["errorCode"] == "TOOL_NOT_FOUND"


# -- §5 mode policy ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["plan", "goal"])
def test_acceptance_10_forged_requested_mode_cannot_authorize(hostcore: HostcorePeer, project: Path, mode: str) -> None:
    sid = _session(hostcore, project, mode=mode, permissionMode="auto")
    forged = {"requestedMode": "agent"}
    for tool, args in (("Write", {"path": "w.txt", "content": "x"}), ("Edit", {"path": "notes.txt"})):
        result = _run(hostcore, sid, tool, args, **forged)
        assert result["ok"] is False and result["errorCode"] == "WRITE_DISABLED_IN_PLAN", result
    for tool in ("plugin.deploy", "Frobnicate", "TodoWrite"):
        assert _run(hostcore, sid, tool, {}, **forged)["errorCode"] == "TOOL_DISABLED_IN_PLAN"
    assert not (project / "w.txt").exists()
    assert _run(hostcore, sid, "Read", {"path": "notes.txt"}, **forged)["ok"] is True
    # Bash under auto runs (and may mutate) without a prompt
    bash = _run(hostcore, sid, "Bash", {"command": "echo hi > made.txt"}, **PIN)
    assert bash["ok"] is True and (project / "made.txt").exists()


@pytest.mark.parametrize("permission_mode", ["ask", "accept-edits"])
def test_acceptance_10_plan_bash_prompts_under_ask_and_accept_edits(
    hostcore: HostcorePeer, project: Path, permission_mode: str
) -> None:
    sid = _session(hostcore, project, mode="plan", permissionMode=permission_mode)
    request_id = _execute(hostcore, sid, "Bash", {"command": "echo ok"}, **PIN)
    prompt = _prompt(hostcore)
    assert prompt["toolName"] == "Bash"
    hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "allow-once"})
    assert hostcore.response_to(request_id)["result"]["content"]["stdout"] == "ok\n"


# -- §5 Bash -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pin",
    [
        {"expectedCommandShellId": "windows-pwsh", "expectedCommandShellDialect": "posix"},
        {"expectedCommandShellId": "bash", "expectedCommandShellDialect": "cmd"},
        {},
    ],
)
def test_acceptance_13_bash_validates_the_pinned_shell(hostcore: HostcorePeer, project: Path, pin: Message) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    result = _run(hostcore, sid, "Bash", {"command": "touch ran"}, **pin)
    assert result["ok"] is False and result["errorCode"] == "COMMAND_SHELL_CHANGED"
    assert hostcore.notifications == []  # refused before any permission prompt
    assert not (project / "ran").exists()


def test_acceptance_13_bash_streams_stdout_and_stderr(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="auto")
    command = "for i in 1 2 3; do echo out$i; echo err$i >&2; done; printf 'é☃'; exit 4"
    result = _run(hostcore, sid, "Bash", {"command": command}, **PIN)
    assert result["ok"] is False and result["isError"] is True and result["errorCode"] == "TOOL_FAILED"
    content = result["content"]
    assert content["exitCode"] == 4 and content["stdout"] == "out1\nout2\nout3\né☃"
    assert content["stderr"] == "err1\nerr2\nerr3\n"
    chunks = [n["params"] for n in hostcore.notifications if n["method"] == "tools.output"]
    assert all(c["sessionId"] == sid and c["commandShellId"] == "bash" for c in chunks)
    assert {c["toolCallId"] for c in chunks} == {result["toolCallId"]}
    for stream in ("stdout", "stderr"):  # separated, each in order
        assert "".join(c["chunk"] for c in chunks if c["stream"] == stream) == content[stream]


@pytest.mark.parametrize(
    ("timeout_ms", "accepted"), [(999, False), (1000, True), (21_600_000, True), (21_600_001, False)]
)
def test_acceptance_13_bash_timeout_override_bounds(
    hostcore: HostcorePeer, project: Path, timeout_ms: int, accepted: bool
) -> None:
    sid = _session(hostcore, project, permissionMode="auto")
    params = {"sessionId": sid, "toolCallId": "t", "toolName": "Bash", "args": {"command": "true"}, **PIN}
    response = hostcore.call("tools.execute", params | {"timeoutMs": timeout_ms})
    if accepted:
        assert response["result"]["ok"] is True
    else:
        assert error_code(response["error"]) == (1002, "INVALID_PARAMS")


def test_acceptance_13_bash_default_timeout_is_60_s() -> None:
    call = parse_call({"sessionId": "s", "toolCallId": "c", "toolName": "Bash", "args": {"command": "true"}})
    assert call.timeout_ms == 60_000


def test_acceptance_13_bash_timeout_kills_the_command(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="auto")
    command = "echo started; sleep 30; echo never"
    result = _run(hostcore, sid, "Bash", {"command": command}, timeoutMs=1000, **PIN)
    assert result["ok"] is False and result["errorCode"] == "TOOL_TIMEOUT"
    assert result["content"]["stdout"] == "started\n" and result["durationMs"] < 30_000


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has already exited


def test_acceptance_13_abort_shuts_down_the_whole_process_tree(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="auto")
    command = "sleep 300 & echo $! > grandchild.pid; sleep 300"
    params = {"sessionId": sid, "toolCallId": "tree", "toolName": "Bash", "args": {"command": command}, **PIN}
    request_id = hostcore.request("tools.execute", params)
    pid_file = project / "grandchild.pid"
    _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), "the grandchild to start")
    grandchild = int(pid_file.read_text())
    assert _alive(grandchild)
    abort = {"sessionId": sid, "toolCallId": "tree", "toolName": "Bash"}
    assert hostcore.result("tools.abort", abort) == {"ok": True, "aborted": True}
    result = hostcore.response_to(request_id)["result"]
    assert result["ok"] is False and result["errorCode"] == "TOOL_ABORTED"
    _wait_for(lambda: not _alive(grandchild), "the grandchild to die")
    assert hostcore.result("tools.abort", abort) == {"ok": True, "aborted": False}  # idempotent


def test_command_shells_list(hostcore: HostcorePeer) -> None:
    catalog = hostcore.result("commandShells.list")
    assert catalog["effective"]["id"] == "bash" and catalog["effective"]["dialect"] == "posix"
    assert catalog["fallback"] is False and catalog["configuredId"] is None
    assert {"id", "label", "dialect", "available", "isDefault"} == set(catalog["choices"][0])


# -- TodoWrite / todos.get -------------------------------------------------------------


def test_todo_write_replaces_the_checklist(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project)
    assert hostcore.result("todos.get", {"sessionId": sid}) == {
        "sessionId": sid,
        "todos": [],
        "revision": 0,
        "updatedAt": None,
    }
    todos = [
        {"content": "  first  ", "status": "in_progress"},
        {"content": "x" * 501, "status": "in_progress", "priority": "high"},
    ]
    no_turn = _run(hostcore, sid, "TodoWrite", {"todos": todos})
    assert no_turn["ok"] is False  # only the session's own running turn may write
    turn = hostcore.result("session.beginTurn", {"sessionId": sid})["turnId"]
    result = _run(hostcore, sid, "TodoWrite", {"todos": todos}, turnId=turn)
    assert result["ok"] is True and len(result["content"]["warnings"]) == 2
    snapshot = hostcore.result("todos.get", {"sessionId": sid})
    assert snapshot["revision"] == 1
    assert snapshot["todos"] == [
        {"content": "first", "status": "in_progress", "priority": "medium"},
        {"content": "x" * 500, "status": "pending", "priority": "high"},
    ]
    changed = [n["params"] for n in hostcore.notifications if n["method"] == "todos.changed"]
    assert changed == [snapshot]  # the event carries the same snapshot
    assert _run(hostcore, sid, "TodoWrite", {"todos": []}, turnId=turn)["ok"] is True
    assert hostcore.result("todos.get", {"sessionId": sid})["revision"] == 2  # empty still advances
    too_many = [{"content": str(i)} for i in range(51)]
    assert _run(hostcore, sid, "TodoWrite", {"todos": too_many}, turnId=turn)["ok"] is False
    assert _run(hostcore, sid, "TodoWrite", {"todos": [], "sessionId": "x"}, turnId=turn)["ok"] is False
    assert hostcore.result("todos.get", {"sessionId": sid})["revision"] == 2
    assert error_code(hostcore.error("todos.get", {"sessionId": "ses_missing"})) == (1007, "NOT_FOUND")
    assert error_code(hostcore.error("todos.get", {"sessionId": " "})) == (1002, "INVALID_ARGUMENT")


# -- §2.1 admission over pipes -----------------------------------------------------------


def _blocker(hostcore: HostcorePeer, sid: str, gate: Path, call_id: str) -> int:
    command = f"while [ ! -e {gate} ]; do sleep 0.02; done"
    params = {"sessionId": sid, "toolCallId": call_id, "toolName": "Bash", "args": {"command": command}, **PIN}
    return hostcore.request("tools.execute", params)


def test_admission_queue_bound_and_health_counters(spawn_hostcore: Spawn, project: Path) -> None:
    hostcore = spawn_hostcore("--tool-queue-limit", "1")
    hostcore.handshake()
    sid = _session(hostcore, project, permissionMode="auto")
    gate = project.parent / "go"
    running = [_blocker(hostcore, sid, gate, f"b{i}") for i in range(3)]  # 2 run (per session), 1 queues
    _wait_for(lambda: hostcore.result("app.health")["toolBudget"]["queued"] == 1, "one queued call")
    budget = hostcore.result("app.health")["toolBudget"]
    assert (budget["shell"], budget["total"], budget["queued"]) == (2, 2, 1)
    overloaded = _run(hostcore, sid, "Bash", {"command": "true"}, **PIN)  # the queue is full
    assert overloaded["ok"] is False and overloaded["errorCode"] == "HOST_OVERLOADED"
    assert overloaded["content"]["retryable"] is True
    # a read in the same session is not held up by the blocked shell class
    assert _run(hostcore, sid, "Read", {"path": "notes.txt"})["ok"] is True
    gate.touch()
    for request_id in running:
        assert hostcore.response_to(request_id, timeout=WAIT_S)["result"]["ok"] is True
    assert hostcore.result("app.health")["toolBudget"] == dict.fromkeys(budget, 0)


def test_dispatcher_cap_answers_host_overloaded(hostcore: HostcorePeer, project: Path) -> None:
    gate = project.parent / "go"
    sessions = [_session(hostcore, project, permissionMode="auto") for _ in range(16)]
    calls = [_blocker(hostcore, sid, gate, f"d{i}") for sid in sessions for i in range(2)]  # 32 active
    _wait_for(lambda: hostcore.result("app.health")["toolBudget"]["queued"] == 28, "28 queued calls")
    response = hostcore.response_to(_execute(hostcore, sessions[0], "Read", {"path": "notes.txt"}))
    assert error_code(response["error"]) == (-32029, "HOST_OVERLOADED")  # §7: the dispatcher is full
    gate.touch()
    for request_id in calls:
        assert hostcore.response_to(request_id, timeout=WAIT_S)["result"]["ok"] is True


def test_shutdown_cancels_pending_prompts(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    request_id = _execute(hostcore, sid, "Write", {"path": "late.txt", "content": "x"})
    _prompt(hostcore)
    hostcore.close_stdin()
    answers = [m for m in hostcore.read_until_eof() if m.get("id") == request_id]
    assert answers and answers[0]["result"]["errorCode"] == "TOOL_DENIED"
    assert hostcore.wait_exit() == 0 and not (project / "late.txt").exists()
    assert os.listdir(project) == ["notes.txt"]


def test_tools_list_follows_the_durable_mode(hostcore: HostcorePeer, project: Path) -> None:
    names = [t["name"] for t in hostcore.result("tools.list")["tools"]]
    assert {"Read", "Write", "Bash", "TodoWrite", "SubmitPlan"} <= set(names)
    plan = _session(hostcore, project, mode="plan")
    shown = {t["name"] for t in hostcore.result("tools.list", {"sessionId": plan})["tools"]}
    assert "Write" not in shown and "Edit" not in shown and {"Read", "Bash", "SubmitPlan"} <= shown


def test_session_grants_can_be_listed_and_cleared(hostcore: HostcorePeer, project: Path) -> None:
    sid = _session(hostcore, project, permissionMode="ask")
    request_id = _execute(hostcore, sid, "Write", {"path": "g.txt", "content": "1"})
    prompt = _prompt(hostcore)
    hostcore.result("permissions.resolve", {"requestId": prompt["requestId"], "decision": "allow-session"})
    hostcore.response_to(request_id)
    listed = hostcore.result("permissions.listSessionGrants", {"sessionId": sid})
    assert listed["grants"] == [{"toolName": "Write"}]
    assert hostcore.result("permissions.clearSessionGrants", {"sessionId": sid}) == {"ok": True, "cleared": 1}
    assert hostcore.result("permissions.listSessionGrants", {"sessionId": sid})["grants"] == []
    _execute(hostcore, sid, "Write", {"path": "h.txt", "content": "2"})
    assert _prompt(hostcore)["toolName"] == "Write"  # asks again
