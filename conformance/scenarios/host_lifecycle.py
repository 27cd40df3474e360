"""The §5 lifecycle scenarios for an API version, in the order the runner plays them."""

from __future__ import annotations

from conformance.scenarios import Scenario
from conformance.scenarios.lifecycle_reload import failed_candidate, reload_changed, reload_in_flight
from conformance.scenarios.lifecycle_supervision import (
    dead_tools,
    idle,
    initial_failure,
    permanent_park,
    ready_reset,
    restart_after_exit,
    shutdown_no_restart,
)


def lifecycle_scenarios(api_version: str) -> list[Scenario]:
    return [
        make(api_version)
        for make in (
            reload_in_flight,
            failed_candidate,
            reload_changed,
            permanent_park,
            dead_tools,
            restart_after_exit,
            shutdown_no_restart,
            initial_failure,
            idle,
            ready_reset,
        )
    ]
