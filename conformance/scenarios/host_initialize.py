"""§1.1: initialize answers the host must refuse (one scenario per case)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.peers.host_driver import OperationError
from conformance.peers.host_rig import ErrorAnswer, HostRig
from conformance.protocol.limits import (
    MAX_INITIALIZE_COMMANDS,
)
from conformance.scenarios import Scenario
from conformance.scenarios.host_steps import CONTRIBUTES, REQUIRED, TOOL, TOOL_DEF, initialize_result

# -- §1.1 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BadInitialize:
    name: str
    requirement: str
    apis: tuple[str, ...]
    change: Callable[[dict[str, Any], str], dict[str, Any] | ErrorAnswer]
    contributes: dict[str, Any] | None = None  # the probe manifest's (CONTRIBUTES when None)


def _protocol(result: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**result, "protocol": {**result["protocol"], **changes}}


# §1.1: more command definitions than a host accepts; the manifest declares
# every one of them, so only the count is wrong.
TOO_MANY_COMMANDS = [f"c{index}" for index in range(MAX_INITIALIZE_COMMANDS + 1)]
# §1.1: approvals builds on policy_intents (limits.FEATURE_DEPENDENCIES).
DEPENDENT_FEATURE = "approvals"


BAD_INITIALIZE = (
    BadInitialize(
        "api-version-differs",
        "EXT-1.1-host-rejects-api-version-mismatch",
        ("0.1", "0.2", "0.4"),
        lambda r, api: {**r, "api_version": "0.2" if api == "0.1" else "0.1"},
    ),
    BadInitialize(
        "tools-differ", "EXT-1.1-host-rejects-bad-catalog", ("0.1", "0.2", "0.4"), lambda r, _: {**r, "tools": []}
    ),
    BadInitialize(
        "duplicate-tool",
        "EXT-1.1-host-rejects-duplicate-names",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "tools": [TOOL_DEF, TOOL_DEF]},
    ),
    BadInitialize(
        "empty-description",
        "EXT-1.1-host-rejects-bad-tool-definition",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "tools": [{**TOOL_DEF, "description": ""}]},
    ),
    BadInitialize(
        "missing-required-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=["request_cancellation"]),
    ),
    BadInitialize(
        "unknown-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*REQUIRED, "teleportation"]),
    ),
    BadInitialize(
        "duplicate-feature",
        "EXT-1.1-host-rejects-bad-features",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*REQUIRED, "content_parts"]),
    ),
    BadInitialize(
        "subscription-without-feature",
        "EXT-1.1-host-rejects-bad-subscription",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, lifecycle_events=["session/started"]),
    ),
    BadInitialize(
        "zero-concurrency",
        "EXT-1.1-host-rejects-bad-concurrency",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, limits={"max_concurrent_requests": 0}),
    ),
    BadInitialize(
        "initialize-error",
        "EXT-1.1-host-rejected-child-isolated",
        ("0.1", "0.2", "0.4"),
        lambda r, _: ErrorAnswer(-32603, "the probe cannot start"),
    ),
    BadInitialize(
        "feature-without-base",
        "EXT-1.1-host-rejects-feature-dependencies",
        ("0.2", "0.4"),
        lambda r, _: _protocol(r, features=[*r["protocol"]["features"], DEPENDENT_FEATURE]),
    ),
    BadInitialize(
        "output-schema-outside-subset",
        "EXT-1.1-host-rejects-output-schema",
        ("0.2", "0.4"),
        lambda r, _: {**r, "tools": [{**TOOL_DEF, "output_schema": {"type": "object", "if": {"type": "object"}}}]},
    ),
    BadInitialize(
        "too-many-commands",
        "EXT-1.1-host-rejects-too-many-commands",
        ("0.1", "0.2", "0.4"),
        lambda r, _: {**r, "commands": [{"name": c, "description": "a command"} for c in TOO_MANY_COMMANDS]},
        {**CONTRIBUTES, "commands": TOO_MANY_COMMANDS},
    ),
)


def bad_initialize(case: BadInitialize, api_version: str) -> Scenario:
    """§1.1: the host must reject the child, and route nothing to it. The
    session judges both (a ``ready`` report after an answer it must refuse;
    any routed frame); here the probe answers and a call is tried."""

    def run(rig: HostRig) -> None:
        contributes = CONTRIBUTES if case.contributes is None else case.contributes
        loaded = rig.load(
            api_version, contributes, lambda p: case.change(initialize_result(p, api_version), api_version)
        )
        session = rig.session
        if session is not None and session.negotiated is None and not session.rejections:
            # The host never had this answer judged as its initialize answer
            # (it wrote another request first, say): the session has already
            # judged that, and there is no rejection to exercise here.
            return
        if session is not None and case.requirement not in session.rejections:
            raise AssertionError(f"{case.name}: the session does not require rejecting it ({session.rejections})")
        if rig.handle is None:
            return
        _, refused = rig.call("tool/call", {"name": TOOL, "arguments": {}})
        if not isinstance(refused, OperationError) or loaded.get("outcome") == "ready":
            rig.next_request("tool/call", timeout=1.0)  # a routed frame, if any, goes through the session

    return Scenario(f"bad-initialize[{case.name}]", run)
