"""The reference host-core over real pipes, by hand-written exchanges.

Transport (§2), handshake (§3), errors (§7) and the §4 state methods. Tests
named ``test_acceptance_NN_*`` cover §10 acceptance item NN.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostcore_peer import HostcorePeer, Message, Spawn, error_code

from conformance.reference.hostcore.peek import peek_id

MIB = 1024 * 1024
LINE_LIMIT = 64 * MIB


def _request_line(request_id: object, method: str, params: str = "{}") -> bytes:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"{method}","params":{params}}}'.encode()


# -- §3 handshake -----------------------------------------------------------------


def test_acceptance_01_spawn_and_handshake(spawn_hostcore: Spawn) -> None:
    result = spawn_hostcore().handshake()
    assert result["protocolVersion"] == 11
    assert result["host"] == "rust-host-core"
    assert isinstance(result["hostVersion"], str)
    assert all(isinstance(item, str) for item in result["features"])
    assert "a2a" not in result["capabilities"]  # §3 rule 9


@pytest.mark.parametrize("version", [10, 12, 4])
def test_handshake_version_mismatch_is_refused(spawn_hostcore: Spawn, version: int) -> None:
    peer = spawn_hostcore()
    params = {"protocolVersion": version, "client": "electron-main", "clientVersion": "1", "locale": "en"}
    assert error_code(peer.error("app.handshake", params)) == (1011, "PROTOCOL_MISMATCH")
    # a failed handshake authorizes nothing (§3 rule 3)
    assert error_code(peer.error("app.health")) == (1001, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "method", ["app.health", "app.getVersion", "session.list", "notification.list", "no.such.method"]
)
def test_calls_before_handshake_are_refused(spawn_hostcore: Spawn, method: str) -> None:
    peer = spawn_hostcore()
    assert error_code(peer.error(method)) == (1001, "UNAUTHORIZED")
    peer.handshake()
    assert "result" in peer.call("app.health")


def test_handshake_params_are_validated(spawn_hostcore: Spawn) -> None:
    peer = spawn_hostcore()
    assert error_code(peer.error("app.handshake", {"protocolVersion": "11", "client": "x", "clientVersion": "1"})) == (
        1002,
        "INVALID_PARAMS",
    )
    assert error_code(peer.error("app.handshake", {"protocolVersion": 11, "clientVersion": "1"})) == (
        1002,
        "INVALID_PARAMS",
    )
    assert error_code(peer.error("app.health")) == (1001, "UNAUTHORIZED")


def test_acceptance_02_health_returns_ok(hostcore: HostcorePeer) -> None:
    health = hostcore.result("app.health")
    assert health["ok"] is True
    budget = health["toolBudget"]
    assert set(budget) == {"active", "queued", "total", "shell", "reads", "mutations", "plugins"}
    version = hostcore.result("app.getVersion")
    assert version["protocolVersion"] == 11


def test_unknown_method_after_handshake(hostcore: HostcorePeer) -> None:
    assert hostcore.error("plugins.list")["code"] == -32601


def test_errors_carry_numeric_code_and_error_code(hostcore: HostcorePeer) -> None:
    error = hostcore.error("session.get", {"sessionId": "ses_missing"})
    assert error_code(error) == (1007, "NOT_FOUND")
    assert isinstance(error["message"], str)
    assert error_code(hostcore.error("session.rename", {"id": "x", "title": "   "})) == (1002, "INVALID_PARAMS")


# -- §2 transport -------------------------------------------------------------------


def test_crlf_lines_are_accepted(hostcore: HostcorePeer) -> None:
    hostcore.send_raw(_request_line(50, "app.health") + b"\r\n" + _request_line(51, "app.getVersion") + b"\r\n")
    assert hostcore.response_to(50)["result"]["ok"] is True
    assert "result" in hostcore.response_to(51)


def test_u2028_and_u2029_are_payload(hostcore: HostcorePeer) -> None:
    title = "a\u2028b\u2029c"
    raw = '{"jsonrpc":"2.0","id":60,"method":"session.create","params":{"title":"' + title + '"}}\n'
    hostcore.send_raw(raw.encode())  # raw separators, not \u escapes
    assert hostcore.response_to(60)["result"]["session"]["title"] == title


def test_utf8_split_across_reads(hostcore: HostcorePeer) -> None:
    line = ('{"jsonrpc":"2.0","id":61,"method":"session.create","params":{"title":"☃😀é"}}\n').encode()
    cut = line.index("😀".encode()) + 2  # inside the four-byte character
    hostcore.send_raw(line[:cut])
    hostcore.send_raw(b"")  # flushed; the reader sees two separate chunks
    hostcore.send_raw(line[cut:])
    assert hostcore.response_to(61)["result"]["session"]["title"] == "☃😀é"


def test_final_unterminated_line_at_eof(hostcore: HostcorePeer) -> None:
    hostcore.send_raw(_request_line(70, "app.health"))  # no LF
    hostcore.close_stdin()
    messages = hostcore.read_until_eof()
    assert [m["id"] for m in messages] == [70] and messages[0]["result"]["ok"] is True
    assert hostcore.wait_exit() == 0


def test_invalid_json_is_diagnosed_and_later_lines_read(hostcore: HostcorePeer) -> None:
    secret = b'{"jsonrpc":"2.0","id":80,"method":"SECRET-PAYLOAD'
    hostcore.send_raw(secret + b"\n" + _request_line(81, "app.health") + b"\n")
    first = hostcore.read()
    # §7 -32700 (the reading this reference takes; §2 also allows silence)
    assert first["id"] is None and first["error"]["code"] == -32700
    assert "SECRET" not in str(first)
    assert hostcore.response_to(81)["result"]["ok"] is True
    # §2: the diagnostic carries the byte length, never the payload text
    hostcore.close_stdin()
    hostcore.read_until_eof()
    hostcore.wait_exit()
    stderr = hostcore.stderr_text()
    assert str(len(secret)) in stderr and "SECRET" not in stderr


def test_line_at_the_limit_is_served(hostcore: HostcorePeer) -> None:
    head = b'{"jsonrpc":"2.0","id":90,"method":"app.health","params":{"pad":"'
    tail = b'"}}'
    line = head + b"x" * (LINE_LIMIT - len(head) - len(tail)) + tail
    assert len(line) == LINE_LIMIT
    hostcore.send_raw(line + b"\n")
    assert hostcore.response_to(90, timeout=30)["result"]["ok"] is True


@pytest.mark.parametrize(
    ("prefix", "expected_id"),
    [
        (b'{"jsonrpc":"2.0","id":91,"method":"app.health","params":{"pad":"', 91),
        (b'{"jsonrpc":"2.0","method":"app.health","params":{"id":5,"pad":"', None),
    ],
)
def test_oversized_line_gets_limit_exceeded_and_reader_lives(
    hostcore: HostcorePeer, prefix: bytes, expected_id: object
) -> None:
    line = prefix + b"y" * (LINE_LIMIT + 1 - len(prefix))  # one byte over, unterminated JSON
    assert len(line) == LINE_LIMIT + 1
    hostcore.send_raw(line + b"\n" + _request_line(93, "app.health") + b"\n")
    answer = hostcore.read(timeout=30)
    assert answer["id"] == expected_id  # peeked from the prefix when possible
    assert error_code(answer["error"]) == (1002, "LIMIT_EXCEEDED")
    assert hostcore.response_to(93)["result"]["ok"] is True  # the remainder was drained


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (b'{"id":7,"x', 7),
        (b' { "params":{"id":1,"a":["id",2]}, "id" : "abc"', "abc"),
        (b'{"method":"x","id":12', None),  # the number may be cut short
        (b'{"id":12 ', 12),
        (b'{"params":{"id":3', None),  # nested ids are not the request's
        (b'{"id":"ab', None),
        (b'{"\\u0069d":5,', 5),
        (b'{"a":"id","id":5.0}', 5),
        (b'[{"id":1}]', None),
        (b'{"id":null,', None),
        (b'{"id":true,', None),
        (b"", None),
    ],
)
def test_peek_id_reads_only_a_whole_top_level_id(prefix: bytes, expected: object) -> None:
    assert peek_id(prefix) == expected
    # byte by byte: never raises, never invents an id
    for end in range(len(prefix)):
        assert peek_id(prefix[:end]) in (None, expected)


# -- §4 workspace and projects ------------------------------------------------------


def test_workspace_set_get_clear(hostcore: HostcorePeer, tmp_path: Path) -> None:
    assert hostcore.result("workspace.get")["path"] is None
    assert hostcore.result("workspace.set", {"path": str(tmp_path)})["ok"] is True
    assert hostcore.result("workspace.get")["path"] == str(tmp_path.resolve())
    assert error_code(hostcore.error("workspace.set", {"path": "relative/dir"})) == (1002, "INVALID_PARAMS")
    assert hostcore.result("workspace.clear")["ok"] is True
    assert hostcore.result("workspace.get")["path"] is None


def test_projects_create_upserts_and_list_is_recent_first(hostcore: HostcorePeer, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = hostcore.result("projects.create", {"path": str(tmp_path / "a")})
    hostcore.result("projects.create", {"path": str(tmp_path / "b")})
    again = hostcore.result("projects.create", {"path": str(tmp_path / "b" / ".." / "a")})
    assert again["id"] == first["id"]  # one folder, one project
    projects = hostcore.result("projects.list")["projects"]
    assert [p["path"] for p in projects] == [str((tmp_path / "a").resolve()), str((tmp_path / "b").resolve())]
    assert hostcore.result("workspace.get")["path"] is None  # the selection is untouched


# -- §4 sessions ----------------------------------------------------------------------


def _session(hostcore: HostcorePeer, **params: object) -> Message:
    session: Message = hostcore.result("session.create", params)["session"]
    return session


def _append(hostcore: HostcorePeer, sid: str, mid: str, role: str = "user", **extra: object) -> Message:
    message = {"id": mid, "role": role, "content": [{"type": "text", "text": mid}], **extra}
    result: Message = hostcore.result("session.appendMessage", {"sessionId": sid, "message": message})
    return result


def test_session_create_list_get_rename(hostcore: HostcorePeer, tmp_path: Path) -> None:
    session = _session(hostcore, projectPath=str(tmp_path), mode="plan", thinkingLevel="high", fastMode=True)
    assert session["mode"] == "plan" and session["thinkingLevel"] == "high" and session["fastMode"] is True
    assert session["projectPath"] == str(tmp_path.resolve())
    _append(hostcore, session["id"], "m1")
    listed = hostcore.result("session.list")["sessions"]
    assert [(s["id"], s["messageCount"]) for s in listed] == [(session["id"], 1)]
    got = hostcore.result("session.get", {"sessionId": session["id"]})
    assert [m["id"] for m in got["messages"]] == ["m1"]
    assert hostcore.result("session.rename", {"id": session["id"], "title": "  Renamed  "}) == {"ok": True}
    renamed = hostcore.result("session.get", {"sessionId": session["id"]})["session"]
    assert renamed["title"] == "Renamed" and renamed["updatedAt"] == got["session"]["updatedAt"]
    assert hostcore.result("session.rename", {"id": "ses_missing", "title": "x"}) == {"ok": False}


def test_session_create_validates_params(hostcore: HostcorePeer) -> None:
    for params in ({"mode": "chat"}, {"thinkingLevel": "huge"}, {"fastMode": "yes"}, {"permissionMode": "never"}):
        assert error_code(hostcore.error("session.create", params)) == (1002, "INVALID_PARAMS"), params


@pytest.mark.parametrize(("title", "ok"), [("😀" * 79, True), ("😀" * 80, True), ("😀" * 81, False), ("", False)])
def test_rename_title_bound_in_code_points(hostcore: HostcorePeer, title: str, ok: bool) -> None:
    sid = _session(hostcore)["id"]
    response = hostcore.call("session.rename", {"id": sid, "title": title})
    assert ("result" in response) is ok, response


def test_session_get_read_window(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    for index in range(5):
        _append(hostcore, sid, f"w{index}")
    window = hostcore.result("session.get", {"sessionId": sid, "messageBefore": 4, "messageLimit": 2})
    assert [m["id"] for m in window["messages"]] == ["w2", "w3"]
    assert window["messageStart"] == 2 and window["hasMoreBefore"] is True and window["hasMoreAfter"] is True
    centered = hostcore.result("session.get", {"sessionId": sid, "messageAround": "w4", "messageLimit": 3})
    assert [m["id"] for m in centered["messages"]] == ["w2", "w3", "w4"] and centered["hasMoreAfter"] is False
    missing = hostcore.result("session.get", {"sessionId": sid, "messageAround": "nope", "messageLimit": 3})
    assert missing["session"] is None
    for bad in ({"messageAround": "w1"}, {"messageAround": "w1", "messageLimit": 2, "messageBefore": 3}):
        assert error_code(hostcore.error("session.get", {"sessionId": sid, **bad})) == (1002, "INVALID_PARAMS")


def test_append_message_is_idempotent_by_id(hostcore: HostcorePeer) -> None:
    a, b = _session(hostcore)["id"], _session(hostcore)["id"]
    assert _append(hostcore, a, "dup")["appended"] is True
    assert _append(hostcore, a, "dup")["appended"] is False  # a replay is a no-op
    remapped = _append(hostcore, b, "dup")  # D444: indexed elsewhere, remapped
    assert remapped["messageId"] == f"{b}:dup"
    assert _append(hostcore, b, "dup")["appended"] is False
    counts = {s["id"]: s["messageCount"] for s in hostcore.result("session.list")["sessions"]}
    assert counts == {a: 1, b: 1}


def test_append_to_a_missing_session_restores_a_stub(hostcore: HostcorePeer) -> None:
    _append(hostcore, "ses_lost", "m1")  # D318: the outbox must be able to drain
    assert hostcore.result("session.get", {"sessionId": "ses_lost"})["session"]["messageCount"] == 1


def _turn(hostcore: HostcorePeer, sid: str) -> str:
    turn_id: str = hostcore.result("session.beginTurn", {"sessionId": sid})["turnId"]
    return turn_id


def test_acceptance_06_end_turn_creates_exactly_one_notification(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore, title="Chat")["id"]
    done = _turn(hostcore, sid)
    first = hostcore.result("session.endTurn", {"turnId": done, "status": "completed"})
    assert first["ok"] is True and first["notification"]["kind"] == "task.completed"
    assert first["notification"]["sessionTitle"] == "Chat" and first["notification"]["turnId"] == done
    repeated = hostcore.result("session.endTurn", {"turnId": done, "status": "completed"})
    assert repeated == {"ok": False}  # already terminal: nothing new
    failed = _turn(hostcore, sid)
    failure = hostcore.result("session.endTurn", {"turnId": failed, "status": "error", "errorCode": "PROVIDER_DOWN"})
    assert failure["notification"]["kind"] == "task.failed" and failure["notification"]["errorCode"] == "PROVIDER_DOWN"
    aborted = _turn(hostcore, sid)
    assert hostcore.result("session.endTurn", {"turnId": aborted, "status": "aborted"}) == {"ok": True}
    visible = _turn(hostcore, sid)
    assert hostcore.result(
        "session.endTurn", {"turnId": visible, "status": "completed", "createNotification": False}
    ) == {"ok": True}
    stale_ui = _turn(hostcore, sid)  # a non-boolean means true (§4a)
    assert "notification" in hostcore.result(
        "session.endTurn", {"turnId": stale_ui, "status": "completed", "createNotification": "no"}
    )
    assert hostcore.result("session.endTurn", {"turnId": "turn_missing", "status": "completed"}) == {"ok": False}
    assert hostcore.result("notification.list")["unreadCount"] == 3


def test_begin_turn_refuses_a_second_running_turn(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    _turn(hostcore, sid)
    assert error_code(hostcore.error("session.beginTurn", {"sessionId": sid})) == (1008, "AGENT_BUSY")
    assert error_code(hostcore.error("session.beginTurn", {"sessionId": "ses_missing"})) == (1007, "NOT_FOUND")
    assert error_code(hostcore.error("session.endTurn", {"turnId": "t", "status": "done"})) == (1002, "INVALID_PARAMS")


def test_acceptance_07_notifications_round_trip_bounded_to_200(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    turns = [r["result"]["turnId"] for r in hostcore.pipeline([("session.beginTurn", {"sessionId": sid})] * 1)]
    ids: list[str] = []
    for _ in range(205):
        turn_id = turns.pop() if turns else _turn(hostcore, sid)
        ids.append(hostcore.result("session.endTurn", {"turnId": turn_id, "status": "completed"})["notification"]["id"])
    listed = hostcore.result("notification.list")
    assert [n["id"] for n in listed["notifications"]] == ids[::-1][:200]  # newest first, newest 200 kept
    assert listed["unreadCount"] == 200
    assert len(hostcore.result("notification.list", {"limit": 500})["notifications"]) == 200
    assert [n["id"] for n in hostcore.result("notification.list", {"limit": 2})["notifications"]] == ids[::-1][:2]
    newest = ids[-1]
    assert hostcore.result("notification.markRead", {"id": newest}) == {"ok": True}
    assert hostcore.result("notification.markRead", {"id": newest}) == {"ok": True}  # idempotent
    assert hostcore.result("notification.markRead", {"id": ids[0]}) == {"ok": False}  # pruned: gone
    unread = hostcore.result("notification.list", {"unreadOnly": True, "limit": 1})
    assert unread["unreadCount"] == 199 and unread["notifications"][0]["id"] == ids[-2]
    assert hostcore.result("notification.markAllRead") == {"ok": True}
    assert hostcore.result("notification.list")["unreadCount"] == 0
    assert hostcore.result("notification.clear") == {"ok": True}
    assert hostcore.result("notification.list") == {"notifications": [], "unreadCount": 0}


def test_acceptance_08_fork_idle_session(hostcore: HostcorePeer, tmp_path: Path) -> None:
    source = _session(hostcore, projectPath=str(tmp_path), mode="goal", permissionMode="auto", thinkingLevel="low")
    sid = source["id"]
    _append(hostcore, sid, "u1")
    tool_call = {"type": "toolCall", "id": "call_1", "name": "Read"}
    _append(hostcore, sid, "a1", role="assistant", content=[tool_call])
    _append(hostcore, sid, "r1", role="toolResult", toolCallId="call_1")
    turn = _turn(hostcore, sid)
    hostcore.result("session.endTurn", {"turnId": turn, "status": "completed"})
    child = hostcore.result("session.fork", {"sessionId": sid})["session"]
    assert child["id"] != sid
    for key in ("projectPath", "mode", "permissionMode", "thinkingLevel", "providerId", "modelId", "fastMode"):
        assert child[key] == source[key], key
    messages = hostcore.result("session.get", {"sessionId": child["id"]})["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]
    assert not {m["id"] for m in messages} & {"u1", "a1", "r1"}  # new message ids
    new_call = messages[1]["content"][0]["id"]
    assert new_call != "call_1" and messages[2]["toolCallId"] == new_call  # remapped consistently
    _append(hostcore, child["id"], "child-only")  # independently mutable
    assert hostcore.result("session.get", {"sessionId": sid})["session"]["messageCount"] == 3
    assert hostcore.result("session.get", {"sessionId": child["id"]})["session"]["messageCount"] == 4
    notes = hostcore.result("notification.list")["notifications"]
    assert all(n["sessionId"] == sid for n in notes)  # the child has no notifications


def test_acceptance_09_fork_through_message(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    for mid in ("m1", "m2", "m3"):
        _append(hostcore, sid, mid)
    child = hostcore.result("session.fork", {"sessionId": sid, "throughMessageId": "m2", "title": "Branch"})["session"]
    assert child["messageCount"] == 2 and child["title"] == "Branch"
    texts = [m["content"][0]["text"] for m in hostcore.result("session.get", {"sessionId": child["id"]})["messages"]]
    assert texts == ["m1", "m2"]  # inclusive; every later row excluded
    before = len(hostcore.result("session.list")["sessions"])
    assert error_code(hostcore.error("session.fork", {"sessionId": sid, "throughMessageId": "nope"})) == (
        1007,
        "NOT_FOUND",
    )
    assert len(hostcore.result("session.list")["sessions"]) == before  # no child created
    assert error_code(hostcore.error("session.fork", {"sessionId": "ses_missing"})) == (1007, "NOT_FOUND")


def test_fork_while_the_source_runs(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    _append(hostcore, sid, "u1")
    _append(hostcore, sid, "a1", role="assistant")
    turn = _turn(hostcore, sid)
    hostcore.result(
        "session.appendMessage", {"sessionId": sid, "turnId": turn, "message": {"id": "u2", "role": "user"}}
    )
    hostcore.result(
        "session.appendMessage", {"sessionId": sid, "turnId": turn, "message": {"id": "a2", "role": "assistant"}}
    )
    for params in ({}, {"throughMessageId": "u1"}, {"throughMessageId": "a2"}):
        assert error_code(hostcore.error("session.fork", {"sessionId": sid, **params})) == (1008, "CONFLICT"), params
    child = hostcore.result("session.fork", {"sessionId": sid, "throughMessageId": "a1"})["session"]
    assert child["messageCount"] == 2 and child["running"] is False


def test_state_survives_restart(spawn_hostcore: Spawn, tmp_path: Path) -> None:
    first = spawn_hostcore()
    first.handshake()
    sid = _session(first, projectPath=str(tmp_path), title="Durable")["id"]
    _append(first, sid, "m1")
    turn = _turn(first, sid)
    first.result("session.endTurn", {"turnId": turn, "status": "completed"})
    first.result("workspace.set", {"path": str(tmp_path)})
    first.kill()  # no clean shutdown: committed state must still be there
    second = spawn_hostcore()
    second.handshake()
    assert [s["title"] for s in second.result("session.list")["sessions"]] == ["Durable"]
    assert second.result("session.get", {"sessionId": sid})["session"]["messageCount"] == 1
    assert second.result("notification.list")["unreadCount"] == 1
    assert second.result("workspace.get")["path"] == str(tmp_path.resolve())
    assert _append(second, sid, "m1")["appended"] is False  # idempotency survives too


def test_stdin_eof_ends_the_process(hostcore: HostcorePeer) -> None:
    hostcore.close_stdin()
    assert hostcore.read_until_eof() == []
    assert hostcore.wait_exit() == 0


def test_a_broken_stdout_ends_the_process(hostcore: HostcorePeer) -> None:
    assert hostcore.proc.stdout is not None
    hostcore.proc.stdout.close()  # its next answer has no reader (EPIPE)
    hostcore.send_raw(_request_line(96, "app.health") + b"\n")
    assert hostcore.wait_exit() == 1
    assert "no longer writable" in hostcore.stderr_text()


def test_blank_lines_are_skipped(hostcore: HostcorePeer) -> None:
    hostcore.send_raw(b"\n\r\n  \n" + _request_line(95, "app.health") + b"\n")
    assert hostcore.read()["id"] == 95


def test_whole_number_ids_are_judged_by_value(hostcore: HostcorePeer) -> None:
    hostcore.send_raw(b'{"jsonrpc":"2.0","id":7.0,"method":"app.health"}\n')
    assert hostcore.read()["id"] == 7


def test_session_delete_is_soft_and_refuses_a_running_turn(hostcore: HostcorePeer) -> None:
    sid = _session(hostcore)["id"]
    turn = _turn(hostcore, sid)
    assert error_code(hostcore.error("session.delete", {"sessionId": sid})) == (1008, "AGENT_BUSY")
    hostcore.result("session.endTurn", {"turnId": turn, "status": "completed"})
    assert hostcore.result("session.delete", {"sessionId": sid}) == {"ok": True, "deleted": True}
    assert hostcore.result("session.list")["sessions"] == []
    assert error_code(hostcore.error("session.get", {"sessionId": sid})) == (1007, "NOT_FOUND")
    assert error_code(hostcore.error("todos.get", {"sessionId": sid})) == (1007, "NOT_FOUND")
    assert hostcore.result("session.delete", {"sessionId": sid}) == {"ok": False, "deleted": False}
