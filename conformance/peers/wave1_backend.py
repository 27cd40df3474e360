"""The harness's scripted host backends for the Wave-1 requests (§2.19-§2.24).

Deterministic, like the rest of :class:`~conformance.peers.ext_host.ChildPolicy`:
each backend answers the way a host may, refusals included, so a correct
extension meets every outcome the text allows:

* composer (§2.19): get returns the current text; set and insert alternate
  between admitted and refused with invalid_request (a remote custom editor
  owns the composer).
* shortcut/register (§2.20): admitted when shortcuts was offered and the
  params are within bounds, else refused; admitted ids are remembered so
  shortcut/trigger only ever names them (§1.11).
* session entries (§2.21): entry ids are numbered; set_name/set_label admitted.
* message injection (§2.22): admitted.
* tools/set_active (§2.23): alternately admitted and refused (a host build
  that cannot apply dynamic tool policy).
* terminal (§2.24): one exclusive grant; acquire while one is live, or a
  release by a caller not holding it, is refused with invalid_request.

Params the checks judge invalid are refused before anything happens, with
the §3 contract name as the message's first token (invalid_request or
bounds_exceeded, -32602). Every answer is written by
``ExtensionHostPeer._answer_child``; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.protocol import jsonrpc
from conformance.protocol.ext_types import ManifestInfo, Negotiated
from conformance.protocol.ext_wave1 import WAVE1_FEATURES, check_wave1_params, shortcut_bounds
from conformance.protocol.limits import SHORTCUTS_PER_GENERATION
from conformance.protocol.violations import Violation

if TYPE_CHECKING:
    from .ext_host import ChildPolicy

# The negotiation under which a backend judges params: a row is reached only
# once its feature was negotiated, so the gate itself always passes here.
_ALL_WAVE1 = Negotiated("0.2", frozenset(WAVE1_FEATURES.values()))
TERMINAL_SIZE = {"columns": 80, "rows": 24}


@dataclass
class Wave1State:
    """What the scripted host remembers of one generation's Wave-1 use."""

    composer: str = ""
    mutations: int = 0  # composer mutations seen (odd ones are refused)
    entries: int = 0  # session entries appended (numbers their ids)
    set_active: int = 0  # tools/set_active seen (odd ones are refused)
    grants: int = 0  # terminal grants minted (numbers their ids)
    grant: str | None = None  # the live terminal grant
    shortcuts: list[str] = field(default_factory=list)  # admitted shortcut ids, in order
    registrations: int = 0


def _refusal(msg: jsonrpc.Request, token: str, why: str) -> dict[str, Any]:
    """§3 Wave-1 refusal: the contract name is the message's first token."""
    return jsonrpc.error(msg.id, jsonrpc.INVALID_PARAMS, f"{token}: {msg.method}: {why}")


def _invalid(msg: jsonrpc.Request) -> dict[str, Any] | None:
    found = check_wave1_params(msg.method, msg.params, negotiated=_ALL_WAVE1)
    problems = [f for f in found if isinstance(f, Violation)]
    if not problems:
        return None
    token = "bounds_exceeded" if "limit" in problems[0].message else "invalid_request"
    return _refusal(msg, token, problems[0].message)


def composer(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    state = policy.wave1
    refused = _invalid(msg)
    if refused is not None:
        return refused
    if msg.method == "composer/get":
        return jsonrpc.result(msg.id, {"text": state.composer})
    state.mutations += 1
    if state.mutations % 2 == 0:
        return _refusal(msg, "invalid_request", "a remote custom editor owns the composer")
    text = msg.params["text"]
    state.composer = text if msg.method == "composer/set" else state.composer + text
    return jsonrpc.result(msg.id, {})


def shortcut_register(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    """Admitted within bounds, under 64 per generation, with a fresh id;
    reached only when shortcuts was offered (registration precedes the
    negotiation's end, §2.20)."""
    state = policy.wave1
    state.registrations += 1
    params = msg.params if isinstance(msg.params, dict) else {}
    sid = params.get("id")
    if any(isinstance(f, Violation) for f in shortcut_bounds(msg.params)) or not isinstance(sid, str):
        return _refusal(msg, "invalid_request", "shortcut registration out of bounds")
    if sid in state.shortcuts or state.registrations > SHORTCUTS_PER_GENERATION:
        return _refusal(msg, "invalid_request", "duplicate shortcut id, or 64 shortcuts already registered")
    state.shortcuts.append(sid)
    return jsonrpc.result(msg.id, {})


def session_entries(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    refused = _invalid(msg)
    if refused is not None:
        return refused
    if msg.method == "session/append_entry":
        policy.wave1.entries += 1
        return jsonrpc.result(msg.id, {"entry_id": f"entry-{policy.wave1.entries}"})
    return jsonrpc.result(msg.id, {})


def message_injection(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    return _invalid(msg) or jsonrpc.result(msg.id, {})


def set_active(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    refused = _invalid(msg)
    if refused is not None:
        return refused
    policy.wave1.set_active += 1
    if policy.wave1.set_active % 2 == 0:
        return _refusal(msg, "invalid_request", "this host build cannot apply dynamic tool policy")
    return jsonrpc.result(msg.id, {})


def terminal(policy: ChildPolicy, msg: jsonrpc.Request, manifest: ManifestInfo) -> dict[str, Any]:
    """One exclusive grant; the extension never names it, so a release is
    the holder's while a grant is live."""
    state = policy.wave1
    refused = _invalid(msg)
    if refused is not None:
        return refused
    if msg.method == "terminal/acquire":
        if state.grant is not None:
            return _refusal(msg, "invalid_request", "another terminal grant is live")
        state.grants += 1
        state.grant = f"grant-{state.grants}"
        return jsonrpc.result(msg.id, {"grant_id": state.grant, **TERMINAL_SIZE})
    if state.grant is None:
        return _refusal(msg, "invalid_request", "the caller holds no terminal grant")
    state.grant = None
    return jsonrpc.result(msg.id, {})
