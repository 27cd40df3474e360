"""The catalog is data the whole suite leans on: keep it honest."""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from pathlib import Path

import pytest

from conformance.evidence import Recorder
from conformance.requirements import catalog_header, load_catalog
from conformance.verdicts import decide

ROOT = Path(__file__).resolve().parents[2]
PREFIXES = {"extension-wire-protocol": "EXT-", "jsonrpc-2.0": "JSONRPC-", "host-rpc-protocol": "RPC-"}


def spec_text(document: str) -> str | None:
    """The whitespace-normalized text of a document under test, found in a
    ``shared/spec`` folder beside the checkout or beside any of its parents
    (a git worktree sits one level deeper than the main checkout)."""
    for folder in ROOT.parents:
        spec = folder / "shared" / "spec" / f"{document}.txt"
        if spec.exists():
            return " ".join(spec.read_text(encoding="utf-8").split())
    return None


def copied_runs(text: str, spec: str) -> list[str]:
    """Runs of 12 consecutive words of ``text`` found verbatim in ``spec``."""
    words = text.split()
    return [" ".join(words[i : i + 12]) for i in range(max(0, len(words) - 11)) if " ".join(words[i : i + 12]) in spec]


ID_LITERAL = re.compile(r"""["']((?:EXT|JSONRPC|RPC)-[0-9][0-9a-z.]*-[A-Za-z0-9.\-]+)["']""")


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


CHECK_NAME = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def judging_object(check: str) -> object:
    """The function or method a catalog ``check`` names
    ("dotted.module:function" or "dotted.module:Class.method")."""
    module, _, qualname = check.partition(":")
    found: object = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def judges(found: object, requirement: str) -> bool:
    """``found`` is a function that names ``requirement``: its @rule, or the
    literal id in its source (a recorder call, a Violation it builds)."""
    if getattr(found, "requirement", None) == requirement:
        return True
    return callable(found) and requirement in inspect.getsource(found)  # type: ignore[arg-type]


def test_every_check_names_a_function_that_judges_its_entry() -> None:
    """One hop from id to check: each entry's ``check`` imports, and the id
    is written there. tests/meta/locate_checks.py --write fixes the field."""
    wrong: list[str] = []
    for r in load_catalog():
        if not r.has_check:
            continue
        if not CHECK_NAME.fullmatch(r.check):
            wrong.append(f'{r.id}: check = "{r.check}" is not "dotted.module:function" or "...:Class.method"')
            continue
        try:
            found = judging_object(r.check)
        except (ImportError, AttributeError) as exc:
            wrong.append(f"{r.id}: {r.check} does not import ({exc})")
            continue
        if not judges(found, r.id):
            wrong.append(f"{r.id}: {r.check} does not name the id (no @rule, no literal in its source)")
    assert not wrong, "\n".join(wrong)


def test_judges_reads_the_rule_or_the_source() -> None:
    assert judges(judging_object("conformance.protocol.jsonrpc:check_id"), "JSONRPC-4-id-type")
    assert not judges(judging_object("conformance.protocol.jsonrpc:check_id"), "JSONRPC-5-id-echo")
    assert not CHECK_NAME.fullmatch("harness")
    with pytest.raises(AttributeError):
        judging_object("conformance.protocol.jsonrpc:no_such_check")


def test_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in load_catalog()]
    assert len(ids) == len(set(ids))
    for r in load_catalog():
        assert r.id.startswith(PREFIXES[r.document]), r.id
        assert r.id.split("-")[1] == r.section or r.note, f"{r.id}: id section differs from {r.section} without a note"


