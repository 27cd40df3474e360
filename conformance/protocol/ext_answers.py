"""Answers an extension gives to host requests that are not judged by the
shape of a result (§1.1, §1.8, §1.9, §3): error codes, and the shutdown
acknowledgement.

Sans-IO and stateless, like :mod:`.ext_results` (which judges results).
Which rules apply to an answer depends on why the host sent the request:

* a call sent with a deliberate fault (its *intent*) is judged by the rule
  for that fault, whatever the method: ``INTENT_ANSWERS``;
* an error answer to a valid call is judged by its method's rule, where the
  method has one (initialize and shutdown must not be refused):
  ``ERROR_ANSWERS``;
* an error answer to a call whose cancellation the extension provably read
  carries -32800 (:func:`cancelled_answer`; the session knows what was read).

Adding a method or a fault is one row in a table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_CANCELLED, ErrorResponse, JsonRpcId, Response
from .violations import Exercise, Finding, Violation

Answer = Response | ErrorResponse


def unknown_method_answer(method: str, answer: Answer) -> Iterator[Finding]:
    """§3: a method the extension does not know is refused with -32601."""
    yield Exercise("EXT-3-unknown-method-code")
    if isinstance(answer, Response):
        yield Violation(
            "EXT-3-unknown-method-code",
            f"unknown method {method!r} answered with a result; expected error {METHOD_NOT_FOUND}",
        )
    elif answer.code != METHOD_NOT_FOUND:
        yield Violation(
            "EXT-3-unknown-method-code",
            f"unknown method {method!r} answered with code {answer.code!r}; expected {METHOD_NOT_FOUND}",
            ("error", "code"),
        )


def invalid_params_answer(method: str, answer: Answer) -> Iterator[Finding]:
    """§3: a refusal of invalid params carries -32602. Only refusals are
    judged: the text names the code of a refusal, not that one is owed."""
    if isinstance(answer, ErrorResponse):
        yield Exercise("EXT-3-invalid-params-code")
        if answer.code != INVALID_PARAMS:
            yield Violation(
                "EXT-3-invalid-params-code",
                f"{method} with invalid params answered with code {answer.code!r}; expected {INVALID_PARAMS}",
                ("error", "code"),
            )


def shutdown_acknowledged(result: object) -> Iterator[Finding]:
    """§1.8: the acknowledgement is an object (paths relative to ``result``)."""
    yield Exercise("EXT-1.8-shutdown-ack")
    if not isinstance(result, dict):
        yield Violation("EXT-1.8-shutdown-ack", f"shutdown result must be an object; got {result!r:.40}")


def shutdown_refused(answer: ErrorResponse) -> Iterator[Finding]:
    """§1.8: the extension acknowledges shutdown; a refusal is not one."""
    yield Exercise("EXT-1.8-shutdown-ack")
    yield Violation(
        "EXT-1.8-shutdown-ack",
        f"shutdown was answered with error {answer.code!r} instead of an acknowledgement",
        ("error",),
    )


def initialize_refused(answer: ErrorResponse) -> Iterator[Finding]:
    """§1.1: initialize is answered with a result."""
    yield Exercise("EXT-1.1-result-shape")
    yield Violation(
        "EXT-1.1-result-shape",
        f"initialize was refused with error {answer.code!r}: {str(answer.message)[:200]!r}",
        ("error",),
    )


def cancelled_answer(method: str, rid: JsonRpcId, answer: ErrorResponse) -> Iterator[Finding]:
    """§1.9: an error answer to a call whose cancellation the extension had
    provably read carries -32800 (a normal result is fine too)."""
    yield Exercise("EXT-1.9-cancel-reply-code")
    if answer.code != REQUEST_CANCELLED:
        yield Violation(
            "EXT-1.9-cancel-reply-code",
            f"cancelled {method} {rid!r} answered with error code {answer.code!r}; "
            f"expected {REQUEST_CANCELLED} (or a normal result)",
            ("error", "code"),
        )


# intent (the fault the host put in the call) -> the rule judging the answer
INTENT_ANSWERS: Mapping[str, Callable[[str, Answer], Iterator[Finding]]] = {
    "unknown-method": unknown_method_answer,
    "invalid-params": invalid_params_answer,
    # probes behind §1.10/§1.11 notifications are unknown methods too
    "after-lifecycle": unknown_method_answer,
    "after-trigger": unknown_method_answer,
}
# method -> the rule judging an error answer to a valid call of it
ERROR_ANSWERS: Mapping[str, Callable[[ErrorResponse], Iterator[Finding]]] = {
    "shutdown": shutdown_refused,
    "initialize": initialize_refused,
}
