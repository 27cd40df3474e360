"""The command shell catalog (§5.2) and commandShells.list.

This reference runs on POSIX systems and knows one shell, ``bash`` (dialect
``posix``). Settings are not part of this reference, so nothing is
configured (``configuredId`` null) and the effective shell is the first
available platform shell -- which is not a fallback (``fallback`` false).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .host import HostCore

BASH_ID, BASH_DIALECT = "bash", "posix"


def bash_path() -> str | None:
    found = shutil.which("bash")
    return found if found and os.access(found, os.X_OK) else None


def catalog() -> dict[str, Any]:
    available = bash_path() is not None
    option = {"id": BASH_ID, "label": "Bash", "dialect": BASH_DIALECT, "available": available, "isDefault": True}
    return {
        "configuredId": None,
        "effective": option if available else None,
        "fallback": False,
        "choices": [option],
    }


def effective() -> tuple[str, str] | None:
    """(id, dialect) of the shell Bash calls run in, or None if none exists."""
    return (BASH_ID, BASH_DIALECT) if bash_path() is not None else None


def list_(host: HostCore, params: dict[str, Any]) -> dict[str, Any]:
    return catalog()


METHODS = {"commandShells.list": (list_, False)}
