"""``octet-hostcore-client [options] -- HOSTCORE COMMAND...``: the reference
client as a command, for certifying host-cores by hand and for the harness
that certifies clients.

It starts the host-core command, completes the handshake (or exits 2 with an
actionable message on stderr, having sent nothing else), then reads one JSON
object per line from stdin -- ``{"method": ..., "params": {...}}``, optionally
``"padBytes": N`` (adds a ``pad`` string of N bytes to params, to provoke the
line limit without piping 64 MiB in) and ``"timeoutS"`` -- and performs the
calls one at a time. Each outcome, and each server notification, is written
to stdout as one JSON line with a ``kind``: handshake, result, error,
refused, timeout, closed, notification. stdin EOF closes the host-core.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from dataclasses import dataclass
from typing import Any

from . import limits
from .client import HostClient
from .errors import CallTimedOut, HandshakeFailed, OversizedRequest, RpcError, TransportClosed

EXIT_HANDSHAKE_FAILED = 2


@dataclass(frozen=True)
class Parts:
    """What the command is built from: the seam through which a wrapper (a
    faulty fixture, a test) runs it with a client class or exit status of its
    own (docs/reference-hostcore.md, "Seams"). The defaults are the reference."""

    client_class: type[HostClient] = HostClient
    handshake_failed_exit: int = EXIT_HANDSHAKE_FAILED


REFERENCE = Parts()

_out_lock = threading.Lock()


def emit(record: dict[str, Any]) -> None:
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="octet-hostcore-client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--client-version", default="0.1.0")
    parser.add_argument("--locale", default=limits.DEFAULT_LOCALE)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the host-core command")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("give the host-core command after --")
    return args


def perform(client: HostClient, request: Any) -> dict[str, Any]:
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return {"kind": "invalid", "reason": "each input line must be an object with a string method"}
    method = request["method"]
    params = dict(request.get("params") or {})
    if isinstance(request.get("padBytes"), int):
        params["pad"] = "x" * request["padBytes"]
    timeout = request.get("timeoutS")
    try:
        result = client.call(method, params, timeout_s=float(timeout) if timeout else limits.CALL_TIMEOUT_S)
    except RpcError as exc:
        return {"kind": "error", "method": method, "error": exc.error, "attempts": exc.attempts}
    except OversizedRequest as exc:
        return {"kind": "refused", "method": method, "bytes": exc.size, "limit": exc.limit}
    except CallTimedOut as exc:
        return {"kind": "timeout", "method": method, "reason": str(exc)}
    except TransportClosed as exc:
        return {"kind": "closed", "method": method, "reason": str(exc)}
    return {"kind": "result", "method": method, "result": result, "attempts": client.attempts_of_last_call}


def main(argv: list[str] | None = None, *, parts: Parts = REFERENCE) -> None:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING)
    client = parts.client_class(args.command, on_notification=lambda m: emit({"kind": "notification", "message": m}))
    try:
        emit({"kind": "handshake", "result": client.handshake(client_version=args.client_version, locale=args.locale)})
    except HandshakeFailed as exc:
        print(f"octet-hostcore-client: {exc}", file=sys.stderr)
        client.close()
        sys.exit(parts.handshake_failed_exit)
    try:
        for line in sys.stdin:
            if line.strip():
                try:
                    request = json.loads(line)
                except ValueError:
                    emit({"kind": "invalid", "reason": "input line is not JSON"})
                    continue
                record = perform(client, request)
                emit(record)
                if record["kind"] == "closed":
                    break
    finally:
        client.close()


if __name__ == "__main__":
    main()
