"""``python3 -m conformance.reference.extension --api-version 0.2``."""

from __future__ import annotations

import argparse

from .catalog import API_VERSIONS
from .extension import ReferenceExtension
from .stdio import serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m conformance.reference.extension")
    parser.add_argument("--api-version", choices=API_VERSIONS, required=True)
    parser.add_argument("--verbose", action="store_true", help="log info-level diagnostics to stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    serve(ReferenceExtension(args.api_version), verbose=args.verbose)


if __name__ == "__main__":
    main()
