"""The reference host RPC client (protocol v11): a library and a command.

    with HostClient(["octet-hostcore", "--data-dir", "/tmp/d"]) as client:
        client.handshake(client_version="1.0")
        client.call("app.health")

It imports none of the suite's validators (only the shared framing), so the
harness and this reference can disagree.
"""

from __future__ import annotations

from .client import HostClient, handshake_problem, is_overloaded
from .errors import (
    CallTimedOut,
    ClientError,
    HandshakeFailed,
    NotConnected,
    OversizedRequest,
    RpcError,
    TransportClosed,
)

__all__ = [
    "CallTimedOut",
    "ClientError",
    "HandshakeFailed",
    "HostClient",
    "NotConnected",
    "OversizedRequest",
    "RpcError",
    "TransportClosed",
    "handshake_problem",
    "is_overloaded",
]
