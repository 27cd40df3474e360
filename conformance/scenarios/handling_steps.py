"""Steps the scenarios about what a host does with what it is given share:
negotiating optional features, and whether the host offered them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.peers.host_rig import HostRig
from conformance.protocol.host_initialize import offer_from
from conformance.scenarios.host_cancel import offered_features
from conformance.scenarios.host_steps import initialize_result


def negotiating(
    api_version: str, wanted: tuple[str, ...], *, commands: list[dict[str, Any]] | None = None, **if_all: Any
) -> Callable[[Any], dict[str, Any]]:
    """An initialize answer (for ``ready``) that also negotiates each of
    ``wanted`` the host offered and, when it offered them all, carries
    ``if_all`` (say, tools only a negotiated feature makes acceptable)."""

    def answer(params: Any) -> dict[str, Any]:
        result = initialize_result(params, api_version)
        if commands is not None:
            result["commands"] = commands
        taken = [f for f in wanted if f in offer_from(params).optional_features]
        if taken:
            result["protocol"] = {**result["protocol"], "features": [*result["protocol"]["features"], *taken]}
        return {**result, **if_all} if len(taken) == len(wanted) else result

    return answer


def _offered(rig: HostRig, *features: str) -> bool:
    return all(f in offered_features(rig) for f in features)
