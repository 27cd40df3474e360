"""Imports point down the layers of the architecture (the shared
ARCHITECTURE.md, "Layers"): read with ``ast``, nothing is imported.

Lowest first; a module may import its own layer and the layers below it:

    requirements (data), the package root (its version)
    protocol core (sans-IO), safe_text, manifest_file, selection, outfiles
    transport, evidence, manifest
    strategies (generators), reference implementations, probe
    peers, verdicts, profiles
    results
    machines
    report (reads finished runs)
    runner
    cli

Three rules no ordering expresses: strategies are generators only, so they
import the core and the schedule data they generate (nothing else) and only
machines import them; and the ``Target`` interface imports no concrete
transport.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS: tuple[tuple[str, ...], ...] = (
    ("requirements", ""),
    ("protocol", "safe_text", "manifest_file", "selection", "outfiles"),
    ("transport", "evidence", "manifest"),
    ("strategies", "reference", "probe"),
    ("peers", "verdicts", "profiles"),
    ("results",),
    ("machines",),
    ("report",),
    ("runner",),
    ("cli", "pytest_plugin"),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
# What strategies may import: the core, and the schedules they generate
# (transport/schedule.py is data: "nothing here does I/O").
STRATEGY_IMPORTS = ("conformance.protocol", "conformance.requirements", "conformance.strategies")
STRATEGY_DATA = ("conformance.transport.schedule",)


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "strategies":  # installed as conformance.strategies
        parts = ["conformance", *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> list[Path]:
    return sorted([*(ROOT / "conformance").rglob("*.py"), *(ROOT / "strategies").rglob("*.py")])


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imports(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted name) of every conformance module ``path`` (or ``text``
    as if it were that file) imports (``from x import y`` counts as x and as
    x.y: y may be a module)."""
    module = module_of(path).split(".")
    package = module if path.name == "__init__.py" else module[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(_parsed(path) if text is None else ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name == "conformance" or name.startswith("conformance.")]


def unit_of(module: str) -> str:
    """The layer unit of a dotted module: its first name under the package
    ("" for the package root itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def known_unit(module: str) -> str | None:
    unit = unit_of(module)
    return unit if unit in RANK else None


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_of(p)) for p in sources()}
    assert units <= set(RANK), f"place these in LAYERS: {sorted(units - set(RANK))}"


def upward(path: Path, text: str | None = None) -> list[str]:
    here = unit_of(module_of(path))
    found = []
    for line, name in imports(path, text):
        there = known_unit(name)
        if there is not None and RANK[there] > RANK[here]:
            found.append(f"{path.relative_to(ROOT)}:{line}: {here} imports {name} ({there} is above it)")
    return found


def test_imports_point_down() -> None:
    found = [problem for path in sources() for problem in upward(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("conformance/report/console.py", "from conformance.runner.extension import certify_extension"),
        ("conformance/protocol/framing.py", "from ..transport import process"),
        ("conformance/transport/trace.py", "import conformance.peers.ext_host"),
    ],
)
def test_an_upward_import_is_found(source: str, text: str) -> None:
    assert upward(ROOT / source, text)
    assert not upward(ROOT / source, "from conformance.requirements import load_catalog")


def test_strategies_are_generators_only() -> None:
    wrong = []
    for path in sources():
        module = module_of(path)
        for line, name in imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if unit_of(module) == "strategies":
                allowed = name.startswith(STRATEGY_IMPORTS) or name.startswith(STRATEGY_DATA) or name == "conformance"
                if not allowed:
                    wrong.append(f"{where}: a strategy imports {name}")
            elif unit_of(name) == "strategies" and unit_of(module) != "machines":
                wrong.append(f"{where}: {module} imports a strategy ({name}); only machines draw from them")
    assert not wrong, "\n".join(wrong)


def test_the_target_interface_imports_no_concrete_transport() -> None:
    concrete = {module_of(p) for p in (ROOT / "conformance" / "transport").glob("*.py")} - {
        "conformance.transport.target",
        "conformance.transport",
    }
    named = {name for _, name in imports(ROOT / "conformance" / "transport" / "target.py")}
    assert not named & concrete, f"transport/target.py imports {sorted(named & concrete)}"
