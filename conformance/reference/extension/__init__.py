"""The reference extension: a correct, readable octet extension.

Run it with ``python3 -m conformance.reference.extension --api-version 0.2``.
It deliberately imports nothing from the suite's validators (only the shared
framing and limits), so the harness and this reference can disagree.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .calls import CallContext
    from .extension import ReferenceExtension
    from .jsonrpc import RpcError
    from .server import run
    from .stdio import serve

__all__ = ["CallContext", "ReferenceExtension", "RpcError", "run", "serve"]

# Loaded on first use: the reference host-core imports only this package's
# writer and jsonrpc modules, and loading the whole extension with them cost
# every host-core start about 60 ms of CPU (a faulty host-core's test starts
# a dozen).
_WHERE = {
    "CallContext": ".calls",
    "ReferenceExtension": ".extension",
    "RpcError": ".jsonrpc",
    "run": ".server",
    "serve": ".stdio",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)
