"""Find, for every catalog entry with a check, the function that judges it,
and (with ``--write``) put that function in the entry's ``check`` field.

    .venv/bin/python tests/meta/locate_checks.py           # report only
    .venv/bin/python tests/meta/locate_checks.py --write   # rewrite check = "..." lines
    .venv/bin/python tests/meta/locate_checks.py --inline-constants --write
        # first write ids held in NAME = "<id>" constants inline at each use
        # (then: ruff check --fix . && ruff format .)

The catalog's ``check`` names the judging function as
``dotted.module:function`` or ``dotted.module:Class.method``. This script
reads the code (``conformance/``, reference implementations excepted) with
``ast`` and finds every function whose source holds the id as
a string literal, preferring the function a ``@rule("<id>")`` decorates, then
one that builds a ``Violation("<id>", ...)`` or records it, then any other.
An entry whose current ``check`` still names a function holding the id keeps
it, so re-running after a merge only touches entries that need it (the old
``"harness"`` value, a function that moved or lost the id). Only ``check =``
lines are rewritten, so the edit stays line-local for merges.

``tests/meta/test_catalog.py`` verifies the result by importing each named
object; run this script when that test names entries to fix.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "conformance" / "requirements"
ID = re.compile(r"(?:EXT|JSONRPC|RPC)-[0-9][0-9a-z.]*-[A-Za-z0-9.\-]+")
CHECK_LINE = re.compile(r'^check\s*=\s*"([^"]*)"\s*$')
ID_LINE = re.compile(r'^id\s*=\s*"([^"]*)"\s*$')
# How strongly a function judges an id: the @rule decorating it, a Violation /
# recorder call naming it, any other mention of the literal.
RULE, VIOLATION, MENTION = 3, 2, 1
JUDGING_CALLS = frozenset({"Violation", "violate", "Exercise", "exercise", "Refusal"})


@dataclass(frozen=True)
class Place:
    target: str  # "dotted.module:qualname"
    score: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _function_places(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    found: dict[str, int] = {}

    def note(rid: str, score: int) -> None:
        found[rid] = max(found.get(rid, MENTION), score)

    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = _call_name(node)
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and ID.fullmatch(first.value):
                if name == "rule":
                    note(first.value, RULE)
                elif name in JUDGING_CALLS:
                    note(first.value, VIOLATION)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ID.fullmatch(node.value):
            note(node.value, MENTION)
    return found


def _module_places(module: str, tree: ast.Module) -> list[tuple[str, Place]]:
    out: list[tuple[str, Place]] = []

    def functions(body: list[ast.stmt], prefix: str) -> None:
        for item in body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                qual = f"{prefix}{item.name}"
                out.extend((rid, Place(f"{module}:{qual}", score)) for rid, score in _function_places(item).items())
            elif isinstance(item, ast.ClassDef):
                functions(item.body, f"{prefix}{item.name}.")

    functions(tree.body, "")
    return out


def places(root: Path = ROOT) -> dict[str, list[Place]]:
    """Requirement id -> every function naming it."""
    out: dict[str, list[Place]] = {}
    for path in sorted((root / "conformance").rglob("*.py")):
        if "reference" in path.relative_to(root).parts:
            continue  # reference implementations do not cite the checker's ids
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for rid, place in _module_places(module_name(path), tree):
            out.setdefault(rid, []).append(place)
    return out


def holds(target: str, rid: str, found: dict[str, list[Place]]) -> bool:
    return any(p.target == target for p in found.get(rid, []))


def choose(rid: str, current: str, found: dict[str, list[Place]]) -> tuple[str | None, list[str]]:
    """The check for ``rid`` (None: no code names it) and the runners-up
    that scored as high (an ambiguity worth a look)."""
    if current not in ("harness", "") and holds(current, rid, found):
        return current, []
    candidates = found.get(rid, [])
    if not candidates:
        return None, []
    best = max(_rank(p) for p in candidates)
    top = list(dict.fromkeys(p.target for p in candidates if _rank(p) == best))
    return top[0], top[1:]


def _rank(place: Place) -> tuple[int, int]:
    """Score first; on a tie the sans-IO core (where checks live), then the
    peers, then the scenarios, then the machines and runners."""
    layers = ("conformance.protocol.", "conformance.peers.", "conformance.scenarios.", "conformance.machines.")
    layer = next((len(layers) - i for i, prefix in enumerate(layers) if place.target.startswith(prefix)), 0)
    return place.score, layer


def catalog_checks() -> list[tuple[Path, str, str]]:
    rows = []
    for path in sorted(CATALOG.glob("*.toml")):
        for raw in tomllib.loads(path.read_text(encoding="utf-8")).get("requirement", []):
            if raw.get("check") != "none":
                rows.append((path, str(raw["id"]), str(raw.get("check", ""))))
    return rows


def rewrite(path: Path, new: dict[str, str]) -> int:
    """Replace the ``check =`` line of each entry in ``new`` (id -> check);
    an entry saying "none" keeps it (it needs a reason, not a function)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    current, changed = None, 0
    for i, line in enumerate(lines):
        if line.startswith("[[requirement]]"):
            current = None
        elif m := ID_LINE.match(line):
            current = m.group(1)
        elif (m := CHECK_LINE.match(line)) and current in new and m.group(1) not in ("none", new[current]):
            lines[i] = f'check = "{new[current]}"\n'
            changed += 1
    if changed:
        path.write_text("".join(lines), encoding="utf-8")
    return changed


