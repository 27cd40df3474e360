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

# §2.1 execution budget for tools.execute.
TOOL_TOTAL = 16
SHELL_GLOBAL, SHELL_PER_SESSION = 4, 2
READS_GLOBAL = 8
MUTATIONS_GLOBAL, MUTATIONS_PER_SESSION = 2, 1
PLUGINS_GLOBAL = 4
TOOLS_PER_SESSION = 4
TOOL_QUEUE_LIMIT = 64
ADMISSION_WAIT_S = 30.0  # a queued call waits at most this long

# §5 Bash timeoutMs: default and the accepted override range.
BASH_DEFAULT_TIMEOUT_MS = 60_000
BASH_MIN_TIMEOUT_MS, BASH_MAX_TIMEOUT_MS = 1_000, 21_600_000

# Bounds this reference chooses for what a tool returns ("final results
# remain bounded", §8.4).
MAX_READ_BYTES = 256 * KIB
MAX_STREAM_RESULT_BYTES = 256 * KIB  # per Bash stream, kept from the tail
MAX_GLOB_RESULTS = 1_000
MAX_GREP_MATCHES = 500
OUTPUT_CHUNK_BYTES = 8 * KIB  # a tools.output chunk carries at most this much

# TodoWrite (§4 Session Todo checklist).
TODO_MAX_ITEMS = 50
TODO_MAX_CONTENT_CODE_POINTS = 500

# §5.1: the absolute deadline of a pending Plan/Goal approval.
PLAN_APPROVAL_TTL_S = 30 * 60
# How often the host looks for approvals past their deadline.
PLAN_SWEEP_INTERVAL_S = 1.0

# A request line past this size is buffered on disk, not in memory (see
# spill.py): draining an oversized line then costs about this much memory.
SPILL_AFTER_BYTES = 4 * MIB
