"""Validators for the menu an extension returns to ``menu/collect`` (§1.6b).

Sans-IO and stateless: the session passes the command names the extension
declared (manifest and initialize result).

Decisions where the text leaves room (never stricter than the document):

* §4 lists no members of ExtensionMenu, so only the example's members are
  judged when present: ``title`` and ``detail`` strings, ``status`` an object
  with string ``state``/``label``. ``items`` is required (a menu is its items).
* Every item has a string ``id`` and ``label`` (the text keys uniqueness on
  ids and shows labels); it is an action (``command``) or a submenu
  (``items``), not both and not neither.
* "Per level" (unique ids, one recommended item) is read per list of
  siblings: counting across a whole depth would reject menus the text allows.
* Depth counts the top-level list as level 1, so four nested lists pass.
* The 256 KiB cap of §4 is measured on the compact UTF-8 encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from . import limits
from .describe import Path, kind
from .members import bool_member, excerpt, expected_object, name, string_member
from .violations import Finding, Violation, rule

ROOT = "result"


@rule("EXT-1.6b-menu-shape")
def menu_shape(result: object, *, commands: frozenset[str]) -> Iterator[Violation]:
    if not isinstance(result, dict):
        yield expected_object(result, "EXT-1.6b-menu-shape", ROOT)
        return
    yield from string_member(result, "title", "EXT-1.6b-menu-shape", ROOT, required=False)
    yield from string_member(result, "detail", "EXT-1.6b-menu-shape", ROOT, required=False)
    status = result.get("status")
    if status is not None:
        if not isinstance(status, dict):
            yield expected_object(status, "EXT-1.6b-menu-shape", ROOT, ("status",))
        else:
            yield from string_member(status, "state", "EXT-1.6b-menu-shape", ROOT, ("status",), required=False)
            yield from string_member(status, "label", "EXT-1.6b-menu-shape", ROOT, ("status",), required=False)
    if not isinstance(result.get("items"), list):
        shown = "missing" if "items" not in result else kind(result["items"])
        yield Violation("EXT-1.6b-menu-shape", f"result.items is {shown}; expected an array of menu items", ("items",))
        return
    yield from _items_shape(result["items"], ("items",), commands)


def _items_shape(items: list[Any], path: Path, commands: frozenset[str]) -> Iterator[Violation]:
    for index, item in enumerate(items):
        where = (*path, index)
        if not isinstance(item, dict):
            yield expected_object(item, "EXT-1.6b-menu-shape", ROOT, where)
            continue
        yield from string_member(item, "id", "EXT-1.6b-menu-shape", ROOT, where, required=True)
        yield from string_member(item, "label", "EXT-1.6b-menu-shape", ROOT, where, required=True)
        yield from string_member(item, "description", "EXT-1.6b-menu-shape", ROOT, where, required=False)
        yield from bool_member(item, "recommended", "EXT-1.6b-menu-shape", ROOT, where)
        yield from bool_member(item, "destructive", "EXT-1.6b-menu-shape", ROOT, where)
        is_action, is_submenu = item.get("command") is not None, item.get("items") is not None
        if is_action == is_submenu:
            which = "both command and items" if is_action else "neither command nor items"
            yield Violation(
                "EXT-1.6b-menu-shape", f"{name(ROOT, where)} has {which}; an item is an action or a submenu", where
            )
        if is_action:
            yield from _action_shape(item, where, commands)
        elif is_submenu:
            if isinstance(item["items"], list):
                yield from _items_shape(item["items"], (*where, "items"), commands)
            else:
                yield Violation(
                    "EXT-1.6b-menu-shape",
                    f"{name(ROOT, (*where, 'items'))} is {kind(item['items'])}; expected an array",
                    where,
                )


def _action_shape(item: dict[str, Any], where: Path, commands: frozenset[str]) -> Iterator[Violation]:
    command = item["command"]
    if not isinstance(command, str):
        yield Violation(
            "EXT-1.6b-menu-shape", f"{name(ROOT, (*where, 'command'))} is {kind(command)}; expected a string", where
        )
    elif command not in commands:
        declared = ", ".join(sorted(commands)) or "none"
        yield Violation(
            "EXT-1.6b-menu-shape",
            f"{name(ROOT, (*where, 'command'))} is {excerpt(command)}, not a declared command ({declared})",
            (*where, "command"),
        )
    arguments = item.get("arguments")
    if arguments is not None and not (isinstance(arguments, list) and all(isinstance(a, str) for a in arguments)):
        yield Violation(
            "EXT-1.6b-menu-shape",
            f"{name(ROOT, (*where, 'arguments'))} is not an array of strings",
            (*where, "arguments"),
        )


@rule("EXT-1.6b-menu-bounds")
def menu_bounds(result: object) -> Iterator[Violation]:
    if not isinstance(result, dict) or not isinstance(result.get("items"), list):
        return
    encoded = len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if encoded > limits.MENU_MAX_BYTES:
        yield Violation("EXT-1.6b-menu-bounds", f"menu encodes to {encoded:,} bytes; limit {limits.MENU_MAX_BYTES:,}")
    total = _count(result["items"])
    if total > limits.MENU_MAX_ITEMS:
        yield Violation(
            "EXT-1.6b-menu-bounds",
            f"menu has {total} items across its levels; limit {limits.MENU_MAX_ITEMS}",
            ("items",),
        )
    yield from _level_bounds(result["items"], ("items",), 1)


def _count(items: list[Any]) -> int:
    nested = (i["items"] for i in items if isinstance(i, dict) and isinstance(i.get("items"), list))
    return len(items) + sum(_count(sub) for sub in nested)


def _level_bounds(items: list[Any], path: Path, depth: int) -> Iterator[Violation]:
    if depth > limits.MENU_MAX_DEPTH:
        yield Violation(
            "EXT-1.6b-menu-bounds", f"{name(ROOT, path)} is menu level {depth}; limit {limits.MENU_MAX_DEPTH}", path
        )
        return
    entries = [(index, item) for index, item in enumerate(items) if isinstance(item, dict)]
    ids: list[str] = [item["id"] for _, item in entries if isinstance(item.get("id"), str)]
    for repeated in sorted({i for i in ids if ids.count(i) > 1}):
        yield Violation(
            "EXT-1.6b-menu-bounds", f"{name(ROOT, path)} repeats item id {excerpt(repeated)} on one level", path
        )
    recommended = sum(1 for _, item in entries if item.get("recommended") is True)
    if recommended > limits.MENU_MAX_RECOMMENDED:
        yield Violation(
            "EXT-1.6b-menu-bounds",
            f"{name(ROOT, path)} has {recommended} recommended items; limit {limits.MENU_MAX_RECOMMENDED}",
            path,
        )
    for index, item in entries:
        if not isinstance(item.get("items"), list):
            continue
        where = (*path, index)
        for key in ("arguments", "destructive"):
            if key in item:
                yield Violation(
                    "EXT-1.6b-menu-bounds", f"{name(ROOT, where)} is a submenu carrying {key}", (*where, key)
                )
        yield from _level_bounds(item["items"], (*where, "items"), depth + 1)


def check_menu_result(result: object, *, commands: frozenset[str]) -> Iterator[Finding]:
    """Judge a ``menu/collect`` result (§1.6b)."""
    yield from menu_shape(result, commands=commands)
    yield from menu_bounds(result)
