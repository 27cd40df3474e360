"""The fixed host-core scenarios, by name, in the order the runner plays them
(after the handshake and oversized scenarios of hostcore_handshake.py and the
held prompt of hostcore_held.py, which frame the rest of the run)."""

from __future__ import annotations

from conformance.scenarios import Scenario
from conformance.scenarios.hostcore_budgets import budget_scenario, mutations_scenario, reads_scenario
from conformance.scenarios.hostcore_dispatch import (
    abort_output_scenario,
    dispatcher_scenario,
    overload_scenario,
    prompt_scenario,
)
from conformance.scenarios.hostcore_ending import pipe_error_scenario, shutdown_scenario, wait_timeout_scenario
from conformance.scenarios.hostcore_sessions import approval_scenario, fork_scenario, sessions_scenario
from conformance.scenarios.hostcore_transport import final_frame_scenario, transport_scenario

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("transport scenario", transport_scenario),
    Scenario("final frame scenario", final_frame_scenario),
    Scenario("admission budgets scenario", budget_scenario),
    Scenario("admission prompts scenario", prompt_scenario),
    Scenario("admission dispatcher scenario", dispatcher_scenario),
    Scenario("admission reads scenario", reads_scenario),
    Scenario("admission mutations scenario", mutations_scenario),
    Scenario("sessions scenario", sessions_scenario),
    Scenario("fork scenario", fork_scenario),
    Scenario("one approval scenario", approval_scenario),
    Scenario("admission overload scenario", overload_scenario),
    Scenario("abort and output scenario", abort_output_scenario),
    Scenario("shutting down scenario", shutdown_scenario),
    Scenario("pipe error scenario", pipe_error_scenario),
    Scenario("admission wait scenario", wait_timeout_scenario),
)
# Scenarios only the thorough profile runs unless a run names them (runner/hostcore.py).
THOROUGH_ONLY = frozenset({"admission wait scenario"})
