"""``octet-hostcore --data-dir DIR`` / ``python3 -m conformance.reference.hostcore``."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import limits
from .admission import Admission, Budget
from .clock import Clock, OffsetClock
from .stdio import REFERENCE, Parts, serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="octet-hostcore", description="reference host-core (host RPC protocol v11)")
    parser.add_argument("--data-dir", type=Path, required=True, help="directory holding the SQLite state")
    parser.add_argument(
        "--clock-offset-s",
        type=float,
        default=0.0,
        help="shift this process's clock (tests use it to reach deadlines without sleeping)",
    )
    parser.add_argument(
        "--tool-queue-limit", type=int, default=limits.TOOL_QUEUE_LIMIT, help="§2.1 queued tool executions"
    )
    parser.add_argument(
        "--admission-wait-s", type=float, default=limits.ADMISSION_WAIT_S, help="§2.1 longest admission wait"
    )
    parser.add_argument(
        "--plan-approval-ttl-s", type=float, default=limits.PLAN_APPROVAL_TTL_S, help="§5.1 approval deadline"
    )
    parser.add_argument("--verbose", action="store_true", help="log info-level diagnostics to stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, *, parts: Parts = REFERENCE) -> None:
    """Parse ``argv`` and serve. ``parts`` is the seam a wrapper uses to run
    the reference with classes of its own (docs/reference-hostcore.md, "Seams")."""
    args = parse_args(argv)
    clock: Clock | None = OffsetClock(args.clock_offset_s) if args.clock_offset_s else None
    admission = Admission(Budget(queue_limit=args.tool_queue_limit), wait_s=args.admission_wait_s)
    serve(
        args.data_dir,
        clock=clock,
        admission=admission,
        plan_approval_ttl_s=args.plan_approval_ttl_s,
        verbose=args.verbose,
        parts=parts,
    )


if __name__ == "__main__":
    main()
