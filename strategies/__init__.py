"""Hypothesis generators for the suite (installed as ``conformance.strategies``).

Strategies only generate; they never talk to a target. Bounds are
keyword-only and validated at once, with a message saying how to fix the call.
"""

from __future__ import annotations

from .extension import (
    HOSTED_OPTIONAL_FEATURES,
    SPECIAL_IDS,
    invalid_arguments,
    malformed_frames,
    offers,
    oversized_sizes,
    tool_arguments,
)
from .json_values import json_values
from .oversized import BOUNDS, Bound, Oversized, at_bound, oversized, oversized_values

__all__ = [
    "BOUNDS",
    "HOSTED_OPTIONAL_FEATURES",
    "SPECIAL_IDS",
    "Bound",
    "Oversized",
    "at_bound",
    "invalid_arguments",
    "json_values",
    "malformed_frames",
    "offers",
    "oversized",
    "oversized_sizes",
    "oversized_values",
    "tool_arguments",
]
