"""Resolving a tool's explicit path against the session root (§5).

A path is *inside* when its canonical form (``..`` collapsed, every symlink
followed) lies under the canonical session root or the session's scratch
root; anything else is *outside*, whatever its spelling. That is what makes
``../x`` and a symlink pointing out of the project take the same outside-path
permission rule as a plain absolute path (§5, paragraph after the steps).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Resolved:
    path: str  # absolute and canonical
    outside: bool


def resolve(raw: str, root: str, scratch: str | None = None) -> Resolved:
    """``root`` and ``scratch`` must already be canonical (project paths are
    stored canonical). Should one have become a symlink since, paths under
    it resolve elsewhere and count as outside: the safe direction."""
    candidate = raw if os.path.isabs(raw) else os.path.join(root, raw)
    canonical = os.path.realpath(candidate)  # follows symlinks, even dangling prefixes
    roots = [root] + ([scratch] if scratch else [])
    return Resolved(canonical, not any(_within(canonical, base) for base in roots))


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)
