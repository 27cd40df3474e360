"""How a certification runs a state machine: sweep, then explore.

Exploration alone reaches a rare rule late (a rule among sixteen, a cancel
mode among four, the one frame-size bound in two that needs a subscription),
so a race fixture used to be found after tens of seconds. Before exploring,
:func:`sweep` runs one generation, fixed and cheap, that calls every rule of
the machine at least once:

- a rule argument drawn from a short list (``sampled_from``, ``booleans``,
  ``just``, an integer range of at most :data:`STEERED_RANGE` values) takes
  each of its values in turn, one call per value (every cancel mode, every
  reload mode, every special id, every lifecycle event);
- inside a rule, a ``data.draw`` from such a list is steered the same way
  (each tool, each host-sent frame-size bound, cancel or not, 1..3 calls);
- every other draw is Hypothesis' simplest value (the first example it
  generates is the all-simplest one): the full offer, the plain schedule,
  the smallest arguments. So the sweep is the same for every seed.

The sweep goes breadth first: each rule's first variant, in the order of the
source, then each rule's further variants. A rule whose precondition is false
when its turn comes is tried again after the others. A rule calls at most
:data:`MAX_CALLS_PER_RULE` times. Then exploration runs the profile's
budget at the run's seed, as before.

Draws in both depend only on the seed (:mod:`conformance.runner.draws`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import INITIALIZE_RULE_MARKER, RULE_MARKER, RuleBasedStateMachine, run_state_machine_as_test
from hypothesis.strategies._internal.core import DataStrategy
from hypothesis.strategies._internal.misc import BooleansStrategy
from hypothesis.strategies._internal.numbers import IntegersStrategy
from hypothesis.strategies._internal.strategies import SampledFromStrategy

from conformance.evidence import Recorder, Stage

from .draws import fixed_draws

MAX_CALLS_PER_RULE = 6
STEERED_RANGE = 4  # an integer range this short is swept value by value

SWEEP_SETTINGS = settings(
    max_examples=1,  # the first example Hypothesis generates is the simplest one
    deadline=None,
    database=None,
    derandomize=False,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


def run_machine(
    machine: type[RuleBasedStateMachine],
    budget: settings,
    run_seed: int,
    *,
    sweep_first: bool = True,
    on_stage: Callable[[str], None] | None = None,
) -> None:
    """Sweep ``machine`` (unless ``sweep_first`` is false), then explore it
    under ``budget`` at ``run_seed``. ``on_stage`` is told ``"sweep"`` and
    ``"exploration"`` as each begins (a progress display's)."""
    tell = on_stage or (lambda kind: None)
    with fixed_draws():
        try:
            if sweep_first:
                tell("sweep")
                sweep(machine)
        finally:
            tell("exploration")
            run_state_machine_as_test(seed(run_seed)(machine), settings=budget)


def machine_stages(recorder: Recorder, counter: list[int], examples: int) -> Callable[[str], None]:
    """An ``on_stage`` for :func:`run_machine` that sets ``recorder.stage``;
    exploration counts its examples from ``counter`` (the machine's
    ``example_counter``: the sweep's example and a walk's come before)."""

    def tell(kind: str) -> None:
        recorder.stage = Stage(kind, first_example=counter[0], examples=examples)

    return tell


def run_sweep(machine: type[RuleBasedStateMachine]) -> None:
    """Only the sweep of ``machine`` (a unit of a sharded run, runner/parallel.py)."""
    with fixed_draws():
        sweep(machine)


def choices_of(strategy: Any) -> tuple[Any, ...] | None:
    """The values of a strategy drawn from a short list, in order; None for
    any other strategy."""
    while True:
        inner = getattr(strategy, "wrapped_strategy", strategy)
        if inner is strategy:
            break
        strategy = inner
    if isinstance(strategy, SampledFromStrategy) and not strategy._transformations:
        return tuple(strategy.elements)
    if isinstance(strategy, BooleansStrategy):
        return (False, True)
    if isinstance(strategy, IntegersStrategy) and strategy.start is not None and strategy.end is not None:
        if strategy.end - strategy.start < STEERED_RANGE:
            return tuple(range(strategy.start, strategy.end + 1))
    return None


class SteeredData:
    """The ``data`` a rule draws from during the sweep: its ``index``-th
    call takes value ``index`` (wrapping) of every short list it draws from;
    anything else comes from the real ``data``."""

    def __init__(self, data: st.DataObject, index: int) -> None:
        self._data, self._index, self.widest = data, index, 1

    def draw(self, strategy: st.SearchStrategy[Any], label: Any = None) -> Any:
        values = choices_of(strategy)
        if not values:
            return self._data.draw(strategy, label=label)
        self.widest = max(self.widest, len(values))
        return values[self._index % len(values)]


def _marked(machine: type[RuleBasedStateMachine], marker: str) -> list[Any]:
    """The machine's rules (or initialize rules), in the order of its source."""
    found = [getattr(f, marker) for _, f in inspect.getmembers(machine) if getattr(f, marker, None) is not None]
    return sorted(found, key=lambda r: (r.function.__code__.co_firstlineno, r.function.__name__))


def _call(machine: RuleBasedStateMachine, rule: Any, data: st.DataObject, index: int) -> int:
    """Call ``rule``'s ``index``-th sweep variant; return how many variants it has."""
    kwargs: dict[str, Any] = {}
    steered: list[SteeredData] = []
    widest = 1
    for name, strategy in sorted(rule.arguments.items()):
        if isinstance(strategy, DataStrategy):
            steered.append(SteeredData(data, index))
            kwargs[name] = steered[-1]
            continue
        values = choices_of(strategy)
        if values:
            widest = max(widest, len(values))
            kwargs[name] = values[index % len(values)]
        else:
            kwargs[name] = data.draw(strategy, label=f"sweep {rule.function.__name__}.{name}")
    rule.function(machine, **kwargs)
    return max([widest, *(s.widest for s in steered)])


def _enabled(machine: RuleBasedStateMachine, rule: Any) -> bool:
    return all(p(machine) for p in rule.preconditions)


def sweep_plan(machine: type[RuleBasedStateMachine]) -> list[str]:
    """The rules a sweep calls, by name, in order (for tests and docs)."""
    return [r.function.__name__ for r in _marked(machine, RULE_MARKER)]


def sweep(machine: type[RuleBasedStateMachine]) -> None:
    """One generation of ``machine`` that calls every rule (and every short
    list's every value) at least once; see the module docstring."""
    rules = _marked(machine, RULE_MARKER)
    initializers = _marked(machine, INITIALIZE_RULE_MARKER)

    @SWEEP_SETTINGS
    @given(st.data())
    def generation(data: st.DataObject) -> None:
        instance = machine()
        try:
            for rule in initializers:
                _call(instance, rule, data, 0)
            _sweep_rules(instance, rules, data)
        finally:
            instance.teardown()

    seed(0)(generation)()


def _sweep_rules(instance: RuleBasedStateMachine, rules: Sequence[Any], data: st.DataObject) -> None:
    """Breadth first: every rule's first variant, then the further variants
    rule by rule. A fault any call of a rule shows is found within one pass
    over the rules, before the variants that wait (a slow tool to cancel,
    a reload under load) have spent their seconds."""
    variants: dict[int, int] = {}  # position in ``rules`` -> how many variants it has
    pending = list(enumerate(rules))
    for _ in range(2):  # a rule disabled at its turn gets a second chance after the others
        later = []
        for at, rule in pending:
            if _enabled(instance, rule):
                variants[at] = _call(instance, rule, data, 0)
            else:
                later.append((at, rule))
        pending = later
    for at, rule in enumerate(rules):
        index, needed = 1, variants.get(at, 0)
        while index < min(needed, MAX_CALLS_PER_RULE) and _enabled(instance, rule):
            needed = max(needed, _call(instance, rule, data, index))
            index += 1
