from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def processes_in(folder: Path) -> list[int]:
    """Pids whose working directory is ``folder`` (how targets are started)."""
    found = []
    target = str(folder.resolve())
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") == target:
                found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.fixture
def no_leftover_processes():  # type: ignore[no-untyped-def]
    """Fails the test if any process still runs in the folders it registers."""
    folders: list[Path] = []
    yield folders.append
    leftovers = {str(f): processes_in(f) for f in folders}
    assert not any(leftovers.values()), f"target processes outlived the run: {leftovers}"
