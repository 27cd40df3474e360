"""Dependency facts the suite relies on (see NOTES in the project's shared docs)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

OBJECT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "n": {"type": "integer", "minimum": 0, "maximum": 5}},
    "required": ["text"],
    "additionalProperties": False,
}


def test_hypothesis_jsonschema_draws_from_object_schemas() -> None:
    """hypothesis-jsonschema 0.23.1 crashes on object schemas with Hypothesis
    >= 6.170.10 ("'many' object has no attribute 'more'"). The pin in
    pyproject.toml keeps Hypothesis below that; if this test fails after an
    upgrade, that incompatibility is the cause."""
    seen: list[object] = []

    @settings(max_examples=20, database=None)
    @given(from_schema(OBJECT_SCHEMA))
    def draw(value: object) -> None:
        assert isinstance(value, dict) and isinstance(value["text"], str)
        seen.append(value)

    try:
        draw()
    except AttributeError as exc:  # pragma: no cover - only on a broken upgrade
        raise AssertionError(
            "hypothesis-jsonschema cannot draw from object schemas with this Hypothesis version; "
            "keep hypothesis<6.170.10 (see pyproject.toml)"
        ) from exc
    assert seen


def test_strategies_namespace_is_installed_under_the_package() -> None:
    import conformance.strategies as strategies

    assert hasattr(strategies, "offers")
    assert st is not None
