"""Draws depend on the seed only (conformance/runner/draws.py).

The hook is an internal of the pinned Hypothesis: these tests fail loudly,
naming it, when an upgrade moves it or when it stops deciding the draws.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

from conformance.runner.draws import fixed_draws

HOOK = "hypothesis.internal.conjecture.providers._get_local_constants"


def test_the_pinned_hook_is_where_draws_read_local_constants() -> None:
    assert callable(getattr(providers, "_get_local_constants", None)), f"{HOOK} is gone: rework runner/draws.py"
    assert hasattr(providers.CONSTANTS_CACHE, "cache"), "providers.CONSTANTS_CACHE.cache is gone: rework draws.py"
    source = inspect.getsource(providers.HypothesisProvider)
    assert "_get_local_constants()" in source, f"HypothesisProvider no longer calls {HOOK}: rework runner/draws.py"


def _draws() -> list[int]:
    seen: list[int] = []

    @seed(20261130)
    @settings(max_examples=40, database=None, phases=[Phase.generate], derandomize=False)
    @given(st.lists(st.integers(), min_size=40, max_size=40))
    def draw(values: list[int]) -> None:
        seen.extend(values)

    draw()
    return seen


def test_an_imported_module_changes_no_draw(tmp_path: Path) -> None:
    """A module full of distinctive literals is imported between two runs:
    under fixed_draws they draw the same; without, they do not (so the hook
    still decides the draws, and this test is not vacuous)."""
    literals = ", ".join(str(7_000_000_011 + 13 * i) for i in range(300))
    (tmp_path / "octet_draws_probe.py").write_text(f"LITERALS = ({literals})\n", encoding="utf-8")
    with fixed_draws():
        fixed_before = _draws()
    plain_before = _draws()
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module("octet_draws_probe")
        with fixed_draws():
            fixed_after = _draws()
        plain_after = _draws()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("octet_draws_probe", None)
    assert fixed_before == fixed_after
    assert plain_before != plain_after, f"local constants no longer change draws: is {HOOK} still used?"
    assert providers._get_local_constants.__module__ == providers.__name__  # restored on the way out
