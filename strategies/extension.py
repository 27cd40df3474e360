"""Generators for driving an extension: offers, arguments, ids, bad frames."""

from __future__ import annotations

import functools
import json
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from conformance.protocol import limits
from conformance.protocol.ext_hosting import (
    COUPLED_FEATURES,
    HOSTED_OPTIONAL_FEATURES,
    OFFERED_CONCURRENCY,
    PROTOCOL_VERSION,
    SECRETS_FEATURE,
    WAVE1_OFFERED,
    WAVE1_PARTNER,
)
from conformance.protocol.ext_types import API_VERSIONS, Offer
from conformance.protocol.schema_dialects import schema_problem, validators

# What the harness hosts is its policy (conformance.protocol.ext_hosting);
# offers are drawn from it, secrets only where §1.1 allows (see ``offers``).
__all__ = ["COUPLED_FEATURES", "HOSTED_OPTIONAL_FEATURES", "OFFERED_CONCURRENCY", "PROTOCOL_VERSION", "SECRETS_FEATURE"]

# Ids a careless implementation mangles (§2 range, 2**53 + 1 loses precision
# as a double, strings incl. non-ASCII and the empty string).
SPECIAL_IDS: tuple[Any, ...] = (0, 2**53 + 1, limits.MAX_U64, "octet-conformance", "ïd-☃", "")


def offers(*, api_version: str, secrets: bool = False) -> st.SearchStrategy[Offer]:
    """Initialize offers: everything the harness hosts, nothing optional, or a subset.

    ``secrets``: the manifest's [capabilities].secrets allowlist is non-empty,
    so the harness's scripted broker may be offered too (§1.1, §2.10).
    """
    if api_version not in API_VERSIONS:
        raise InvalidArgument(f"api_version must be one of {API_VERSIONS}; got {api_version!r}")
    if api_version == "0.1":
        return st.just(Offer("0.1", None))
    every = HOSTED_OPTIONAL_FEATURES[api_version] + ((SECRETS_FEATURE,) if secrets else ())
    drawn = tuple(f for f in every if f not in COUPLED_FEATURES)

    def make(features: tuple[str, ...]) -> Offer:
        chosen = set(features) | {f for f, partner in COUPLED_FEATURES.items() if partner in features}
        offered = tuple(f for f in every if f in chosen)
        # The Wave-1 services ride along with their partner: no extra draw,
        # so every earlier draw (and every step after it) stays as it was.
        wave1 = WAVE1_OFFERED if WAVE1_PARTNER in features else ()
        return Offer(api_version, PROTOCOL_VERSION, limits.REQUIRED_FEATURES, offered + wave1, OFFERED_CONCURRENCY)

    subsets = st.lists(st.sampled_from(drawn), unique=True).map(lambda fs: tuple(f for f in drawn if f in fs))
    return st.one_of(st.just(drawn), st.just(()), subsets).map(make)


_MERGED_CACHE_SIZE = 1024


def _memoize_object_members() -> None:
    """hypothesis-jsonschema (0.23.1, its newest) builds an object's member
    strategies inside every draw: for each drawn key it merges that key's
    schemas and converts the result again (resolving references, making
    validators), which dominated the simulated pair's steps. The conversion
    depends only on its arguments -- the same schema objects of the object
    schema, draw after draw -- so keep the strategies it returns, keyed by
    those objects (held, so their ids are never reused). The same strategy
    objects draw the same choices: every draw is unchanged
    (``tests/strategies/test_extension_strategies.py`` pins the hook and that).
    Only calls without custom formats are kept (we never pass any)."""
    from hypothesis_jsonschema import _from_schema as module

    original = module.merged_as_strategies
    if getattr(original, "memoized", False):
        return
    cache: dict[tuple[int, ...], tuple[tuple[Any, ...], st.SearchStrategy[Any]]] = {}

    @functools.wraps(original)
    def merged_as_strategies(schemas: list[Any], *, alphabet: Any, custom_formats: Any) -> st.SearchStrategy[Any]:
        if custom_formats is not None:
            return original(schemas, alphabet=alphabet, custom_formats=custom_formats)
        held = (alphabet, *schemas)
        key = tuple(map(id, held))
        hit = cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], held, strict=True)):
            return hit[1]
        strategy = original(schemas, alphabet=alphabet, custom_formats=None)
        if len(cache) >= _MERGED_CACHE_SIZE:
            cache.clear()
        cache[key] = (held, strategy)
        return strategy

    merged_as_strategies.memoized = True  # type: ignore[attr-defined]
    module.merged_as_strategies = merged_as_strategies


