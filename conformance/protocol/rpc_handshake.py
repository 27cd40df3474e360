"""Host RPC §3: the app.handshake request and result.

Sans-IO and stateless: each check takes the ``params`` or ``result`` member of
one message and yields findings; paths are relative to it. Unknown extra
members are allowed (the types are not closed).

Decisions where the text leaves room:
* protocolVersion is judged by value (11 and 11.0 are one JSON number).
* The literals ``client: "electron-main"`` and ``host: "rust-host-core"`` are
  part of the types, so they are demanded.
* ``locale`` has a default ("en"), so it may be absent; when present it is a
  string.
* A mismatched version answered as an error is §7's business
  (:func:`.rpc_errors.refused_mismatch`); the client's reaction to it is
  judged in :mod:`.rpc_client`.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import rpc_limits
from .describe import kind
from .members import excerpt, expected_object, is_integer, name, string_member
from .violations import Finding, Violation, rule


def _version(obj: dict[str, object], requirement: str, root: str) -> Iterator[Violation]:
    where = ("protocolVersion",)
    if "protocolVersion" not in obj:
        yield Violation(requirement, f"{root} has no protocolVersion; expected {rpc_limits.PROTOCOL_VERSION}")
        return
    value = obj["protocolVersion"]
    if not is_integer(value) or value != rpc_limits.PROTOCOL_VERSION:
        shown = excerpt(value) if is_integer(value) or isinstance(value, str) else kind(value)
        message = f"{name(root, where)} is {shown}; expected {rpc_limits.PROTOCOL_VERSION}"
        yield Violation(requirement, message, where)


def _literal(obj: dict[str, object], key: str, wanted: str, requirement: str, root: str) -> Iterator[Violation]:
    if obj.get(key) != wanted:
        shown = "absent" if key not in obj else excerpt(obj[key])
        yield Violation(requirement, f"{name(root, (key,))} is {shown}; expected {wanted!r}", (key,))


def _string_array(obj: dict[str, object], key: str, requirement: str, root: str) -> Iterator[Violation]:
    if key not in obj:
        yield Violation(requirement, f"{root} has no {key}; expected an array of strings")
        return
    value = obj[key]
    if not isinstance(value, list):
        yield Violation(requirement, f"{name(root, (key,))} is {kind(value)}; expected an array of strings", (key,))
        return
    for index, item in enumerate(value):
        if not isinstance(item, str):
            where = (key, index)
            yield Violation(requirement, f"{name(root, where)} is {kind(item)}; expected a string", where)


@rule("RPC-3-handshake-params")
def handshake_params(params: object) -> Iterator[Violation]:
    """What the client sends (client side)."""
    if not isinstance(params, dict):
        yield expected_object(params, "RPC-3-handshake-params", "params")
        return
    yield from _version(params, "RPC-3-handshake-params", "params")
    yield from _literal(params, "client", rpc_limits.HANDSHAKE_CLIENT, "RPC-3-handshake-params", "params")
    yield from string_member(params, "clientVersion", "RPC-3-handshake-params", "params", required=True)
    yield from string_member(params, "locale", "RPC-3-handshake-params", "params", required=False)


@rule("RPC-3-handshake-result")
def handshake_result_shape(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "RPC-3-handshake-result", "result")
        return
    yield from _version(result, "RPC-3-handshake-result", "result")
    yield from _literal(result, "host", rpc_limits.HANDSHAKE_HOST, "RPC-3-handshake-result", "result")
    yield from string_member(result, "hostVersion", "RPC-3-handshake-result", "result", required=True)
    yield from _string_array(result, "features", "RPC-3-handshake-result", "result")
    yield from _string_array(result, "capabilities", "RPC-3-handshake-result", "result")


@rule("RPC-3-no-a2a-capability")
def no_a2a_capability(result: object) -> Iterator[Violation]:
    capabilities = result.get("capabilities") if isinstance(result, dict) else None
    if isinstance(capabilities, list) and rpc_limits.WITHDRAWN_CAPABILITY in capabilities:
        index = capabilities.index(rpc_limits.WITHDRAWN_CAPABILITY)
        message = f"result.capabilities[{index}] is 'a2a'; version 11 withdrew that stack"
        yield Violation("RPC-3-no-a2a-capability", message, ("capabilities", index))


def handshake_result(result: object) -> Iterator[Finding]:
    """Every §3 rule on what host-core answers (host-core side)."""
    yield from handshake_result_shape(result)
    yield from no_a2a_capability(result)


@rule("RPC-10-01-handshake")
def handshake_answered(*, exact_id: bool) -> Iterator[Violation]:
    """Acceptance item 1, from the host-core's side: the v11 handshake got a
    result. ``exact_id``: the result echoed the request's id exactly; one
    echoed with another JSON type ("4" for 4) reaches no client that matches
    ids as JSON-RPC 2.0 §5 says, so the handshake never completes for it (the
    harness pairs it anyway, to go on judging)."""
    if not exact_id:
        message = "the handshake's result carries its request's id with another JSON type; no client can match it"
        yield Violation("RPC-10-01-handshake", message, ("id",))


def handshake_completed(response: dict[str, object], *, exact_id: bool) -> Iterator[Finding]:
    """A successful handshake answer (``response`` holds a result): §10 item 1 and the §3 result rules."""
    yield from handshake_answered(exact_id=exact_id)
    yield from handshake_result(response["result"])
