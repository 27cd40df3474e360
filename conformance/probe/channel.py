"""The probe's control channel: newline-delimited JSON over a Unix socket.

Probe -> harness (reports):

* ``{"t": "hello", "token", "pid", "pgid", "ppid", "cwd", "argv", "env"}``
  once, first (``env`` lists variable *names* only: values may be secrets);
* ``{"t": "in", "data": <base64>}`` bytes the host wrote to the probe's stdin;
* ``{"t": "eof"}`` the host closed the probe's stdin;
* ``{"t": "flooded", "bytes": N}`` a stderr flood finished (the host drained it);
* ``{"t": "grandchild", "pid": N}`` a grandchild was started;
* ``{"t": "ignoring", "signum": N}`` from now on that signal is ignored (answers ``ignore_term``);
* ``{"t": "signal", "signum": N}`` a signal the probe was told to ignore arrived;
* ``{"t": "stdout_broken", "errno": N}`` writing to stdout failed (the host closed it).

Harness -> probe (commands):

* ``{"t": "out", "data": <base64>}`` write these bytes to stdout, all of them;
* ``{"t": "err", "data": <base64>}`` write these bytes to stderr;
* ``{"t": "flood", "bytes": N, "newlines": bool}`` write N bytes of filler to
  stderr (lines of 100 bytes, or one endless line);
* ``{"t": "exit", "code": N}`` exit now with that status;
* ``{"t": "crash"}`` SIGKILL itself;
* ``{"t": "ignore_term"}`` ignore SIGTERM from now on (and report it);
* ``{"t": "grandchild"}`` start a grandchild, in the probe's process group,
  that ignores SIGTERM;
* ``{"t": "close_stdout"}`` close stdout and keep running.

No third-party imports and nothing heavy: the probe must start fast.
"""

from __future__ import annotations

import base64
import json
from typing import Any

MAX_LINE_BYTES = 1024 * 1024  # one relayed chunk is at most 64 KiB (~88 KiB in base64)
RELAY_CHUNK = 64 * 1024


class ChannelError(ValueError):
    """The other end wrote something that is not a channel message."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


def data_message(kind: str, data: bytes) -> bytes:
    return encode({"t": kind, "data": base64.b64encode(data).decode("ascii")})


def payload(message: dict[str, Any]) -> bytes:
    """The bytes an ``in`` / ``out`` / ``err`` message carries."""
    try:
        return base64.b64decode(str(message["data"]), validate=True)
    except (KeyError, ValueError) as exc:
        raise ChannelError(f"bad data in {message.get('t')!r} message: {exc}") from exc


class LineSplitter:
    """Bounded line splitter: a line over ``MAX_LINE_BYTES`` is an error, not
    a reason to buffer without end."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer += chunk
        out: list[dict[str, Any]] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            out.append(_decode(line))
        if len(self._buffer) > MAX_LINE_BYTES:
            raise ChannelError(f"control line longer than {MAX_LINE_BYTES} bytes")
        return out


def _decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise ChannelError(f"control line is not JSON: {exc}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ChannelError(f"control line is not a message object: {line[:80]!r}")
    return message
