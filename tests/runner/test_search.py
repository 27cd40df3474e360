"""Sweep, then explore (conformance/runner/search.py): the sweep generation
calls every rule, with every value of every short list, the same way for
every seed."""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.internal.reflection import function_digest
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.cli import default_manifest
from conformance.evidence import Recorder
from conformance.machines.extension import CANCEL_MODES, ExtensionMachine, machine_for
from conformance.manifest import load_manifest
from conformance.peers.ext_host import Patience
from conformance.peers.simulated import simulated_reference
from conformance.runner.draws import fixed_draws
from conformance.runner.search import MAX_CALLS_PER_RULE, choices_of, sweep, sweep_plan


def test_short_lists_are_enumerated_in_order_and_nothing_else_is() -> None:
    assert choices_of(st.sampled_from(["a", "b", "c"])) == ("a", "b", "c")
    assert choices_of(st.booleans()) == (False, True)
    assert choices_of(st.just(3)) == (3,)
    assert choices_of(st.integers(1, 4)) == (1, 2, 3, 4)
    assert choices_of(st.integers(0, 63)) is None  # too many values: drawn, simplest first
    assert choices_of(st.sampled_from([1, 2]).map(str)) is None  # a transformed list is drawn
    assert choices_of(st.text()) is None


class Toy(RuleBasedStateMachine):
    calls: ClassVar[list[tuple[Any, ...]]] = []

    def __init__(self) -> None:
        super().__init__()
        self.opened = False

    @initialize(name=st.text())
    def start(self, name: str) -> None:
        self.calls.append(("start", name))

    @precondition(lambda self: self.opened)
    @rule(mode=st.sampled_from(["x", "y", "z"]))
    def needs_open(self, mode: str) -> None:
        self.calls.append(("needs_open", mode))

    @rule()
    def open(self) -> None:
        self.opened = True
        self.calls.append(("open",))

    @rule(data=st.data(), flag=st.booleans())
    def inner(self, data: st.DataObject, flag: bool) -> None:
        which = data.draw(st.sampled_from(["p", "q", "r", "s"]), label="which")
        size = data.draw(st.lists(st.integers()), label="size")
        self.calls.append(("inner", flag, which, size))

    @rule(mode=st.sampled_from(list(range(10))))
    def many(self, mode: int) -> None:
        self.calls.append(("many", mode))

    def teardown(self) -> None:
        self.calls.append(("teardown",))


def _toy_sweep() -> list[tuple[Any, ...]]:
    Toy.calls = []
    with fixed_draws():
        sweep(Toy)
    return Toy.calls


def test_the_sweep_calls_every_rule_and_every_value_in_one_generation() -> None:
    calls = _toy_sweep()
    assert calls[0] == ("start", "") and calls[-1] == ("teardown",)  # simplest draws; one generation
    assert ("open",) in calls
    # Disabled at its turn (it comes first in the source), tried again after the others.
    assert [c[1] for c in calls if c[0] == "needs_open"] == ["x", "y", "z"]
    assert calls.index(("needs_open", "x")) > calls.index(("open",))
    # Arguments and draws inside the rule, each value in turn; other draws are the simplest.
    assert [c[1:] for c in calls if c[0] == "inner"] == [
        (False, "p", []),
        (True, "q", []),
        (False, "r", []),
        (True, "s", []),
    ]
    assert [c[1] for c in calls if c[0] == "many"] == list(range(MAX_CALLS_PER_RULE))  # bounded
    # Breadth first: every rule once before any rule's second variant.
    rules = [c[0] for c in calls if c[0] not in ("start", "teardown")]
    assert rules[:4] == ["open", "inner", "many", "needs_open"]
    assert [c[1:] for c in calls[1:5]] == [(), (False, "p", []), (0,), ("x",)]
    assert sweep_plan(Toy) == ["needs_open", "open", "inner", "many"]


def test_the_sweep_is_the_same_every_time() -> None:
    assert _toy_sweep() == _toy_sweep()


def test_the_extension_sweep_cancels_in_every_mode(monkeypatch: Any) -> None:
    modes: list[str] = []
    original = ExtensionMachine._cancel_scenario

    def recording(self: ExtensionMachine, name: str, arguments: Any, mode: str) -> None:
        modes.append(mode)
        original(self, name, arguments, mode)

    monkeypatch.setattr(ExtensionMachine, "_cancel_scenario", recording)
    recorder = Recorder()
    machine = machine_for(load_manifest(default_manifest()), recorder, Patience(), simulated_reference)
    with fixed_draws():
        sweep(machine)
    assert set(CANCEL_MODES) <= set(modes)
    assert not recorder.violations and machine.example_counter == [1]


def test_a_bound_machine_is_digested_without_parsing_its_module() -> None:
    """Hypothesis digests each machine class it runs (once per shard). The
    bound class names a module without a file, so inspect gives up at once
    instead of parsing machines/extension.py, and the digest is the one a
    plain ``type()`` class of that name got (its name: the search failed)."""
    bound = machine_for(load_manifest(default_manifest()), Recorder(), Patience(), simulated_reference)
    with pytest.raises(TypeError):  # no file to read: no parse
        inspect.getsource(bound)
    plain = type("BoundExtensionMachine", (ExtensionMachine,), {})
    with pytest.raises(OSError, match="could not find class definition"):
        inspect.getsource(plain)  # what used to happen, after parsing the whole module
    assert function_digest(bound) == function_digest(plain)
