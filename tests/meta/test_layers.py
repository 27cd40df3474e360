"""Imports point down the layers of the architecture (the shared
ARCHITECTURE.md, "Layers"): read with ``ast``, nothing is imported.

Lowest first; a module may import its own layer and the layers below it:

    requirements (data), the package root (its version)
    protocol core (sans-IO), safe_text, manifest_file, selection, outfiles
    transport, evidence, manifest
    strategies (generators), reference implementations, probe
    peers, verdicts, profiles
    results
    scenarios (fixed scripts, as data)
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
    ("scenarios",),
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


def import_statements(path: Path, text: str | None = None) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every import in ``path`` (or ``text`` as if
    it were that file): ``import x`` is (x, ()), ``from x import y, z`` is
    (x, (y, z)) with relative imports resolved."""
    module = module_of(path).split(".")
    package = module if path.name == "__init__.py" else module[:-1]
    found: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(_parsed(path) if text is None else ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found.append((node.lineno, base, tuple(a.name for a in node.names)))
    return found


def _ours(name: str) -> bool:
    return name == "conformance" or name.startswith("conformance.")


def imports(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted name) of every conformance module ``path`` (or ``text``
    as if it were that file) imports (``from x import y`` counts as x and as
    x.y: y may be a module)."""
    found: list[tuple[int, str]] = []
    for line, base, names in import_statements(path, text):
        found += [(line, base), *((line, f"{base}.{name}") for name in names)]
    return [(line, name) for line, name in found if _ours(name)]


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


# -- a Violation is built only in the protocol core (ARCHITECTURE rule 9) ---------------------------
# Today's other places that still build one, each with the number of places
# it does: this table may only shrink. A file over its count, or a file not
# listed, fails; so does a listed file that no longer builds one (drop it).
VIOLATION_BUILDERS: dict[str, int] = {
    "conformance/machines/hostcore.py": 15,
    "conformance/machines/hostcore_bash.py": 10,
    "conformance/machines/hostcore_forks.py": 17,
    "conformance/machines/hostcore_modes.py": 11,
    "conformance/machines/hostcore_paths.py": 24,
    "conformance/machines/hostcore_proposals.py": 21,
    "conformance/machines/hostcore_world.py": 4,
    "conformance/machines/oversized.py": 1,
    "conformance/peers/ext_host.py": 6,
    "conformance/peers/host_rig.py": 2,
    "conformance/peers/rpc_client.py": 4,
    "conformance/peers/rpc_hostcore.py": 1,
    "conformance/runner/replay.py": 1,
    "conformance/scenarios/handling_commands.py": 11,
    "conformance/scenarios/handling_discovery.py": 8,
    "conformance/scenarios/handling_manifests.py": 7,
    "conformance/scenarios/handling_results.py": 8,
    "conformance/scenarios/handling_stages.py": 7,
    "conformance/scenarios/host_cancel.py": 9,
    "conformance/scenarios/host_children.py": 6,
    "conformance/scenarios/host_events.py": 1,
    "conformance/scenarios/host_packaging.py": 4,
    "conformance/scenarios/host_routing.py": 3,
    "conformance/scenarios/host_shutdown.py": 4,
    "conformance/scenarios/hostcore_handshake.py": 13,
    "conformance/scenarios/lifecycle_reload.py": 5,
    "conformance/scenarios/lifecycle_supervision.py": 8,
    "conformance/scenarios/storm_steps.py": 4,
}


def violations_built(path: Path, text: str | None = None) -> int:
    """How many calls in ``path`` (or ``text`` as if it were that file) build
    a ``Violation``: by its name, under an alias it was imported as, or as an
    attribute (``violations.Violation(...)``)."""
    tree = _parsed(path) if text is None else ast.parse(text)
    names = {"Violation"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname for a in node.names if a.name == "Violation" and a.asname}
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id in names) or (
                isinstance(func, ast.Attribute) and func.attr == "Violation"
            ):
                count += 1
    return count


def test_a_violation_is_built_only_in_the_core() -> None:
    core = ROOT / "conformance" / "protocol"
    built = {
        str(path.relative_to(ROOT)): n
        for path in sources()
        if core not in path.parents and (n := violations_built(path))
    }
    over = [f"{p}: builds {n} Violation(s), allowed {VIOLATION_BUILDERS.get(p, 0)}" for p, n in sorted(built.items())
            if n > VIOLATION_BUILDERS.get(p, 0)]  # fmt: skip
    assert not over, "judge in conformance/protocol/ (a @rule), not here:\n" + "\n".join(over)
    stale = sorted(set(VIOLATION_BUILDERS) - set(built))
    assert not stale, f"these no longer build a Violation: drop them from VIOLATION_BUILDERS: {stale}"


@pytest.mark.parametrize(
    "text",
    [
        "from conformance.protocol.violations import Violation\nv = Violation('X', 'm')",
        "from conformance.protocol.violations import Violation as V\nv = V('X', 'm')",
        "from conformance.protocol import violations\nv = violations.Violation('X', 'm')",
    ],
)
def test_a_violation_built_is_found(text: str) -> None:
    assert violations_built(ROOT / "conformance" / "runner" / "extension.py", text) == 1
    assert not violations_built(ROOT / "conformance" / "runner" / "extension.py", "from x import Violation")


# -- what reference implementations import (ARCHITECTURE rules 1, 8 and 10) --------------------------
# A reference is written as its author would write it: its own modules (and
# the other references', which share author code such as the JSON-RPC
# helpers and the writer), the standard library, and the shared framing --
# rule 1 writes framing once for the harness and the references alike, so
# the NDJSON decoder and the id peek of an oversized line's prefix (part of
# reading a frame) are allowed. Never a validator, a rule, the requirement
# catalog, a machine, a runner, a peer, the evidence or a report (rule 8: the
# harness and the references must be able to disagree).
REFERENCE_MAY_IMPORT = ("conformance.reference.", "conformance.protocol.framing", "conformance.protocol.id_peek")
# Today's other imports of the references, with the reason; may only shrink.
REFERENCE_EXCEPTIONS: dict[str, str] = {
    "conformance.protocol.limits": "the reference host reads the checker's bounds table (the host-core and the "
    "client keep their own, compared by tests/reference/): give the host a table of its own",
    "conformance.transport.simulated": "reference/host/simulated.py runs the reference host on the harness's "
    "virtual clock and scheduler (the in-process pairing), not author code",
}


def _reference_may(name: str) -> bool:
    return not _ours(name) or name in ("conformance", "conformance.reference") or name.startswith(REFERENCE_MAY_IMPORT)


def reference_imports(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of each conformance module a reference imports that it
    may not (exceptions aside). ``from x import y`` is allowed when x is, or
    when x.y is (``from conformance.protocol import framing``)."""
    found = []
    for line, base, names in import_statements(path, text):
        if _reference_may(base):
            continue
        found += [(line, f"{base}.{name}") for name in names or ("",) if not _reference_may(f"{base}.{name}")]
    return [(line, name.rstrip(".")) for line, name in found]


def test_references_import_no_checker_code() -> None:
    wrong, used = [], set()
    for path in sorted((ROOT / "conformance" / "reference").rglob("*.py")):
        for line, name in reference_imports(path):
            exception = next((e for e in REFERENCE_EXCEPTIONS if name == e or name.startswith(e + ".")), None)
            if exception is None:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: a reference imports {name}")
            else:
                used.add(exception)
    assert not wrong, "references import only their own code, stdlib and the framing:\n" + "\n".join(wrong)
    stale = sorted(set(REFERENCE_EXCEPTIONS) - used)
    assert not stale, f"no reference imports these any more: drop them from REFERENCE_EXCEPTIONS: {stale}"


@pytest.mark.parametrize(
    "text",
    [
        "from conformance.protocol.rpc_answers import judge",
        "from conformance.requirements import load_catalog",
        "import conformance.machines.host",
        "from ...runner import hostcore",
        "from conformance.peers.rpc_client import DATA_DIR",
    ],
)
def test_a_reference_importing_checker_code_is_found(text: str) -> None:
    path = ROOT / "conformance" / "reference" / "hostcore" / "server.py"
    assert reference_imports(path, text)
    assert not reference_imports(path, "from conformance.protocol.framing import FrameDecoder\nimport json")
    assert not reference_imports(path, "from .errors import HostError\nfrom conformance.reference.extension import x")


# -- the shipped references carry no fault code (ARCHITECTURE rule 10) --------------------------------
# Fault catalogs live beside the fixtures (fixtures/<role>/_faults/) and reach
# a reference through its documented seams; a reference has no fault module,
# no --fault option and no line marked as the fault.
FAULT_MARKS = ('"--fault"', "# the fault")


def fault_code(path: Path, text: str | None = None) -> list[str]:
    body = path.read_text(encoding="utf-8") if text is None else text
    found = [f"{path.relative_to(ROOT)}: a fault module"] if "fault" in path.stem else []
    return found + [
        f"{path.relative_to(ROOT)}:{n}: {mark}"
        for n, line in enumerate(body.splitlines(), 1)
        for mark in FAULT_MARKS
        if mark in line
    ]


def test_references_carry_no_fault_code() -> None:
    found = [f for path in sorted((ROOT / "conformance" / "reference").rglob("*.py")) for f in fault_code(path)]
    assert not found, "move it to fixtures/<role>/_faults/, behind a seam:\n" + "\n".join(found)


def test_fault_code_is_found() -> None:
    server = ROOT / "conformance" / "reference" / "hostcore" / "server.py"
    assert fault_code(server, 'parser.add_argument("--fault")')
    assert fault_code(server, "answer = True  # the fault: confirms")
    assert fault_code(ROOT / "conformance" / "reference" / "host" / "lifecycle_faults.py", "")
    assert not fault_code(server, "# a faulty fixture's wrapper may replace this class")
