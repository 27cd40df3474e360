"""Deliberate faults for the faulty client fixtures (``--fault NAME``).

Each fault breaks one rule of the document, so the client certification can
be shown to catch it (fixtures/clients/<name>/expect.toml). They live here,
as patches applied at start-up over the reference's own functions, so the
normal code paths carry none of them; with no ``--fault`` none of this runs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from conformance.protocol.framing import Frame

from . import client as client_module
from . import limits
from .connection import Connection, Message, encode_request
from .errors import CallTimedOut

log = logging.getLogger(__name__)
_ORIGINAL_DELIVER = Connection._deliver
EXTRA_ID = 999_999  # the id of a request a fault writes on its own


def _rewrite_lines(rewrite: Callable[[bytes], bytes]) -> None:
    original = Connection._write

    def _write(self: Connection, line: bytes) -> None:
        original(self, rewrite(line))

    Connection._write = _write  # type: ignore[method-assign]


def _extra_call_around_handshake(*, before: bool) -> None:
    """Write app.getVersion next to the handshake: before it, or right after
    it without waiting for its answer (§3)."""
    original = Connection._write
    extra = encode_request(EXTRA_ID, "app.getVersion", {})

    def _write(self: Connection, line: bytes) -> None:
        handshake = b'"method":"app.handshake"' in line
        if handshake and before:
            original(self, extra)  # the fault
        original(self, line)
        if handshake and not before:
            original(self, extra)  # the fault

    Connection._write = _write  # type: ignore[method-assign]


def _deliver_filter(keep: Callable[[Connection, Frame], bool]) -> None:
    original = Connection._deliver

    def _deliver(self: Connection, event: Any) -> None:
        if isinstance(event, Frame) and not keep(self, event):
            return
        original(self, event)

    Connection._deliver = _deliver  # type: ignore[method-assign]


def _notification_as_answer() -> None:
    """A notification that arrives while a call waits is taken for its answer (§8).

    Every notification is still delivered as usual; a call during which one
    arrived returns the first such notification instead of its answer. The
    reader handles frames in order, so notifications written before an answer
    are always seen by the time the call wakes up."""
    seen: list[Message] = []
    deliver = Connection._deliver
    request = Connection.request

    def _deliver(self: Connection, event: Any) -> None:
        if isinstance(event, Frame):
            try:
                message = json.loads(event.payload)
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" in message and "id" not in message:
                seen.append(message)
        deliver(self, event)

    def _request(self: Connection, request_id: int, line: bytes, timeout_s: float) -> Message:
        before = len(seen)
        answer = request(self, request_id, line, timeout_s)
        return seen[before] if len(seen) > before else answer  # the fault

    Connection._deliver = _deliver  # type: ignore[method-assign]
    Connection.request = _request  # type: ignore[method-assign]


def _split_on_separators(self: Connection, frame: Frame) -> bool:
    """Splits a frame the way str.splitlines does: U+2028/U+2029 end a line (§2)."""
    parts = frame.payload.decode("utf-8", "replace").splitlines()  # the fault
    if len(parts) <= 1:
        return True
    for part in parts:
        _ORIGINAL_DELIVER(self, Frame(frame.index, part.encode("utf-8"), frame.terminator))
    return False


def _stop_after_bad_line(self: Connection, frame: Frame) -> bool:
    try:
        json.loads(frame.payload)
    except ValueError:
        raise RuntimeError("the host-core wrote a line that is not JSON; the reader stops") from None  # the fault
    return True


def _echo_bad_line(self: Connection, frame: Frame) -> bool:
    try:
        json.loads(frame.payload)
    except ValueError:
        text = frame.payload.decode("utf-8", "replace")
        log.warning("the host-core wrote a line that is not JSON: %s", text)  # the fault
        return False
    return True


def _retry_oversized_once() -> None:
    """An oversized call that timed out is written once more (§0)."""
    limits.MAX_LINE_BYTES = 1 << 62
    original = client_module.HostClient.call

    def call(self: client_module.HostClient, method: str, params: Message | None = None, **kwargs: Any) -> Any:
        try:
            return original(self, method, params, **kwargs)
        except CallTimedOut:
            if params is not None and "pad" in params:
                return original(self, method, params, **kwargs)  # the fault
            raise

    client_module.HostClient.call = call  # type: ignore[method-assign]


def _retry_any_error() -> None:
    original = client_module.is_overloaded
    client_module.is_overloaded = lambda message: "error" in message or original(message)  # the fault


def _ignore_mismatch() -> None:
    original = client_module.handshake_problem
    client_module.handshake_problem = lambda answer: None if "result" in answer else original(answer)  # the fault


def _set(module: ModuleType, name: str, value: object) -> Callable[[], None]:
    return lambda: setattr(module, name, value)


def apply(name: str, command_module: ModuleType) -> None:
    """Switch on the fault ``name`` (one of :data:`NAMES`)."""
    _faults(command_module)[name]()


def _faults(command_module: ModuleType) -> dict[str, Callable[[], None]]:
    return {
        "early-call": lambda: _extra_call_around_handshake(before=False),
        "call-before-handshake": lambda: _extra_call_around_handshake(before=True),
        "wrong-client-name": lambda: _rewrite_lines(
            lambda line: line.replace(b'"client":"electron-main"', b'"client":"octet-client"')
        ),
        "jsonrpc-1-0": lambda: _rewrite_lines(lambda line: line.replace(b'"jsonrpc":"2.0"', b'"jsonrpc":"1.0"', 1)),
        "writes-latin1": lambda: _rewrite_lines(
            lambda line: line.decode("utf-8").encode("latin-1", "replace")  # the fault
        ),
        "ignores-mismatch": _ignore_mismatch,
        "exits-zero-on-mismatch": _set(command_module, "EXIT_HANDSHAKE_FAILED", 0),
        "retries-too-soon": _set(limits, "RETRY_DELAYS_S", (0.005, 0.005, 0.005, 0.005)),
        "retries-six-times": _set(limits, "RETRY_DELAYS_S", (0.05, 0.1, 0.2, 0.4, 0.4, 0.4)),
        "retries-any-error": _retry_any_error,
        "writes-oversized": _set(limits, "MAX_LINE_BYTES", 1 << 62),
        "retries-oversized": _retry_oversized_once,
        "notification-as-answer": _notification_as_answer,
        "drops-crlf-lines": lambda: _deliver_filter(lambda self, frame: frame.terminator != "crlf"),
        "splits-on-line-separators": lambda: _deliver_filter(_split_on_separators),
        "stops-after-bad-line": lambda: _deliver_filter(_stop_after_bad_line),
        "echoes-bad-line": lambda: _deliver_filter(_echo_bad_line),
        "drops-final-frame": lambda: _deliver_filter(lambda self, frame: frame.terminator != "eof"),
    }


NAMES = tuple(_faults(ModuleType("unused")))
