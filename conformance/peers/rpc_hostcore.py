"""The harness as the host-core of a client under test (host RPC protocol v11).

The client is driven through the contract in docs/client-driver.md: the
harness starts ``CMD ... -- HOSTCORE ...``, where HOSTCORE is the suite's probe
(conformance/probe, the relay hosts already launch as a fake extension): a
small program that relays every byte the client writes to it to the harness
over a Unix socket and writes to its stdout only what the harness sends. So
the harness sees the client's wire exactly and scripts every host-core byte,
while the client spawns and owns what it believes is its host-core.

The client is told what to do (one JSON operation per line on its stdin) and
says what came of it (one JSON outcome per line on its stdout).

:class:`ClientPeer` answers every request the moment it arrives, by the
scenario's *policy* (which reads the ``step`` member the harness puts in each
operation's params), and keeps, for every request, when the
harness read it and what it answered and when: the material of the §2.1 retry
judges (:mod:`conformance.protocol.rpc_client`). All waits are bounded and
every process (the client's group, the probe) is killed on :meth:`close`.
"""

from __future__ import annotations

import collections
import contextlib
import json
import select
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.peers.probe import ProbeLink, ProbeListener, probe_command
from conformance.protocol import rpc_client, rpc_limits
from conformance.protocol.framing import Frame
from conformance.protocol.violations import Finding, Violation
from conformance.transport.process import Received, StdoutClosed, TargetProcess, WriteTimeout, sanitized_env
from conformance.transport.trace import TRACE_FORMAT, Trace

CONTRACT = "client-driver@1"  # docs/client-driver.md
CONTRACT_ENV = "OCTET_CLIENT_CONTRACT"
OUTCOME_LINE_BYTES = 4 * 1024 * 1024  # one outcome line of the client (driver contract)
MAX_KEPT_REPORTS = 1000
POLL_SLICE_S = 0.05


class ClientGone(Exception):
    """The client exited or closed its stdout: the scenario is over."""


class ContractBroken(Exception):
    """The client's stdout is not the driver contract (a harness-side failure to run it)."""


@dataclass(frozen=True)
class ClientCommand:
    argv: tuple[str, ...]
    cwd: Path

    def with_hostcore(self, hostcore: list[str]) -> list[str]:
        return [*self.argv, "--", *hostcore]


@dataclass
class Request:
    """One request the client wrote to its host-core, and what came of it."""

    index: int  # of the client's frames to the host-core
    read_at: float  # when the harness read it
    message: dict[str, Any]
    answered_at: float | None = None
    response: dict[str, Any] | None = None

    @property
    def method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def step(self) -> object:
        params = self.message.get("params")
        return params.get("step") if isinstance(params, dict) else None

    def attempt(self) -> rpc_client.Attempt:
        return rpc_client.Attempt(self.read_at, self.message, self.answered_at, self.response)


# A policy answers one request: the bytes to write (None: leave it
# unanswered), given the request and how many of its step came before it.
Policy = Callable[[Request, int], bytes | None]


def line(message: dict[str, Any], terminator: bytes = b"\n") -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + terminator


