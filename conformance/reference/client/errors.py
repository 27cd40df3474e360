"""What a call through the reference client can end in, besides a result."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base of every failure the client reports."""


class HandshakeFailed(ClientError):
    """§3: the host-core is unusable; the message says what to do about it."""


class NotConnected(ClientError):
    """A call before a successful handshake (§3 rule 3) or after close."""


class OversizedRequest(ClientError):
    """The encoded request is over the 64 MiB line bound, so it was never
    written (§7 LIMIT_EXCEEDED: the client rejects the write). The message
    names the method and the size, never the payload."""

    def __init__(self, method: str, size: int, limit: int) -> None:
        super().__init__(f"{method} request is {size:,} bytes of UTF-8; the line limit is {limit:,} bytes")
        self.method = method
        self.size = size
        self.limit = limit


class CallTimedOut(ClientError):
    """No answer in time. Never retried (§2.1)."""


class TransportClosed(ClientError):
    """The host-core's stdout ended. Never retried (§2.1)."""


class RpcError(ClientError):
    """A JSON-RPC error answer (after any retries the policy allowed)."""

    def __init__(self, error: dict[str, Any], attempts: int) -> None:
        data = error.get("data")
        self.code = error.get("code")
        self.error_code = data.get("errorCode") if isinstance(data, dict) else None
        self.error = error
        self.attempts = attempts
        super().__init__(f"{self.code} {self.error_code or ''}: {error.get('message')}".strip())
