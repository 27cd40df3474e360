"""Find, for every catalog entry with a check, the function that judges it,
and (with ``--write``) put that function in the entry's ``check`` field.

    .venv/bin/python tests/meta/locate_checks.py           # report only
    .venv/bin/python tests/meta/locate_checks.py --write   # rewrite check = "..." lines

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
JUDGING_CALLS = frozenset({"Violation", "violate", "Exercise", "exercise", "_violation", "_violate"})


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
    peers, then the machines and runners."""
    layers = ("conformance.protocol.", "conformance.peers.", "conformance.machines.")
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
    """Replace the ``check =`` line of each entry in ``new`` (id -> check)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    current, changed = None, 0
    for i, line in enumerate(lines):
        if line.startswith("[[requirement]]"):
            current = None
        elif m := ID_LINE.match(line):
            current = m.group(1)
        elif (m := CHECK_LINE.match(line)) and current in new and m.group(1) != new[current]:
            lines[i] = f'check = "{new[current]}"\n'
            changed += 1
    if changed:
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the catalogs' check lines")
    args = parser.parse_args(argv)
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
