"""The lifecycle notifications a host sends (§1.10), checked before they go out.

The embedder reports what happened (a session, turn or tool started or
settled); this module makes sure the frame the host writes is well formed:
string identifiers (session_id; plus run_id and turn_id for turn events; plus
tool_call_id and tool_name for tool events), and for settled events an
outcome from the seven listed, a non-negative duration_ms and an optional
reason cut to 4 KiB of UTF-8.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol.limits import LIFECYCLE_EVENTS, MAX_SETTLED_REASON_BYTES

OUTCOMES = ("completed", "failed", "cancelled", "interrupted", "frontend_disconnected", "shutdown", "limit_reached")
IDENTIFIERS = {
    "session": ("session_id",),
    "turn": ("session_id", "run_id", "turn_id"),
    "tool": ("session_id", "run_id", "turn_id", "tool_call_id", "tool_name"),
}


def lifecycle_params(method: str, params: Any) -> dict[str, Any] | str:
    """The params to send, or a sentence saying why the event is malformed."""
    if method not in LIFECYCLE_EVENTS:
        return "not a lifecycle event"
    if not isinstance(params, dict):
        return "params must be an object"
    scope, _, phase = method.partition("/")
    missing = [name for name in IDENTIFIERS[scope] if not isinstance(params.get(name), str)]
    if missing:
        return f"needs string {', '.join(missing)}"
    if phase == "started":
        return dict(params)
    if params.get("outcome") not in OUTCOMES:
        return f"outcome must be one of {', '.join(OUTCOMES)}"
    duration = params.get("duration_ms")
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
        return "duration_ms must be a non-negative number"
    reason = params.get("reason")
    if reason is not None and not isinstance(reason, str):
        return "reason must be a string or null"
    out = dict(params)
    if isinstance(reason, str) and len(reason.encode("utf-8", "replace")) > MAX_SETTLED_REASON_BYTES:
        out["reason"] = reason.encode("utf-8", "replace")[:MAX_SETTLED_REASON_BYTES].decode("utf-8", "ignore")
    return out
