"""What the harness offers when it plays host to an extension (§1.1).

This is the suite's policy, not the document's: the optional features the
harness can honestly host per API version (it answers policy/evaluate with a
scripted deny, sends lifecycle notifications, accepts progress), the protocol
version and the concurrency limit it offers. Conditional services
(agent_sessions, approvals ...) are never offered, so an extension that
negotiates them is caught. It sits in the core so that the strategies that
generate offers, the peer that answers the extension and the runner that
writes trace headers read one definition.
"""

from __future__ import annotations

HOSTED_OPTIONAL_FEATURES: dict[str, tuple[str, ...]] = {
    "0.1": (),
    "0.2": ("request_progress", "lifecycle_events", "policy_intents"),
    "0.4": ("request_progress", "lifecycle_events", "policy_intents", "tool_prompt_metadata_v1"),
}
# §2.19-§2.24: the Wave-1 services, answered by scripted backends
# (conformance/peers/wave1_backend.py). Offered on API 0.2+ together with
# WAVE1_PARTNER when generated offers draw it (so no earlier draw changes),
# and all at once by the certification's Wave-1 scenario.
WAVE1_OFFERED: tuple[str, ...] = (
    "composer",
    "shortcuts",
    "session_entries",
    "message_injection",
    "active_tools",
    "terminal_handoff",
)
WAVE1_PARTNER = "policy_intents"
# §1.1: offered only to a manifest with a non-empty secrets allowlist; the
# harness then answers secret/get from a scripted broker (§2.10).
SECRETS_FEATURE = "secrets"
PROTOCOL_VERSION = "0.2"  # §1.1: the feature-negotiated wire of API 0.2, retained by 0.4
OFFERED_CONCURRENCY = 16
