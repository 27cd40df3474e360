"""The same seed draws the same run, whatever else is imported.

Hypothesis (>= 6.131) mixes literal constants of "local" modules -- any module
in ``sys.modules`` whose file is outside the standard library and
site-packages -- into about one draw in forty. Which modules are local
depends on how the suite was installed (an editable install makes the whole
``conformance`` package local; ``pip install .`` makes none of it local), on
the caller (a test suite, a user's script, the command line) and on *when*
each module got imported. So the same seed drew different runs through the
command line and the Python API, and a fixture proven found at a seed in our
tests was not necessarily found by the draw a pip-installed user got.

Hypothesis 6.170.9 has no setting or public provider seam for this (a custom
backend would also switch off the engine's own tree of novel prefixes), so
:func:`fixed_draws` uses the narrowest internal hook: while a certification's
machine runs, the set of local constants is the empty one, and the cache of
constants per draw kind is emptied on the way in and on the way out (entries
made outside would carry the caller's constants in, and ours would leak out).
The global constants Hypothesis ships (edge integers, odd floats and
strings) are unchanged. ``tests/runner/test_draws.py`` fails loudly when a
Hypothesis upgrade moves or renames the hook, or when the hook stops
deciding the draws.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.internal.conjecture import providers as _providers
from hypothesis.internal.constants_ast import Constants

_NO_LOCAL_CONSTANTS = Constants()


def _no_local_constants() -> Constants:
    return _NO_LOCAL_CONSTANTS


@contextmanager
def fixed_draws() -> Iterator[None]:
    """Within the block, draws depend only on the seed and the strategies:
    no constant of any imported module is mixed in. Not thread-safe against
    other Hypothesis tests running at the same time in the same process (the
    hook is module state); certifications run their machines one at a time."""
    original = _providers._get_local_constants
    _providers._get_local_constants = _no_local_constants
    _providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        _providers._get_local_constants = original
        _providers.CONSTANTS_CACHE.cache.clear()
