"""Judges of a client's behaviour over a whole exchange (host RPC §2.1, §3).

The harness plays host-core and records what the client wrote and when; these
functions read that record. Sans-IO: times are numbers the caller measured
(seconds on any monotonic clock), never read here.

Retry policy (§2.1). The client may retry an explicit HOST_OVERLOADED answer
after 50, 100, 200 and 400 ms, at most four times; nothing else is ever sent
again. A *chain* is one logical call and its retries: consecutive requests
with the same method and params (:func:`retry_chains` groups them). A client
that never retries passes: only renderer-facing calls retry, and the harness
cannot tell which calls those are. The wait before retry k is measured from
the moment the harness wrote answer k-1 to the moment the retry was read, so
it can only over-estimate the client's own wait by pipe latency; the judge
accepts it from the documented delay minus ``early_tolerance_ms`` up to the
delay plus ``late_slack_ms`` (a loaded machine delays timers, never advances
them much).

Handshake order (§3). The first request is app.handshake; nothing else is
requested before a successful answer; after a failed one (an error, or a
result with another protocol version) nothing else is requested at all.
Notifications the client sends are not calls and are not judged here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import rpc_limits
from .members import excerpt
from .rpc_errors import error_code_of, is_overload
from .violations import Finding, Violation, rule

HANDSHAKE = "app.handshake"


@dataclass(frozen=True)
class Attempt:
    """One request of a chain, and what the harness did with it.

    ``answered_at_s``/``response`` are None when no answer was written (the
    harness played a transport failure or let the call time out)."""

    sent_at_s: float
    request: Mapping[str, Any]
    answered_at_s: float | None = None
    response: object = None


def _call_key(request: Mapping[str, Any]) -> tuple[object, str]:
    params = json.dumps(request.get("params"), sort_keys=True, separators=(",", ":"), default=repr)
    return request.get("method"), params


def retry_chains(attempts: Sequence[Attempt]) -> list[list[Attempt]]:
    """Consecutive attempts with the same method and params, grouped."""
    chains: list[list[Attempt]] = []
    for attempt in attempts:
        if chains and _call_key(chains[-1][-1].request) == _call_key(attempt.request):
            chains[-1].append(attempt)
        else:
            chains.append([attempt])
    return chains


def _what_came_back(attempt: Attempt) -> str:
    if attempt.response is None:
        return "no answer (transport failure or timeout)"
    if isinstance(attempt.response, dict) and "error" in attempt.response:
        code = error_code_of(attempt.response["error"])
        return f"error {excerpt(code) if code else 'without errorCode'}"
    return "a result that was not HOST_OVERLOADED"


@rule("RPC-2.1-client-retry-only-overloaded")
def retry_only_overloaded(chain: Sequence[Attempt]) -> Iterator[Violation]:
    for number, (before, attempt) in enumerate(zip(chain, chain[1:], strict=False), start=1):
        if not is_overload(before.response):
            method = excerpt(attempt.request.get("method"))
            message = (
                f"retry {number} re-sent {method} after {_what_came_back(before)}; only HOST_OVERLOADED is retried"
            )
            yield Violation("RPC-2.1-client-retry-only-overloaded", message)


@rule("RPC-2.1-client-retry-max-four")
def retry_at_most_four(chain: Sequence[Attempt]) -> Iterator[Violation]:
    retries = len(chain) - 1
    if retries > rpc_limits.MAX_RETRIES:
        method = excerpt(chain[0].request.get("method"))
        yield Violation(
            "RPC-2.1-client-retry-max-four", f"{method} was retried {retries} times; limit {rpc_limits.MAX_RETRIES}"
        )


@rule("RPC-2.1-client-retry-delays")
def retry_delays(
    chain: Sequence[Attempt],
    *,
    early_tolerance_ms: float = rpc_limits.RETRY_EARLY_TOLERANCE_MS,
    late_slack_ms: float = rpc_limits.RETRY_LATE_SLACK_MS,
) -> Iterator[Violation]:
    pairs = zip(chain, chain[1:], rpc_limits.RETRY_DELAYS_MS, strict=False)
    for number, (before, attempt, delay) in enumerate(pairs, start=1):
        if before.answered_at_s is None or not is_overload(before.response):
            continue  # not a retry of an overload: retry_only_overloaded reports it
        # rounded to the microsecond so float noise never decides a boundary
        waited = round((attempt.sent_at_s - before.answered_at_s) * 1000, 3)
        if not delay - early_tolerance_ms <= waited <= delay + late_slack_ms:
            message = (
                f"retry {number} came {waited:.0f} ms after the overload answer; expected {delay} ms "
                f"(accepted {delay - early_tolerance_ms:g}..{delay + late_slack_ms:g})"
            )
            yield Violation("RPC-2.1-client-retry-delays", message)


def judge_retries(
    attempts: Sequence[Attempt],
    *,
    early_tolerance_ms: float = rpc_limits.RETRY_EARLY_TOLERANCE_MS,
    late_slack_ms: float = rpc_limits.RETRY_LATE_SLACK_MS,
) -> Iterator[Finding]:
    """Every retry rule, over each chain of ``attempts`` (in write order)."""
    for chain in retry_chains(attempts):
        if len(chain) < 2:
            continue  # no retry: nothing was exercised
        yield from retry_only_overloaded(chain)
        yield from retry_at_most_four(chain)
        yield from retry_delays(chain, early_tolerance_ms=early_tolerance_ms, late_slack_ms=late_slack_ms)


# -- §3 handshake order ----------------------------------------------------------------------


def _method(request: Mapping[str, Any]) -> str:
    method = request.get("method")
    return method if isinstance(method, str) else repr(method)


@rule("RPC-3-client-handshake-first")
def handshake_first(requests: Sequence[Mapping[str, Any]]) -> Iterator[Violation]:
    if requests and requests[0].get("method") != HANDSHAKE:
        yield Violation(
            "RPC-3-client-handshake-first",
            f"the first request is {excerpt(_method(requests[0]))}; expected {HANDSHAKE}",
        )


@rule("RPC-3-client-no-calls-before-handshake")
def no_calls_before_handshake(
    requests: Sequence[Mapping[str, Any]], *, answered_after: int | None
) -> Iterator[Violation]:
    cut = len(requests) if answered_after is None else answered_after
    for index, request in enumerate(requests[:cut]):
        if request.get("method") != HANDSHAKE:
            when = "before any handshake answer" if answered_after is None else "before the handshake was answered"
            yield Violation(
                "RPC-3-client-no-calls-before-handshake",
                f"request {index} ({excerpt(_method(request))}) was sent {when}",
            )


@rule("RPC-3-client-aborts-on-mismatch")
def aborts_on_failed_handshake(requests: Sequence[Mapping[str, Any]], *, answered_after: int) -> Iterator[Violation]:
    for index, request in enumerate(requests[answered_after:], start=answered_after):
        if request.get("method") != HANDSHAKE:
            message = f"request {index} ({excerpt(_method(request))}) was sent after a failed handshake"
            yield Violation("RPC-3-client-aborts-on-mismatch", message)


def handshake_succeeded(response: object) -> bool:
    """Whether a handshake answer lets a v11 client proceed."""
    if not isinstance(response, dict) or "error" in response:
        return False
    result = response.get("result")
    return isinstance(result, dict) and result.get("protocolVersion") == rpc_limits.PROTOCOL_VERSION


def judge_before_handshake(
    requests: Sequence[Mapping[str, Any]], *, answered_after: int | None, answer: object = None
) -> Iterator[Finding]:
    """The §3 order rules over the client's requests in write order.

    ``answered_after`` is how many requests the client had written when the
    harness wrote its handshake answer (None: never answered); ``answer`` is
    that answer (a whole response object).
    """
    yield from handshake_first(requests)
    yield from no_calls_before_handshake(requests, answered_after=answered_after)
    if answered_after is not None and not handshake_succeeded(answer):
        yield from aborts_on_failed_handshake(requests, answered_after=answered_after)
