"""menu/collect results (§1.6b): the bounds a menu must meet, and the fallback.

A menu is used only if every bound holds: each action routes to a command
the extension declared, at most 256 items across all levels, at most 4
levels, ids unique within a level, at most one recommended item per level,
a submenu carries neither arguments nor destructive, and the encoded menu is
at most 256 KiB (§4). Otherwise -- or when the extension does not answer in
5 s -- the host shows one generated entry per declared command.
"""

from __future__ import annotations

import json
from typing import Any

MAX_MENU_ITEMS = 256
MAX_MENU_LEVELS = 4
MAX_MENU_BYTES = 256 * 1024


def fallback_menu(name: str, commands: list[str]) -> dict[str, Any]:
    items = [{"id": f"command:{c}", "label": f"/{c}", "command": c, "arguments": []} for c in commands]
    return {"title": name, "items": items}


def menu_problem(menu: Any, commands: list[str]) -> str | None:
    if not isinstance(menu, dict) or not isinstance(menu.get("title"), str):
        return "a menu is an object with a title"
    try:
        size = len(json.dumps(menu, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return "the menu is not JSON"
    if size > MAX_MENU_BYTES:
        return f"the encoded menu is {size} bytes; at most {MAX_MENU_BYTES}"
    counter = [0]
    return _level(menu.get("items", []), commands, 1, counter)


def _level(items: Any, commands: list[str], depth: int, counter: list[int]) -> str | None:
    if depth > MAX_MENU_LEVELS:
        return f"more than {MAX_MENU_LEVELS} levels"
    if not isinstance(items, list):
        return "items must be an array"
    ids: set[str] = set()
    recommended = 0
    for item in items:
        counter[0] += 1
        if counter[0] > MAX_MENU_ITEMS:
            return f"more than {MAX_MENU_ITEMS} items"
        problem = _item(item, commands, ids)
        if problem is None and isinstance(item, dict) and "items" in item:
            problem = _level(item["items"], commands, depth + 1, counter)
        if problem is not None:
            return problem
        recommended += 1 if item.get("recommended") is True else 0
    if recommended > 1:
        return "more than one recommended item in a level"
    return None


def _item(item: Any, commands: list[str], ids: set[str]) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("label"), str):
        return "every item is an object with a string id and label"
    if item["id"] in ids:
        return f"duplicate id {item['id'][:80]!r} in a level"
    ids.add(item["id"])
    if "items" in item:
        if "arguments" in item or "destructive" in item or "command" in item:
            return "a submenu carries no command, arguments or destructive"
        return None
    if item.get("command") not in commands:
        return f"action {item['id'][:80]!r} routes to an undeclared command"
    arguments = item.get("arguments", [])
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        return "action arguments are an array of strings"
    return None
