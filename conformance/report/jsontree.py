"""A JSON value as collapsible HTML: nested ``<details>``, every text escaped.

A trace frame is one line of JSON; shown raw it wraps character by
character (a 2 KB ``initialize`` fills screens). Here each object and array
is a ``<details>`` whose summary gives its size, so a reader unfolds only
what matters, as in a browser's JSON viewer. Long members are folded: an
object or array that would take more than :data:`FOLD_LINES` lines opens
closed, a string longer than :data:`FOLD_CHARS` shows its start and folds
the rest.

Everything is built from escaped text (``markupsafe.escape``): a frame is
whatever the target wrote. One :class:`Budget` is shared by a whole page,
so a huge trace cannot make the page unusable: past :data:`MAX_NODES`
rendered nodes, values are shown as a short escaped excerpt and the budget
records that it ran out, for the page to say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

__all__ = ["FOLD_CHARS", "FOLD_LINES", "MAX_NODES", "MAX_STRING_CHARS", "Budget", "frame_tree", "tree"]

FOLD_LINES = 24  # an object/array taller than this (pretty-printed) opens folded
FOLD_CHARS = 160  # a string longer than this shows its start, the rest folded
MAX_NODES = 40_000  # nodes rendered per page; past this, values are plain excerpts
EXCERPT_CHARS = 200  # of a value shown once the budget is spent
MAX_STRING_CHARS = 4000  # of a folded string unfolded (a 1 MiB string would be 1 MiB of page; the trace has it whole)


@dataclass
class Budget:
    """Nodes a page may still render (mutable: one per page, shared by every frame)."""

    left: int = MAX_NODES
    capped: bool = False

    def take(self) -> bool:
        if self.left <= 0:
            self.capped = True
            return False
        self.left -= 1
        return True


def _lines(value: Any) -> int:
    """Lines ``value`` takes pretty-printed with one member a line (bounded work: counts, no text)."""
    if isinstance(value, dict):
        return 2 + sum(_lines(v) for v in value.values())
    if isinstance(value, list):
        return 2 + sum(_lines(v) for v in value)
    return 1


def _excerpt(value: Any) -> Markup:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + f"… [{len(text) - EXCERPT_CHARS} more characters]"
    return Markup('<span class="j-cut">{}</span>').format(text)


def _scalar(value: Any) -> Markup:
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        if len(text) <= FOLD_CHARS:
            return Markup('<span class="j-str">{}</span>').format(text)
        rest = text if len(text) <= MAX_STRING_CHARS else f"{text[:MAX_STRING_CHARS]}… [cut: the trace holds it whole]"
        return Markup(
            '<details class="j-fold"><summary><span class="j-str">{}…</span> <small>({} characters)</small></summary>'
            '<span class="j-str">{}</span></details>'
        ).format(text[:FOLD_CHARS], len(value), rest)
    kind = "j-null" if value is None else "j-bool" if isinstance(value, bool) else "j-num"
    return Markup('<span class="{}">{}</span>').format(kind, json.dumps(value))


def tree(value: Any, budget: Budget, *, depth: int = 0) -> Markup:
    """``value`` as HTML; objects and arrays as ``<details>`` (open unless tall)."""
    if not budget.take():
        return _excerpt(value)
    if not isinstance(value, (dict, list)):
        return _scalar(value)
    is_object = isinstance(value, dict)
    items: list[tuple[Any, Any]] = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    if not items:
        return Markup('<span class="j-empty">{}</span>').format("{}" if is_object else "[]")
    brackets = ("{", "}") if is_object else ("[", "]")
    size = f"{len(items)} member{'s' if len(items) != 1 else ''}" if is_object else f"{len(items)} item(s)"
    folded = depth > 0 and _lines(value) > FOLD_LINES
    members = Markup("").join(_member(key, child, is_object, budget, depth) for key, child in items)
    return Markup('<details class="j-node"{}><summary>{} <small>{}</small></summary><ul>{}</ul>{}</details>').format(
        Markup("") if folded else Markup(" open"), brackets[0], size, members, brackets[1]
    )


def _member(key: Any, child: Any, is_object: bool, budget: Budget, depth: int) -> Markup:
    label = Markup('<span class="j-key">{}</span>: ').format(json.dumps(key, ensure_ascii=False)) if is_object else ""
    return Markup("<li>{}{}</li>").format(label, tree(child, budget, depth=depth + 1))


def frame_tree(text: str, budget: Budget) -> Markup | None:
    """A write's text as trees, one per line (a write may coalesce frames),
    or None when a line is not a JSON object or array: the page then shows
    the text as it was, since a malformed frame is itself the evidence."""
    values = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, (dict, list)):
            return None
        values.append(value)
    if not values:
        return None
    try:
        return Markup("").join(Markup('<div class="j-frame">{}</div>').format(tree(v, budget)) for v in values)
    except RecursionError:  # nested deeper than Python recurses: the text instead
        return None
