"""Fixtures for the reference host-core tests (pipes to a real process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hostcore_peer import HostcorePeer, Spawn


@pytest.fixture
def spawn_hostcore(tmp_path: Path) -> Iterator[Spawn]:
    """Starts host-cores on one data directory; all are killed at teardown."""
    started: list[HostcorePeer] = []

    def start(*extra: str) -> HostcorePeer:
        peer = HostcorePeer(tmp_path / "data", tmp_path / "stderr.log", *extra)
        started.append(peer)
        return peer

    yield start
    for peer in started:
        peer.kill()


@pytest.fixture
def hostcore(spawn_hostcore: Spawn) -> HostcorePeer:
    """A host-core that has completed its handshake."""
    peer = spawn_hostcore()
    peer.handshake()
    return peer
