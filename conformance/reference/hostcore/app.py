"""app.handshake / app.health / app.getVersion (§3, §4 App)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import limits
from .errors import HostError, invalid_params
from .params import optional_str, required_str

if TYPE_CHECKING:
    from .host import HostCore

# What this reference implements, advertised so a client can tell (§3).
FEATURES = ("notifications.v4", "session.fork", "session.fork.throughMessageId")
# §3 rule 9: v11 never advertises "a2a".
CAPABILITIES: tuple[str, ...] = ()


def handshake(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    version = params.get("protocolVersion")
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise invalid_params("protocolVersion must be an integer")
    if version != limits.PROTOCOL_VERSION:
        # §3 rule 1 / §7 1011: the client aborts boot on this answer.
        raise HostError(
            "PROTOCOL_MISMATCH",
            f"protocol version {version} is not supported; this host speaks {limits.PROTOCOL_VERSION}",
            {"supported": [limits.PROTOCOL_VERSION], "requested": version},
        )
    # The client is named "electron-main" by §3; any named client is served.
    required_str(params, "client")
    required_str(params, "clientVersion", blank_ok=True)
    optional_str(params, "locale")  # default "en"; this host sends no prose
    host.handshake_succeeded()
    return {
        "protocolVersion": limits.PROTOCOL_VERSION,
        "host": limits.HOST_NAME,
        "hostVersion": limits.HOST_VERSION,
        "features": list(FEATURES),
        "capabilities": list(CAPABILITIES),
    }


def health(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "status": "ok", "toolBudget": host.tool_budget()}


def get_version(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "hostVersion": limits.HOST_VERSION,
        "protocolVersion": limits.PROTOCOL_VERSION,
        "host": limits.HOST_NAME,
    }


METHODS = {
    "app.handshake": (handshake, False),
    "app.health": (health, False),
    "app.getVersion": (get_version, False),
}
