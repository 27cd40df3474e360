"""The fault catalogs of the faulty fixtures, for tests that switch a fault
on in-process. They live beside the fixtures (fixtures/<role>/_faults/),
outside the package, so a test loads one by path, as the fixtures'
wrappers do."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fault_catalog(role: str, name: str) -> ModuleType:
    """``fixtures/<role>/_faults/<name>.py``, loaded once as module ``name``
    (registered in sys.modules, as an import would: its dataclasses need it)."""
    if name in sys.modules:
        return sys.modules[name]
    path = FIXTURES / role / "_faults" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
