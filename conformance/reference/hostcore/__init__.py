"""The reference host-core: host RPC protocol v11 over stdio NDJSON, with its
state in SQLite in a data directory (surviving restart).

Run it with ``octet-hostcore --data-dir DIR`` or
``python3 -m conformance.reference.hostcore --data-dir DIR``. Like the
reference extension it imports none of the suite's validators -- only the
shared NDJSON framing and the reference JSON-RPC helpers -- so the harness
and this reference can disagree, and the disagreement is found.

Where the document is silent about a result's shape, the choice made here is
written beside the handler; where it contradicts itself, the reading taken is
named with its section.
"""

from __future__ import annotations

from .host import HostCore
from .stdio import serve

__all__ = ["HostCore", "serve"]
