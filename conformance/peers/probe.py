"""The harness side of the probe: the host under test seen as a target.

How to use::

    with ProbeListener() as listener:
        manifest = listener.write_manifest("p1", api_version="0.2", contributes={"tools": ["probe"]})
        ...  # tell the host (through its driver) to load ``manifest``
        link = listener.accept("p1", timeout=10.0)   # the probe the host spawned
        item = link.next_event(5.0)                  # a frame the host wrote (framing.FrameEvent)
        link.write(b'{"jsonrpc":"2.0","id":1,"result":{...}}\\n', timeout=5.0)
        link.command({"t": "crash"})                 # see conformance.probe.channel

A :class:`ProbeLink` offers what :class:`conformance.transport.target.Target`
offers, with the roles of the host under test: ``next_event`` yields the frames
the host wrote to the probe (through the shared sans-IO framing, so the frame
bound, CRLF and a final unterminated frame are handled as on the extension
side), ``write`` puts bytes on the probe's stdout (the host's input),
``close_stdin`` closes that stdout. What the probe itself reports (its pid,
environment, floods, grandchildren) is kept in ``reports``.

Every wait is bounded; reads are bounded (one control line at most
``channel.MAX_LINE_BYTES``, frames by ``max_frame_bytes``); :meth:`ProbeListener.close`
SIGKILLs every probe and grandchild it heard of whose process is still
there, so nothing a run made outlives it even when the host fails to clean up.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.manifest import OCTET_VERSION
from conformance.probe import channel
from conformance.protocol import limits
from conformance.protocol.framing import FrameDecoder
from conformance.transport.process import WriteTimeout
from conformance.transport.target import Received, StdoutClosed

ACCEPT_POLL_S = 0.05
PROBE_NAME = "octet-probe"
# The probe's stdout may be full while the host is busy; the channel keeps at
# most this many bytes of harness writes queued before a write waits.
SEND_TIMEOUT_S = 5.0


def probe_command(script: Path, socket_path: Path, token: str) -> list[str]:
    """The argv the host must run (see :func:`write_probe_script`)."""
    return [str(script), "--connect", str(socket_path), "--token", token]


def write_probe_script(folder: Path) -> Path:
    """An executable that starts the probe with this interpreter, by its own
    path: a host that resolves symlinks in argv[0] (or has another PATH)
    would otherwise run a Python without the suite installed."""
    script = folder / "probe"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom conformance.probe.process import main\nsys.exit(main(sys.argv[1:]))\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a manifest")


def manifest_text(
    *, name: str, command: list[str], api_version: str, contributes: dict[str, Any], capabilities: dict[str, Any]
) -> str:
    lines = [
        f"name = {_toml_value(name)}",
        'version = "0.1.0"',
        f"api_version = {_toml_value(api_version)}",
        f"requires_octet = {_toml_value(OCTET_VERSION)}",
        f"command = {_toml_value(command)}",
        "[contributes]",
        *(f"{k} = {_toml_value(v)}" for k, v in contributes.items()),
        "[capabilities]",
        *(f"{k} = {_toml_value(v)}" for k, v in capabilities.items()),
    ]
    return "\n".join(lines) + "\n"


class ProbeLost(RuntimeError):
    """The probe's channel closed or broke: the host killed it, or it exited."""


