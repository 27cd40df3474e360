"""Comparing this catalog with another one (an older or newer revision of
the same documents): which requirements were added, removed or changed.

``OTHER`` is a catalog file (``*.toml``) or a directory of them, in the
format of docs/catalog.md. Only the documents ``OTHER`` covers are compared,
so one file of an older catalog compares against the same document here.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from . import CatalogError, Requirement, catalog_header, entry, load_catalog, revisions

COMPARED = tuple(f.name for f in fields(Requirement) if f.name != "id")


@dataclass(frozen=True)
class OtherCatalog:
    revisions: dict[str, str]
    entries: tuple[Requirement, ...]


@dataclass(frozen=True)
class CatalogDiff:
    revisions: dict[str, tuple[str, str]]  # document -> (other revision, this revision)
    added: tuple[Requirement, ...]
    removed: tuple[Requirement, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]  # id, the fields that differ


def read_other(path: Path) -> OtherCatalog:
    files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
    if not files:
        raise CatalogError(f"{path}: no *.toml catalog files")
    found: dict[str, str] = {}
    entries: list[Requirement] = []
    for f in files:
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CatalogError(f"{f}: cannot be read: {exc.strerror or exc}") from None
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CatalogError(f"{f}: not valid TOML: {exc}") from None
        raw = data.get("requirement", [])
        if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
            raise CatalogError(f"{f}: 'requirement' must be an array of tables")
        document_entries = [entry(r, str(f)) for r in raw]
        if "catalog" in data:
            document, revision = catalog_header(data, str(f))
        else:  # a catalog from before revisions were recorded
            document, revision = _document_of(document_entries, f), "(not recorded)"
        found[document] = revision
        entries += document_entries
    return OtherCatalog(found, tuple(entries))


def _document_of(entries: list[Requirement], f: Path) -> str:
    documents = {r.document for r in entries}
    if len(documents) != 1:
        raise CatalogError(f"{f}: no [catalog] table, and its entries name {len(documents)} documents, not one")
    return documents.pop()


def compare(other: OtherCatalog) -> CatalogDiff:
    mine = {r.id: r for r in load_catalog() if r.document in other.revisions}
    theirs = {r.id: r for r in other.entries}
    changed = []
    for rid in mine.keys() & theirs.keys():
        differ = tuple(f for f in COMPARED if getattr(mine[rid], f) != getattr(theirs[rid], f))
        if differ:
            changed.append((rid, differ))
    here = revisions()
    return CatalogDiff(
        revisions={d: (rev, here.get(d, "(absent)")) for d, rev in sorted(other.revisions.items())},
        added=tuple(r for rid, r in mine.items() if rid not in theirs),
        removed=tuple(r for rid, r in theirs.items() if rid not in mine),
        changed=tuple(sorted(changed, key=lambda c: list(mine).index(c[0]))),
    )


def diff_lines(d: CatalogDiff) -> list[str]:
    lines = [f"{doc}: {old} -> {new}" for doc, (old, new) in d.revisions.items()]
    lines.append(f"added: {len(d.added)}")
    lines += [f"  + {r.id}\t{r.section}\t{r.level}\t{r.side}" for r in d.added]
    lines.append(f"removed: {len(d.removed)}")
    lines += [f"  - {r.id}\t{r.section}\t{r.level}\t{r.side}" for r in d.removed]
    lines.append(f"changed: {len(d.changed)}")
    lines += [f"  ~ {rid}: {', '.join(differ)}" for rid, differ in d.changed]
    return lines
