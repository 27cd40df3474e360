"""Which JSON Schema draft judges a schema an extension declares (§1.1).

§1.1 asks for tool ``parameters`` that are a JSON Schema object and for
``output_schema`` in a subset of JSON Schema, but names no draft. So:

* a schema whose ``$schema`` names a draft jsonschema knows is judged by
  that draft alone (the author said which one they meant);
* a schema that declares none (or names a URI no supported draft has) is
  accepted when *any* supported draft accepts it: tuple-form ``items`` is
  valid draft 7, a boolean ``exclusiveMinimum`` valid draft 4, and calling
  either invalid would be stricter than the document.

Instances (``structured_content``) are judged the same way: valid when valid
under some draft that accepts the schema. Nothing here raises on odd input.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    validator_for,
)

# Newest first: when several drafts accept a schema, messages name the newest.
SUPPORTED: tuple[type[Validator], ...] = (
    Draft202012Validator,
    Draft201909Validator,
    Draft7Validator,
    Draft6Validator,
    Draft4Validator,
)


@dataclass(frozen=True)
class SchemaProblem:
    """Why no candidate draft accepts a schema: the newest candidate's error."""

    dialect: str  # e.g. "Draft202012"
    error: SchemaError


def candidates(schema: Mapping[str, Any]) -> tuple[type[Validator], ...]:
    """The drafts that may judge ``schema``: the declared one, else all."""
    declared = schema.get("$schema")
    if not isinstance(declared, str):
        # Absent: any draft. Not a string: every draft's metaschema refuses
        # it, so trying them all reports that defect.
        return SUPPORTED
    try:
        known = validator_for(schema, default=None)
    except (ValueError, TypeError):
        known = None  # not even a parseable URI: it names no draft we know
    return (known,) if known is not None else SUPPORTED


def accepting(schema: Mapping[str, Any]) -> Iterator[type[Validator]]:
    """The candidate drafts whose metaschema accepts ``schema``, newest first.

    RecursionError/ValueError from jsonschema (a schema nested deeper than
    the interpreter walks, an integer too long to print) propagate: callers
    decide what an unjudgeable schema means for them."""
    for dialect in candidates(schema):
        try:
            dialect.check_schema(schema)
        except SchemaError:
            continue
        yield dialect


def schema_problem(schema: Mapping[str, Any]) -> SchemaProblem | None:
    """None when some candidate draft accepts ``schema``; else the newest
    candidate's complaint. May raise RecursionError/ValueError (see
    :func:`accepting`). Cached by the schema's JSON text, like
    :func:`validators`: an extension's tool schemas are judged again at
    every initialize, and the metaschema checks dominated a simulated run.
    The key keeps the schema's own member order, so the complaint chosen
    among several is the one an uncached check would choose."""
    try:
        key = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _schema_problem(schema)  # not JSON text: judged as it is, uncached
    return _cached_problem(key)


@functools.lru_cache(maxsize=256)
def _cached_problem(schema_json: str) -> SchemaProblem | None:
    return _schema_problem(json.loads(schema_json))


def _schema_problem(schema: Mapping[str, Any]) -> SchemaProblem | None:
    if next(accepting(schema), None) is not None:
        return None
    newest = candidates(schema)[0]
    try:
        newest.check_schema(schema)
    except SchemaError as error:
        return SchemaProblem(newest.__name__.removesuffix("Validator"), error)
    return None  # unreachable in practice: accepting() just saw it fail


def validators(schema: object) -> tuple[Validator, ...]:
    """A validator per draft that accepts ``schema`` (empty when none does or
    jsonschema cannot judge it). Boolean schemas are accepted by draft 6+.
    Cached by the schema's JSON text: checking a schema against five
    metaschemas costs far more than encoding it, and one tool's schema is
    judged for every call."""
    if isinstance(schema, bool):
        return (Draft202012Validator(schema),)
    if not isinstance(schema, Mapping):
        return ()
    try:
        key = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return ()  # not JSON data: no draft can judge it
    return _validators(key)


@functools.lru_cache(maxsize=256)
def _validators(schema_json: str) -> tuple[Validator, ...]:
    schema = json.loads(schema_json)
    try:
        return tuple(dialect(schema) for dialect in accepting(schema))
    except Exception:  # noqa: BLE001 -- an unjudgeable schema is "none we can use"; never raise
        return ()
