"""tests/meta/locate_checks.py: the script that points catalog ``check``
fields at the functions judging them (re-run after merges)."""

from __future__ import annotations

from pathlib import Path

import locate_checks as lc  # beside this file (pytest puts tests/meta on sys.path)
import pytest


@pytest.fixture(scope="module")
def found() -> dict[str, list[lc.Place]]:
    return lc.places()


def test_the_rule_decorating_a_function_wins(found: dict[str, list[lc.Place]]) -> None:
    target, _ = lc.choose("JSONRPC-4-id-not-fractional", "harness", found)
    assert target == "conformance.protocol.jsonrpc:check_id"
    target, _ = lc.choose("EXT-1.2-content-parts", "harness", found)
    assert target == "conformance.protocol.ext_results:content_parts"  # @rule, not check_tool_result


def test_a_check_that_still_holds_its_id_is_kept(found: dict[str, list[lc.Place]]) -> None:
    kept = "conformance.protocol.jsonrpc:_parse_response"  # also reports JSONRPC-4-id-type
    assert lc.choose("JSONRPC-4-id-type", kept, found) == (kept, [])
    assert lc.choose("JSONRPC-4-id-type", "conformance.protocol.jsonrpc:gone", found)[0] is not None
    assert lc.choose("EXT-0-no-such-rule", "harness", found) == (None, [])


def test_rewrite_touches_only_check_lines(tmp_path: Path) -> None:
    text = (
        '[catalog]\ndocument = "jsonrpc-2.0"\nrevision = "r"\n\n'
        '[[requirement]]\nid = "A-1-x"\nsummary = "check = harness"\ncheck = "harness"\n\n'
        '[[requirement]]\nid = "A-1-y"\ncheck = "none"\nreason = "why"\n'
    )
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    assert lc.rewrite(path, {"A-1-x": "m.n:f", "A-1-y": "m.n:g"}) == 1
    assert path.read_text(encoding="utf-8") == text.replace('check = "harness"', 'check = "m.n:f"')
