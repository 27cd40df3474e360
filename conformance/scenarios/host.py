"""The host's core scenarios for an API version, in the order the runner
plays them (conformance.runner.host); each is a :class:`Scenario` played
on a fresh HostRig."""

from __future__ import annotations

from collections.abc import Callable

from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import cancel_grace, cancel_then_late_response, progress_sequences
from conformance.scenarios.host_children import (
    child_id_budget,
    child_parents,
    headless_confirmation,
    headless_input,
    orphaned_children,
    outstanding_children,
    under_a_call,
    wave1_owner_optional,
)
from conformance.scenarios.host_events import lifecycle_events, model_turn_hooks, wave1_notifications
from conformance.scenarios.host_initialize import BAD_INITIALIZE, bad_initialize
from conformance.scenarios.host_packaging import inspection, oversized_call, stderr_flood, unsatisfied_requires_octet
from conformance.scenarios.host_routing import (
    collects,
    command_and_hook,
    concurrency,
    notification_level,
    progress_unnegotiated,
    result_content,
)
from conformance.scenarios.host_secrets import secrets
from conformance.scenarios.host_shutdown import call_and_shutdown, shutdown_exit_after_ack, stubborn_shutdown


def scenarios_for(api_version: str) -> list[Scenario]:
    makers: list[Callable[[str], Scenario]] = [
        call_and_shutdown,
        inspection,
        notification_level,
        unsatisfied_requires_octet,
        command_and_hook,
        collects,
        headless_confirmation,
        child_parents,
        stderr_flood(newlines=True),
        stderr_flood(newlines=False),
        stubborn_shutdown(ack=False),
        stubborn_shutdown(ack=True),
        shutdown_exit_after_ack,
        cancel_then_late_response,  # on API 0.1 too: no $/cancelRequest may reach it
        oversized_call,
        child_id_budget,  # ON_REQUEST
    ]
    if api_version != "0.1":
        makers += [
            concurrency(over_offer=False),
            concurrency(over_offer=True),
            cancel_grace,
            progress_sequences,
            progress_unnegotiated,
            result_content,
            under_a_call("headless-input", headless_input),
            under_a_call("wave1-owner", wave1_owner_optional),
            lifecycle_events,
            wave1_notifications,
            secrets,
            outstanding_children,
            orphaned_children(cancel=False),
            orphaned_children(cancel=True),
        ]
    if api_version == "0.4":
        makers.append(model_turn_hooks)
    out = [make(api_version) for make in makers]
    out += [bad_initialize(case, api_version) for case in BAD_INITIALIZE if api_version in case.apis]
    return out
