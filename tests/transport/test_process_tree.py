"""Process trees: descendants that leave the target's process group are found
and killed with it, and named as strays; no target starts after a stop signal.

The double fork (an orphan re-parented to the harness as a child subreaper)
needs the subreaper, which only the command line enables; it is covered by the
``setsid-grandchild`` hostile fixture (tests/fixtures/test_hostile.py).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from conformance.transport import process
from conformance.transport.process import ProcInfo, Stopping, TargetProcess, descendants, proc_table

WAIT_S = 30.0  # a hang guard only

# Prints the pid of a sleeper child (its own session when asked), then waits.
PARENT = """
import subprocess, sys
code = "import os, signal, time\\n" + ("os.setsid()\\n" if sys.argv[1] == "setsid" else "")
code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(600)\\n"
child = subprocess.Popen([sys.executable, "-c", code])
print(child.pid, flush=True)
sys.stdin.read()
"""


def alive(pid: int) -> bool:
    info = proc_table().get(pid)
    return info is not None and info.state not in ("Z", "X")


def child_pid(proc: TargetProcess, mode: str) -> int:
    item = proc.next_event(WAIT_S)
    assert isinstance(item, process.Received), item
    pid = int(bytes(item.event.payload))  # type: ignore[union-attr]
    deadline = time.monotonic() + WAIT_S
    while mode == "setsid" and proc_table()[pid].pgid == proc.pgid:  # wait for its setsid()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return pid


@pytest.mark.parametrize("mode", ["setsid", "in-group"])
def test_descendants_are_killed_and_those_outside_the_group_named(tmp_path: Path, mode: str) -> None:
    proc = TargetProcess([sys.executable, "-c", PARENT, mode], cwd=tmp_path, max_frame_bytes=4096)
    try:
        pid = child_pid(proc, mode)
        assert alive(pid)
    finally:
        proc.kill_group()
    deadline = time.monotonic() + 3.0
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)
    if mode == "setsid":
        assert len(proc.strays) == 1 and proc.strays[0].startswith(f"pid {pid} ("), proc.strays
        assert proc.strays[0].endswith("had left the target's process group")
    else:
        assert proc.strays == ()  # killpg reaches it: nothing to report


def test_descendants_follow_parent_links() -> None:
    table = {
        10: ProcInfo(1, 10, "S", "leader"),
        11: ProcInfo(10, 10, "S", "child"),
        12: ProcInfo(11, 12, "S", "setsid-grandchild"),
        13: ProcInfo(12, 12, "Z", "its child"),
        20: ProcInfo(1, 20, "S", "unrelated"),
    }
    assert descendants(10, table) == {11, 12, 13}
    assert descendants(20, table) == set()
    assert descendants(99, table) == set()


def test_no_target_starts_after_a_stop_signal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "_STOP_SIGNAL", [15])
    before = len(process.SPAWNED_GROUPS)
    with pytest.raises(Stopping) as caught:
        TargetProcess([sys.executable, "-c", "pass"], cwd=tmp_path, max_frame_bytes=4096)
    assert caught.value.signum == 15 and isinstance(caught.value, KeyboardInterrupt)
    assert len(process.SPAWNED_GROUPS) == before


def test_proc_table_sees_this_process() -> None:
    me = proc_table()[os.getpid()]
    assert me.ppid == os.getppid() and me.pgid == os.getpgrp()
