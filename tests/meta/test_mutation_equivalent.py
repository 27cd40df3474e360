"""benchmarks/mutation_equivalent.toml stays true to the references.

Each entry excuses one single-node change of a reference from the mutation
kill rate (issue 20 item 3). An entry is keyed by file, line and operator, so
an edit of a reference module can leave it pointing at a line that no longer
holds that change, silently excusing nothing or, worse, a different mutant.
Every entry must name a change ``benchmarks/mutation.py`` can still make, and
give a reason.
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.toml"


def _mutation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("octet_mutation_benchmark", ROOT / "benchmarks" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_entry_names_a_mutant_the_script_makes() -> None:
    mutation = _mutation()
    entries = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8"))["equivalent"]
    assert entries
    made: set[tuple[str, int, str]] = set()
    for role in mutation.ROLES.values():
        # only the modules entries name: every candidate of a module is parsed once to be kept
        files = sorted({Path(e["path"]).name for e in entries if Path(e["path"]).parent == Path(role.package)})
        if files:
            made.update((m.path, m.line, m.operator) for m, _source in mutation.mutants_of(role, files))
    stale = [e for e in entries if (e["path"], e["line"], e["operator"]) not in made]
    assert stale == []


def test_every_entry_gives_a_reason_once() -> None:
    entries = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8"))["equivalent"]
    keys = [(e["path"], e["line"], e["operator"]) for e in entries]
    assert len(keys) == len(set(keys))
    assert all(len(str(e["reason"]).strip()) >= 40 for e in entries), "a reason says why, with a section"
