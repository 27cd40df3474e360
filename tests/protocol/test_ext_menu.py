"""menu/collect results (§1.6b): shape, routing and every bound (ext_menu)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from conformance.protocol import ext_menu as em
from conformance.protocol import limits
from conformance.protocol.violations import Exercise, Finding, Violation

COMMANDS = frozenset({"computer-use"})

# The document's own example (§1.6b), which must pass.
EXAMPLE: dict[str, Any] = {
    "title": "Computer use",
    "status": {"state": "pending", "label": "Not set up"},
    "detail": "Set up installs the driver.",
    "items": [
        {
            "id": "setup",
            "label": "Set up computer use",
            "command": "computer-use",
            "arguments": ["setup"],
            "recommended": True,
            "description": "Install the driver, then check permissions",
        },
        {
            "id": "jev",
            "label": "Jev (optional)",
            "items": [
                {
                    "id": "forget",
                    "label": "Forget stored API key",
                    "command": "computer-use",
                    "arguments": ["jev", "forget"],
                    "destructive": True,
                }
            ],
        },
    ],
}


def example() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE)


def broken(findings: Iterable[Finding]) -> list[str]:
    return [f.requirement for f in findings if isinstance(f, Violation)]


def judge(menu: Any) -> list[str]:
    return broken(em.check_menu_result(menu, commands=COMMANDS))


def test_the_documents_example_passes_and_both_rules_are_exercised() -> None:
    found = list(em.check_menu_result(example(), commands=COMMANDS))
    assert broken(found) == []
    assert {f.requirement for f in found if isinstance(f, Exercise)} == {"EXT-1.6b-menu-shape", "EXT-1.6b-menu-bounds"}


def test_minimal_menu_passes() -> None:
    assert judge({"items": []}) == []


def action(i: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"a{i}", "label": "x", "command": "computer-use", **extra}


@pytest.mark.parametrize(
    "menu",
    [
        [],
        {"title": "t"},
        {"items": {}},
        {"items": [{"id": "a", "label": "x"}]},  # neither action nor submenu
        {"items": [{**action(0), "items": []}]},  # both
        {"items": [action(0, command="deploy")]},  # undeclared command
        {"items": [action(0, arguments=[1])]},
        {"items": [{"label": "x", "command": "computer-use"}]},
        {"items": [action(0, recommended="yes")]},
        {"items": [{"id": "s", "label": "x", "items": [action(0, command="deploy")]}]},
    ],
)
def test_menu_shape(menu: Any) -> None:
    assert set(judge(menu)) == {"EXT-1.6b-menu-shape"}


def nested(depth: int) -> dict[str, Any]:
    items: list[Any] = [action(0)]
    for level in range(depth - 1):
        items = [{"id": f"s{level}", "label": "x", "items": items}]
    return {"items": items}


@pytest.mark.parametrize(("depth", "ok"), [(3, True), (4, True), (5, False)])
def test_menu_depth(depth: int, ok: bool) -> None:
    assert judge(nested(depth)) == ([] if ok else ["EXT-1.6b-menu-bounds"])


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_item_count_across_levels(delta: int) -> None:
    # The submenu itself counts: 1 + (limit - 1 + delta) items in all.
    inner = [action(i) for i in range(limits.MENU_MAX_ITEMS - 1 + delta)]
    assert judge({"items": [{"id": "s", "label": "x", "items": inner}]}) == (
        ["EXT-1.6b-menu-bounds"] if delta > 0 else []
    )


@pytest.mark.parametrize(
    "items",
    [
        [action(0), action(0)],  # id repeated on one level
        [action(0, recommended=True), action(1, recommended=True)],
        [{"id": "s", "label": "x", "items": [action(0)], "arguments": []}],
        [{"id": "s", "label": "x", "items": [action(0)], "destructive": False}],
    ],
)
def test_level_bounds(items: list[Any]) -> None:
    assert judge({"items": items}) == ["EXT-1.6b-menu-bounds"]


def test_same_id_or_recommendation_on_different_levels_passes() -> None:
    items = [action(0, recommended=True), {"id": "s", "label": "x", "items": [action(0, recommended=True)]}]
    assert judge({"items": items}) == []


@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_encoded_size(delta: int) -> None:
    menu: dict[str, Any] = {"detail": "", "items": []}
    base = len(b'{"detail":"","items":[]}')
    menu["detail"] = "d" * (limits.MENU_MAX_BYTES - base + delta)
    assert judge(menu) == (["EXT-1.6b-menu-bounds"] if delta > 0 else [])
