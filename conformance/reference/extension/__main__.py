"""``python3 -m conformance.reference.extension --api-version 0.2``."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .catalog import API_VERSIONS
from .extension import ReferenceExtension
from .server import run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m conformance.reference.extension")
    parser.add_argument("--api-version", choices=API_VERSIONS, required=True)
    parser.add_argument("--verbose", action="store_true", help="log info-level diagnostics to stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # §0: diagnostics belong on stderr, which the host drains.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING)
    stdout = sys.stdout.buffer
    # Only the frame writer may touch stdout: a stray print() anywhere
    # (a subclass, a library) would corrupt the stream, so send it to stderr.
    sys.stdout = sys.stderr
    return run(ReferenceExtension(args.api_version), sys.stdin.fileno(), stdout)


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Every frame is already flushed by the writer. os._exit skips interpreter
    # finalisation, which could otherwise block on (or abort over) a daemon
    # worker still holding stdout's buffer lock while the host stops reading.
    os._exit(code)
