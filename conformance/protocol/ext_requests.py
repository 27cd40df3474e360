"""Param checks for the requests an extension sends its host (§2.2, §2.7, §2.10).

Sans-IO and stateless. Id rules, parent correlation and the outstanding
bounds are shared by every child request and live in :mod:`.ext_session`;
this module holds one row per method for what its params must look like.

Decisions where the text leaves room (never stricter than the document):

* §2.7: "non-whitespace text" is read with Unicode's notion of whitespace
  (``str.isspace``); the 16 KiB bound counts UTF-8 bytes of ``prompt``;
  ``secret`` may be omitted (it only changes how a frontend echoes).
* input/request belongs to API 0.2 (parent correlation including it is a base
  0.2 invariant, not a feature string), so it is judged on 0.2 and 0.4 only;
  on 0.1 the harness refuses it as an unknown method.
* §2.10: asking without the negotiated secrets feature, or for a name outside
  the manifest's [capabilities].secrets allowlist, is the extension's fault
  (the text requires both); the host's -32602/-32002/-32004 answers are its
  own and any of them is a fine outcome for a correct extension.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import limits
from .ext_types import Negotiated
from .ext_wave1 import WAVE1_PARAM_RULES, check_wave1_params
from .members import bool_member, excerpt, expected_object, string_member
from .violations import Finding, Violation, rule


@dataclass(frozen=True)
class ChildContext:
    """What a child request's params are judged against."""

    negotiated: Negotiated
    secret_names: frozenset[str] = frozenset()


@rule("EXT-2.2-request-shape")
def confirmation_shape(params: object) -> Iterator[Violation]:
    """§2.2 on every API version: the parent id is judged by the session."""
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.2-request-shape", "params")
        return
    yield from string_member(params, "prompt", "EXT-2.2-request-shape", "params", required=True)
    yield from string_member(params, "detail", "EXT-2.2-request-shape", "params", required=False)
    yield from bool_member(params, "destructive", "EXT-2.2-request-shape", "params")
    yield from bool_member(params, "default", "EXT-2.2-request-shape", "params")


@rule("EXT-2.7-input-request")
def input_request(params: object) -> Iterator[Violation]:
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.7-input-request", "params")
        return
    problems = list(string_member(params, "prompt", "EXT-2.7-input-request", "params", required=True))
    yield from problems
    yield from bool_member(params, "secret", "EXT-2.7-input-request", "params")
    prompt = params.get("prompt")
    if problems or not isinstance(prompt, str):
        return
    if not prompt or prompt.isspace():
        yield Violation("EXT-2.7-input-request", "params.prompt has no non-whitespace text", ("prompt",))
    size = len(prompt.encode("utf-8", "surrogatepass"))
    if size > limits.INPUT_PROMPT_MAX_BYTES:
        yield Violation(
            "EXT-2.7-input-request",
            f"params.prompt is {size:,} UTF-8 bytes; limit {limits.INPUT_PROMPT_MAX_BYTES:,}",
            ("prompt",),
        )


@rule("EXT-2.10-secret-get")
def secret_get(params: object, *, context: ChildContext) -> Iterator[Violation]:
    if not context.negotiated.has("secrets"):
        yield Violation("EXT-2.10-secret-get", "secret/get sent but the secrets feature was not negotiated")
    if not isinstance(params, dict):
        yield expected_object(params, "EXT-2.10-secret-get", "params")
        return
    problems = list(string_member(params, "name", "EXT-2.10-secret-get", "params", required=True))
    yield from problems
    name = params.get("name")
    if not problems and isinstance(name, str) and name not in context.secret_names:
        allowed = ", ".join(sorted(context.secret_names)) or "none"
        yield Violation(
            "EXT-2.10-secret-get",
            f"params.name {excerpt(name)} is not in the manifest's secrets allowlist ({allowed})",
            ("name",),
        )


def _confirmation(params: object, context: ChildContext) -> Iterator[Finding]:
    yield from confirmation_shape(params)


def _input_request(params: object, context: ChildContext) -> Iterator[Finding]:
    if not context.negotiated.is_legacy:
        yield from input_request(params)


def _secret_get(params: object, context: ChildContext) -> Iterator[Finding]:
    if not context.negotiated.is_legacy:
        yield from secret_get(params, context=context)


def _wave1(method: str, params: object, context: ChildContext) -> Iterator[Finding]:
    yield from check_wave1_params(method, params, negotiated=context.negotiated)


ParamCheck = Callable[[object, ChildContext], Iterator[Finding]]
# One row per child request method whose params are judged here.
CHILD_PARAM_CHECKS: dict[str, ParamCheck] = {
    "confirmation/request": _confirmation,
    "input/request": _input_request,
    "secret/get": _secret_get,
    # §2.19-§2.24: the Wave-1 requests, one row each (rules in .ext_wave1)
    **{method: functools.partial(_wave1, method) for method in WAVE1_PARAM_RULES},
}


def check_child_params(method: str, params: object, *, context: ChildContext) -> Iterator[Finding]:
    """Judge the params of one extension-originated request, if its method has a row."""
    check = CHILD_PARAM_CHECKS.get(method)
    if check is not None:
        yield from check(params, context)
