"""§2.10 (API 0.2+): secret/get as an extension sends it, misuses included.

The probe's manifest allows three names. With the driver's ``secrets``
capability (docs/host-driver.md) the load asks the host for a broker that
holds a value for one (and for an undeclared name too, so a host that asks
its broker before the allowlist shows it), has no value for the second and
fails on the third. The scenario then asks, under an active tool call:

1. the held name -> exactly ``{"value": V}`` (EXT-2.10-host-secret-value);
2. names the manifest does not allow: an undeclared identifier, the held
   name in another case, a non-string -> -32602 (EXT-2.10-host-secret-undeclared);
3. the absent and the failing names -> one and the same -32004
   (EXT-2.10-host-secret-unavailable-uniform);

then, once the call settled, the held name again under that settled parent
-> -32002 (EXT-2.10-host-secret-no-owner). After the shutdown, V must not
appear in the driver's stderr or events (EXT-2.10-host-secret-not-logged).

Without the capability only what needs no broker of ours is asked (1 as a
shape, 2 and the settled parent); a host that never offers secrets leaves
every §2.10 host entry untested. The judges are in
:mod:`conformance.protocol.host_secrets`; this module only drives and records.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.peers.host_rig import HostRig
from conformance.protocol import jsonrpc
from conformance.protocol.host_initialize import offer_from
from conformance.protocol.host_secrets import (
    SecretLookup,
    brokered_value,
    inactive_owner_refused,
    unavailable_uniform,
    undeclared_refused,
    value_not_logged,
)
from conformance.scenarios import Scenario
from conformance.scenarios.host_cancel import offered_features
from conformance.scenarios.host_initialize import _protocol
from conformance.scenarios.host_shutdown import shutdown_with
from conformance.scenarios.host_steps import CONTRIBUTES, HostRejected, initialize_result, start_call, tool_result
from conformance.transport.process import STDERR_TAIL_BYTES

SECRET_NAME = "probe_token"  # allowed; the broker holds SECRET_VALUE
ABSENT_SECRET = "probe.absent"  # allowed; the broker has no value
FAILING_SECRET = "probe-failing"  # allowed; the broker fails
UNDECLARED_SECRET = "not_declared"  # not allowed; the broker holds a value all the same
# Distinctive, so finding it in a log is never a coincidence; fixed, so a
# trace replays. Never quoted in a violation (evidence is a log too).
SECRET_VALUE = "octet-probe-secret-5d1c9e7a"
UNDECLARED_VALUE = "octet-probe-undeclared-0b4f2c61"
# Names the manifest does not allow: undeclared, the allowed one in another
# case (the allowlist is exact), and no name at all.
NOT_ALLOWED: tuple[object, ...] = (UNDECLARED_SECRET, SECRET_NAME.upper(), 7)
BROKER: dict[str, Any] = {
    "values": {SECRET_NAME: SECRET_VALUE, UNDECLARED_SECRET: UNDECLARED_VALUE},
    "failing": [FAILING_SECRET],
}


def secrets(api_version: str) -> Scenario:
    def run(rig: HostRig) -> None:
        def answer(params: Any) -> dict[str, Any]:
            result = initialize_result(params, api_version)
            if "secrets" not in offer_from(params).offered:
                return result
            return _protocol(result, features=[*result["protocol"]["features"], "secrets"])

        capabilities = {"filesystem": "none", "secrets": [SECRET_NAME, ABSENT_SECRET, FAILING_SECRET]}
        loaded = rig.load(api_version, CONTRIBUTES, answer, capabilities=capabilities, secrets=BROKER)
        if loaded.get("outcome") != "ready":
            raise HostRejected(f"the host did not accept a valid initialize answer: {loaded}")
        if rig.session is not None and rig.session.negotiated is not None:
            rig.recorder.negotiated_features.update(rig.session.negotiated.features)
        brokered = rig.driver.has("secrets")
        if "secrets" in offered_features(rig):
            _lookups(rig, brokered)
        shutdown_with(rig, ack=True, exit_after_ack=True)
        if brokered and "secrets" in offered_features(rig):
            _not_logged(rig)

    return Scenario("secrets", run)


def _lookups(rig: HostRig, brokered: bool) -> None:
    call, req = start_call(rig)
    parent = req.wire_id
    held = _ask(rig, "secret-1", parent, SECRET_NAME)
    if held is not None and brokered:
        rig.recorder.add(brokered_value(held, expected=SECRET_VALUE))
    for index, name in enumerate(NOT_ALLOWED):
        lookup = _ask(rig, f"secret-undeclared-{index}", parent, name)
        if lookup is not None:
            rig.recorder.add(undeclared_refused(lookup))
    if brokered:
        unserved = [_ask(rig, f"secret-{name}", parent, name) for name in (ABSENT_SECRET, FAILING_SECRET)]
        answered = tuple(lookup for lookup in unserved if lookup is not None)
        if answered:
            rig.recorder.add(unavailable_uniform(answered))
    rig.respond(parent, tool_result(rig.api_version))
    rig.settled(call)
    late = _ask(rig, "secret-settled", parent, SECRET_NAME)
    if late is not None:
        rig.recorder.add(inactive_owner_refused(late))


def _ask(rig: HostRig, cid: str, parent: Any, name: object) -> SecretLookup | None:
    """One secret/get under ``parent``; None when unanswered (judged by the rig)."""
    answer = rig.ask(cid, "secret/get", {"parent_request_id": parent, "name": name})
    if not isinstance(answer, jsonrpc.Response | jsonrpc.ErrorResponse):
        return None
    return SecretLookup(name, answer)


def _not_logged(rig: HostRig) -> None:
    events = [json.dumps(event.params, ensure_ascii=False) for event in rig.driver.events]
    logs = {
        "driver's stderr": rig.driver.process.stderr_excerpt(STDERR_TAIL_BYTES),
        "driver's events": "\n".join(events),
    }
    rig.recorder.add(value_not_logged(SECRET_VALUE, logs=logs))
