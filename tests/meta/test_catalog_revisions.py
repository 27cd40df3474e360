"""Each catalog file names the document revision it describes, and
`requirements --diff OTHER` lists added, removed and changed entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.requirements import DOCUMENTS, CatalogError, by_id, catalog_header, revisions
from conformance.requirements.compare import compare, read_other

ENTRY = """
[[requirement]]
id = "{id}"
document = "jsonrpc-2.0"
section = "{section}"
level = "{level}"
side = "{side}"
api = {api}
features = {features}
summary = "{summary}"
check = "{check}"
reason = "{reason}"
"""


def toml_of(rid: str, **changes: str) -> str:
    r = by_id()[rid]
    values = {
        "id": r.id,
        "section": r.section,
        "level": r.level,
        "side": r.side,
        "api": "[" + ", ".join(f'"{a}"' for a in r.api) + "]",
        "features": "[" + ", ".join(f'"{f}"' for f in r.features) + "]",
        "summary": r.summary.replace("\\", "\\\\").replace('"', '\\"'),
        "check": r.check,
        "reason": r.reason.replace("\\", "\\\\").replace('"', '\\"'),
    }
    return ENTRY.format(**{**values, **changes})


def test_every_document_has_a_revision() -> None:
    assert set(revisions()) == set(DOCUMENTS)
    assert all(rev.strip() for rev in revisions().values())


@pytest.mark.parametrize(
    "data",
    [{}, {"catalog": {"document": "nope", "revision": "1"}}, {"catalog": {"document": "jsonrpc-2.0", "revision": ""}}],
)
def test_a_catalog_file_without_a_revision_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(CatalogError):
        catalog_header(data, "x.toml")


def test_added_removed_changed(tmp_path: Path) -> None:
    jsonrpc = [r.id for r in by_id().values() if r.document == "jsonrpc-2.0"]
    kept, changed, dropped = jsonrpc[0], jsonrpc[1], jsonrpc[2:]
    old = by_id()[changed]
    other = '[catalog]\ndocument = "jsonrpc-2.0"\nrevision = "older"\n'
    other += toml_of(kept) + toml_of(changed, level="should" if old.level == "must" else "must", section="99")
    other += toml_of(kept, id="JSONRPC-9-gone")
    path = tmp_path / "old.toml"
    path.write_text(other, encoding="utf-8")
    d = compare(read_other(path))
    assert d.revisions == {"jsonrpc-2.0": ("older", revisions()["jsonrpc-2.0"])}
    assert [r.id for r in d.added] == dropped  # only the document OTHER covers is compared
    assert [r.id for r in d.removed] == ["JSONRPC-9-gone"]
    assert d.changed == ((changed, ("section", "level")),)


def test_the_shipped_catalog_equals_itself(capsys) -> None:  # type: ignore[no-untyped-def]
    shipped = Path(__file__).resolve().parents[2] / "conformance" / "requirements"
    assert main(["requirements", "--diff", str(shipped)]) == 0
    out = capsys.readouterr().out
    assert "added: 0\nremoved: 0\nchanged: 0\n" in out


@pytest.mark.parametrize("text", ["[[requirement]\n", '[[requirement]]\nid = "X"\n'])
def test_unreadable_other_catalog_is_exit_2(tmp_path: Path, capsys, text: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["requirements", "--diff", str(path)]) == 2
    assert "bad.toml" in capsys.readouterr().err
