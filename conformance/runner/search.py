"""How a certification runs a state machine: with draws that depend only on
the seed (:mod:`conformance.runner.draws`)."""

from __future__ import annotations

from hypothesis import seed, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from .draws import fixed_draws


def run_machine(machine: type[RuleBasedStateMachine], budget: settings, run_seed: int) -> None:
    """Run ``machine`` under ``budget`` at ``run_seed``."""
    with fixed_draws():
        run_state_machine_as_test(seed(run_seed)(machine), settings=budget)
