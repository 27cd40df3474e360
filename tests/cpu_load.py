"""Synthetic CPU load for tests that certify a reference on a busy machine.

Issue 20: every timing judgement must hold on a busy two-core machine, so
each reference is also certified while :func:`busy_cpus` keeps several
processes spinning. The spinners run in their own process group and are
killed however the test ends; nothing here measures time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True:\n    pass\n"


@contextmanager
def busy_cpus(count: int = 4) -> Iterator[None]:
    """``count`` processes spinning on the CPU for the duration of the block."""
    if count < 1:
        raise ValueError(f"count must be >= 1; got {count}")
    spinners = [
        subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True, stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            try:
                os.killpg(spinner.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for spinner in spinners:
            spinner.wait(timeout=10)
