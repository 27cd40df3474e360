"""Serving an extension on this process's stdin/stdout, the careful way.

Shared by ``python3 -m conformance.reference.extension`` and by test fixtures
that subclass :class:`ReferenceExtension`, so each fixture holds its one
fault and nothing else.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from .extension import ReferenceExtension
from .server import Server
from .writer import BinarySink, FrameWriter


def serve(
    extension: ReferenceExtension,
    *,
    writer: Callable[[BinarySink], FrameWriter] = FrameWriter,
    server: Callable[[ReferenceExtension, FrameWriter], Server] = Server,
    verbose: bool = False,
) -> NoReturn:
    """Serve until shutdown or stdin EOF, then exit the process."""
    # §0: diagnostics belong on stderr, which the host drains.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING)
    stdout = sys.stdout.buffer
    # Only the frame writer may touch stdout: a stray print() anywhere
    # (a subclass, a library) would corrupt the stream, so send it to stderr.
    sys.stdout = sys.stderr
    code = server(extension, writer(stdout)).serve(sys.stdin.fileno())
    sys.stderr.flush()
    # Every frame is already flushed by the writer. os._exit skips interpreter
    # finalisation, which could otherwise block on (or abort over) a daemon
    # worker still holding stdout's buffer lock while the host stops reading.
    os._exit(code)
