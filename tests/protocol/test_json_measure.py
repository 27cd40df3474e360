"""The measuring conventions behind the §1.2 bounds (json_measure)."""

from __future__ import annotations

import json
from typing import Any

import conformance.strategies as strategies
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import json_measure
from conformance.protocol.json_measure import depth, encoded_size, node_count, oversized_keys, utf8_len

DEEP = 100_000


def json_values(text: str) -> st.SearchStrategy[Any]:
    # lone surrogates arrive through "\ud800"-style escapes; the measures must survive them
    return strategies.json_values(max_leaves=40, surrogates=text == "any")


def nested_arrays(levels: int, leaf: Any = None) -> Any:
    """``levels`` nested arrays around ``leaf`` (or empty innermost when None)."""
    value: Any = [] if leaf is None else [leaf]
    for _ in range(levels - 1):
        value = [value]
    return value


# -- encoded_size -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (None, 4),
        (True, 4),
        (0, 1),
        (-12, 3),
        (1.5, 3),
        ("", 2),
        ("é", 4),  # two UTF-8 bytes plus quotes: ensure_ascii=False
        ("€", 5),
        ("\n", 4),  # escaped as \n
        ([], 2),
        ({}, 2),
        ([1, 2], 5),
        ({"a": 1}, 7),
        ({"a": 1, "b": [True, None]}, 23),
    ],
)
def test_encoded_size_examples(value: Any, size: int) -> None:
    assert encoded_size(value) == size


def test_encoded_size_counts_a_lone_surrogate_as_its_escape() -> None:
    value = json.loads('"a\\ud800b"')
    assert encoded_size(value) == len('"a\\ud800b"')
    assert encoded_size({value: [value]}) == len('{"a\\ud800b":["a\\ud800b"]}')


def test_encoded_size_of_very_deep_value() -> None:
    value = nested_arrays(DEEP)
    assert encoded_size(value) == 2 * DEEP
    deep_object: Any = 0
    for _ in range(DEEP):
        deep_object = {"k": deep_object}
    assert encoded_size(deep_object) == DEEP * len('{"k":}') + 1


@given(json_values("plain"))
def test_encoded_size_matches_compact_json(value: Any) -> None:
    expected = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    assert encoded_size(value) == expected
    # The iterative fallback agrees with the C encoder wherever both work.
    assert json_measure._encoded_size_iterative(value) == expected


@given(json_values("any"))
def test_encoded_size_never_raises_on_decoded_json(value: Any) -> None:
    assert encoded_size(value) >= 1


def test_encoded_size_rejects_non_json_like_json_dumps() -> None:
    with pytest.raises(TypeError):
        encoded_size({"a": object()})


# -- depth ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        (None, 1),
        ("x", 1),
        ([], 1),
        ({}, 1),
        ([1], 2),
        ({"a": 1}, 2),
        ({"a": {"b": 1}}, 3),
        ([[], [[]]], 3),
        ([1, [2, [3]]], 4),
    ],
)
def test_depth_examples(value: Any, levels: int) -> None:
    assert depth(value) == levels


@pytest.mark.parametrize("levels", [31, 32, 33])
def test_depth_counts_each_nested_container(levels: int) -> None:
    assert depth(nested_arrays(levels)) == levels  # empty innermost
    assert depth(nested_arrays(levels - 1, leaf=0)) == levels  # scalar leaf is a level


def test_depth_of_very_deep_value() -> None:
    assert depth(nested_arrays(DEEP)) == DEEP
    assert depth(nested_arrays(DEEP, leaf="x")) == DEEP + 1


@given(json_values("any"))
def test_depth_is_between_one_and_node_count(value: Any) -> None:
    assert 1 <= depth(value) <= node_count(value)


# -- node_count -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "nodes"),
    [
        (None, 1),
        ([], 1),
        ({}, 1),
        ([1, 2], 3),
        ({"a": [1]}, 3),
        ({"a": 1, "b": {"c": None}}, 4),
        ([[[]]], 3),
    ],
)
def test_node_count_examples(value: Any, nodes: int) -> None:
    assert node_count(value) == nodes


def test_node_count_of_very_deep_and_very_wide_values() -> None:
    assert node_count(nested_arrays(DEEP)) == DEEP
    assert node_count([0] * DEEP) == DEEP + 1


@given(json_values("any"))
def test_node_count_matches_a_recursive_count(value: Any) -> None:
    def count(v: Any) -> int:
        if isinstance(v, dict):
            return 1 + sum(count(m) for m in v.values())
        if isinstance(v, list):
            return 1 + sum(count(m) for m in v)
        return 1

    assert node_count(value) == count(value)


# -- keys -------------------------------------------------------------------------


def test_utf8_len() -> None:
    assert utf8_len("abc") == 3
    assert utf8_len("é") == 2
    assert utf8_len("\ud800") == 3


@pytest.mark.parametrize(("length", "flagged"), [(255, False), (256, False), (257, True)])
def test_oversized_keys_at_the_bound(length: int, flagged: bool) -> None:
    key = "k" * length
    found = list(oversized_keys({"outer": [{key: 1}]}, 256))
    assert found == ([(("outer", 0, key), key, length)] if flagged else [])


def test_oversized_keys_measures_utf8_bytes_not_characters() -> None:
    assert list(oversized_keys({"é" * 128: 1}, 256)) == []
    key = "é" * 128 + "a"
    assert list(oversized_keys({"x": {key: 1}}, 256)) == [(("x", key), key, 257)]


def test_oversized_keys_in_very_deep_value() -> None:
    key = "k" * 300
    value: Any = {key: 0}
    for _ in range(DEEP):
        value = [value]
    [(path, found_key, size)] = list(oversized_keys(value, 256))
    assert path == (0,) * DEEP + (key,)
    assert (found_key, size) == (key, 300)
