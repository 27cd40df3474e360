"""The reference host RPC client: handshake first, bounded retries.

* §3: :meth:`HostClient.handshake` must succeed before any other call is
  written; a failed handshake (an error, another protocol version, a host
  still advertising the withdrawn ``a2a`` capability) leaves the client
  unusable with an actionable message, and nothing else is ever sent.
* §2.1: an explicit HOST_OVERLOADED answer -- the -32029 JSON-RPC error or a
  tools.execute result with that errorCode -- is retried after 50, 100, 200
  and 400 ms, at most four times; then the last answer is returned. Nothing
  else is retried: not a transport failure, not a timeout, not an error of an
  admitted request.
* §7: a request line over 64 MiB is refused before it reaches the pipe, and
  the identical payload is not retried.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from . import limits
from .connection import Connection, Message, encode_request
from .errors import HandshakeFailed, NotConnected, RpcError


def is_overloaded(message: Message) -> bool:
    error = message.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        code = data.get("errorCode") if isinstance(data, dict) else None
        return code == limits.HOST_OVERLOADED or (code is None and error.get("code") == limits.HOST_OVERLOADED_CODE)
    result = message.get("result")
    return isinstance(result, dict) and result.get("ok") is False and result.get("errorCode") == limits.HOST_OVERLOADED


def handshake_problem(answer: Message) -> str | None:
    """Why a handshake answer makes the host-core unusable, or None."""
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        data = error.get("data")
        code = (data.get("errorCode") if isinstance(data, dict) else None) or error.get("code")
        return f"the host-core refused the handshake ({code}: {error.get('message')})"
    result = answer.get("result")
    if not isinstance(result, dict):
        return "the handshake answer carries no result object"
    version = result.get("protocolVersion")
    if version != limits.PROTOCOL_VERSION or isinstance(version, bool):
        return f"the host-core speaks protocol {version!r}, this client {limits.PROTOCOL_VERSION} (§3 rule 1)"
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, list) or not isinstance(result.get("features"), list):
        return "the handshake result lacks its features/capabilities arrays"
    if limits.WITHDRAWN_CAPABILITY in capabilities:
        return "the host-core advertises the withdrawn a2a stack: it is a v10 host (§3 rule 9)"
    return None


class HostClient:
    """One host-core: its connection, the handshake, the calls.

    The class attributes below are the seam (docs/reference-hostcore.md,
    "Seams"): what a subclass -- a test's, a faulty fixture's -- may replace.
    The defaults are this client's rules."""

    connection_class: type[Connection] = Connection
    retry_delays_s: tuple[float, ...] = limits.RETRY_DELAYS_S
    max_line_bytes: int | None = None  # None: the table's bound (limits.MAX_LINE_BYTES)
    # Which answers are retried (§2.1), and why a handshake answer is unusable (§3).
    retryable: Callable[[Message], bool] = staticmethod(is_overloaded)
    unusable: Callable[[Message], str | None] = staticmethod(handshake_problem)

    def __init__(
        self,
        command: list[str],
        *,
        on_notification: Callable[[Message], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._connection = self.connection_class(command, on_notification=on_notification)
        self._sleep = sleep  # injectable: tests check the delays without waiting them
        self._ids = itertools.count(1)
        self._ready = False
        self._failed: str | None = None
        self.handshake_result: Message | None = None
        self.attempts_of_last_call = 0

    def handshake(self, *, client_version: str, locale: str = limits.DEFAULT_LOCALE) -> Message:
        if self._failed is not None:
            raise HandshakeFailed(self._failed)
        params = {
            "protocolVersion": limits.PROTOCOL_VERSION,
            "client": limits.CLIENT_NAME,
            "clientVersion": client_version,
            "locale": locale,
        }
        try:
            answer = self._send("app.handshake", params, limits.HANDSHAKE_TIMEOUT_S)
        except Exception as exc:
            raise self._fail(f"the host-core did not complete the handshake: {exc}") from exc
        problem = self.unusable(answer)
        if problem is not None:
            raise self._fail(problem)
        self.handshake_result = answer["result"]
        self._ready = True
        return answer["result"]

    def _fail(self, problem: str) -> HandshakeFailed:
        self._failed = f"{problem}. Install a host-core that speaks protocol {limits.PROTOCOL_VERSION}."
        return HandshakeFailed(self._failed)

    def call(self, method: str, params: Message | None = None, *, timeout_s: float = limits.CALL_TIMEOUT_S) -> Any:
        """The result; raises RpcError (after the retries §2.1 allows), or
        OversizedRequest / CallTimedOut / TransportClosed (never retried)."""
        if not self._ready:
            raise NotConnected(self._failed or f"{method} refused locally: app.handshake has not succeeded")
        body = params if params is not None else {}
        attempts = 0
        while True:
            answer = self._send(method, body, timeout_s)
            attempts += 1
            if not self.retryable(answer) or attempts > len(self.retry_delays_s):
                break
            self._sleep(self.retry_delays_s[attempts - 1])
        self.attempts_of_last_call = attempts
        if "error" in answer:
            raise RpcError(answer["error"] if isinstance(answer["error"], dict) else {}, attempts)
        return answer.get("result")

    def _send(self, method: str, params: Message, timeout_s: float) -> Message:
        request_id = next(self._ids)
        line = encode_request(request_id, method, params, limit=self.max_line_bytes)  # raises before any write
        return self._connection.request(request_id, line, timeout_s)

    def close(self) -> int | None:
        self._ready = False
        return self._connection.close()

    def __enter__(self) -> HostClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
