"""conformance.strategies.oversized: every bound, at N-1, N and N+1, exactly.

Sizes are measured here with the suite's own measuring code (framing,
json_measure, the output-schema walk), never with the table's description of
itself, so a builder and a validator cannot drift apart unnoticed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from conformance.strategies import BOUNDS, Bound, Oversized, at_bound, oversized, oversized_values
from conformance.strategies.oversized import BY_NAME, HOST_SENT, OFFSETS, bound, utf8_text
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from conformance.protocol import limits
from conformance.protocol.describe import utf8_len
from conformance.protocol.ext_initialize import _child_nodes
from conformance.protocol.framing import Frame, FrameDecoder, OversizedFrame
from conformance.protocol.json_measure import depth, encoded_size, node_count, oversized_keys
from conformance.requirements import load_catalog


def frame_size(data: bytes) -> int:
    events = FrameDecoder(max_frame_bytes=limits.MAX_FRAME_BYTES).feed(data)
    assert len(events) == 1
    event = events[0]
    if isinstance(event, Frame):
        json.loads(event.payload)  # a whole JSON text, not just bytes
        return len(event.payload)
    assert isinstance(event, OversizedFrame) and event.complete
    return event.size


def schema_depth(schema: Any) -> int:
    deepest = 0
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, dict):
            stack.extend((sub, d) for sub, _path, d in _child_nodes(node, (), level + 1))
    return deepest


def largest_key(value: Any) -> int:
    return max(size for _path, _key, size in oversized_keys(value, 0))


def outstanding(messages: tuple[dict[str, Any], ...]) -> int:
    assert len({m["id"] for m in messages}) == len(messages)  # distinct, so all outstanding at once
    return len(messages)


MEASURE: dict[str, Callable[[Any], int]] = {
    "frame": frame_size,
    "commands": len,
    "output-schema-depth": schema_depth,
    "schema-property-name": lambda schema: max(utf8_len(name) for name in schema["properties"]),
    "prompt-guidelines": len,
    "prompt-string": utf8_len,
    "secret-name": lambda name: len(name.encode("ascii")),
    "content-parts": len,
    "structured-content-bytes": encoded_size,
    "structured-content-depth": depth,
    "structured-content-nodes": node_count,
    "metadata-bytes": encoded_size,
    "metadata-depth": depth,
    "metadata-nodes": node_count,
    "metadata-key": largest_key,
    "child-id-bytes": utf8_len,
    "child-id-value": int,
    "outstanding-children": outstanding,
    "child-ids-per-generation": lambda ids: len(set(ids)),
    "settled-reason": utf8_len,
}
BUILDABLE = [b for b in BOUNDS if b.build is not None]


# Each MAX_ constant of limits.py and the bounds of the table that carry it.
CONSTANTS = {
    "MAX_FRAME_BYTES": ["frame"],
    "MAX_INITIALIZE_COMMANDS": ["commands"],
    "MAX_OUTPUT_SCHEMA_DEPTH": ["output-schema-depth"],
    "MAX_SCHEMA_PROPERTY_NAME_BYTES": ["schema-property-name"],
    "MAX_PROMPT_GUIDELINES": ["prompt-guidelines"],
    "MAX_PROMPT_STRING_BYTES": ["prompt-string"],
    "MAX_SECRET_NAME_BYTES": ["secret-name"],
    "MAX_CONTENT_PARTS": ["content-parts"],
    "MAX_STRUCTURED_CONTENT_BYTES": ["structured-content-bytes"],
    "MAX_METADATA_BYTES": ["metadata-bytes"],
    "MAX_JSON_DEPTH": ["structured-content-depth", "metadata-depth"],
    "MAX_JSON_NODES": ["structured-content-nodes", "metadata-nodes"],
    "MAX_METADATA_KEY_BYTES": ["metadata-key"],
    "MAX_REFERENCED_MEDIA_BYTES": ["referenced-media"],
    "MAX_SETTLED_REASON_BYTES": ["settled-reason"],
    "MAX_CHILD_ID_BYTES": ["child-id-bytes"],
    "MAX_U64": ["child-id-value"],
    "MAX_OUTSTANDING_CHILDREN": ["outstanding-children"],
    "MAX_CHILD_IDS_PER_GENERATION": ["child-ids-per-generation"],
}


def test_the_table_names_every_size_bound_of_limits() -> None:
    assert {name for name in vars(limits) if name.startswith("MAX_")} == set(CONSTANTS)
    for constant, names in CONSTANTS.items():
        assert [BY_NAME[n].limit for n in names] == [getattr(limits, constant)] * len(names)
    assert sorted(n for names in CONSTANTS.values() for n in names) == sorted(BY_NAME)
    assert len(BY_NAME) == len(BOUNDS)
    assert set(MEASURE) == {b.name for b in BUILDABLE}


def test_every_bound_cites_a_catalog_requirement_of_its_side() -> None:
    catalog = {r.id: r for r in load_catalog()}
    for b in BOUNDS:
        assert b.requirement in catalog, b
        side = catalog[b.requirement].side
        assert side == ("host" if b.side == "host" else "extension"), b
    assert {b.name for b in HOST_SENT} == {"frame", "settled-reason"}


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("b", BUILDABLE, ids=lambda b: b.name)
def test_every_shape_and_filler_has_exactly_the_promised_size(b: Bound, offset: int) -> None:
    for shape, filler in itertools.product(b.shapes, b.fillers):
        recipe = Oversized(b, offset, shape, filler)
        assert MEASURE[b.name](recipe.build()) == b.limit + offset == recipe.size, recipe
        assert recipe.over == (offset > 0)


@pytest.mark.parametrize("b", BUILDABLE, ids=lambda b: b.name)
def test_builds_are_deterministic(b: Bound) -> None:
    recipe = Oversized(b, 1, b.shapes[-1], b.fillers[-1])
    assert recipe.build() == recipe.build()


@pytest.mark.parametrize(("size", "filler"), [(0, "x"), (5, "é"), (7, "☃"), (4097, "\u2028"), (4096, "𝄞"), (3, "𝄞")])
def test_utf8_text_tops_up_with_ascii(size: int, filler: str) -> None:
    text = utf8_text(size, filler)
    assert utf8_len(text) == size
    assert set(text) <= {filler, "x"}


def test_the_values_stay_inside_the_other_bounds_of_their_field() -> None:
    for name in ("structured-content-bytes", "metadata-bytes"):
        for shape in BY_NAME[name].shapes:
            value = Oversized(BY_NAME[name], 1, shape, "é").build()
            assert depth(value) < limits.MAX_JSON_DEPTH and node_count(value) < limits.MAX_JSON_NODES
    for name in ("structured-content-nodes", "metadata-nodes", "structured-content-depth", "metadata-depth"):
        for shape in BY_NAME[name].shapes:
            value = Oversized(BY_NAME[name], 1, shape, "x").build()
            assert encoded_size(value) < limits.MAX_METADATA_BYTES
            assert depth(value) <= limits.MAX_JSON_DEPTH or name.endswith("depth")


@settings(max_examples=30)
@given(st.data())
def test_drawn_recipes_sit_at_the_bound(data: st.DataObject) -> None:
    b = data.draw(st.sampled_from(BUILDABLE))
    recipe = data.draw(oversized(b))
    assert recipe.size - b.limit in OFFSETS
    assert recipe.shape in b.shapes and recipe.filler in b.fillers
    assert len(repr(recipe)) < 200  # what Hypothesis prints and keeps is the recipe


def _refuses_to_build(size: int, shape: str, filler: str) -> Any:
    raise AssertionError("a value was built while drawing")


@given(oversized(Bound("lazy", 10**9, "bytes", "EXT-0-frame-bound", "both", "-", "-", _refuses_to_build)))
def test_drawing_builds_nothing(recipe: Oversized) -> None:
    assert recipe.size >= 10**9 - 1


@given(oversized("frame", shapes=("notification",)))
@settings(max_examples=10)
def test_shapes_can_be_narrowed(recipe: Oversized) -> None:
    assert recipe.shape == "notification"


@given(at_bound("frame", 1))
@settings(max_examples=5)
def test_at_bound_fixes_the_offset(recipe: Oversized) -> None:
    assert recipe.size == limits.MAX_FRAME_BYTES + 1


@given(oversized_values("content-parts", offsets=(0,)))
@settings(max_examples=5)
def test_oversized_values_are_built(value: list[dict[str, str]]) -> None:
    assert len(value) == limits.MAX_CONTENT_PARTS


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: oversized("no-such-bound"), "unknown bound 'no-such-bound'; expected one of: frame, "),
        (lambda: oversized("frame", offsets=()), "offsets must be distinct values from"),
        (lambda: oversized("frame", offsets=(2,)), "offsets must be distinct values from"),
        (lambda: oversized("frame", offsets=(1, 1)), "offsets must be distinct values from"),
        (lambda: at_bound("referenced-media", 0), "has no generator: the sizes live in artifact/publish"),
        (lambda: oversized("frame", shapes=()), "shapes of 'frame' are drawn from"),
        (lambda: oversized("frame", shapes=("flat",)), "shapes of 'frame' are drawn from"),
    ],
)
def test_misuse_is_refused_at_once(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        call()


def test_bound_lookup() -> None:
    assert bound("frame") is BY_NAME["frame"] is bound(BY_NAME["frame"])
    assert "1,048,576 bytes" in repr(BY_NAME["frame"])
