"""Every tunable of the reference host, with the protocol's value by default.

Each timing constant names the section that states it. Tests pass a smaller
config (or run on a virtual clock) instead of patching module globals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.protocol.limits import (
    CANCEL_GRACE_S,
    MAX_CHILD_IDS_PER_GENERATION,
    MAX_FRAME_BYTES,
    MAX_OUTSTANDING_CHILDREN,
    SHUTDOWN_TIMEOUT_S,
)

KIB = 1024

# §0 "Transport defaults": product discovery reads a manifest through a 256 KiB bound.
MANIFEST_READ_BYTES = 256 * KIB
# §1.8: each shutdown stage (ack, then exit) waits this long by default.
SHUTDOWN_STAGE_S = SHUTDOWN_TIMEOUT_S
# §1.8: concurrent per-connection shutdowns share this aggregate deadline.
SHUTDOWN_AGGREGATE_S = 3.0
# §1.8: coordinated-signal exits cap the whole attempt at this.
COORDINATED_SHUTDOWN_S = 1.4
# §1.9: a cancelled request must settle within this grace, else the
# generation is degraded and terminated.
CANCEL_GRACE = CANCEL_GRACE_S
# §5: supervisor backoff: full jitter, exponential base, cap, restart budget,
# and the continuous-ready interval that resets the budget.
BACKOFF_BASE_S = 0.25
BACKOFF_CAP_S = 30.0
MAX_FAILED_RESTARTS = 8
READY_RESET_S = 30.0
# §1.1: the host caps the negotiated max_concurrent_requests at its own value.
HOST_MAX_CONCURRENT_REQUESTS = 64
# §1.10: product session/turn lifecycle delivery gives up after this.
LIFECYCLE_DELIVERY_S = 0.25
# §1.6b: the host waits at most this long for menu/collect.
MENU_TIMEOUT_S = 5.0

# Not protocol numbers: bounds this host picks for its own memory.
STDERR_LINE_BYTES = 4 * KIB  # one stderr diagnostic keeps at most this much text
DIAGNOSTICS_KEPT = 256  # ring of recent diagnostics per extension
LAST_ERROR_BYTES = 1 * KIB  # §5 "bounded last error"
TOMBSTONES_KEPT = 4096  # cancelled ids remembered exactly; older ones are still stale (ids only grow)
WAVE1_PAYLOAD_BYTES = 64 * KIB  # §1.11 bounded payload (the document gives no number)


@dataclass(frozen=True)
class ShutdownTiming:
    """§1.8 and §5: how long ending generations may take (read by the host's
    shutdown and reload, and by each connection's shutdown stages)."""

    stage_s: float = SHUTDOWN_STAGE_S
    aggregate_s: float = SHUTDOWN_AGGREGATE_S
    coordinated_s: float = COORDINATED_SHUTDOWN_S
    # How long a reload waits for generation N's in-flight calls to finish
    # before cancelling them (§5 "the bounded drain").
    drain_s: float = 2.0


@dataclass(frozen=True)
class RestartPolicy:
    """§5: the supervisor's backoff and restart budget (read by RestartBudget only)."""

    backoff_base_s: float = BACKOFF_BASE_S
    backoff_cap_s: float = BACKOFF_CAP_S
    max_failed_restarts: int = MAX_FAILED_RESTARTS
    ready_reset_s: float = READY_RESET_S


@dataclass(frozen=True)
class CallWaits:
    """How long the host waits on one generation while it runs (its calls,
    its cancellations, its end of output, the notifications it is sent)."""

    # How long the host waits for an initialize response (its own bound; the
    # document gives none).
    initialize_timeout_s: float = 30.0
    # Seconds a call waits for its response before the host gives up on it
    # (cancelling it like a user would); None waits for ever.
    request_timeout_s: float | None = None
    cancel_grace_s: float = CANCEL_GRACE
    # After the leader exits, how long its stdout may stay open (held by a
    # descendant) before the exit alone ends the generation.
    exit_eof_grace_s: float = 0.5
    menu_timeout_s: float = MENU_TIMEOUT_S
    lifecycle_delivery_s: float = LIFECYCLE_DELIVERY_S


@dataclass(frozen=True)
class MemoryBounds:
    """What one generation keeps of what it says and of what it was sent
    (not protocol numbers: bounds on this host's own memory)."""

    stderr_line_bytes: int = STDERR_LINE_BYTES
    diagnostics_kept: int = DIAGNOSTICS_KEPT
    last_error_bytes: int = LAST_ERROR_BYTES
    tombstones_kept: int = TOMBSTONES_KEPT


@dataclass(frozen=True)
class HostConfig:
    """What the host does by default is what the protocol says (see the constants).

    The timings and memory bounds are grouped by what reads them
    (:class:`ShutdownTiming`, :class:`RestartPolicy`, :class:`CallWaits`,
    :class:`MemoryBounds`); :func:`grouped` builds them from a few fields.
    """

    octet_version: str = "0.8.0"
    workspace: str = "/"
    manifest_read_bytes: int = MANIFEST_READ_BYTES
    max_frame_bytes: int = MAX_FRAME_BYTES
    max_concurrent_requests: int = HOST_MAX_CONCURRENT_REQUESTS
    max_outstanding_children: int = MAX_OUTSTANDING_CHILDREN
    max_child_ids: int = MAX_CHILD_IDS_PER_GENERATION
    wave1_payload_bytes: int = WAVE1_PAYLOAD_BYTES
    shutdown: ShutdownTiming = ShutdownTiming()
    restarts: RestartPolicy = RestartPolicy()
    waits: CallWaits = CallWaits()
    memory: MemoryBounds = MemoryBounds()
    # §2.10: the broker behind secret/get, called with (extension name,
    # process generation, parent request id, secret name); it returns the
    # value or None. None (the default, like the coding product) offers no
    # secrets feature at all.
    secret_broker: Callable[[str, int, int, str], str | None] | None = None
    # §1.1 optional features this host offers per API version (it implements
    # each one it offers). Wave-1 gates (§1.11) are offered only when the
    # embedder adds them here.
    optional_features: tuple[str, ...] = ("request_progress", "lifecycle_events")
    optional_features_0_4: tuple[str, ...] = ("tool_prompt_metadata_v1",)
    # §1.11: which negotiated feature gates each Wave-1 notification. The
    # document names the gate of shortcut/trigger only (§2.20).
    wave1_gates: dict[str, str] = field(default_factory=lambda: {"shortcut/trigger": "shortcuts"})
    host_state: dict[str, object] = field(
        default_factory=lambda: {
            "session_id": None,
            "session_name": None,
            "model": "reference-model",
            "reasoning": None,
            "active_skills": [],
        }
    )


def grouped(fields: Mapping[tuple[str, str], Any]) -> dict[str, Any]:
    """HostConfig keyword arguments that set some fields of its groups, the
    others keeping their defaults: ``{("shutdown", "drain_s"): 1.0}`` gives
    ``{"shutdown": ShutdownTiming(drain_s=1.0)}``."""
    by_group: dict[str, dict[str, Any]] = {}
    for (group, name), value in fields.items():
        by_group.setdefault(group, {})[name] = value
    defaults = HostConfig()
    return {group: replace(getattr(defaults, group), **values) for group, values in by_group.items()}
