"""The probe process: relays stdin to the harness, writes what it is told.

Two threads: one relays stdin (the host's frames) to the channel, the main
one obeys commands. Stdout is written only by the main thread, only with
bytes from an ``out`` command, so nothing but the harness's frames ever
reaches the host.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from conformance.probe import channel

# A grandchild ignores SIGTERM on purpose; this bounds its life even if both
# the host and the harness failed to kill it, so a broken run leaks nothing
# for long.
GRANDCHILD_LIFETIME_S = 120
FLOOD_LINE = 100
GRANDCHILD_CODE = (
    f"import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep({GRANDCHILD_LIFETIME_S})\n"
)


class Probe:
    def __init__(self, sock: socket.socket, token: str) -> None:
        self.sock = sock
        self.token = token
        self._send_lock = threading.Lock()
        self._signal_r, self._signal_w = os.pipe()

    def send(self, data: bytes) -> None:
        with self._send_lock:
            self.sock.sendall(data)

    def hello(self) -> None:
        self.send(
            channel.encode(
                {
                    "t": "hello",
                    "token": self.token,
                    "pid": os.getpid(),
                    "pgid": os.getpgid(0),
                    "ppid": os.getppid(),
                    "cwd": os.getcwd(),
                    "argv": sys.argv,
                    "env": sorted(os.environ),
                }
            )
        )

    # -- stdin relay (own thread) ----------------------------------------------
    def relay_stdin(self) -> None:
        try:
            while chunk := os.read(0, channel.RELAY_CHUNK):
                self.send(channel.data_message("in", chunk))
            self.send(channel.encode({"t": "eof"}))
        except OSError:
            os._exit(0)  # the harness is gone: nothing left to do

    def relay_signals(self) -> None:
        while data := os.read(self._signal_r, 1):
            with contextlib.suppress(OSError):
                self.send(channel.encode({"t": "signal", "signum": data[0]}))

    def _on_signal(self, signum: int, frame: object) -> None:
        # Only a write to a pipe here: the main thread may hold the send lock.
        os.write(self._signal_w, bytes([signum]))

    # -- commands (main thread) ---------------------------------------------------
    def serve(self) -> int:
        splitter = channel.LineSplitter()
        while True:
            try:
                chunk = self.sock.recv(channel.RELAY_CHUNK)
            except OSError:
                return 0
            if not chunk:
                return 0  # the harness closed the channel: the run is over
            for message in splitter.feed(chunk):
                self.obey(message)

    def obey(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        if kind == "out":
            try:
                _write_all(1, channel.payload(message))
            except OSError as exc:  # the host closed our stdout: say so, keep serving
                self.send(channel.encode({"t": "stdout_broken", "errno": exc.errno}))
        elif kind == "err":
            _write_all(2, channel.payload(message))
        elif kind == "flood":
            threading.Thread(
                target=self.flood, args=(int(message["bytes"]), bool(message["newlines"])), daemon=True
            ).start()
        elif kind == "exit":
            os._exit(int(message["code"]))
        elif kind == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "ignore_term":
            signal.signal(signal.SIGTERM, self._on_signal)
            self.send(channel.encode({"t": "ignoring", "signum": int(signal.SIGTERM)}))
        elif kind == "grandchild":
            self.grandchild()
        elif kind == "close_stdout":
            os.close(1)
        else:
            raise channel.ChannelError(f"unknown command {kind!r}")

    def flood(self, total: int, newlines: bool) -> None:
        """Write ``total`` bytes to stderr; blocks as long as the host does
        not drain it, which is what the harness measures."""
        line = b"x" * (FLOOD_LINE - 1) + b"\n" if newlines else b"x" * FLOOD_LINE
        block = line * 640
        written = 0
        try:
            while written < total:
                n = min(len(block), total - written)
                _write_all(2, block[:n])
                written += n
            self.send(channel.encode({"t": "flooded", "bytes": written}))
        except OSError:
            return

    def grandchild(self) -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", GRANDCHILD_CODE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.send(channel.encode({"t": "grandchild", "pid": child.pid}))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="conformance.probe")
    parser.add_argument("--connect", required=True, help="the harness's Unix socket")
    parser.add_argument("--token", required=True, help="which probe this is (the harness chose it)")
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(args.connect)
    except OSError as exc:
        print(f"conformance.probe: cannot reach the harness at {args.connect}: {exc}", file=sys.stderr)
        return 3
    probe = Probe(sock, args.token)
    probe.hello()
    threading.Thread(target=probe.relay_stdin, daemon=True).start()
    threading.Thread(target=probe.relay_signals, daemon=True).start()
    try:
        return probe.serve()
    except (channel.ChannelError, KeyError, ValueError) as exc:
        print(f"conformance.probe: bad control message: {exc}", file=sys.stderr)
        return 3