@dataclass
class ProbeLink:
    """One probe process (one generation of the extension the host runs)."""

    sock: socket.socket
    hello: dict[str, Any]
    max_frame_bytes: int = limits.MAX_FRAME_BYTES
    reports: list[dict[str, Any]] = field(default_factory=list)
    bytes_written: int = 0
    stderr_total: int = 0  # the probe's stderr goes to the host, not to us
    _splitter: channel.LineSplitter = field(default_factory=channel.LineSplitter)
    _decoder: FrameDecoder | None = None
    _pending: collections.deque[Received | StdoutClosed] = field(default_factory=collections.deque)
    connected: bool = True
    _stdin_ended: bool = False  # the host closed the probe's stdin

    def __post_init__(self) -> None:
        self._decoder = FrameDecoder(max_frame_bytes=self.max_frame_bytes)
        self.sock.setblocking(False)
        # When each process we may kill started: a pid is killed only while it
        # still names that process (pids are reused, fast on a busy machine).
        self._started = {self.pid: _start_time(self.pid)}

    @property
    def pid(self) -> int:
        return int(self.hello["pid"])

    @property
    def pgid(self) -> int:
        return int(self.hello["pgid"])

    def fileno(self) -> int:
        return self.sock.fileno()

    @staticmethod
    def now() -> float:
        return time.monotonic()

    # -- reading ---------------------------------------------------------------
    def next_event(self, timeout: float) -> Received | StdoutClosed | None:
        """The next frame event the host wrote, or None after ``timeout``."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while not self._pending:
            if not self.read_available():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.connected:
                    return None
                self._wait_readable(remaining)
        return self._pending.popleft()

    def _wait_readable(self, seconds: float) -> None:
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        poller.poll(max(0, math.ceil(seconds * 1000)))

    def read_available(self) -> bool:
        """Read what the channel holds now; True when anything new arrived."""
        if not self.connected:
            return False
        try:
            chunk = self.sock.recv(channel.RELAY_CHUNK * 2)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self._lost()
            return True
        try:
            messages = self._splitter.feed(chunk)
        except channel.ChannelError:
            self._lost()  # cannot happen with our probe; treated as losing it
            return True
        for message in messages:
            self._take(message)
        return True

    def _take(self, message: dict[str, Any]) -> None:
        assert self._decoder is not None
        at = time.monotonic()
        if message["t"] == "in":
            for event in self._decoder.feed(channel.payload(message)):
                self._pending.append(Received(event, at))
        elif message["t"] == "eof":
            self._end_of_input(at)
        else:
            self.reports.append({**message, "at": at})
            if message["t"] == "grandchild" and isinstance(message.get("pid"), int):
                self._started[message["pid"]] = _start_time(message["pid"])

    def _end_of_input(self, at: float) -> None:
        if self._stdin_ended:
            return
        self._stdin_ended = True
        assert self._decoder is not None
        for event in self._decoder.close():
            self._pending.append(Received(event, at))
        self._pending.append(StdoutClosed(at))

    def _lost(self) -> None:
        self.connected = False
        self._end_of_input(time.monotonic())
        with contextlib.suppress(OSError):
            self.sock.close()

    def report(self, kind: str) -> dict[str, Any] | None:
        """The first report of ``kind`` the probe sent (after reading what is there)."""
        self.read_available()
        return next((r for r in self.reports if r["t"] == kind), None)

    def await_report(self, kind: str, timeout: float) -> dict[str, Any] | None:
        """Wait up to ``timeout`` for a report of ``kind``; frames that arrive
        meanwhile stay queued for :meth:`next_event`."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while (found := self.report(kind)) is None and self.connected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._wait_readable(min(remaining, 0.05))
        return found if found is not None else self.report(kind)

    # -- writing ---------------------------------------------------------------
    def command(self, message: dict[str, Any], *, timeout: float = SEND_TIMEOUT_S) -> None:
        self._send(channel.encode(message), timeout)

    def write(self, data: bytes, *, timeout: float) -> None:
        """Put ``data`` on the probe's stdout (what the host reads)."""
        for start in range(0, len(data), channel.RELAY_CHUNK):
            self._send(channel.data_message("out", data[start : start + channel.RELAY_CHUNK]), timeout)
        self.bytes_written += len(data)

    def _send(self, data: bytes, timeout: float) -> None:
        if not self.connected:
            raise BrokenPipeError("the probe is gone")
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WriteTimeout(
                        f"probe did not take {len(view):,} pending bytes within {timeout:.1f}s"
                    ) from None
                self.read_available()  # the probe may be waiting for us to read
                poller = select.poll()
                poller.register(self.sock.fileno(), select.POLLOUT)
                poller.poll(max(1, math.ceil(min(remaining, 0.05) * 1000)))
            except OSError as exc:
                self._lost()
                raise BrokenPipeError(f"the probe is gone: {exc}") from exc

    def close_stdin(self) -> None:
        """Close the probe's stdout: the host sees end of input."""
        with contextlib.suppress(OSError, WriteTimeout):
            self.command({"t": "close_stdout"})

    # -- ending ------------------------------------------------------------------
    def wait_exit(self, timeout: float) -> int | None:
        """0 once the probe is gone (its channel closed) within ``timeout``,
        else None. Its exit status belongs to the host, its parent."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while self.connected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not self.read_available():
                self._wait_readable(min(remaining, 0.05))
        return 0

    def running(self) -> bool:
        self.read_available()
        return self.connected

    def group_alive(self) -> bool:
        return _pid_exists(self.pid)

    def kill_group(self) -> None:
        """SIGKILL the probe and the grandchildren it reported (not its
        group: that may be the host's own) -- each only while its pid still
        names the process that reported it: a probe long gone may have left
        its pid to another process (another probe, or anyone's)."""
        for pid in self.pids():
            started = self._started.get(pid)
            if started is None or _start_time(pid) != started:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._lost()

    def pids(self) -> list[int]:
        return [self.pid, *(int(r["pid"]) for r in self.reports if r["t"] == "grandchild")]

    def stderr_excerpt(self, limit: int = 2048) -> str:
        return ""  # the probe's stderr belongs to the host under test


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat
    field 22), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProbeListener:
    """A Unix socket in a private temporary folder that probes connect to."""

    def __init__(self, *, max_frame_bytes: int = limits.MAX_FRAME_BYTES) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="octet-host-"))
        self.socket_path = self.folder / "s"
        self.max_frame_bytes = max_frame_bytes
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket_path))
        self._server.listen(16)
        self._server.setblocking(False)
        self.script = write_probe_script(self.folder)
        self._tokens = 0
        self._waiting: dict[str, list[ProbeLink]] = {}
        self.links: list[ProbeLink] = []

    def fileno(self) -> int:
        return self._server.fileno()

    def new_token(self) -> str:
        """A probe name not used before in this listener's life."""
        self._tokens += 1
        return f"p{self._tokens}"

    def write_manifest(
        self,
        token: str,
        *,
        api_version: str,
        contributes: dict[str, Any],
        capabilities: dict[str, Any] | None = None,
    ) -> Path:
        """``<folder>/<token>/extension.toml`` starting a probe that names itself ``token``."""
        folder = self.folder / token
        folder.mkdir(exist_ok=True)
        path = folder / "extension.toml"
        text = manifest_text(
            name=f"{PROBE_NAME}-{token}",  # distinct: a host may key extensions by name
            command=probe_command(self.script, self.socket_path, token),
            api_version=api_version,
            contributes=contributes,
            capabilities=capabilities if capabilities is not None else {"filesystem": "none"},
        )
        path.write_text(text, encoding="utf-8")
        return path

    def accept_ready(self) -> None:
        """Accept every connection waiting now (without blocking on hellos
        that have not arrived yet: the hello is the probe's first write and
        follows its connect at once)."""
        while True:
            try:
                conn, _ = self._server.accept()
            except (BlockingIOError, OSError):
                return
            link = _greet(conn, self.max_frame_bytes)
            if link is not None:
                self.links.append(link)
                self._waiting.setdefault(str(link.hello.get("token")), []).append(link)

    def accept(self, token: str, timeout: float) -> ProbeLink | None:
        """The next probe named ``token`` to connect, or None after ``timeout``."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            self.accept_ready()
            queue = self._waiting.get(token)
            if queue:
                return queue.pop(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            poller = select.poll()
            poller.register(self._server.fileno(), select.POLLIN)
            poller.poll(max(1, math.ceil(min(remaining, ACCEPT_POLL_S) * 1000)))

    def close(self) -> None:
        for link in self.links:
            link.kill_group()
        with contextlib.suppress(OSError):
            self._server.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ProbeListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


HELLO_TIMEOUT_S = 5.0


def _greet(conn: socket.socket, max_frame_bytes: int) -> ProbeLink | None:
    """Read the probe's hello (its first line); None when it never comes."""
    conn.settimeout(HELLO_TIMEOUT_S)
    splitter = channel.LineSplitter()
    try:
        while True:
            chunk = conn.recv(channel.RELAY_CHUNK)
            if not chunk:
                conn.close()
                return None
            messages = splitter.feed(chunk)
            if messages:
                break
    except (OSError, channel.ChannelError):
        conn.close()
        return None
    hello, rest = messages[0], messages[1:]
    if hello.get("t") != "hello":
        conn.close()
        return None
    link = ProbeLink(conn, hello, max_frame_bytes=max_frame_bytes)
    link._splitter = splitter  # bytes already read past the hello stay in order
    for message in rest:
        link._take(message)
    return link