# -- --inline-constants: write ids where they are used -------------------------


def _constants() -> tuple[dict[str, dict[str, str]], dict[str, list[tuple[int, int]]]]:
    """Module -> {NAME: id} for module-level ``NAME = "<id>"`` assignments,
    and the line spans of those assignments."""
    values: dict[str, dict[str, str]] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    for path in (ROOT / "conformance").rglob("*.py"):
        if "reference" in path.relative_to(ROOT).parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            target = node.target if isinstance(node, ast.AnnAssign) else target
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and ID.fullmatch(value.value)
            ):
                values.setdefault(module_name(path), {})[target.id] = value.value
                spans.setdefault(module_name(path), []).append((node.lineno, node.end_lineno or node.lineno))
    return values, spans


def _imported_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _uses(
    tree: ast.AST,
    lines: list[bytes],
    names: dict[str, str],
    modules: dict[str, str],
    values: dict[str, dict[str, str]],
) -> list[tuple[int, int, int, str]]:
    """(line, start, end, literal) for every use of an id constant in ``tree``."""
    edits: list[tuple[int, int, int, str]] = []
    stack: list[tuple[ast.AST, str]] = [(tree, '"')]
    while stack:
        node, quote = stack.pop()
        if isinstance(node, ast.JoinedStr):  # inside an f-string: use the other quote (Python 3.11)
            start = lines[node.lineno - 1][node.col_offset :].lstrip(b"fFrRbBuU")[:1].decode()
            quote = "'" if start == '"' else '"'
        value = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            value = names.get(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            value = values[modules[node.value.id]].get(node.attr)
        if value is not None and isinstance(node, ast.Name | ast.Attribute) and node.lineno == node.end_lineno:
            edits.append((node.lineno, node.col_offset, node.end_col_offset or 0, f"{quote}{value}{quote}"))
            continue
        stack.extend((child, quote) for child in ast.iter_child_nodes(node))
    return edits


def inline_constants() -> list[str]:
    """Replace every use of a module-level id constant (in ``conformance/``,
    ``tests/``, ``benchmarks/``) by the id literal and drop the constant.
    Unused imports are left for ``ruff check --fix``; long lines for
    ``ruff format``. A name also bound elsewhere in a file is left alone and
    reported."""
    values, spans = _constants()
    report: list[str] = []
    for path in sorted(p for folder in ("conformance", "tests", "benchmarks") for p in (ROOT / folder).rglob("*.py")):
        module = module_name(path)
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        names = dict(values.get(module, {}))
        modules: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                origin = _imported_from(module, path, node)
                for alias in node.names:
                    if alias.name in values.get(origin, {}):
                        names[alias.asname or alias.name] = values[origin][alias.name]
                    elif f"{origin}.{alias.name}" in values:
                        modules[alias.asname or alias.name] = f"{origin}.{alias.name}"
        if not names and not modules and module not in spans:
            continue
        bound: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound[node.id] = bound.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                bound[node.arg] = bound.get(node.arg, 0) + 1
        own = values.get(module, {})
        shadowed = {n for n in names if bound.get(n, 0) > (1 if n in own else 0)}
        if shadowed:
            report.append(f"{path.relative_to(ROOT)}: left alone (bound elsewhere): {sorted(shadowed)}")
        lines = [line.encode() for line in source.splitlines(keepends=True)]

        edits = _uses(tree, lines, {n: v for n, v in names.items() if n not in shadowed}, modules, values)
        dropped = {n for a, b in spans.get(module, []) for n in range(a, b + 1)} if not shadowed else set()
        if not edits and not dropped:
            continue
        for line, start, end, text in sorted(edits, reverse=True):
            lines[line - 1] = lines[line - 1][:start] + text.encode() + lines[line - 1][end:]
        path.write_bytes(b"".join(line for n, line in enumerate(lines, 1) if n not in dropped))
        report.append(f"{path.relative_to(ROOT)}: {len(edits)} use(s) inlined, {len(dropped)} line(s) dropped")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the catalogs' check lines")
    parser.add_argument(
        "--inline-constants",
        action="store_true",
        help="first replace module-level id constants by the literal id at every use "
        "(then run ruff check --fix and ruff format)",
    )
    args = parser.parse_args(argv)
    if args.inline_constants:
        print("\n".join(inline_constants()))
    found = places()
    updates: dict[Path, dict[str, str]] = {}
    missing: list[str] = []
    for path, rid, current in catalog_checks():
        target, ties = choose(rid, current, found)
        if target is None:
            missing.append(rid)
            continue
        if ties:
            print(f"ambiguous: {rid} -> {target} (also {', '.join(ties)})")
        if target != current:
            updates.setdefault(path, {})[rid] = target
            print(f"{rid}: {current} -> {target}")
    for rid in missing:
        print(f"NOT FOUND: {rid} claims a check that no function names", file=sys.stderr)
    if args.write:
        total = sum(rewrite(path, new) for path, new in updates.items())
        print(f"rewrote {total} check line(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
