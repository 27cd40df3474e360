"""The catalog is data the whole suite leans on: keep it honest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.requirements import load_catalog

ROOT = Path(__file__).resolve().parents[2]
ID_LITERAL = re.compile(r"""["']((?:EXT|JSONRPC)-[0-9][0-9a-z.]*-[A-Za-z0-9.\-]+)["']""")


def ids_named_in(folder: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in folder.rglob("*.py"):
        if "reference" in path.parts:
            continue  # reference implementations do not cite the checker's ids
        for match in ID_LITERAL.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(1), []).append(str(path.relative_to(ROOT)))
    return found


def test_every_id_named_by_a_check_is_in_the_catalog() -> None:
    known = {r.id for r in load_catalog()}
    unknown = {i: where for i, where in ids_named_in(ROOT / "conformance").items() if i not in known}
    assert not unknown, f"checks cite ids missing from the catalog: {unknown}"


def test_every_entry_has_a_check_or_a_reason() -> None:
    bare = [r.id for r in load_catalog() if not r.has_check and not r.reason.strip()]
    assert not bare


def test_every_entry_claiming_a_check_is_implemented() -> None:
    named = ids_named_in(ROOT / "conformance")
    hollow = [r.id for r in load_catalog() if r.has_check and r.id not in named]
    assert not hollow, f"catalog claims checks that no code performs: {hollow}"


def test_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in load_catalog()]
    assert len(ids) == len(set(ids))
    for r in load_catalog():
        assert r.id.startswith({"extension-wire-protocol": "EXT-", "jsonrpc-2.0": "JSONRPC-"}[r.document]), r.id
        assert r.id.split("-")[1] == r.section or r.note, f"{r.id}: id section differs from {r.section} without a note"


@pytest.mark.parametrize(
    "section",
    ["0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "2", "2.6", "3"],
)
def test_sections_of_the_foundation_issue_are_covered(section: str) -> None:
    assert any(r.section == section and r.document == "extension-wire-protocol" for r in load_catalog())


def test_summaries_are_not_spec_copies() -> None:
    spec = ROOT.parent / "shared" / "spec" / "extension-wire-protocol.txt"
    if not spec.exists():
        pytest.skip("spec not beside the checkout")
    text = " ".join(spec.read_text(encoding="utf-8").split())
    for r in load_catalog():
        words = r.summary.split()
        # no run of 12 consecutive words copied verbatim
        for i in range(max(0, len(words) - 11)):
            chunk = " ".join(words[i : i + 12])
            assert chunk not in text, f"{r.id} copies the spec: {chunk!r}"
