"""Serving a host-core on this process's stdin/stdout."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from conformance.reference.extension.writer import FrameWriter

from . import limits
from .admission import Admission
from .clock import Clock
from .host import HostCore
from .server import Server


def serve(
    data_dir: Path,
    *,
    clock: Clock | None = None,
    admission: Admission | None = None,
    plan_approval_ttl_s: float = limits.PLAN_APPROVAL_TTL_S,
    verbose: bool = False,
    host_class: type[HostCore] = HostCore,
    server_class: type[Server] = Server,
    writer_class: type[FrameWriter] = FrameWriter,
) -> NoReturn:
    """Serve until stdin EOF, then exit the process."""
    # Diagnostics go to stderr; stdout carries frames only (§2).
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING)
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must never corrupt the stream
    host = host_class(data_dir, clock=clock, admission=admission, plan_approval_ttl_s=plan_approval_ttl_s)
    code = server_class(host, writer_class(stdout, max_frame_bytes=limits.MAX_LINE_BYTES)).serve(sys.stdin.fileno())
    host.close()
    sys.stderr.flush()
    # Every frame is flushed by the writer; os._exit skips finalisation that
    # could block on a daemon worker still holding stdout's lock.
    os._exit(code)
