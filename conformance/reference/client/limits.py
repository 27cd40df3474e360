"""The bounds and timings the reference client keeps (host RPC v11).

Its own table, as an independent client author would keep it; a test
compares it with the checker's (tests/reference/test_reference_client.py).
"""

from __future__ import annotations

MIB = 1024 * 1024

PROTOCOL_VERSION = 11  # §3
CLIENT_NAME = "electron-main"  # §3 HandshakeParams.client
DEFAULT_LOCALE = "en"  # §3
WITHDRAWN_CAPABILITY = "a2a"  # §3 rule 9: a host advertising it is a v10 host

MAX_LINE_BYTES = 64 * MIB  # §7 LIMIT_EXCEEDED: never written by this client

# §2.1: waits before retries 1..4 of an explicit HOST_OVERLOADED answer.
RETRY_DELAYS_S = (0.050, 0.100, 0.200, 0.400)
HOST_OVERLOADED = "HOST_OVERLOADED"
HOST_OVERLOADED_CODE = -32029

# This client's own patience (the document sets none for ordinary calls).
HANDSHAKE_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 5.0  # after stdin EOF, before the host-core is killed
