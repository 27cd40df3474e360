"""octet-conformance: conformance and fuzzing suite for the octet extension wire
protocol and the host RPC protocol."""

from __future__ import annotations

__version__ = "0.1.0"
