"""The driver client against small scripted drivers: every way a driver can
break the contract ends in a DriverError naming the cause, never a hang."""

from __future__ import annotations

import sys
import textwrap

import pytest

from conformance.peers.host_driver import DriverError, HostDriver, OperationError
from conformance.transport.startup import StartFailure

PRELUDE = """
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
def event(method, **params):
    send({"jsonrpc": "2.0", "method": method, "params": params})
def hello(rid, contract="octet-host-driver/1"):
    send({"jsonrpc": "2.0", "id": rid, "result": {"contract": contract, "host": {"name": "fake", "version": "0"},
          "api_versions": ["0.2"], "features": [], "capabilities": ["reload"]}})
"""

GOOD = """
for line in sys.stdin:
    msg = json.loads(line)
    rid, method, params = msg["id"], msg["method"], msg.get("params", {})
    if method == "hello":
        hello(rid)
    elif method == "load":
        send({"jsonrpc": "2.0", "method": "state", "params": {"extension": "e1", "generation": 1, "state": "starting"}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"extension": "e1", "outcome": "ready", "generation": 1}})
    elif method == "call":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
        send({"jsonrpc": "2.0", "method": "settled", "params": {"call": params["call"], "outcome": "result",
              "result": {"content": "ok"}}})
    elif method == "cancel":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "unknown call"}})
    elif method == "exit":
        send({"jsonrpc": "2.0", "id": rid, "result": {}}); break
"""


def _driver(body: str) -> HostDriver:
    code = PRELUDE + textwrap.dedent(body)
    return HostDriver.spawn([sys.executable, "-c", code])


def test_a_driver_that_keeps_the_contract() -> None:
    with _driver(GOOD) as driver:
        info = driver.hello(timeout=10)
        assert info.api_versions == ("0.2",) and driver.has("reload") and not driver.has("timing")
        loaded = driver.request("load", {"manifest": "/x/extension.toml"}, 10)
        assert loaded == {"extension": "e1", "outcome": "ready", "generation": 1}
        assert driver.extensions == {"e1"}
        assert driver.request("call", {"extension": "e1", "call": "c1", "method": "tool/call", "params": {}}, 10) == {}
        settled = driver.wait_event(lambda e: e.method == "settled", 10)
        assert settled is not None and settled.params["result"] == {"content": "ok"}
        assert driver.request("cancel", {"call": "zz"}, 10) == OperationError(-32002, "unknown call")
        driver.exit()
        assert not driver.process.group_alive()


@pytest.mark.parametrize(
    ("body", "cause", "words"),
    [
        ("sys.exit(4)", "driver-crashed", "exit status 4"),
        ("sys.stdout.write('hello there\\n'); sys.stdout.flush(); sys.stdin.read()", "driver-garbage", "not an answer"),
        ("sys.stdin.read()", "driver-timeout", "no answer to hello"),
        ("line = sys.stdin.readline(); hello(1, 'other/9'); sys.stdin.read()", "driver-contract", "other/9"),
        ("line = sys.stdin.readline(); hello(7); sys.stdin.read()", "driver-impossible", "id 7"),
        (
            "sys.stdout.write('x' * (5 << 20) + '\\n'); sys.stdout.flush(); sys.stdin.read()",
            "driver-garbage",
            "exceeds",
        ),
        # An endless line is garbage as soon as it passes the bound, not when it ends.
        ("sys.stdout.write('x' * (5 << 20)); sys.stdout.flush(); sys.stdin.read()", "driver-garbage", "exceeds"),
        (
            "line = sys.stdin.readline(); send({'jsonrpc': '2.0', 'method': 'warp', 'params': {}}); sys.stdin.read()",
            "driver-impossible",
            "'warp'",
        ),
    ],
    ids=["crash", "garbage", "silent", "contract", "wrong-id", "long-line", "endless-line", "unknown-event"],
)
def test_hello_failures_name_their_cause(body: str, cause: str, words: str) -> None:
    with _driver(body) as driver, pytest.raises(DriverError) as caught:
        driver.hello(timeout=1.0)
    assert caught.value.cause == cause and words in str(caught.value)
    assert not driver.process.group_alive()


IMPOSSIBLE = {
    "unknown-call-settled": "event('settled', call='nope', outcome='cancelled')",
    "never-loaded": "event('notification', extension='ghost', level='info')",
    "bad-state": "event('state', extension='e1', generation=1, state='x')",
}


@pytest.mark.parametrize("name", sorted(IMPOSSIBLE))
def test_impossible_events_are_driver_errors(name: str) -> None:
    body = f"""
    line = sys.stdin.readline(); hello(1)
    line = sys.stdin.readline()
    send({{"jsonrpc": "2.0", "id": 2, "result": {{"extension": "e1", "outcome": "ready", "generation": 1}}}})
    {IMPOSSIBLE[name]}
    sys.stdin.read()
    """
    with _driver(body) as driver:
        driver.hello(timeout=10)
        driver.request("load", {"manifest": "/x"}, 10)
        with pytest.raises(DriverError) as caught:
            driver.wait_event(lambda e: False, 2.0)
        assert caught.value.cause == "driver-impossible"


def test_settled_twice_is_impossible() -> None:
    twice = GOOD.replace(
        '    elif method == "cancel":',
        """        event("settled", call=params["call"], outcome="cancelled")
    elif method == "cancel":""",
    )
    with _driver(twice) as driver:
        driver.hello(timeout=10)
        driver.request("load", {"manifest": "/x"}, 10)
        driver.request("call", {"extension": "e1", "call": "c1", "method": "tool/call", "params": {}}, 10)
        with pytest.raises(DriverError, match="settled twice"):
            driver.wait_event(lambda e: False, 2.0)


def test_driver_that_cannot_start() -> None:
    """Said as a command that cannot run (transport/startup.py), not as a driver that crashed."""
    with pytest.raises(StartFailure) as caught:
        HostDriver.spawn(["/nonexistent/driver-binary"])
    assert "/nonexistent/driver-binary does not exist" in str(caught.value)


def test_idle_callback_runs_while_waiting() -> None:
    ticks: list[int] = []
    with _driver("sys.stdin.read()") as driver, pytest.raises(DriverError):
        driver.request("hello", {}, 0.3, idle=lambda: ticks.append(1))
    assert len(ticks) > 3
