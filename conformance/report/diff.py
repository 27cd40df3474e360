"""What changed between two runs: new failures, fixes, newly tested and
newly untested requirements (and every other verdict change).

Keyed by requirement id, so the two runs may be of different targets (two
implementations) or of one target before and after a change. Definitions:

- *new failure*: ``fail`` in B, and neither ``fail`` nor ``xfail`` in A (a
  failure the baseline already expected is not new);
- *fix*: ``fail`` or ``xfail`` in A, ``pass`` in B;
- *newly tested*: ``untested`` or absent in A, judged in B
  (``pass``/``fail``/``warn``/``xfail``);
- *newly untested*: judged in A, ``untested`` or absent in B;
- *other change*: any other verdict change (a ``warn`` appearing, ``skip``
  because the API version differs, ``error``).

A requirement absent from a run that judged only a selection (its
``suite.selection``, e.g. ``--only 'EXT-1.9-*'``) was left out on purpose,
not untested: it is not compared.

Before comparing, the two runs' identities are checked (:func:`refusals`):
runs of different roles judge different requirements, and runs of
different targets compare two implementations, not two versions of one;
the command line refuses both unless told ``--force``. What else differs
and changes what a verdict means -- profile, seed, API version, the catalog
revision of each document -- is listed with the comparison
(:func:`differences`), never silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .rundir import Run

JUDGED = ("pass", "fail", "warn", "xfail")
NOT_TESTED = ("untested", None)
CATEGORIES = ("new_failures", "fixes", "newly_tested", "newly_untested", "other_changes")


@dataclass(frozen=True)
class Change:
    id: str
    before: str | None  # None: the requirement is not in that run
    after: str | None
    evidence: str  # B's evidence (A's when B lacks the requirement)


@dataclass(frozen=True)
class Difference:
    """One setting the two runs do not share; ``a``/``b`` as shown to a person."""

    what: str  # "role", "target", "profile", "seed", "API version", "catalog revision of <document>"
    a: str
    b: str

    def line(self) -> str:
        return f"{self.what} differs: A {self.a}, B {self.b}"


def _setting(run: Run, member: str, key: str) -> str:
    section = run.matrix.get(member)
    value = section.get(key) if isinstance(section, dict) else None
    return "not recorded" if value is None else str(value)


def _compare(a: Run, b: Run, fields: tuple[tuple[str, str, str], ...]) -> list[Difference]:
    pairs = ((what, _setting(a, member, key), _setting(b, member, key)) for what, member, key in fields)
    return [Difference(what, x, y) for what, x, y in pairs if x != y]


def refusals(a: Run, b: Run) -> list[Difference]:
    """Why the two runs are not two runs of one target: a different role or target name."""
    return _compare(a, b, (("role", "target", "role"), ("target", "target", "name")))


def differences(a: Run, b: Run) -> list[Difference]:
    """Settings that change what the verdicts mean: profile, seed, API
    version and each document's catalog revision (matrix@3 did not record one)."""
    found = _compare(
        a, b, (("profile", "suite", "profile"), ("seed", "suite", "seed"), ("API version", "target", "api_version"))
    )
    for document in sorted(set(a.catalog) | set(b.catalog)):
        x, y = (run.catalog.get(document, "not recorded") for run in (a, b))
        if x != y:
            found.append(Difference(f"catalog revision of {document}", x, y))
    return found


@dataclass(frozen=True)
class RunDiff:
    new_failures: tuple[Change, ...]
    fixes: tuple[Change, ...]
    newly_tested: tuple[Change, ...]
    newly_untested: tuple[Change, ...]
    other_changes: tuple[Change, ...]
    differences: tuple[Difference, ...] = ()  # refusals overridden by --force, then differences()

    def as_json(self, a: str, b: str) -> dict[str, Any]:
        return {
            "a": a,
            "b": b,
            "differences": [asdict(x) for x in self.differences],
            **{c: [asdict(x) for x in getattr(self, c)] for c in CATEGORIES},
        }


def category(before: str | None, after: str | None) -> str | None:
    if before == after:
        return None
    if after == "fail" and before != "xfail":
        return "new_failures"
    if before in ("fail", "xfail") and after == "pass":
        return "fixes"
    if before in NOT_TESTED and after in JUDGED:
        return "newly_tested"
    if before in JUDGED and after in NOT_TESTED:
        return "newly_untested"
    return "other_changes"


def diff_runs(a: Run, b: Run) -> RunDiff:
    before = {r["id"]: r for r in a.results}
    after = {r["id"]: r for r in b.results}
    ids = list(before) + [rid for rid in after if rid not in before]
    found: dict[str, list[Change]] = {c: [] for c in CATEGORIES}
    for rid in ids:
        x, y = before.get(rid), after.get(rid)
        if (x is None and a.selection) or (y is None and b.selection):
            continue  # outside one run's selection: nothing to compare
        vx, vy = (x or {}).get("verdict"), (y or {}).get("verdict")
        kind = category(vx, vy)
        if kind is not None:
            evidence = str((y or x or {}).get("evidence", ""))
            found[kind].append(Change(rid, vx, vy, evidence))
    return RunDiff(**{c: tuple(found[c]) for c in CATEGORIES}, differences=(*refusals(a, b), *differences(a, b)))


def diff_text(d: RunDiff) -> str:
    titles = {
        "new_failures": "new failures",
        "fixes": "fixes",
        "newly_tested": "newly tested",
        "newly_untested": "newly untested",
        "other_changes": "other verdict changes",
    }
    lines = [f"note: {x.line()}" for x in d.differences]
    for c in CATEGORIES:
        changes = getattr(d, c)
        lines.append(f"{titles[c]}: {len(changes)}")
        for x in changes:
            evidence = x.evidence.splitlines()[0] if x.evidence else ""
            lines.append(f"  {x.id}: {x.before or 'absent'} -> {x.after or 'absent'}: {evidence}")
    return "\n".join(lines)
