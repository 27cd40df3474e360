"""Every numeric bound and closed vocabulary of the host RPC protocol (v11), named once.

The extension protocol's bounds live in :mod:`.limits`; this module is its
counterpart for ``host-rpc-protocol``. Each constant carries the requirement id
that states it; tests exercise each bound at N-1, N and N+1. Sizes are bytes
of UTF-8 / encoded JSON; durations say their unit in the name.

Both the checker (validators, harness) and the reference host-core and client
read these constants: a bound is a fact of the document, not of either side.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

PROTOCOL_VERSION = 11  # RPC-3-handshake-params, RPC-3-handshake-result
HANDSHAKE_CLIENT = "electron-main"  # RPC-3-handshake-params
HANDSHAKE_HOST = "rust-host-core"  # RPC-3-handshake-result
DEFAULT_LOCALE = "en"  # RPC-3-handshake-params
WITHDRAWN_CAPABILITY = "a2a"  # RPC-3-no-a2a-capability
WITHDRAWN_NOTIFICATIONS = ("a2a.task.event", "a2a.push")  # RPC-3-no-a2a-notifications
WITHDRAWN_METHOD_PREFIX = "a2a."  # RPC-3-a2a-withdrawn

# -- §2 / §7 transport ---------------------------------------------------------
# A request line may hold at most this many bytes (terminator not counted, the
# suite's reading; see the catalog note of RPC-7-limit-exceeded).
MAX_LINE_BYTES = 64 * MIB  # RPC-7-limit-exceeded, RPC-7-client-refuses-oversized
# The band where counting the terminator (LF or CRLF) changes the verdict:
# payloads in (MAX_LINE_BYTES - LINE_BOUND_AMBIGUITY_BYTES, MAX_LINE_BYTES]
# may be accepted or refused.
LINE_BOUND_AMBIGUITY_BYTES = 2  # RPC-7-limit-exceeded
# The harness expects a peeked id only when it ends within this many bytes of
# the line's start; the document does not say how far a host looks.
ID_PEEK_EXPECTED_BYTES = 256  # RPC-7-limit-id-peeked
# How much of an oversized line's start a peer keeps to peek the id from
# (framing.FrameDecoder(prefix_bytes=...)); generous next to the expectation.
ID_PEEK_PREFIX_BYTES = 4 * KIB  # RPC-7-limit-id-peeked

# -- §2.1 admission and backpressure --------------------------------------------
MAX_ACTIVE_REQUESTS = 32  # RPC-2.1-dispatcher-cap
MAX_TOOL_EXECUTIONS = 16  # RPC-2.1-tool-total-budget
MAX_BASH_GLOBAL = 4  # RPC-2.1-bash-global-budget
MAX_BASH_PER_SESSION = 2  # RPC-2.1-bash-session-budget
MAX_READ_TOOLS = 8  # RPC-2.1-read-budget
MAX_MUTATING_GLOBAL = 2  # RPC-2.1-mutation-global-budget
MAX_MUTATING_PER_SESSION = 1  # RPC-2.1-mutation-session-budget
MAX_PLUGIN_TOOLS = 4  # RPC-2.1-plugin-budget
MAX_TOOLS_PER_SESSION = 4  # RPC-2.1-session-budget
MAX_QUEUED_TOOLS = 64  # RPC-2.1-queue-bound
ADMISSION_WAIT_S = 30.0  # RPC-2.1-wait-timeout

# The tool classes of the budget. Read/search and mutating membership is
# stated in §2.1/§4 (Shells); Bash is its own class; a plugin tool is any tool
# a plugin registers. Other builtins (TodoWrite, SubmitPlan, ...) count only
# against the total and session budgets.
READ_TOOLS = ("Read", "Glob", "Grep")  # RPC-2.1-read-budget
MUTATING_TOOLS = ("Write", "Edit")  # RPC-2.1-mutation-global-budget
BASH_TOOL = "Bash"  # RPC-2.1-bash-global-budget
# Tools §4 and §5 name without spelling out their arguments (TodoWrite,
# SubmitPlan and SubmitGoal have theirs): the names the harness sends are its
# own choice (docs/hostcore-requests.md), and a host-core may refuse them.
UNSPECIFIED_ARGS_TOOLS = (*READ_TOOLS, *MUTATING_TOOLS, BASH_TOOL)
# Methods §4 names without spelling out the params the harness must send
# them; the member names are the suite's choice (docs/hostcore-requests.md).
UNSPECIFIED_PARAMS_METHODS = (
    "workspace.set",
    "session.appendMessage",
    "session.get",
    "session.delete",
    "permissions.evaluate",
    "permissions.listSessionGrants",
    "permissions.clearSessionGrants",
    "plans.submit",
    "plans.pending",
    "plans.abort",
    "plans.queuedExecutions",
    "plans.claimExecution",
    "plans.finishExecution",
    "artifacts.list",
)

# The app.health toolBudget members (all numbers).
TOOL_BUDGET_FIELDS = ("active", "queued", "total", "shell", "reads", "mutations", "plugins")  # RPC-4-app.health

# The client's retry policy: the wait before retry 1..4, then give up.
RETRY_DELAYS_MS = (50, 100, 200, 400)  # RPC-2.1-client-retry-delays
MAX_RETRIES = len(RETRY_DELAYS_MS)  # RPC-2.1-client-retry-max-four
# Judge tolerances (harness parameters, not protocol bounds): a timer may fire a
# little early on coarse clocks, and a loaded machine may only delay it.
RETRY_EARLY_TOLERANCE_MS = 5.0  # RPC-2.1-client-retry-delays
RETRY_LATE_SLACK_MS = 2000.0  # RPC-2.1-client-retry-delays (two relays and a loaded machine ride on every wait)

# -- §4 method bounds ----------------------------------------------------------------
SESSION_TITLE_MIN_CODE_POINTS = 1  # RPC-4-session.rename
SESSION_TITLE_MAX_CODE_POINTS = 80  # RPC-4-session.rename, RPC-4-session.deriveTitle
MAX_NOTIFICATIONS = 200  # RPC-4-notification.list, RPC-10-07-notification-round-trip
NOTIFICATION_KINDS = ("task.completed", "task.failed")  # RPC-4-notification-shape
END_TURN_STATUSES = ("completed", "error", "aborted")  # RPC-4-session.endTurn
NOTIFYING_STATUSES = ("completed", "error")  # RPC-4-session.endTurn-notification-rule
MAX_TURN_QUEUE_PER_SESSION = 8  # RPC-4-session.queue-bound
PROJECT_MEMORY_MAX_BYTES = 32 * KIB  # RPC-4-project.memory.set, RPC-4-project.group.memory.set
READ_FRAGMENT_MAX_BYTES = 2 * MIB  # RPC-4-visualizations.readFragment
MAX_TODO_ITEMS = 50  # RPC-4-todowrite-rules
MAX_TODO_CONTENT_CHARS = 500  # RPC-4-todowrite-rules
AUTO_TITLE_PROMPT_MAX_CHARS = 1000  # RPC-4-plugin.session.autoTitleContext
AUTO_TITLE_REPLY_MAX_CHARS = 500  # RPC-4-plugin.session.autoTitleContext
PLUGIN_RATE_WINDOW_S = 60.0  # RPC-4-plugin.session-input-rules
PLUGIN_IMPORTS_PER_WINDOW = 10  # RPC-4-plugin.session-input-rules
PLUGIN_BATCH_IMPORTS_PER_WINDOW = 5  # RPC-4-plugin.session-input-rules
PLUGIN_DELETES_PER_WINDOW = 20  # RPC-4-plugin.session-input-rules
SEARCH_QUERY_MAX_CHARS = 500  # RPC-4-search.sessions
SEARCH_PAGE_SESSIONS = 30  # RPC-4-search.sessions
SEARCH_MATCHES_PER_SESSION = 2  # RPC-4-search.sessions
SEARCH_SNIPPET_CHARS = 180  # RPC-4-search.sessions
SEARCH_CONTEXT_AROUND = 21  # RPC-4-search.context
SEARCH_CONTEXT_ONE_SIDE = 20  # RPC-4-search.context
SEARCH_CONTEXT_MESSAGE_CHARS = 64 * 1024  # RPC-4-search.context (64 Ki characters)
MAX_CONFIG_SYNC_HISTORY = 30  # RPC-10-config-sync-rules
WORKTREE_MERGE_TOOL_WAIT_S = 5.0  # RPC-4-worktree.merge
WORKTREE_DELEGATE_TIMEOUT_S = 600.0  # RPC-4-worktree.delegate.create, RPC-4-worktree.delegate.settle
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")  # RPC-4-thinking-levels
CONFIGURE_THINKING_LEVELS = (*THINKING_LEVELS, "omit")  # RPC-4-session.configure
SESSION_MODES = ("plan", "goal", "agent")  # RPC-4-session.configure, RPC-5-requested-mode-ignored
REVIEW_ROLLBACK_OUTCOMES = ("rolledBack", "alreadyRolledBack", "conflict", "unavailable")  # RPC-4-review.rollback

# -- §5 tool execution ---------------------------------------------------------------
BASH_DEFAULT_TIMEOUT_MS = 60_000  # RPC-5-bash-default-timeout
BASH_TIMEOUT_MIN_MS = 1_000  # RPC-5-bash-timeout-override
BASH_TIMEOUT_MAX_MS = 21_600_000  # RPC-5-bash-timeout-override
SHELL_DIALECTS = ("powershell", "cmd", "posix")  # RPC-5-execute-params, RPC-5.2-catalog-shape
PLAN_MODE_ALLOWED_TOOLS = ("Read", "Glob", "Grep", "BrowserPreview", "Bash")  # RPC-5-plan-goal-allowed
SUBMIT_TOOLS = {"plan": "SubmitPlan", "goal": "SubmitGoal"}  # RPC-5-plan-goal-allowed, RPC-5.1-kind-mismatch
PLAN_MODE_DENIED_TOOLS = ("Write", "Edit")  # RPC-5-plan-goal-denied (plus plugin and unknown tools)

# -- §5.1 Plan and Goal ----------------------------------------------------------------
PROPOSAL_KINDS = ("plan", "goal")  # RPC-5.1-proposal-shape
PLANNING_STATES = ("inactive", "planning", "awaiting_approval")  # RPC-5.1-pending-result
PERMISSION_MODES = ("ask", "accept-edits", "auto")  # RPC-5.1-resolve-request
APPROVAL_ACTIONS = ("approve", "reject")  # RPC-5.1-resolve-request
PROPOSAL_STATUSES = ("pending", "approved", "rejected", "expired", "interrupted")  # RPC-5.1-proposal-shape
EXECUTION_STATES = ("queued", "running", "completed", "interrupted")  # RPC-5.1-execution-shape
ARTIFACT_DIRS = {"plan": ".pi/plan/", "goal": ".pi/goal/"}  # RPC-5.1-artifact-exact-bytes
PLAN_APPROVAL_DEADLINE_S = 30 * 60.0  # RPC-5.1-expiry
PLANS_CHANGED_FIELDS = (
    "sessionId",
    "state",
    "kind",
    "proposalId",
    "proposal",
    "action",
    "targetPermissionMode",
    "execution",
)  # RPC-5.1-plans-changed-shape

# -- §5.2 shells -------------------------------------------------------------------------
COMMAND_SHELL_IDS = ("windows-powershell", "windows-pwsh", "cmd", "git-bash", "bash")  # RPC-5.2-catalog-shape
OUTPUT_STREAMS = ("stdout", "stderr")  # RPC-5.1-tools-output-shape

# -- §6 permissions ----------------------------------------------------------------------
PERMISSION_RISKS = ("low", "medium", "high")  # RPC-6-request-shape
PERMISSION_DECISIONS = ("allow-once", "allow-session", "deny")  # RPC-6-resolve-params