@pytest.mark.parametrize(
    "section",
    ["0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "2", "2.6", "3"],
)
def test_sections_of_the_foundation_issue_are_covered(section: str) -> None:
    assert any(r.section == section and r.document == "extension-wire-protocol" for r in load_catalog())


@pytest.mark.parametrize("document", ["extension-wire-protocol", "host-rpc-protocol"])
def test_summaries_are_not_spec_copies(document: str) -> None:
    spec = spec_text(document)
    if spec is None:
        pytest.skip("spec not beside the checkout")
    for r in load_catalog():
        if r.document != document:
            continue
        # no run of 12 consecutive words copied verbatim
        copied = copied_runs(r.summary, spec)
        if document == "host-rpc-protocol":  # written after the rule: notes and reasons too
            copied += copied_runs(r.note, spec) + copied_runs(r.reason, spec)
        assert not copied, f"{r.id} copies the spec: {copied[0]!r}"


HOST_RPC_SECTIONS = ["0", "2", "2.1", "3", "4", "5", "5.1", "5.2", "6", "7", "8", "9", "10"]


@pytest.mark.parametrize("section", HOST_RPC_SECTIONS)
def test_sections_of_the_host_rpc_issue_are_covered(section: str) -> None:
    assert any(r.section == section and r.document == "host-rpc-protocol" for r in load_catalog())


def test_every_host_rpc_acceptance_item_has_its_own_entry() -> None:
    ids = {r.id for r in load_catalog() if r.document == "host-rpc-protocol"}
    for item in range(1, 14):
        assert any(i.startswith(f"RPC-10-{item:02d}-") for i in ids), f"acceptance item {item} has no entry"


def test_host_rpc_header_cites_the_document_not_a_path() -> None:
    text = (ROOT / "conformance" / "requirements" / "host-rpc-protocol.toml").read_text(encoding="utf-8")
    header = text[: text.index("[[requirement]]")]
    assert "revision v11" in header and "host-rpc-protocol" in header
    assert "/work/" not in text and "/home/" not in text


def test_an_extension_matrix_holds_no_host_rpc_entries() -> None:
    # side "both" exists in the host-rpc catalog too; the role's documents keep it out
    verdicts = decide(load_catalog(), Recorder(), role="extension", api_version="0.2")
    assert verdicts and not [v for v in verdicts if v.requirement.document == "host-rpc-protocol"]


RPC_ID_ANYWHERE = re.compile(r"(?<![A-Z])RPC-[0-9][0-9.]*-[A-Za-z0-9.\-]*[A-Za-z0-9]")
CODE_NAMED = re.compile(r"\b(rpc_[a-z]+|id_peek)\.([A-Za-z_][A-Za-z0-9_]*)")


def test_every_rpc_id_in_the_core_is_catalogued() -> None:
    # Comments count too: rpc_limits names each bound's id in a comment.
    known = {r.id for r in load_catalog()}
    for path in (ROOT / "conformance" / "protocol").glob("*.py"):
        cited = set(RPC_ID_ANYWHERE.findall(path.read_text(encoding="utf-8")))
        assert cited <= known, f"{path.name} cites unknown ids: {sorted(cited - known)}"


def test_host_rpc_reasons_and_notes_name_code_that_exists() -> None:
    # A reason saying "a validator exists (rpc_x.f)" must not outlive f.
    import importlib

    for r in load_catalog():
        for module, attribute in CODE_NAMED.findall(r.reason + " " + r.note):
            if attribute == "py" or attribute.endswith("_"):
                continue  # "rpc_limits.py", "rpc_limits.PLUGIN_*_PER_WINDOW"
            loaded = importlib.import_module(f"conformance.protocol.{module}")
            assert hasattr(loaded, attribute), f"{r.id} names {module}.{attribute}, which does not exist"


FILE_NAMED = re.compile(r"[\w./*-]+\.(?:py|toml|md|txt)\b")


@pytest.mark.parametrize("path", sorted((ROOT / "conformance" / "requirements").glob("*.toml")), ids=lambda p: p.name)
def test_catalog_header_cites_the_document_and_only_files_that_exist(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    comments = text[: text.index("[catalog]")]
    document, revision = catalog_header(tomllib.loads(text), path.name)
    assert f'document "{document}"' in comments and revision.strip()
    assert "/work/" not in text and "/home/" not in text and "/tmp/" not in text
    for named in FILE_NAMED.findall(comments):
        places = (ROOT / named, path.parent / named)
        assert any(list(p.parent.glob(p.name)) for p in places), f"{path.name} names {named}, which does not exist"
