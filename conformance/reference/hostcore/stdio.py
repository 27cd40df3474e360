"""Serving a host-core on this process's stdin/stdout."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from conformance.reference.extension.writer import FrameWriter

from . import limits
from .admission import Admission
from .clock import Clock
from .host import HostCore
from .server import Server

log = logging.getLogger(__name__)
PIPE_ERROR_EXIT = 1  # §2: stdout broke; the status is ours to choose


class ExitOnPipeError:
    """stdout as the writer's sink: a write or flush that fails ends the
    process (§2: without its control channel a host-core has nothing to serve).
    ``inner`` is the stream itself."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def write(self, data: bytes, /) -> object:
        return self._guarded(self.inner.write, data)

    def flush(self) -> object:
        return self._guarded(self.inner.flush)

    def _guarded(self, operation: Callable[..., object], *args: object) -> object:
        try:
            return operation(*args)
        except OSError as exc:
            log.error("stdout is no longer writable (%s); exiting", exc)
            sys.stderr.flush()
            os._exit(PIPE_ERROR_EXIT)


@dataclass(frozen=True)
class Parts:
    """The classes one host-core process is built from: the seam through
    which a wrapper (a faulty fixture, a test) swaps in a subclass of its own
    (docs/reference-hostcore.md, "Seams"). The defaults are the reference."""

    host_class: type[HostCore] = HostCore
    server_class: type[Server] = Server
    writer_class: type[FrameWriter] = FrameWriter


REFERENCE = Parts()


def serve(
    data_dir: Path,
    *,
    clock: Clock | None = None,
    admission: Admission | None = None,
    plan_approval_ttl_s: float = limits.PLAN_APPROVAL_TTL_S,
    verbose: bool = False,
    parts: Parts = REFERENCE,
) -> NoReturn:
    """Serve until stdin EOF, then exit the process."""
    # Diagnostics go to stderr; stdout carries frames only (§2).
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING)
    stdout = ExitOnPipeError(sys.stdout.buffer)
    sys.stdout = sys.stderr  # a stray print() must never corrupt the stream
    host = parts.host_class(data_dir, clock=clock, admission=admission, plan_approval_ttl_s=plan_approval_ttl_s)
    writer = parts.writer_class(stdout, max_frame_bytes=limits.MAX_LINE_BYTES)
    code = parts.server_class(host, writer).serve(sys.stdin.fileno())
    host.close()
    sys.stderr.flush()
    # Every frame is flushed by the writer; os._exit skips finalisation that
    # could block on a daemon worker still holding stdout's lock.
    os._exit(code)
