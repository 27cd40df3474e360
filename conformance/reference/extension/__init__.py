"""The reference extension: a correct, readable octet extension.

Run it with ``python3 -m conformance.reference.extension --api-version 0.2``.
It deliberately imports nothing from the suite's validators (only the shared
framing and limits), so the harness and this reference can disagree.
"""

from __future__ import annotations

from .calls import CallContext
from .extension import ReferenceExtension
from .jsonrpc import RpcError
from .server import run
from .stdio import serve

__all__ = ["CallContext", "ReferenceExtension", "RpcError", "run", "serve"]
