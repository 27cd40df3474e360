"""``octet-conformance requirements --stats``: counts that add up to the catalog."""

from __future__ import annotations

import pytest

from conformance.cli import _section_key, main
from conformance.requirements import load_catalog


def rows(out: str) -> dict[tuple[str, str], list[int]]:
    lines = out.strip().splitlines()
    assert lines[0].split("\t")[:4] == ["document", "section", "entries", "check"]
    return {(c[0], c[1]): [int(x) for x in c[2:]] for c in (line.split("\t") for line in lines[1:])}


SIDES = ("extension", "host", "hostcore", "client", "both")


@pytest.mark.parametrize("side", [None, *SIDES])
def test_stats_add_up(side: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requirements", "--stats", *(["--side", side] if side else [])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split("\t") == [
        "document",
        "section",
        "entries",
        "check",
        "reason",
        *SIDES,
        "must",
        "should",
    ]
    table = rows(out)
    total = table.pop(("total", ""))
    wanted = [r for r in load_catalog() if side is None or r.side == side]
    entries, check, reason, *by_side, must, should = total
    assert entries == len(wanted) == check + reason == must + should == sum(by_side)  # every side has a column
    assert check == sum(r.has_check for r in wanted)
    assert by_side == [sum(r.side == s for r in wanted) for s in SIDES]
    assert [sum(col) for col in zip(*table.values(), strict=True)] == total


def test_sections_sort_naturally() -> None:
    assert sorted(["1.10", "1.4b", "1.9", "1.4", "0", "2"], key=_section_key) == [
        "0",
        "1.4",
        "1.4b",
        "1.9",
        "1.10",
        "2",
    ]
