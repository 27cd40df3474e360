"""§2.10 secret/get, judged on the host's answers and its logs (pure data).

How to use: the secrets scenario (:func:`conformance.scenarios.host_children.secrets`)
asks the host, through the probe, for names the manifest allows and names
it does not, under an active and under a settled parent, and builds one
:class:`SecretLookup` per answer; the driver's ``secrets`` load member
(docs/host-driver.md) tells it which allowed names the host's broker holds
a value for, has no value for, or fails on. Each judge takes lookups and
yields violations::

    recorder.add(undeclared_refused(SecretLookup("OTHER", answer)))
    recorder.add(unavailable_uniform((absent, failing)))
    recorder.add(value_not_logged("s3cr3t", logs={"driver stderr": text}))

What is judged, and what is left alone (readings in docs/catalog.md):

* a name outside the allowlist (or not a name at all) gets -32602, whatever
  the broker would say about it;
* a request whose parent has settled gets -32002 (no active owner). A
  request without the secrets feature is refused with any error
  (EXT-0-host-capabilities-route-services): which code "no service" means
  there is ambiguous, so it is not judged here;
* a broker with no value and a failing broker give one and the same error
  object (-32004, same message, same data): an extension cannot tell them
  apart, so no provider detail reaches it;
* an allowed name the broker holds is answered exactly ``{"value": V}``
  with the broker's V (the 64 KiB bound is EXT-2.10-host-secret-answers');
* V never appears in what the host logs where the suite can see it: the
  driver's stderr (the part the suite keeps) and the driver's events.
  Persistence and the best-effort wipe are not observable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .describe import kind
from .jsonrpc import ErrorResponse, Response
from .members import excerpt
from .violations import Violation, rule

INVALID_NAME = -32602  # §2.10: undeclared or invalid name
NO_OWNER = -32002  # §2.10: no active owner or service
UNAVAILABLE = -32004  # §2.10: the broker has no value or failed


@dataclass(frozen=True)
class SecretLookup:
    """One secret/get the probe sent and the host's answer to it."""

    name: object  # the name sent (not always a string: invalid names are sent too)
    answer: Response | ErrorResponse


def _got(answer: Response | ErrorResponse) -> str:
    return f"error {excerpt(answer.code)}" if isinstance(answer, ErrorResponse) else "a result"


def _refused_with(requirement: str, lookup: SecretLookup, code: int, what: str) -> Iterator[Violation]:
    """A violation of ``requirement`` unless ``lookup`` was answered with error ``code``."""
    answer = lookup.answer
    if not isinstance(answer, ErrorResponse) or answer.code != code:
        yield Violation(
            requirement, f"secret/get for {excerpt(lookup.name)}{what} got {_got(answer)}; expected error {code}"
        )


@rule("EXT-2.10-host-secret-undeclared")
def undeclared_refused(lookup: SecretLookup) -> Iterator[Violation]:
    """§2.10: a name that is not exactly one of the allowlist's is refused with -32602."""
    yield from _refused_with(
        "EXT-2.10-host-secret-undeclared", lookup, INVALID_NAME, ", which the manifest does not allow,"
    )


@rule("EXT-2.10-host-secret-no-owner")
def inactive_owner_refused(lookup: SecretLookup) -> Iterator[Violation]:
    """§2.10: with no active owner (the parent has settled) the answer is -32002."""
    yield from _refused_with("EXT-2.10-host-secret-no-owner", lookup, NO_OWNER, " under a settled parent")


def _error_object(answer: ErrorResponse, *, masking: object = None) -> str:
    text = json.dumps({"code": answer.code, "message": answer.message, "data": answer.data}, sort_keys=True)
    if isinstance(masking, str) and masking:
        text = text.replace(json.dumps(masking)[1:-1], "<name>")
    return text


@rule("EXT-2.10-host-secret-unavailable-uniform")
def unavailable_uniform(lookups: tuple[SecretLookup, ...]) -> Iterator[Violation]:
    """§2.10: every lookup the broker cannot serve (no value, or a failure)
    gets -32004, and all of them the same error object: code, message and
    data equal, so nothing tells the failure kinds (or the provider) apart."""
    requirement = "EXT-2.10-host-secret-unavailable-uniform"
    errors: list[tuple[object, ErrorResponse]] = []
    for lookup in lookups:
        answer = lookup.answer
        if not isinstance(answer, ErrorResponse) or answer.code != UNAVAILABLE:
            yield Violation(
                requirement,
                f"secret/get for {excerpt(lookup.name)}, which the broker cannot serve, got {_got(answer)}; "
                f"expected error {UNAVAILABLE}",
            )
        else:
            errors.append((lookup.name, answer))
    # A host may name the secret it was asked for (that is no provider detail): each answer's
    # own name is masked before comparing, so only what tells the failure kinds apart differs.
    shapes = {_error_object(answer, masking=name) for name, answer in errors}
    if len(shapes) > 1:
        shown = "; ".join(f"{excerpt(name)}: {excerpt(_error_object(answer))}" for name, answer in errors)
        yield Violation(requirement, f"the unavailable answers differ ({shown}); expected one and the same error")


@rule("EXT-2.10-host-secret-value")
def brokered_value(lookup: SecretLookup, *, expected: str) -> Iterator[Violation]:
    """§2.10, §4: an allowed name the broker holds is answered with exactly
    ``{"value": V}``, V the broker's value."""
    requirement = "EXT-2.10-host-secret-value"
    answer = lookup.answer
    if isinstance(answer, ErrorResponse):
        yield Violation(
            requirement, f"secret/get for {excerpt(lookup.name)}, which the broker holds, got {_got(answer)}"
        )
        return
    result = answer.result
    if not isinstance(result, dict) or sorted(result) != ["value"]:
        shown = sorted(result) if isinstance(result, dict) else kind(result)
        yield Violation(requirement, f"result is {excerpt(shown)}; expected exactly a value member", ("result",))
    elif result["value"] != expected:
        # Never quote either value: evidence is a log too.
        yield Violation(requirement, "result.value is not the value the broker holds", ("result", "value"))


@rule("EXT-2.10-host-secret-not-logged")
def value_not_logged(value: str, *, logs: Mapping[str, str]) -> Iterator[Violation]:
    """§2.10: the host does not log a secret's value: it appears in none of
    ``logs`` (place -> the text the suite saw there). The value is never
    quoted in the violation."""
    if not value:
        return  # an empty value is in every text; nothing to look for
    for place, text in logs.items():
        if value in text:
            yield Violation("EXT-2.10-host-secret-not-logged", f"the secret's value appears in the {place}")
