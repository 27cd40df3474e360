"""The harness as the client of a host-core (host RPC protocol v11).

One :class:`HostcorePeer` drives one generation of a host-core process: it
spawns the command through :class:`~conformance.transport.process.TargetProcess`
(own process group, bounded reads, nothing outlives :meth:`close`), writes
requests, and pumps stdout until the awaited answer arrives or a deadline
passes. Every frame the host-core writes goes through the envelope rules
(RPC-2-jsonrpc-2.0, §7 error rules) before the caller sees it, and is kept
in the generation's trace. Judging what a result *means* is the caller's
business (machines/hostcore.py, runner/hostcore.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.evidence import Recorder
from conformance.protocol import rpc_limits
from conformance.protocol.framing import Frame
from conformance.protocol.rpc_answers import AnswerLedger, id_key, judge_response
from conformance.protocol.rpc_errors import check_error_response
from conformance.protocol.violations import Finding, Violation
from conformance.transport.process import TargetProcess, WriteTimeout, sanitized_env
from conformance.transport.target import Received, StdoutClosed
from conformance.transport.trace import TRACE_FORMAT, Trace

DATA_DIR = "{data_dir}"  # placeholder in a host-core command: a fresh directory per run
MAX_KEPT_NOTIFICATIONS = 1000  # per generation: a flooding host-core cannot grow our memory
CLIENT_VERSION = "octet-conformance"
WRITE_CHUNK_BYTES = 1024 * 1024


class HostcoreGone(Exception):
    """The host-core closed stdout or stopped reading: the generation is over."""


@dataclass(frozen=True)
class HostcoreCommand:
    argv: tuple[str, ...]
    cwd: Path

    def expand(self, data_dir: Path) -> list[str]:
        return [arg.replace(DATA_DIR, str(data_dir)) for arg in self.argv]


def handshake_params(version: object = rpc_limits.PROTOCOL_VERSION) -> dict[str, Any]:
    return {"protocolVersion": version, "client": rpc_limits.HANDSHAKE_CLIENT, "clientVersion": CLIENT_VERSION}


class HostcorePeer:
    """One host-core process and what the harness saw of it."""

    def __init__(self, command: HostcoreCommand, data_dir: Path, recorder: Recorder, *, response_s: float) -> None:
        self.command = command
        self.data_dir = data_dir
        self.recorder = recorder
        self.response_s = response_s
        self.step = 0
        self.notifications: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._answers: dict[object, dict[str, Any]] = {}
        # What was sent and answered, for the JSON-RPC §5 rules; requests
        # whose answer echoed their id with another type (matched anyway, so
        # the run goes on) are kept in ``loose``.
        self.ledger = AnswerLedger()
        self.loose: set[object] = set()
        self._seen = 0
        self._violated: dict[str, str] = {}  # requirement -> message, first in this generation
        argv = command.expand(data_dir)
        target = {"role": "hostcore", "argv": list(command.argv), "cwd": str(command.cwd)}  # what replay re-runs
        self.trace = Trace(
            {"format": TRACE_FORMAT, "role": "hostcore", "command": argv, "target": target, **recorder.run_info}
        )
        recorder.watch(self.trace)  # what is judged from now on is marked in this generation's trace
        self.target = TargetProcess(
            argv, cwd=command.cwd, env=sanitized_env(), max_frame_bytes=rpc_limits.MAX_LINE_BYTES
        )
        self.alive = True
        # Whether it ever wrote a line that is JSON, and the first that is
        # not: a process that ends having written no JSON was never a
        # host-core (runner/hostcore.py makes that a SetupFailure).
        self.spoke = False
        self.first_garbage: bytes | None = None

    # -- judging -----------------------------------------------------------------
    def add(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            if isinstance(f, Violation):
                self.violate(f)
            else:
                self.recorder.add([f])

    def violate(self, v: Violation) -> None:
        self.recorder.violate(v, stderr=self.target.stderr_excerpt(), trace=self.trace)
        self._violated.setdefault(v.requirement, v.message)

    # -- writing -----------------------------------------------------------------
    def write_raw(
        self, data: bytes, *, intent: str, recipe: dict[str, Any] | None = None, carries: tuple[object, ...] = ()
    ) -> None:
        """``carries``: ids of the requests in ``data`` (an answer judged missing marks this write)."""
        self.trace.wrote(data, step=self.step, meta={"intent": intent}, recipe=recipe, carries=carries)
        self.ledger.wrote(data)
        try:
            self.target.write(data, timeout=self.response_s)
        except (WriteTimeout, BrokenPipeError, OSError) as exc:
            self.alive = False
            raise HostcoreGone(f"host-core stopped reading stdin ({type(exc).__name__})") from None

    def write_padded_line(self, head: bytes, size: int, tail: bytes, *, intent: str, timeout: float) -> None:
        """Write one line of ``size`` payload bytes: ``head``, filler ``x``,
        ``tail``, then LF; in chunks, so the harness never holds the line
        whole. The trace keeps its recipe, not its bytes."""
        filler = size - len(head) - len(tail)
        self.trace.action(intent, step=self.step, size=size, head=head.decode(), tail=tail.decode(), filler="x")
        self.ledger.wrote_long_line(head)
        chunk = b"x" * WRITE_CHUNK_BYTES
        deadline = self.target.now() + timeout
        try:
            self.target.write(head, timeout=timeout)
            while filler > 0:
                part = chunk[: min(filler, WRITE_CHUNK_BYTES)]
                self.target.write(part, timeout=max(deadline - self.target.now(), 0.1))
                filler -= len(part)
            self.target.write(tail + b"\n", timeout=max(deadline - self.target.now(), 0.1))
        except (WriteTimeout, BrokenPipeError, OSError) as exc:
            self.alive = False
            raise HostcoreGone(f"host-core stopped reading stdin ({type(exc).__name__})") from None

    def send(self, method: str, params: object = None, *, rid: object = None) -> object:
        """Write one request; its id (a fresh integer unless given)."""
        rid = next(self._ids) if rid is None else rid
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.write_raw(
            json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n", intent=method, carries=(rid,)
        )
        return rid

    def call(self, method: str, params: object = None, *, timeout: float | None = None) -> dict[str, Any] | None:
        """The whole response to one request, or None when none came in time."""
        return self.await_answer(self.send(method, params), timeout=timeout)

    # -- reading -----------------------------------------------------------------
    def await_answer(self, rid: object, *, timeout: float | None = None) -> dict[str, Any] | None:
        deadline = self.target.now() + (self.response_s if timeout is None else timeout)
        key = id_key(rid)
        while key not in self._answers:
            remaining = deadline - self.target.now()
            if remaining <= 0:
                return None
            self.pump(remaining)
        return self._answers.pop(key)

    def await_any(self, rids: Sequence[object], *, timeout: float) -> dict[str, Any] | None:
        """The first answer carrying any of ``rids`` (None: none in time)."""
        deadline = self.target.now() + timeout
        keys = [id_key(r) for r in rids]
        while not any(k in self._answers for k in keys):
            remaining = deadline - self.target.now()
            if remaining <= 0:
                return None
            self.pump(remaining)
        return self._answers.pop(next(k for k in keys if k in self._answers))

    def await_all(self, rids: Sequence[object], *, timeout: float | None = None) -> list[dict[str, Any] | None]:
        deadline = self.target.now() + (self.response_s if timeout is None else timeout)
        return [self.await_answer(r, timeout=max(deadline - self.target.now(), 0.0)) for r in rids]

    def pump(self, timeout: float) -> None:
        """Read one event (or wait ``timeout`` for it)."""
        item = self.target.next_event(timeout)
        if item is None:
            return
        if isinstance(item, StdoutClosed):
            self.alive = False
            raise HostcoreGone("host-core closed stdout")
        self._received(item)

    def _received(self, item: Received) -> None:
        index = self._seen
        self._seen += 1
        event = item.event
        if not isinstance(event, Frame):
            self.trace.saw(index, None, event.size, step=self.step)
            message = f"output line of {event.size:,} bytes is over the 64 MiB bound"
            self.violate(Violation("RPC-2-jsonrpc-2.0", message, (), index))
            return
        self.trace.saw(index, event.payload, len(event.payload), step=self.step)
        if not event.payload.strip():
            return  # NDJSON readers skip blank lines
        try:
            message = json.loads(event.payload)
        except (UnicodeDecodeError, ValueError):
            if self.first_garbage is None:
                self.first_garbage = bytes(event.payload[:120])
            self.violate(
                Violation("RPC-2-jsonrpc-2.0", f"output line of {len(event.payload)} bytes is not JSON", (), index)
            )
            return
        self.spoke = True
        self._message(message, index)

    def _message(self, message: object, index: int) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.violate(Violation("RPC-2-jsonrpc-2.0", "output frame is not a JSON-RPC 2.0 object", (), index))
            return
        self.recorder.exercise("RPC-2-jsonrpc-2.0")
        if "method" in message:
            if "id" in message:
                self.violate(Violation("RPC-2-jsonrpc-2.0", "the host-core sent a request; it only answers", (), index))
            elif len(self.notifications) < MAX_KEPT_NOTIFICATIONS:
                self.notifications.append(message)
            return
        matched, findings = judge_response(self.ledger, message)
        if "error" in message:
            findings.extend(check_error_response(message))
        self.add(f.in_frame(index) if isinstance(f, Violation) else f for f in findings)
        if matched.how == "again":
            return  # the first answer stands
        if matched.how == "loose":
            self.loose.add(matched.request)
        self._answers[matched.request if matched.request is not None else id_key(message.get("id"))] = message
        self.trace.answered(message.get("id"))

    # -- ending ------------------------------------------------------------------
    def stdin_eof(self, timeout: float) -> int | None:
        """Close stdin, read what is left, and the exit status (None: still running)."""
        self.target.close_stdin()
        self.ledger.closed()
        deadline = self.target.now() + timeout
        try:
            while self.alive and self.target.now() < deadline:
                self.pump(deadline - self.target.now())
        except HostcoreGone:
            pass
        return self.target.wait_exit(max(deadline - self.target.now(), 0.1))

    def close(self) -> None:
        """Kill the process group; save this generation's trace for each
        requirement it was the first to break."""
        self.target.kill_group()
        self.alive = False
        self.recorder.strays.extend(self.target.strays)
        self.recorder.unwatch(self.trace)
        self.trace.keep_first(
            self._violated, self.recorder.trace_dir, self.recorder.traces, self.recorder.first_contexts()
        )

    def __enter__(self) -> HostcorePeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
