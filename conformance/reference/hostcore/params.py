"""Reading typed params; every mismatch is INVALID_PARAMS (§7, 1002)."""

from __future__ import annotations

from typing import Any

from .errors import invalid_params

_MISSING = object()


def required_str(params: dict[str, Any], name: str, *, blank_ok: bool = False) -> str:
    value = params.get(name, _MISSING)
    if value is _MISSING or value is None:
        raise invalid_params(f"{name} is required")
    if not isinstance(value, str):
        raise invalid_params(f"{name} must be a string, got {_kind(value)}")
    if not blank_ok and not value.strip():
        raise invalid_params(f"{name} must not be blank")
    return value


def optional_str(params: dict[str, Any], name: str) -> str | None:
    if params.get(name) is None:
        return None
    return required_str(params, name)


def optional_bool(params: dict[str, Any], name: str, default: bool) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_params(f"{name} must be a boolean, got {_kind(value)}")
    return value


def optional_int(params: dict[str, Any], name: str, *, minimum: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    # Judged by value: 5.0 is the integer 5.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_params(f"{name} must be an integer, got {_kind(value)}")
    if value < minimum:
        raise invalid_params(f"{name} must be >= {minimum}, got {value}")
    return value


def one_of(params: dict[str, Any], name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    value = params.get(name)
    if value is None:
        return default
    if value not in choices:
        raise invalid_params(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    assert isinstance(value, str)
    return value


def session_id(params: dict[str, Any], *names: str) -> str:
    """The session id under the first of ``names`` present (methods differ:
    session.rename takes ``id``, most others ``sessionId``)."""
    for name in names:
        if params.get(name) is not None:
            return required_str(params, name)
    raise invalid_params(f"{names[0]} is required")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}.get(
        type(value), "null"
    )
