from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from conformance.strategies import (
    HOSTED_OPTIONAL_FEATURES,
    invalid_arguments,
    malformed_frames,
    offers,
    oversized_sizes,
    tool_arguments,
)
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from conformance.protocol import limits
from conformance.protocol.ext_hosting import WAVE1_OFFERED, WAVE1_PARTNER
from conformance.protocol.ext_types import Offer
from conformance.protocol.strict_json import ParsedJson, parse_json

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 0}},
    "required": ["text"],
    "additionalProperties": False,
}


def test_offers_validate_their_arguments() -> None:
    with pytest.raises(InvalidArgument, match="api_version"):
        offers(api_version="0.3").example()


@given(st.data())
def test_offers_only_hosted_features(data: st.DataObject) -> None:
    api = data.draw(st.sampled_from(["0.1", "0.2", "0.4"]))
    offer: Offer = data.draw(offers(api_version=api))
    assert offer.api_version == api
    assert set(offer.optional_features) <= set(HOSTED_OPTIONAL_FEATURES[api]) | set(wave1(api))
    # the Wave-1 services ride along with their partner feature, never alone
    assert (WAVE1_PARTNER in offer.offered) == bool(set(WAVE1_OFFERED) & offer.offered)
    if api == "0.1":
        assert offer.protocol_version is None
    else:
        assert offer.required_features == limits.REQUIRED_FEATURES


def wave1(api: str) -> tuple[str, ...]:
    return () if api == "0.1" else WAVE1_OFFERED


@settings(max_examples=25)
@given(st.data())
def test_secrets_is_offered_only_to_an_allowlisting_manifest(data: st.DataObject) -> None:
    api = data.draw(st.sampled_from(["0.1", "0.2", "0.4"]))
    with_secrets: Offer = data.draw(offers(api_version=api, secrets=True))
    assert set(with_secrets.optional_features) <= {
        *HOSTED_OPTIONAL_FEATURES[api],
        *wave1(api),
        *(() if api == "0.1" else ("secrets",)),
    }
    assert "secrets" not in data.draw(offers(api_version=api)).offered


@settings(max_examples=30)
@given(st.data())
def test_services_are_offered_with_their_partner_feature(data: st.DataObject) -> None:
    """§2.8/§2.11: artifacts rides with request_progress and dynamic_tools with
    lifecycle_events, so adding them left every earlier draw as it was."""
    offer: Offer = data.draw(offers(api_version=data.draw(st.sampled_from(["0.2", "0.4"]))))
    assert ("artifacts" in offer.offered) == ("request_progress" in offer.offered)
    assert ("dynamic_tools" in offer.offered) == ("lifecycle_events" in offer.offered)


@pytest.mark.parametrize("feature", ["artifacts", "dynamic_tools", "policy_intents"])
def test_each_service_is_offered_in_some_offers(feature: str) -> None:
    assert feature in find(offers(api_version="0.2"), lambda o: feature in o.offered).offered


def test_secrets_can_be_offered_when_allowed() -> None:
    assert "secrets" in find(offers(api_version="0.2", secrets=True), lambda o: "secrets" in o.offered).offered


@settings(max_examples=30)
@given(tool_arguments(SCHEMA))
def test_tool_arguments_are_valid(value: Any) -> None:
    jsonschema.validate(value, SCHEMA)


@settings(max_examples=30)
@given(invalid_arguments(SCHEMA))
def test_invalid_arguments_are_invalid_and_say_why(pair: tuple[Any, str]) -> None:
    value, why = pair
    assert why
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(value)


# No $schema and draft-7 tuple items: §1.1 names no draft, so the generators
# read it in a draft that accepts it (not as an invalid 2020-12 schema).
TUPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"pair": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "minItems": 2}},
    "required": ["pair"],
    "additionalProperties": False,
}


@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])  # tuples draw slowly
@given(tool_arguments(TUPLE_SCHEMA))
def test_arguments_for_a_draft_seven_schema_are_valid_in_draft_seven(value: Any) -> None:
    jsonschema.Draft7Validator(TUPLE_SCHEMA).validate(value)


@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])  # tuples draw slowly
@given(invalid_arguments(TUPLE_SCHEMA))
def test_near_misses_for_a_draft_seven_schema_are_invalid_in_draft_seven(pair: tuple[Any, str]) -> None:
    assert not jsonschema.Draft7Validator(TUPLE_SCHEMA).is_valid(pair[0])


@given(malformed_frames())
def test_malformed_frames_have_no_readable_id(line: bytes) -> None:
    assert b"\n" not in line
    parsed = parse_json(line)
    assert not (isinstance(parsed, ParsedJson) and isinstance(parsed.value, dict))


def test_oversized_sizes() -> None:
    assert oversized_sizes(limits.MAX_FRAME_BYTES) == (1_048_575, 1_048_576, 1_048_577)
    with pytest.raises(InvalidArgument):
        oversized_sizes(0)


# A schema whose members hypothesis-jsonschema merges per drawn key, with a
# nested object, a pattern property and a $ref, like real tool parameters.
MEMBERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "definitions": {"n": {"type": "integer", "minimum": -3, "maximum": 40}},
    "properties": {
        "text": {"type": "string", "maxLength": 8},
        "count": {"$ref": "#/definitions/n"},
        "inner": {"type": "object", "properties": {"flag": {"type": "boolean"}}},
    },
    "patternProperties": {"^x-": {"type": "number"}},
    "required": ["text"],
}


def _drawn(schema: dict[str, Any]) -> list[Any]:
    from hypothesis import Phase, seed

    out: list[Any] = []

    @seed(11)
    @settings(max_examples=25, database=None, deadline=None, phases=[Phase.generate])
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        out.append(data.draw(tool_arguments(schema)))

    draw()
    return out


def test_member_strategies_are_kept_and_draw_exactly_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """strategies/extension.py keeps hypothesis-jsonschema's per-key member
    strategies (a pinned internal hook): fails loudly when an upgrade moves
    it, or when keeping them changes a single draw."""
    from conformance.strategies import extension
    from hypothesis_jsonschema import _from_schema as module

    extension.tool_arguments({"type": "object", "properties": {"warm": {"type": "string"}}})
    memoized = module.merged_as_strategies
    assert getattr(memoized, "memoized", False), "the hook into hypothesis-jsonschema is not in place"
    original = memoized.__wrapped__
    kept = _drawn(MEMBERS_SCHEMA)
    assert kept == _drawn(MEMBERS_SCHEMA)  # second run: every member strategy comes from the cache
    extension._from_schema.cache_clear()
    monkeypatch.setattr(module, "merged_as_strategies", original)
    monkeypatch.setattr(extension, "_memoize_object_members", lambda: None)
    try:
        assert _drawn(MEMBERS_SCHEMA) == kept
    finally:
        extension._from_schema.cache_clear()
