"""Which requirements a run judges: ``--only``, ``--section``, ``--side``, ``--feature``.

A selection narrows the *verdicts*, not the exploration: the target is driven
exactly as a full run with the same seed drives it, so a selected
requirement gets the verdict a full run would give it. An unselected
requirement is not judged at all: its violations are not recorded (no trace,
no shrinking, which is where a failing run spends its time) and it is left
out of ``matrix.json``, ``junit.xml`` and the console -- never reported as a
pass.

Within one option the values are alternatives (``--only 'EXT-1.9-*' --only
'JSONRPC-5-*'``); different options must all hold. Every value must select
something among the role's requirements, so a typo is refused instead of
silently certifying nothing (:meth:`Selection.problems`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .requirements import Requirement


def in_section(section: str, wanted: str) -> bool:
    """``wanted`` "1.4" takes 1.4, its lettered companions (1.4b) and its
    subsections (1.4.2); "1" takes every 1.x; "1.1" never takes 1.10."""
    if section == wanted or section.startswith(wanted + "."):
        return True
    rest = section[len(wanted) :] if section.startswith(wanted) else ""
    return bool(rest) and rest.isalpha()


@dataclass(frozen=True)
class Selection:
    only: tuple[str, ...] = ()  # id globs (fnmatch, case-sensitive: ids are)
    sections: tuple[str, ...] = ()
    sides: tuple[str, ...] = ()
    features: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return not (self.only or self.sections or self.sides or self.features)

    def matches(self, req: Requirement) -> bool:
        return (
            (not self.only or any(fnmatchcase(req.id, g) for g in self.only))
            and (not self.sections or any(in_section(req.section, s) for s in self.sections))
            and (not self.sides or req.side in self.sides)
            and (not self.features or any(f in req.features for f in self.features))
        )

    def select(self, requirements: Iterable[Requirement]) -> list[Requirement]:
        return [r for r in requirements if self.matches(r)]

    def judged(self, requirements: Iterable[Requirement]) -> frozenset[str] | None:
        """The ids to judge among ``requirements`` (None: no selection, judge all)."""
        return None if self.everything else frozenset(r.id for r in self.select(requirements))

    def problems(self, requirements: Iterable[Requirement], role: str) -> list[str]:
        """Values that select nothing among the role's requirements, and an
        empty selection: each one a line saying how to fix the call."""
        pool = list(requirements)
        out = []
        for option, values, hit in (
            ("--only", self.only, lambda r, v: fnmatchcase(r.id, v)),
            ("--section", self.sections, lambda r, v: in_section(r.section, v)),
            ("--side", self.sides, lambda r, v: r.side == v),
            ("--feature", self.features, lambda r, v: v in r.features),
        ):
            for value in values:
                if not any(hit(r, value) for r in pool):
                    out.append(f"{option} {value!r} matches none of the requirements the {role} certification judges")
        if not out and not self.select(pool):
            out.append(f"{self.describe()} together select none of the requirements the {role} certification judges")
        if out:
            out.append(f"see `octet-conformance requirements --side {role}` for the ids, sections and features")
        return out

    def describe(self) -> str:
        """The selection as the options that made it ("" for everything)."""
        return " ".join(
            f"{option} {value}"
            for option, values in (
                ("--only", self.only),
                ("--section", self.sections),
                ("--side", self.sides),
                ("--feature", self.features),
            )
            for value in values
        )
