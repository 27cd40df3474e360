"""Arbitrary JSON values, for "never raises, only yields findings" properties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument


def json_values(*, max_leaves: int = 25, keys: Sequence[str] = (), surrogates: bool = True) -> st.SearchStrategy[Any]:
    """Any JSON value as ``json.loads`` can produce it: lone surrogates
    included (they arrive through "\\ud800" escapes). ``keys`` are member
    names worth hitting often (the fields the code under test reads);
    ``surrogates=False`` keeps strings encodable as UTF-8."""
    if max_leaves < 1:
        raise InvalidArgument(f"max_leaves must be >= 1; got {max_leaves}")
    # Excluding category Cs rather than naming a codec: the codec path makes
    # Hypothesis scan every code point once (about 200 MiB on a cold cache).
    text = st.text(st.characters(exclude_categories=() if surrogates else ["Cs"]), max_size=8)
    if keys:
        text = text | st.sampled_from(list(keys))
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=6),
        max_leaves=max_leaves,
    )
