"""The reference host-core keeps its own table of bounds (as an independent
author would); this compares it with the checker's, so a misreading in either
shows up here instead of as a confusing certification failure."""

from __future__ import annotations

import pytest

from conformance.protocol import rpc_limits as checker
from conformance.reference.hostcore import limits as reference

PAIRS = [
    ("PROTOCOL_VERSION", "PROTOCOL_VERSION"),
    ("HOST_NAME", "HANDSHAKE_HOST"),
    ("MAX_LINE_BYTES", "MAX_LINE_BYTES"),
    ("DISPATCHER_CAP", "MAX_ACTIVE_REQUESTS"),
    ("TOOL_TOTAL", "MAX_TOOL_EXECUTIONS"),
    ("SHELL_GLOBAL", "MAX_BASH_GLOBAL"),
    ("SHELL_PER_SESSION", "MAX_BASH_PER_SESSION"),
    ("READS_GLOBAL", "MAX_READ_TOOLS"),
    ("MUTATIONS_GLOBAL", "MAX_MUTATING_GLOBAL"),
    ("MUTATIONS_PER_SESSION", "MAX_MUTATING_PER_SESSION"),
    ("PLUGINS_GLOBAL", "MAX_PLUGIN_TOOLS"),
    ("TOOLS_PER_SESSION", "MAX_TOOLS_PER_SESSION"),
    ("TOOL_QUEUE_LIMIT", "MAX_QUEUED_TOOLS"),
    ("ADMISSION_WAIT_S", "ADMISSION_WAIT_S"),
    ("NOTIFICATION_LIMIT", "MAX_NOTIFICATIONS"),
    ("TITLE_MAX_CODE_POINTS", "SESSION_TITLE_MAX_CODE_POINTS"),
    ("TODO_MAX_ITEMS", "MAX_TODO_ITEMS"),
    ("TODO_MAX_CONTENT_CODE_POINTS", "MAX_TODO_CONTENT_CHARS"),
    ("BASH_DEFAULT_TIMEOUT_MS", "BASH_DEFAULT_TIMEOUT_MS"),
    ("BASH_MIN_TIMEOUT_MS", "BASH_TIMEOUT_MIN_MS"),
    ("BASH_MAX_TIMEOUT_MS", "BASH_TIMEOUT_MAX_MS"),
    ("PLAN_APPROVAL_TTL_S", "PLAN_APPROVAL_DEADLINE_S"),
]


@pytest.mark.parametrize(("ours", "theirs"), PAIRS)
def test_reference_and_checker_read_the_same_bounds(ours: str, theirs: str) -> None:
    assert getattr(reference, ours) == getattr(checker, theirs)