@functools.lru_cache(maxsize=256)
def _from_schema(schema_json: str) -> st.SearchStrategy[Any]:
    from hypothesis_jsonschema import from_schema

    _memoize_object_members()

    schema = json.loads(schema_json)
    try:
        # An invalid schema is the target's fault (EXT-1.1-tool-parameters-schema
        # reports it); it must not crash the generator, so such tools get {}.
        # Judged as the harness judges it: the declared draft, else any (§1.1).
        if schema_problem(schema) is not None:
            return st.just({})
        strategy = from_schema(schema)
    except Exception:  # noqa: BLE001 -- invalid or unsupported schema: fall back to an empty object
        return st.just({})
    return strategy


def tool_arguments(schema: Any) -> st.SearchStrategy[Any]:
    """Arguments valid against a tool's ``parameters`` schema."""
    if not isinstance(schema, dict):
        return st.just({})
    return _from_schema(json.dumps(schema, sort_keys=True))


def invalid_arguments(schema: Any) -> st.SearchStrategy[tuple[Any, str]]:
    """Near-miss arguments: a valid value with one mutation, confirmed invalid
    with jsonschema; yields (arguments, which mutation made it invalid)."""
    if not isinstance(schema, dict):
        return st.just(([], "arguments is an array, not an object"))
    # Kept per schema, like tool_arguments: Hypothesis reads a composite's
    # source each time one is defined. Member order is kept (not sorted): it
    # orders the mutations drawn from.
    return _invalid_arguments(json.dumps(schema))


@functools.lru_cache(maxsize=256)
def _invalid_arguments(schema_json: str) -> st.SearchStrategy[tuple[Any, str]]:
    schema = json.loads(schema_json)
    raw_properties = schema.get("properties")
    properties: dict[str, Any] = raw_properties if isinstance(raw_properties, dict) else {}
    raw_required = schema.get("required")
    required = [r for r in raw_required if isinstance(r, str)] if isinstance(raw_required, list) else []

    @st.composite
    def mutate(draw: st.DrawFn) -> tuple[Any, str]:
        base = draw(tool_arguments(schema))
        candidates: list[tuple[Any, str]] = [([], "arguments is an array, not an object")]
        if isinstance(base, dict):
            for name in required:
                candidates.append(({k: v for k, v in base.items() if k != name}, f"required {name!r} dropped"))
            for name, sub in properties.items():
                if isinstance(sub, dict) and sub.get("type") in ("string", "integer", "number", "boolean", "object"):
                    candidates.append(({**base, name: []}, f"{name!r} given an array instead of {sub['type']}"))
            if schema.get("additionalProperties") is False:
                candidates.append(({**base, "zz_unexpected": 1}, "undeclared property added"))
        valid = [c for c in candidates if not _is_valid(c[0], schema)]
        return draw(st.sampled_from(valid or candidates[:1]))

    return mutate()


def _is_valid(value: Any, schema: dict[str, Any]) -> bool:
    """Valid under some draft that accepts the schema (an extension reading
    it in that draft may accept the value, so it is no near miss)."""
    for validator in validators(schema):
        try:
            if validator.is_valid(value):
                return True
        except Exception:  # noqa: BLE001 -- unevaluable under this draft: it vouches for nothing
            continue
    return False


@functools.cache  # one strategy serves every draw (its filter is analysed once)
def malformed_frames() -> st.SearchStrategy[bytes]:
    """Lines whose id cannot be read: not JSON, not UTF-8, truncated, scalar."""
    fixed = st.sampled_from(
        [b"not json at all", b'{"jsonrpc":"2.0","id":', b"\xff\xfe\xfd", b"42", b"{]", b'"just a string"', b"nul\x00l"]
    )
    noise = st.binary(min_size=1, max_size=64).filter(lambda b: b"\n" not in b and not _parses_with_id(b))
    return st.one_of(fixed, noise)


def _parses_with_id(data: bytes) -> bool:
    try:
        value = json.loads(data)
    except ValueError:
        return False
    return isinstance(value, dict)


def oversized_sizes(bound: int) -> tuple[int, int, int]:
    """The three sizes every bound is tested at."""
    if bound < 1:
        raise InvalidArgument(f"bound must be >= 1; got {bound}")
    return (bound - 1, bound, bound + 1)
