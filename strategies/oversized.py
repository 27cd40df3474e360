"""Values at, just under and just over every size bound (``limits.py``).

One table, :data:`BOUNDS`, names every size bound of the extension wire
protocol once more, with what the number counts, who must respect it and the
catalog requirement that states it. For any of them, :func:`oversized` draws a
value of exactly ``limit - 1``, ``limit`` or ``limit + 1`` units.

Generation is lazy on purpose. What Hypothesis draws -- and shrinks, prints and
stores -- is a small :class:`Oversized` recipe (the bound, the offset, a value
shape and a filler character); the value itself is built from it, the same
way every time, only when :meth:`Oversized.build` is called, and can be
dropped right after use. A 1 MiB + 1 frame therefore never sits in
Hypothesis's choice sequence, shrinking stays a walk over three offsets and a
few shapes, and the harness holds one big value at a time.

How each unit is counted is the suite's reading, fixed in one place each:
encoded JSON bytes, depth and node counts as :mod:`conformance.protocol.json_measure`
defines them; string bounds in UTF-8 bytes of the string itself (not of its
JSON spelling); frames as payload bytes with the terminator excluded, as
:mod:`conformance.protocol.framing` decodes them; output-schema depth as
schema nodes with the root at depth 1 (``ext_initialize.output_schema_subset``).
Every value keeps clear of every *other* bound of the same field, so at
``limit + 1`` exactly one bound is crossed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from conformance.protocol import limits
from conformance.protocol.framing import pad_frame, utf8_fill
from conformance.protocol.json_measure import encoded_size

OFFSETS: tuple[int, ...] = (-1, 0, 1)

Side = Literal["extension", "host", "both"]

# Characters string values are filled with: 1- to 4-byte UTF-8, U+2028 (a raw
# line separator inside a frame), none of them escaped by a compact encoder
# nor a control character. A filler wider than one byte is topped up with
# ASCII, so every size is reachable exactly.
UTF8_FILLERS = ("x", "é", "☃", "\u2028", "𝄞")
SECRET_FILLERS = ("a", "Z", "9", "_", "-", ".")  # §1.1 secret names are ASCII
_CHUNK_BYTES = 1024  # string chunks of the "array" shape of a byte-bounded value


@dataclass(frozen=True)
class Bound:
    """One size bound: its ``limit`` in ``unit``\\ s, the requirement id that
    states it and which peer must respect it. ``build(size, shape, filler)``
    makes a value of exactly ``size`` units (``None`` when the suite cannot
    express the bound as a value; ``unbuildable`` then says why)."""

    name: str
    limit: int
    unit: str
    requirement: str
    side: Side
    where: str  # what the bound applies to
    measured: str  # how one value's size is counted
    build: Callable[[int, str, str], Any] | None
    shapes: tuple[str, ...] = ("plain",)
    fillers: tuple[str, ...] = ("x",)
    unbuildable: str = ""

    def __repr__(self) -> str:
        return f"Bound({self.name!r}, {self.limit:,} {self.unit}, {self.requirement}, {self.side})"


@dataclass(frozen=True)
class Oversized:
    """A recipe: the value of ``bound`` at ``limit + offset`` units, built
    on demand by :meth:`build` (deterministically, so a trace or a shrunk
    example regenerates the very same value)."""

    bound: Bound
    offset: int
    shape: str = "plain"
    filler: str = "x"

    @property
    def size(self) -> int:
        return self.bound.limit + self.offset

    @property
    def over(self) -> bool:
        """True when the value crosses its bound."""
        return self.size > self.bound.limit

    def build(self) -> Any:
        assert self.bound.build is not None, self.bound.unbuildable
        return self.bound.build(self.size, self.shape, self.filler)

    def __repr__(self) -> str:  # never the value: it may be a megabyte
        return (
            f"Oversized({self.bound.name!r}, offset={self.offset:+d}, size={self.size:,} {self.bound.unit}, "
            f"shape={self.shape!r}, filler={self.filler!r})"
        )


# -- builders: (size, shape, filler) -> value -----------------------------------------------


utf8_text = utf8_fill  # a string of exactly ``size`` UTF-8 bytes (one definition, in protocol.framing)


_FRAME_BASES: dict[str, bytes] = {
    "request": b'{"jsonrpc":"2.0","id":1,"method":"octet-conformance/no-such-method","params":{"pad":""}}',
    "notification": b'{"jsonrpc":"2.0","method":"octet-conformance/no-such-notification","params":{"pad":""}}',
    "response": b'{"jsonrpc":"2.0","id":1,"result":{"pad":""}}',
}


def _frame(size: int, shape: str, filler: str) -> bytes:
    # The padding rule (and the trace recipe that replays it) is transport's.
    return pad_frame(_FRAME_BASES[shape], size, filler=filler)


def _json_of_bytes(size: int, shape: str, filler: str) -> Any:
    """A JSON value whose compact encoding is exactly ``size`` bytes; at most
    a few hundred nodes and 4 levels deep, so no other bound is near."""
    if shape == "array":
        # [s1,s2,...]: 2 brackets, k-1 commas, and 2 quotes + body per string.
        count = max(1, (size - 1) // (_CHUNK_BYTES + 3))
        last = size - 1 - 3 * count - _CHUNK_BYTES * (count - 1)
        return [utf8_text(_CHUNK_BYTES, filler)] * (count - 1) + [utf8_text(last, filler)]
    wrap: Callable[[str], Any] = (
        (lambda s: {"data": s}) if shape == "object" else (lambda s: {"a": {"b": [{"data": s}]}})  # "nested"
    )
    return wrap(utf8_text(size - encoded_size(wrap("")), filler))


def _nested(size: int, shape: str, _filler: str) -> Any:
    """A value ``size`` levels deep (json_measure.depth)."""
    if shape == "empty":  # size nested empty arrays: [] is one level
        value: Any = []
    else:
        value = 0
    for level in range(size - 1):
        if shape == "object" or (shape == "mixed" and level % 2):
            value = {"a": value}
        else:
            value = [value]
    return value


def _counted(size: int, shape: str, _filler: str) -> Any:
    """A value of exactly ``size`` nodes (json_measure.node_count), two
    bytes per leaf so the byte bounds stay far away."""
    if shape == "flat":
        return [0] * (size - 1)
    # "chunked": a list of k lists of at most 64 zeros: 1 + k + zeros nodes.
    count = -(-(size - 1) // 65)
    zeros = size - 1 - count
    return [[0] * (zeros // count + (1 if i < zeros % count else 0)) for i in range(count)]


def _keyed(size: int, shape: str, filler: str) -> Any:
    key = utf8_text(size, filler)
    return {key: 0} if shape == "top" else {"outer": [{"ok": 1, key: {"inner": True}}]}


def _schema(size: int, shape: str, _filler: str) -> Any:
    """An output_schema whose deepest schema node is at depth ``size``."""
    node: Any = {"type": "string"}
    for _ in range(size - 1):
        if shape == "properties":
            node = {"type": "object", "properties": {"p": node}}
        elif shape == "items":
            node = {"type": "array", "items": node}
        else:  # "anyOf"
            node = {"anyOf": [node]}
    return node


def _schema_with_property(size: int, _shape: str, filler: str) -> Any:
    return {"type": "object", "properties": {utf8_text(size, filler): {"type": "string"}}}


def _commands(size: int, _shape: str, _filler: str) -> list[dict[str, str]]:
    return [{"name": f"command-{i}", "description": f"Conformance command {i}"} for i in range(size)]


def _parts(size: int, _shape: str, _filler: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": f"part {i}"} for i in range(size)]


def _guidelines(size: int, _shape: str, _filler: str) -> list[str]:
    return [f"Guideline {i}." for i in range(size)]


def _text(size: int, _shape: str, filler: str) -> str:
    return utf8_text(size, filler)


def _secret_name(size: int, _shape: str, filler: str) -> str:
    return "S" + filler * (size - 1)  # first character a letter (§1.1)


def _child_id_value(size: int, _shape: str, _filler: str) -> int:
    return size


def _children(size: int, _shape: str, _filler: str) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "jsonrpc": "2.0",
            "id": f"confirm-{i}",
            "method": "confirmation/request",
            "params": {"parent_request_id": 2, "prompt": f"Proceed with step {i}?"},
        }
        for i in range(size)
    )


def _child_ids(size: int, _shape: str, _filler: str) -> range:
    return range(1, size + 1)  # distinct ids, never materialized


_STRUCTURED = "result.structured_content"
_METADATA = "result.metadata"
_JSON_BYTES = "UTF-8 bytes of the compact re-encoding (json_measure.encoded_size)"
_JSON_DEPTH = "values on the longest root-to-leaf path, a scalar or empty container being 1 (json_measure.depth)"
_JSON_NODES = "every value, containers and members, object keys excluded (json_measure.node_count)"
_STRING_BYTES = "UTF-8 bytes of the string itself, not of its JSON spelling"
_BYTE_SHAPES = ("object", "array", "nested")

BOUNDS: tuple[Bound, ...] = (
    Bound(
        "frame",
        limits.MAX_FRAME_BYTES,
        "bytes",
        "EXT-0-frame-bound",
        "both",
        "every frame, in either direction (§0; stated in §2.7, §2.8, §2.25)",
        "payload bytes of one line, the LF (or CRLF) terminator excluded (framing.FrameDecoder)",
        _frame,
        shapes=tuple(_FRAME_BASES),
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "commands",
        limits.MAX_INITIALIZE_COMMANDS,
        "definitions",
        "EXT-1.1-max-commands",
        "extension",
        "initialize result.commands (§1.1)",
        "entries of the array",
        _commands,
    ),
    Bound(
        "output-schema-depth",
        limits.MAX_OUTPUT_SCHEMA_DEPTH,
        "levels",
        "EXT-1.1-output-schema-subset",
        "extension",
        "tools[].output_schema (§1.1, API 0.2+)",
        "schema nodes on the deepest path, the root schema at depth 1; only properties values, items, "
        "non-boolean additionalProperties and allOf/anyOf/oneOf branches are nodes",
        _schema,
        shapes=("properties", "items", "anyOf"),
    ),
    Bound(
        "schema-property-name",
        limits.MAX_SCHEMA_PROPERTY_NAME_BYTES,
        "bytes",
        "EXT-1.1-output-schema-subset",
        "extension",
        "keys of properties in tools[].output_schema (§1.1)",
        _STRING_BYTES,
        _schema_with_property,
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "prompt-guidelines",
        limits.MAX_PROMPT_GUIDELINES,
        "guidelines",
        "EXT-1.1-prompt-metadata",
        "extension",
        "tools[].prompt_guidelines (§1.1, API 0.4, tool_prompt_metadata_v1)",
        "entries of the array",
        _guidelines,
    ),
    Bound(
        "prompt-string",
        limits.MAX_PROMPT_STRING_BYTES,
        "bytes",
        "EXT-1.1-prompt-metadata",
        "extension",
        "tools[].prompt_snippet and each prompt_guidelines entry (§1.1)",
        _STRING_BYTES,
        _text,
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "secret-name",
        limits.MAX_SECRET_NAME_BYTES,
        "bytes",
        "EXT-1.1-secret-names",
        "extension",
        "manifest capabilities.secrets entries (§1.1, API 0.2+)",
        "ASCII bytes of the name",
        _secret_name,
        fillers=SECRET_FILLERS,
    ),
    Bound(
        "content-parts",
        limits.MAX_CONTENT_PARTS,
        "parts",
        "EXT-1.2-content-part-count",
        "extension",
        "tool/call result.content (§1.2, API 0.2+)",
        "entries of the array",
        _parts,
    ),
    Bound(
        "structured-content-bytes",
        limits.MAX_STRUCTURED_CONTENT_BYTES,
        "bytes",
        "EXT-1.2-structured-content-bounds",
        "extension",
        _STRUCTURED,
        _JSON_BYTES,
        _json_of_bytes,
        shapes=_BYTE_SHAPES,
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "structured-content-depth",
        limits.MAX_JSON_DEPTH,
        "levels",
        "EXT-1.2-structured-content-bounds",
        "extension",
        _STRUCTURED,
        _JSON_DEPTH,
        _nested,
        shapes=("array", "object", "mixed", "empty"),
    ),
    Bound(
        "structured-content-nodes",
        limits.MAX_JSON_NODES,
        "nodes",
        "EXT-1.2-structured-content-bounds",
        "extension",
        _STRUCTURED,
        _JSON_NODES,
        _counted,
        shapes=("flat", "chunked"),
    ),
    Bound(
        "metadata-bytes",
        limits.MAX_METADATA_BYTES,
        "bytes",
        "EXT-1.2-metadata-bounds",
        "extension",
        _METADATA,
        _JSON_BYTES,
        _json_of_bytes,
        shapes=_BYTE_SHAPES,
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "metadata-depth",
        limits.MAX_JSON_DEPTH,
        "levels",
        "EXT-1.2-metadata-bounds",
        "extension",
        _METADATA,
        _JSON_DEPTH,
        _nested,
        shapes=("array", "object", "mixed", "empty"),
    ),
    Bound(
        "metadata-nodes",
        limits.MAX_JSON_NODES,
        "nodes",
        "EXT-1.2-metadata-bounds",
        "extension",
        _METADATA,
        _JSON_NODES,
        _counted,
        shapes=("flat", "chunked"),
    ),
    Bound(
        "metadata-key",
        limits.MAX_METADATA_KEY_BYTES,
        "bytes",
        "EXT-1.2-metadata-bounds",
        "extension",
        "every object key anywhere in result.metadata (§1.2)",
        _STRING_BYTES,
        _keyed,
        shapes=("top", "nested"),
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "referenced-media",
        limits.MAX_REFERENCED_MEDIA_BYTES,
        "bytes",
        "EXT-1.2-media-aggregate",
        "extension",
        "media referenced by one tool/call result, each reference counted (§1.2, artifacts)",
        "sum of the published sizes of the referenced artifacts",
        None,
        unbuildable="the sizes live in artifact/publish requests the harness does not host yet; a result alone "
        "cannot carry this bound",
    ),
    Bound(
        "child-id-bytes",
        limits.MAX_CHILD_ID_BYTES,
        "bytes",
        "EXT-2-child-id-type",
        "extension",
        "string ids of extension-originated requests (§2, §2.2)",
        _STRING_BYTES,
        _text,
        fillers=UTF8_FILLERS,
    ),
    Bound(
        "child-id-value",
        limits.MAX_U64,
        "value",
        "EXT-2-child-id-type",
        "extension",
        "integer ids of extension-originated requests (§2)",
        "the integer itself (unsigned 64-bit)",
        _child_id_value,
    ),
    Bound(
        "outstanding-children",
        limits.MAX_OUTSTANDING_CHILDREN,
        "requests",
        "EXT-2-child-max-outstanding",
        "extension",
        "extension-originated requests awaiting the host's answer at one time (§2)",
        "requests written and not yet answered",
        _children,
    ),
    Bound(
        "child-ids-per-generation",
        limits.MAX_CHILD_IDS_PER_GENERATION,
        "ids",
        "EXT-2-child-max-ids",
        "extension",
        "distinct ids of extension-originated requests in one process generation (§2)",
        "distinct ids (a lazy range, never a list)",
        _child_ids,
    ),
    Bound(
        "settled-reason",
        limits.MAX_SETTLED_REASON_BYTES,
        "bytes",
        "EXT-1.10-host-settled-reason-bound",
        "host",
        "params.reason of session/turn/tool settled notifications (§1.10, lifecycle_events)",
        _STRING_BYTES,
        _text,
        fillers=UTF8_FILLERS,
    ),
)

BY_NAME: dict[str, Bound] = {b.name: b for b in BOUNDS}
HOST_SENT: tuple[Bound, ...] = tuple(b for b in BOUNDS if b.side in ("host", "both"))  # what a host writes


def bound(name: str | Bound) -> Bound:
    """A bound by name (or itself), with a message listing the names."""
    if isinstance(name, Bound):
        return name
    try:
        return BY_NAME[name]
    except KeyError:
        raise InvalidArgument(f"unknown bound {name!r}; expected one of: {', '.join(BY_NAME)}") from None


def _checked(which: str | Bound, offsets: Sequence[int]) -> tuple[Bound, tuple[int, ...]]:
    b = bound(which)
    if b.build is None:
        raise InvalidArgument(f"bound {b.name!r} has no generator: {b.unbuildable}")
    chosen = tuple(offsets)
    if not chosen or any(o not in OFFSETS for o in chosen) or len(set(chosen)) != len(chosen):
        raise InvalidArgument(f"offsets must be distinct values from {OFFSETS}; got {chosen!r}")
    return b, chosen


def oversized(
    which: str | Bound, *, offsets: Sequence[int] = OFFSETS, shapes: Sequence[str] | None = None
) -> st.SearchStrategy[Oversized]:
    """Recipes for values of ``which`` at ``limit + offset`` units, one offset
    drawn from ``offsets`` (shrinking towards the first), with a shape drawn
    from ``shapes`` (default: every shape of the bound) and a filler. Call
    ``.build()`` on a recipe for the value."""
    b, chosen = _checked(which, offsets)
    kinds = b.shapes if shapes is None else tuple(shapes)
    if not kinds or not set(kinds) <= set(b.shapes):
        raise InvalidArgument(f"shapes of {b.name!r} are drawn from {b.shapes}; got {kinds!r}")
    return st.builds(
        Oversized,
        st.just(b),
        st.sampled_from(chosen),
        st.sampled_from(kinds),
        st.sampled_from(b.fillers),
    )


def at_bound(which: str | Bound, offset: int) -> st.SearchStrategy[Oversized]:
    """Recipes at exactly ``limit + offset`` (offset -1, 0 or +1)."""
    return oversized(which, offsets=(offset,))


def oversized_values(which: str | Bound, *, offsets: Sequence[int] = OFFSETS) -> st.SearchStrategy[Any]:
    """The built values themselves (for small bounds; prefer recipes for big ones)."""
    return oversized(which, offsets=offsets).map(Oversized.build)
