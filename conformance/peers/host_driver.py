"""The harness side of the host driver contract (docs/host-driver.md).

How to use::

    with HostDriver.spawn(["my-host-driver", "--flag"]) as driver:
        info = driver.hello()                     # contract, api_versions, capabilities
        rid = driver.start("load", {"manifest": str(path)})
        result = driver.wait_answer(rid, timeout=10.0, idle=pump_probe)   # pump the probe meanwhile
        driver.request("call", {"extension": "ext-1", "call": "c1", "method": "tool/call", "params": {...}})
        event = driver.wait_event(lambda e: e.method == "settled", timeout=10.0, idle=pump_probe)

The driver runs in its own process group with a sanitized environment; its
stdout goes through the shared framing with a 4 MiB line bound; its stderr is
drained into a bounded tail. Every wait has a timeout. Anything the driver
does that the contract rules out -- dying, writing garbage, not answering,
answering an id never asked, reporting an event that cannot have happened --
raises :class:`DriverError`, whose ``cause`` names which (the runner turns it
into an ``error`` verdict and exit status 2; never a hang, never a traceback).
What the driver reports about the *host* is kept as :class:`DriverEvent` s for
the runner to judge.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.protocol import jsonrpc
from conformance.protocol.framing import Frame
from conformance.protocol.strict_json import dumps
from conformance.transport.process import TargetProcess, WriteTimeout, sanitized_env
from conformance.transport.startup import CURRENT_FOLDER, SetupFailure, StartFailure, check_startable, setup_failure
from conformance.transport.target import Received, StdoutClosed

CONTRACT = "octet-host-driver/1"
MAX_LINE_BYTES = 4 * 1024 * 1024
HELLO_TIMEOUT_S = 30.0
OPERATION_TIMEOUT_S = 5.0
SHUTDOWN_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 5.0
IDLE_SLICE_S = 0.005  # how long one wait on the driver lasts before the idle callback runs again
MAX_QUEUED_EVENTS = 100_000  # a driver that floods events is cut off, not buffered without end
# SSH_AUTH_SOCK as the driver (and so the host) sees it: a path no agent
# listens on. An extension that does not declare it must not get it, and no
# extension may see the value in initialize (§1.1, EXT-1.1-host-environment-handling).
SSH_AUTH_SOCK_MARKER = "/nonexistent/octet-conformance-agent.sock"
MAX_TEXT = 64 * 1024  # a diagnostic or reason longer than this is not something a host would report

CAPABILITIES = ("reload", "timing", "frontend", "collect", "lifecycle")
CALL_METHODS = (
    "tool/call",
    "command/execute",
    "hook/run",
    "context/collect",
    "status/collect",
    "menu/collect",
    "tool/render",
)
OUTCOMES = ("result", "error", "cancelled", "failed")
STATES = (
    "starting",
    "initializing",
    "ready",
    "draining",
    "stopped",
    "degraded",
    "crashed",
    "backoff",
    "parked",
    "rejected",
)
DIAGNOSTIC_KINDS = (
    "stderr",
    "stale-response",
    "progress-ignored",
    "child-refused",
    "invalid-frame",
    "oversized-frame",
    "cancel-grace",
    "initialize-rejected",
    "notification-refused",
    "exit",
    "shutdown",
    "supervisor",
    "other",
)
EVENTS = ("settled", "state", "diagnostic", "notification", "progress", "contribution", "prompt")

# Driver error codes (docs/host-driver.md, "Errors").
UNKNOWN_EXTENSION = -32001
UNKNOWN_CALL = -32002
NOT_READY = -32003
UNSUPPORTED = -32004
HOST_FAILURE = -32010


class DriverError(RuntimeError):
    """The driver broke the contract; ``cause`` is one of ``driver-crashed``,
    ``driver-garbage``, ``driver-timeout``, ``driver-impossible``,
    ``driver-contract``, ``driver-error``."""

    def __init__(self, cause: str, message: str, stderr: str = "") -> None:
        super().__init__(f"{cause}: {message}" + (f" (driver stderr: {stderr[-300:]!r})" if stderr else ""))
        self.cause = cause
        self.headline = f"{cause}: {message}"  # without the stderr excerpt (a SetupFailure quotes it whole)


@dataclass(frozen=True)
class DriverEvent:
    method: str
    params: dict[str, Any]
    at: float


@dataclass(frozen=True)
class OperationError:
    """A contract error answer (the operation was refused, not the driver broken)."""

    code: int
    message: str


@dataclass(frozen=True)
class Hello:
    host_name: str
    host_version: str
    api_versions: tuple[str, ...]
    features: tuple[str, ...]
    capabilities: frozenset[str]


Idle = Callable[[], None]


@dataclass
class HostDriver:
    process: TargetProcess
    argv: tuple[str, ...] = ()  # as given (before PATH resolution): what a replay runs again
    cwd: Path = field(default_factory=Path.cwd)
    events: collections.deque[DriverEvent] = field(default_factory=collections.deque)
    hello_info: Hello | None = None
    _next_id: int = 1
    _asked: dict[int, str] = field(default_factory=dict)  # outstanding request id -> method
    _answers: dict[int, dict[str, Any] | OperationError] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)
    _tentative: set[str] = field(default_factory=set)  # handles seen in events while a load was pending
    calls: dict[str, str] = field(default_factory=dict)  # call id -> extension handle
    settled: dict[str, DriverEvent] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic  # the virtual clock when the run is simulated
    # Called with every event as it is read (after the contract checks), so a
    # judge sees each one even when a scenario consumes the queue.
    observers: list[Callable[[DriverEvent], None]] = field(default_factory=list)

    @classmethod
    def spawn(cls, argv: Sequence[str], *, cwd: Path | None = None) -> HostDriver:
        where = (cwd or Path.cwd()).resolve()
        try:
            env = sanitized_env({"SSH_AUTH_SOCK": SSH_AUTH_SOCK_MARKER})
            check_startable(argv, where, env, folder=CURRENT_FOLDER)  # said before anything is spawned
            process = TargetProcess(argv, cwd=where, env=env, max_frame_bytes=MAX_LINE_BYTES)
        except StartFailure:
            raise  # the driver's command cannot run: said as such (transport/startup.py), not as a crash
        except OSError as exc:
            raise DriverError("driver-crashed", f"cannot start the driver {list(argv)!r}: {exc}") from exc
        return cls(process, tuple(argv), where)

    def __enter__(self) -> HostDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.process.kill_group()

    def greet(self, timeout: float = HELLO_TIMEOUT_S) -> Hello:
        """:meth:`hello`, where a driver that cannot say it -- it exited, wrote
        something that is not the contract, or never answered -- is a
        :class:`SetupFailure` with its exit status and stderr tail: nothing of
        the host has been seen, so there is nothing to judge."""
        try:
            return self.hello(timeout)
        except DriverError as exc:
            raise self.not_set_up(f"no hello ({exc.headline})") from None

    def not_set_up(self, what: str) -> SetupFailure:
        hint = "run the driver by hand and send it the hello line of docs/host-driver.md"
        failure = setup_failure("host driver", self.argv, self.cwd, what, self.process, hint=hint)
        self.close()
        return failure

    # -- operations ----------------------------------------------------------------
    def hello(self, timeout: float = HELLO_TIMEOUT_S) -> Hello:
        result = self.request("hello", {"contract": CONTRACT, "suite": {"version": __version__}}, timeout)
        if isinstance(result, OperationError):
            raise DriverError("driver-error", f"hello refused: {result.code} {result.message}")
        if result.get("contract") != CONTRACT:
            raise DriverError("driver-contract", f"driver speaks {result.get('contract')!r}, not {CONTRACT!r}")
        host = result.get("host")
        apis, features, caps = result.get("api_versions"), result.get("features", []), result.get("capabilities", [])
        if not (isinstance(host, dict) and isinstance(apis, list) and _strings(apis) and _strings(features)):
            raise DriverError("driver-garbage", f"hello result is malformed: {_short(result)}")
        if not _strings(caps):
            raise DriverError("driver-garbage", f"hello capabilities are malformed: {_short(caps)}")
        self.hello_info = Hello(
            str(host.get("name", "")), str(host.get("version", "")), tuple(apis), tuple(features), frozenset(caps)
        )
        return self.hello_info

    def new_call_id(self) -> str:
        """A call id never used in this driver's life (the contract requires it)."""
        return f"c{len(self.calls) + 1}"

    def has(self, capability: str) -> bool:
        return self.hello_info is not None and capability in self.hello_info.capabilities

    def request(
        self, method: str, params: dict[str, Any], timeout: float = OPERATION_TIMEOUT_S, idle: Idle | None = None
    ) -> dict[str, Any] | OperationError:
        return self.wait_answer(self.start(method, params), timeout, idle)

    def start(self, method: str, params: dict[str, Any]) -> int:
        """Send one operation; its answer is collected by :meth:`wait_answer`."""
        rid = self._next_id
        self._next_id += 1
        self._asked[rid] = method
        if method in ("call", "menu_action"):
            self.calls[str(params.get("call"))] = str(params.get("extension"))
        frame = dumps(jsonrpc.request(rid, method, params)) + b"\n"
        try:
            self.process.write(frame, timeout=OPERATION_TIMEOUT_S)
        except (BrokenPipeError, WriteTimeout, OSError) as exc:
            raise self._gone(f"writing {method} failed: {exc}") from exc
        return rid

    def wait_answer(self, rid: int, timeout: float, idle: Idle | None = None) -> dict[str, Any] | OperationError:
        method = self._asked.get(rid, "?")
        deadline = self.clock() + timeout
        while rid not in self._answers:
            if self.clock() >= deadline:
                raise DriverError(
                    "driver-timeout", f"no answer to {method} within {timeout:.1f}s", self.process.stderr_excerpt()
                )
            self.pump(IDLE_SLICE_S if idle else deadline - self.clock())
            if idle is not None:
                idle()
        return self._answers.pop(rid)

    def answered(self, rid: int) -> bool:
        """The answer to ``rid`` has arrived (it stays for :meth:`wait_answer`)."""
        return rid in self._answers

    def wait_event(
        self, wanted: Callable[[DriverEvent], bool], timeout: float, idle: Idle | None = None
    ) -> DriverEvent | None:
        """The first queued or arriving event ``wanted`` accepts (removed from
        the queue), or None after ``timeout``."""
        deadline = self.clock() + timeout
        while True:
            for event in self.events:
                if wanted(event):
                    self.events.remove(event)
                    return event
            if self.clock() >= deadline:
                return None
            self.pump(IDLE_SLICE_S if idle else deadline - self.clock())
            if idle is not None:
                idle()

    def exit(self) -> None:
        """Ask the driver to end; kill its group whatever it does."""
        if not self.process.running():
            self.close()
            return
        try:
            self.request("exit", {}, EXIT_TIMEOUT_S)
            self.process.wait_exit(EXIT_TIMEOUT_S)
        except DriverError:
            pass
        finally:
            self.close()

    # -- reading -------------------------------------------------------------------
    def pump(self, timeout: float) -> bool:
        """Handle at most one line from the driver; False on timeout."""
        item = self.process.next_event(max(timeout, 0.0))
        if item is None:
            if not self.process.running():
                raise self._gone("the driver exited")
            return False
        if isinstance(item, StdoutClosed):
            raise self._gone("the driver closed its stdout")
        self._line(item)
        return True

    def _gone(self, what: str) -> DriverError:
        code = self.process.wait_exit(0.5)
        status = f"exit status {code}" if code is not None else "still running"
        return DriverError("driver-crashed", f"{what} ({status})", self.process.stderr_excerpt())

    def _line(self, item: Received) -> None:
        if not isinstance(item.event, Frame):
            raise DriverError("driver-garbage", f"a line of {item.event.size:,} bytes exceeds {MAX_LINE_BYTES:,}")
        decoded = jsonrpc.decode_event(item.event)
        message = decoded.message
        if isinstance(message, jsonrpc.Response | jsonrpc.ErrorResponse):
            self._answer(message)
        elif isinstance(message, jsonrpc.Notification):
            self._event(message.method, message.params, item.at)
        else:
            raise DriverError("driver-garbage", f"not an answer or event: {item.event.payload[:200]!r}")

    def _answer(self, message: jsonrpc.Response | jsonrpc.ErrorResponse) -> None:
        rid = message.id
        if not isinstance(rid, int) or rid not in self._asked or rid in self._answers:
            raise DriverError("driver-impossible", f"answer for id {rid!r}, which is not an outstanding operation")
        method = self._asked.pop(rid)
        if isinstance(message, jsonrpc.ErrorResponse):
            code = message.code if isinstance(message.code, int) else 0
            self._answers[rid] = OperationError(code, str(message.message))
            if code == HOST_FAILURE:
                raise DriverError("driver-error", f"{method}: host failure: {message.message}")
            return
        if not isinstance(message.result, dict):
            raise DriverError("driver-garbage", f"{method} result is not an object: {_short(message.result)}")
        self._answers[rid] = message.result
        if method == "load":
            # Registered on receipt, not when the caller collects the answer:
            # events the host sends right behind it (a state change delivered
            # after the answer) name a handle that is loaded by then.
            self._loaded(message.result)

    def _loaded(self, result: dict[str, Any]) -> None:
        handle = result.get("extension")
        if result.get("outcome") not in ("ready", "rejected", "refused"):
            raise DriverError("driver-garbage", f"load outcome {result.get('outcome')!r} is not in the contract")
        if isinstance(handle, str):
            self.extensions.add(handle)
        elif result.get("outcome") != "refused":
            raise DriverError("driver-garbage", f"load answered {result.get('outcome')!r} without a handle")
        stray = self._tentative - self.extensions
        if stray and not self._loading():
            raise DriverError("driver-impossible", f"events named extension(s) {sorted(stray)} never loaded")
        self._tentative -= self.extensions

    def _loading(self) -> bool:
        return "load" in self._asked.values()

    # -- events --------------------------------------------------------------------
    def _event(self, method: str, params: Any, at: float) -> None:
        if method not in EVENTS or not isinstance(params, dict):
            raise DriverError("driver-impossible", f"event {method!r} with {_short(params)} is not in the contract")
        if len(self.events) >= MAX_QUEUED_EVENTS:
            raise DriverError("driver-garbage", f"more than {MAX_QUEUED_EVENTS} events left unread: a flood")
        self._check_extension(method, params)
        check = _EVENT_CHECKS.get(method)
        if check is not None:
            check(self, params)
        event = DriverEvent(method, params, at)
        self.events.append(event)
        for observe in self.observers:
            observe(event)

    def _check_extension(self, method: str, params: dict[str, Any]) -> None:
        handle = params.get("extension")
        if method == "settled" and handle is None:
            return  # settled names its call; the call names the extension
        if not isinstance(handle, str):
            raise DriverError("driver-impossible", f"{method} event without an extension handle: {_short(params)}")
        if handle in self.extensions:
            return
        if self._loading():
            self._tentative.add(handle)
            return
        raise DriverError("driver-impossible", f"{method} event names extension {handle!r}, never loaded")

    def _check_settled(self, params: dict[str, Any]) -> None:
        call = params.get("call")
        if not isinstance(call, str) or call not in self.calls:
            raise DriverError("driver-impossible", f"settled for call {call!r}, never started")
        if call in self.settled:
            raise DriverError("driver-impossible", f"call {call!r} settled twice")
        outcome = params.get("outcome")
        if outcome not in OUTCOMES:
            raise DriverError("driver-impossible", f"call {call!r} settled with outcome {outcome!r}")
        if outcome == "result" and "result" not in params:
            raise DriverError("driver-impossible", f"call {call!r} settled with a result but carries none")
        error = params.get("error")
        if outcome == "error" and not (isinstance(error, dict) and isinstance(error.get("code"), int)):
            raise DriverError("driver-impossible", f"call {call!r} settled with an error but no code: {_short(error)}")
        self.settled[call] = DriverEvent("settled", params, self.clock())

    def _check_progress(self, params: dict[str, Any]) -> None:
        if params.get("call") not in self.calls:
            raise DriverError("driver-impossible", f"progress for call {params.get('call')!r}, never started")

    def _check_state(self, params: dict[str, Any]) -> None:
        if params.get("state") not in STATES or not isinstance(params.get("generation"), int):
            raise DriverError("driver-impossible", f"state event {_short(params)} is not in the contract")

    def _check_diagnostic(self, params: dict[str, Any]) -> None:
        message = params.get("message")
        if params.get("kind") not in DIAGNOSTIC_KINDS or not isinstance(message, str) or len(message) > MAX_TEXT:
            raise DriverError("driver-impossible", f"diagnostic event {_short(params)} is not in the contract")

    def _check_prompt(self, params: dict[str, Any]) -> None:
        if params.get("kind") not in ("confirmation", "input"):
            raise DriverError("driver-impossible", f"prompt event {_short(params)} is not in the contract")


_EVENT_CHECKS: dict[str, Callable[[HostDriver, dict[str, Any]], None]] = {
    "settled": HostDriver._check_settled,
    "progress": HostDriver._check_progress,
    "state": HostDriver._check_state,
    "diagnostic": HostDriver._check_diagnostic,
    "prompt": HostDriver._check_prompt,
}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
