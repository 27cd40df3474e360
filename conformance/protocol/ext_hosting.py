"""What the harness offers when it plays host to an extension (§1.1).

This is the suite's policy, not the document's: the optional features the
harness can honestly host per API version (it answers policy/evaluate from a
scripted classifier, sends lifecycle notifications, accepts progress, verifies
and issues artifacts (§2.8) and publishes catalog epochs (§2.11, §2.12)), the protocol
version and the concurrency limit it offers. Conditional services
(agent_sessions, approvals ...) are never offered, so an extension that
negotiates them is caught. It sits in the core so that the strategies that
generate offers, the peer that answers the extension and the runner that
writes trace headers read one definition.
"""

from __future__ import annotations

HOSTED_OPTIONAL_FEATURES: dict[str, tuple[str, ...]] = {
    "0.1": (),
    "0.2": ("request_progress", "lifecycle_events", "policy_intents", "artifacts", "dynamic_tools"),
    "0.4": (
        "request_progress",
        "lifecycle_events",
        "policy_intents",
        "tool_prompt_metadata_v1",
        "artifacts",
        "dynamic_tools",
    ),
}
# Features offered together with a drawn one rather than drawn themselves:
# adding them left every earlier draw (offers, and so every step after) as
# it was. The certification's services scenario offers all of them at once.
COUPLED_FEATURES: dict[str, str] = {"artifacts": "request_progress", "dynamic_tools": "lifecycle_events"}
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
