"""Every bound and timing constant the reference host-core uses, named once.

Section numbers refer to the host RPC protocol document (v11). The reference
keeps its own copy, as an independent host author would, instead of importing
the checker's limits: the two can then disagree, and that disagreement is found.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

PROTOCOL_VERSION = 11  # §3
HOST_NAME = "rust-host-core"  # §3 HandshakeResult.host
HOST_VERSION = "0.11.0-reference"

# §7 LIMIT_EXCEEDED: a request line over 64 MiB (terminator not counted).
MAX_LINE_BYTES = 64 * MIB
# How much of an oversized line is kept to peek its id from (§7).
ID_PEEK_BYTES = 4 * KIB
READ_CHUNK_BYTES = 64 * KIB

# §2.1: the RPC dispatcher's cap on active requests.
DISPATCHER_CAP = 32

# §4a: notification.list default and maximum; the inbox keeps the newest 200.
NOTIFICATION_LIMIT = 200

# §4 session.rename / deriveTitle: 1..80 Unicode code points after trimming.
TITLE_MAX_CODE_POINTS = 80
DEFAULT_SESSION_TITLE = "New chat"

# How long in-flight calls may take to settle after stdin EOF before exit.
DRAIN_TIMEOUT_S = 5.0
