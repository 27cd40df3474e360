"""The scenarios about what a host does with what it is given (§0, §1.1-§1.8,
§2.5), for an API version, in the order the runner plays them."""

from __future__ import annotations

from collections.abc import Callable

from conformance.scenarios import Scenario
from conformance.scenarios.handling_commands import (
    command_result,
    hook_deny,
    menu_action,
    menu_destructive,
    menu_in_place,
    placement_default,
)
from conformance.scenarios.handling_discovery import (
    agent_sessions_unbound,
    composition_authority,
    dynamic_tools_epoch_0,
    no_command_registration,
    prompt_metadata_registration,
    runtime_commands_reload,
)
from conformance.scenarios.handling_manifests import (
    environment_handling,
    environment_invalid,
    headless_input,
    manifest_read_bound,
    secret_names,
    secrets_not_injected,
    undeclared_services,
)
from conformance.scenarios.handling_results import (
    legacy_tool_error,
    lifecycle_default_all,
    menu_handling,
    menu_timeout,
    null_status,
    structured_results,
    unverified_media,
)
from conformance.scenarios.handling_stages import (
    aggregate_deadline,
    draining,
    interactive_cap,
    presentation_rate,
    wave1_refusal,
)


def handling_scenarios(api_version: str) -> list[Scenario]:
    makers: list[Callable[[str], Scenario]] = [
        manifest_read_bound,
        environment_invalid,
        null_status,
        command_result,
        hook_deny,
        placement_default,
        undeclared_services,
    ]
    if api_version == "0.1":
        makers += [legacy_tool_error]
    else:
        makers += [
            secret_names,
            environment_handling,
            secrets_not_injected,
            headless_input,
            dynamic_tools_epoch_0,
            no_command_registration,
            runtime_commands_reload,
            structured_results,
            unverified_media,
            menu_handling,
            menu_timeout,
            menu_action,
            menu_destructive,
            menu_in_place,
            lifecycle_default_all,
            wave1_refusal,
            draining,
            presentation_rate,
        ]
    if api_version == "0.2":
        makers += [agent_sessions_unbound]  # API 0.4 adds a retained-owner contract this does not model
    if api_version == "0.4":
        makers += [prompt_metadata_registration, composition_authority]
    makers += [aggregate_deadline, interactive_cap]  # last: product shutdowns end every extension of the host
    return [make(api_version) for make in makers]