def result(rid: object, value: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def error(rid: object, code: int, error_code: str, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": {"errorCode": error_code}}}


def unauthorized(request: Request, _: int) -> bytes:
    """What a host-core answers a call made without a successful handshake (§3, §7)."""
    return line(error(request.message.get("id"), 1001, "UNAUTHORIZED", "app.handshake has not succeeded"))


def echo(request: Request, _: int) -> bytes:
    """The default answer: a result naming the step, so the outcome can be compared."""
    return line(result(request.message.get("id"), {"ok": True, "step": request.step}))


class ClientPeer:
    """One client process and the probe it launched as its host-core."""

    def __init__(self, command: ClientCommand, recorder: Recorder, *, response_s: float, scenario: str) -> None:
        self.recorder = recorder
        self.response_s = response_s
        self.listener = ProbeListener(max_frame_bytes=rpc_limits.MAX_LINE_BYTES)
        self._token = self.listener.new_token()
        hostcore = probe_command(self.listener.script, self.listener.socket_path, self._token)
        argv = command.with_hostcore(hostcore)
        target = {"role": "client", "argv": list(command.argv), "cwd": str(command.cwd)}  # what replay re-runs
        header = {"format": TRACE_FORMAT, "role": "client", "command": argv, "target": target, "scenario": scenario}
        self.trace = Trace({**header, **recorder.run_info})
        recorder.watch(self.trace)  # what is judged from now on is marked in this scenario's trace
        self.link: ProbeLink | None = None
        self.requests: list[Request] = []
        self.oversized: list[tuple[float, int]] = []  # (read at, size) of every line over the limit
        self.outcomes: collections.deque[dict[str, Any]] = collections.deque()
        self.notifications: list[dict[str, Any]] = []  # what the client reported receiving
        self.policy: Policy = echo  # how every request not held is answered
        self.hold: set[str] = set()  # methods left unanswered for the scenario to answer itself
        self.hostcore_stdin_closed = False
        self._frames = 0
        self._counts: collections.Counter[object] = collections.Counter()
        self._violated: dict[str, str] = {}
        self.exit_status: int | None = None
        self.client = TargetProcess(
            argv,
            cwd=command.cwd,
            env=sanitized_env({CONTRACT_ENV: CONTRACT}),
            max_frame_bytes=OUTCOME_LINE_BYTES,
        )
        self.client_stdout_closed = False

    # -- judging -------------------------------------------------------------------
    def add(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            if isinstance(f, Violation):
                self.violate(f)
            else:
                self.recorder.add([f])

    def violate(self, v: Violation) -> None:
        self.recorder.violate(v, stderr=self.client.stderr_excerpt(), trace=self.trace)
        self._violated.setdefault(v.requirement, v.message)

    # -- the driver contract (client stdin/stdout) -----------------------------------
    def operate(self, method: str, step: str, *, params: dict[str, Any] | None = None, **extra: Any) -> None:
        """Ask the client to call ``method``; ``step`` goes into its params.
        Every call is bounded by the patience unless ``timeoutS`` says otherwise,
        so a call the client never sees answered cannot hold up later ones."""
        operation = {"method": method, "params": {**(params or {}), "step": step}, "timeoutS": self.response_s}
        operation.update(extra)
        self.trace.action("operate", step=0, operation=operation)
        try:
            self.client.write(line(operation), timeout=self.response_s)
        except (WriteTimeout, BrokenPipeError, OSError) as exc:
            raise ClientGone(f"the client stopped reading its operations ({type(exc).__name__})") from None

    def outcome(self, timeout: float) -> dict[str, Any] | None:
        """The client's next outcome line, or None when none came in time."""
        deadline = time.monotonic() + timeout
        while not self.outcomes:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if self.client_stdout_closed:
                raise ClientGone("the client closed its stdout")
            self.pump(remaining)
        return self.outcomes.popleft()

    def end_operations(self, timeout: float) -> int | None:
        """Close the client's stdin (no more operations) and wait for its exit."""
        self.trace.action("end_operations", step=0)
        self.client.close_stdin()
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float) -> int | None:
        """The client's exit status (None: still running after ``timeout``);
        its host-core traffic is served meanwhile."""
        deadline = time.monotonic() + timeout
        while (status := self.client.wait_exit(0)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.pump(min(remaining, POLL_SLICE_S))
        self._drain()
        self.exit_status = status
        return status

    # -- the host-core side (the probe's pipe) -------------------------------------
    def first_request(self, timeout: float) -> Request | None:
        """The first request the client wrote to its host-core."""
        deadline = time.monotonic() + timeout
        while not self.requests:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.client_stdout_closed and self.client.wait_exit(0) is not None):
                return None
            self.pump(remaining)
        return self.requests[0]

    def settle(self, window_s: float) -> None:
        """Serve whatever the client writes during ``window_s`` (a judging
        window for frames that must *not* come, e.g. calls before the
        handshake answer; never used to wait for an expected frame)."""
        deadline = time.monotonic() + window_s
        while (remaining := deadline - time.monotonic()) > 0:
            self.pump(remaining)

    def write(self, data: bytes, *, intent: str) -> None:
        """Bytes on the host-core's stdout (what the client reads)."""
        if self.link is None:
            raise ClientGone("no host-core was started")
        self.trace.wrote(data, step=0, meta={"intent": intent})
        try:
            self.link.write(data, timeout=self.response_s)
        except (WriteTimeout, BrokenPipeError, OSError) as exc:
            raise ClientGone(f"the client stopped reading its host-core ({type(exc).__name__})") from None

    def answer(self, request: Request, data: bytes, *, intent: str = "answer") -> None:
        # The clock is read before the write: a wait measured from here can only
        # be longer than the one the client made, never shorter.
        at = time.monotonic()
        self.write(data, intent=intent)
        request.answered_at = at
        with contextlib.suppress(ValueError):
            request.response = json.loads(data)

    def close_hostcore_stdout(self) -> None:
        """The host-core's stdout ends (the client reads end of input)."""
        if self.link is not None:
            self.trace.action("close_hostcore_stdout", step=0)
            self.link.close_stdin()

    # -- pumping ---------------------------------------------------------------------
    def pump(self, timeout: float) -> None:
        """Take in what both pipes hold; wait up to ``timeout`` (sliced) for more."""
        if self._drain():
            return
        poller = select.poll()
        if self.link is None:
            poller.register(self.listener.fileno(), select.POLLIN)
        elif self.link.connected:
            poller.register(self.link.fileno(), select.POLLIN)
        if not self.client_stdout_closed and self.client.proc.stdout is not None:
            with contextlib.suppress(ValueError, OSError):
                poller.register(self.client.proc.stdout.fileno(), select.POLLIN)
        poller.poll(max(1, int(min(timeout, POLL_SLICE_S) * 1000)))
        self._drain()

    def _drain(self) -> bool:
        got = False
        if self.link is None:
            self.link = self.listener.accept(self._token, 0)
        if self.link is not None:
            while (item := self.link.next_event(0)) is not None:
                got = True
                self._from_client_to_hostcore(item)
        while not self.client_stdout_closed and (out := self.client.next_event(0)) is not None:
            got = True
            self._from_client_stdout(out)
        return got

    def _from_client_to_hostcore(self, item: Received | StdoutClosed) -> None:
        if isinstance(item, StdoutClosed):
            # The client closed the host-core's stdin: like a host-core, the probe exits.
            self.hostcore_stdin_closed = True
            if self.link is not None:
                with contextlib.suppress(OSError, WriteTimeout, BrokenPipeError):
                    self.link.command({"t": "exit", "code": 0})
            return
        index = self._frames
        self._frames += 1
        event = item.event
        if not isinstance(event, Frame):
            self.trace.saw(index, None, event.size, step=0)
            self.oversized.append((item.at, event.size))
            # A host-core that still sees an over-long line answers LIMIT_EXCEEDED;
            # the id is not peeked here (the relay keeps no prefix), so it is null.
            with contextlib.suppress(ClientGone):
                self.write(line(error(None, 1002, "LIMIT_EXCEEDED", "request line over 64 MiB")), intent="limit")
            return
        self.trace.saw(index, event.payload, len(event.payload), step=0)
        if not event.payload.strip():
            return
        utf8 = list(rpc_client.utf8_frame(event.payload))
        self.add(v.in_frame(index) if isinstance(v, Violation) else v for v in utf8)
        if any(isinstance(v, Violation) for v in utf8):
            return  # unreadable: left unanswered, as its id cannot be trusted
        try:
            message = json.loads(event.payload)
        except ValueError:
            self.violate(Violation("RPC-2-jsonrpc-2.0", f"a client line of {len(event.payload)} bytes is not JSON"))
            return
        self.add(v.in_frame(index) if isinstance(v, Violation) else v for v in rpc_client.request_envelope(message))
        if not isinstance(message, dict) or "id" not in message:
            return  # a notification to the host-core: nothing to answer
        request = Request(index, item.at, message)
        self.requests.append(request)
        if request.method in self.hold:
            return
        step = request.step
        count = self._counts[step]
        self._counts[step] += 1
        data = self.policy(request, count)
        if data is not None:
            with contextlib.suppress(ClientGone):
                self.answer(request, data)

    def _from_client_stdout(self, item: Received | StdoutClosed) -> None:
        if isinstance(item, StdoutClosed):
            self.client_stdout_closed = True
            return
        event = item.event
        if not isinstance(event, Frame):
            raise ContractBroken(
                f"the client wrote an outcome line of {event.size:,} bytes (limit {OUTCOME_LINE_BYTES:,})"
            )
        if not event.payload.strip():
            return
        try:
            record = json.loads(event.payload)
        except (UnicodeDecodeError, ValueError):
            raise ContractBroken(
                f"the client wrote a stdout line that is not JSON ({len(event.payload)} bytes)"
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise ContractBroken("the client wrote a stdout line that is not an object with a string kind")
        self.trace.action("outcome", step=0, kind=record["kind"])
        if record["kind"] == "notification":
            if len(self.notifications) < MAX_KEPT_REPORTS:
                self.notifications.append(record)
        elif len(self.outcomes) < MAX_KEPT_REPORTS:
            self.outcomes.append(record)

    # -- ending ------------------------------------------------------------------------
    def close(self) -> None:
        """Kill the client's group and the probe; keep this scenario's trace
        for each requirement it was the first to break."""
        # The probe first: a client may start its host-core outside its own
        # process group, which is no fault, so it must not count as a stray.
        self.listener.accept_ready()  # a probe that connected but was never taken is killed too
        self.listener.close()
        self.client.kill_group()
        self.recorder.strays.extend(self.client.strays)
        self.recorder.unwatch(self.trace)
        self.trace.keep_first(
            self._violated, self.recorder.trace_dir, self.recorder.traces, self.recorder.first_contexts()
        )

    def __enter__(self) -> ClientPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
