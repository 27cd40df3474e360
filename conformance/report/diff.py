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
class RunDiff:
    new_failures: tuple[Change, ...]
    fixes: tuple[Change, ...]
    newly_tested: tuple[Change, ...]
    newly_untested: tuple[Change, ...]
    other_changes: tuple[Change, ...]

    def as_json(self, a: str, b: str) -> dict[str, Any]:
        return {"a": a, "b": b, **{c: [asdict(x) for x in getattr(self, c)] for c in CATEGORIES}}


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
    return RunDiff(**{c: tuple(found[c]) for c in CATEGORIES})


def diff_text(d: RunDiff) -> str:
    titles = {
        "new_failures": "new failures",
        "fixes": "fixes",
        "newly_tested": "newly tested",
        "newly_untested": "newly untested",
        "other_changes": "other verdict changes",
    }
    lines = []
    for c in CATEGORIES:
        changes = getattr(d, c)
        lines.append(f"{titles[c]}: {len(changes)}")
        for x in changes:
            evidence = x.evidence.splitlines()[0] if x.evidence else ""
            lines.append(f"  {x.id}: {x.before or 'absent'} -> {x.after or 'absent'}: {evidence}")
    return "\n".join(lines)
