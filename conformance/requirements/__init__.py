"""The requirement catalog: one TOML entry per normative statement.

The data lives beside this module (``*.toml``); the format is documented in
docs/catalog.md. Loading validates every entry so a malformed catalog fails
loudly at start-up rather than producing a silent matrix.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

DOCUMENTS = ("extension-wire-protocol", "jsonrpc-2.0", "host-rpc-protocol")
LEVELS = ("must", "should")
SIDES = ("extension", "host", "both", "client", "hostcore")


@dataclass(frozen=True)
class Requirement:
    id: str
    document: str
    section: str
    level: str
    side: str
    api: tuple[str, ...]
    features: tuple[str, ...]
    summary: str
    # The function that judges the entry, "dotted.module:function" or
    # "dotted.module:Class.method" (tests/meta checks it), or "none". Any
    # other value counts as a check here: the loader does not import code.
    check: str
    reason: str = ""
    note: str = ""

    @property
    def has_check(self) -> bool:
        return self.check != "none"


class CatalogError(ValueError):
    pass


def entry(raw: dict[str, object], source: str) -> Requirement:
    """One validated entry (also used to read another catalog for --diff)."""
    return _entry(raw, source)


def _entry(raw: dict[str, object], source: str) -> Requirement:
    def text(key: str, default: str | None = None) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str):
            raise CatalogError(f"{source}: entry {raw.get('id')!r}: {key} must be a string; got {value!r}")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CatalogError(f"{source}: entry {raw.get('id')!r}: {key} must be an array of strings")
        return tuple(value)

    req = Requirement(
        id=text("id"),
        document=text("document"),
        section=text("section"),
        level=text("level"),
        side=text("side"),
        api=strings("api"),
        features=strings("features"),
        summary=text("summary"),
        check=text("check"),
        reason=text("reason", ""),
        note=text("note", ""),
    )
    if req.document not in DOCUMENTS or req.level not in LEVELS or req.side not in SIDES:
        raise CatalogError(f"{source}: entry {req.id}: bad document/level/side {req.document}/{req.level}/{req.side}")
    if not req.has_check and not req.reason.strip():
        raise CatalogError(f"{source}: entry {req.id} has neither a check nor a reason")
    return req


@cache
def load_catalog() -> tuple[Requirement, ...]:
    entries: list[Requirement] = []
    seen: set[str] = set()
    for item in sorted(resources.files(__package__).iterdir(), key=lambda p: p.name):
        if not item.name.endswith(".toml"):
            continue
        data = tomllib.loads(item.read_text(encoding="utf-8"))
        for raw in data.get("requirement", []):
            req = _entry(raw, item.name)
            if req.id in seen:
                raise CatalogError(f"{item.name}: duplicate id {req.id}")
            seen.add(req.id)
            entries.append(req)
    return tuple(entries)


@cache
def revisions() -> dict[str, str]:
    """Document -> the revision of it the catalog describes (each file's
    ``[catalog]`` table); a file without one fails loudly."""
    found: dict[str, str] = {}
    for item in sorted(resources.files(__package__).iterdir(), key=lambda p: p.name):
        if item.name.endswith(".toml"):
            document, revision = catalog_header(tomllib.loads(item.read_text(encoding="utf-8")), item.name)
            found[document] = revision
    return found


def catalog_header(data: dict[str, object], source: str) -> tuple[str, str]:
    table = data.get("catalog")
    if not isinstance(table, dict):
        raise CatalogError(f"{source}: no [catalog] table naming the document and its revision")
    document, revision = table.get("document"), table.get("revision")
    if document not in DOCUMENTS or not isinstance(revision, str) or not revision.strip():
        raise CatalogError(f"{source}: [catalog] needs document (one of {', '.join(DOCUMENTS)}) and a revision")
    return str(document), revision


def by_id() -> dict[str, Requirement]:
    return {r.id: r for r in load_catalog()}
