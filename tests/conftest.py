from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.transport.process import SPAWNED_GROUPS, group_exists

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fails the test if any process group the test started is still alive
    (grandchildren included: they share the group)."""
    start = len(SPAWNED_GROUPS)
    yield
    groups = SPAWNED_GROUPS[start:]
    deadline = time.monotonic() + 2.0  # killed members may take a moment to be reaped
    alive = [g for g in groups if group_exists(g)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [g for g in alive if group_exists(g)]
    assert groups, "the test started no target at all"
    assert not alive, f"process groups outlived the run: {alive}"
