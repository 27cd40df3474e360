"""Frame-level traces of one process generation (format: docs/trace-format.md).

The peer records every write it makes (with what it meant: requests,
cancellations, unreadable frames) and every frame it observes, plus the
ordering relation that mattered: how many frames had been observed when each
write was made. A trace is enough to replay the generation against a target
without Hypothesis or its database: it is self-contained.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.safe_text import scrub

TRACE_FORMAT = "octet-conformance/trace@1"
INLINE_BYTES = 4096  # larger frames are stored as size + sha256 (+ a recipe when one exists)
MAX_ENTRIES = 20_000  # a trace stays bounded whatever the target floods us with
# Bytes of target frames kept verbatim per trace; past it only size + sha256
# (replay needs the host's writes whole, the target's frames only counted).
TARGET_TEXT_BUDGET = 1024 * 1024


def encode_bytes(data: bytes, recipe: dict[str, Any] | None = None) -> dict[str, Any]:
    """Bytes as a person can read them, or a digest (and recipe) when large."""
    if len(data) > INLINE_BYTES:
        out: dict[str, Any] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if recipe is not None:
            out["recipe"] = recipe
        return out
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(entry: dict[str, Any]) -> bytes | None:
    """The recorded bytes, regenerated from a recipe when needed; None when
    the trace kept only a digest (the write cannot be replayed exactly)."""
    if "text" in entry:
        return str(entry["text"]).encode("utf-8")
    if "base64" in entry:
        return base64.b64decode(entry["base64"])
    recipe = entry.get("recipe")
    if isinstance(recipe, dict) and recipe.get("kind") == "padded":
        frame = str(recipe["frame"]).encode("utf-8")
        member, filler = str(recipe.get("member", "pad")), str(recipe.get("filler", "x"))
        data = pad_frame(frame, int(recipe["size"]), member=member, filler=filler)
        if hashlib.sha256(data).hexdigest() == entry.get("sha256"):
            return data
    return None


def padded_recipe(frame: bytes, size: int, *, member: str = "pad", filler: str = "x") -> dict[str, Any]:
    """How a trace regenerates a padded frame (:func:`pad_frame`) instead of
    storing a megabyte; :func:`decode_bytes` reads it back."""
    recipe: dict[str, Any] = {"kind": "padded", "frame": frame.decode("utf-8"), "size": size}
    if member != "pad":
        recipe["member"] = member
    if filler != "x":
        recipe["filler"] = filler
    return recipe


def utf8_fill(size: int, filler: str = "x") -> str:
    """Exactly ``size`` UTF-8 bytes: ``filler`` repeated, topped up with ASCII
    ``x`` when its width does not divide ``size``."""
    if size < 0:
        raise ValueError(f"size must be >= 0; got {size}")
    width = len(filler.encode("utf-8"))
    return filler * (size // width) + "x" * (size % width)


def pad_frame(frame: bytes, size: int, *, member: str = "pad", filler: str = "x") -> bytes:
    """Fill the first empty ``"<member>":""`` string so the payload is exactly
    ``size`` bytes (:func:`utf8_fill`; ``filler`` must be a character JSON
    strings carry unescaped)."""
    payload = frame[:-1] if frame.endswith(b"\n") else frame
    marker = b'"' + member.encode("utf-8") + b'":""'
    grow = size - len(payload)
    if marker not in payload or grow < 0:
        raise ValueError(f"cannot pad a {len(payload)}-byte frame to {size} bytes")
    fill = utf8_fill(grow, filler).encode("utf-8")
    return payload.replace(marker, marker[:-1] + fill + b'"', 1) + b"\n"


@dataclass
class Trace:
    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    observed: int = 0  # frames observed from the target so far
    dropped: int = 0
    _answered: list[Any] = field(default_factory=list)  # host request ids answered since the last write
    _target_bytes: int = 0

    def _add(self, entry: dict[str, Any]) -> None:
        if len(self.entries) < MAX_ENTRIES:
            self.entries.append(entry)
        else:
            self.dropped += 1

    def wrote(self, data: bytes, *, step: int, meta: dict[str, Any], recipe: dict[str, Any] | None = None) -> None:
        # The ordering relation replay reproduces: this write was made after
        # the target answered ``awaits`` (ids) and after ``after`` target
        # frames in all had been observed.
        entry = {"dir": "host->target", "step": step, "after": self.observed, "awaits": self._answered, **meta}
        self._answered = []
        self._add({**entry, **encode_bytes(data, recipe)})

    def answered(self, rid: Any) -> None:
        self._answered.append(rid)

    def action(self, name: str, *, step: int, **details: Any) -> None:
        entry = {"dir": "host->target", "step": step, "after": self.observed, "awaits": self._answered, "action": name}
        entry.update(details)
        self._answered = []
        self._add(entry)

    def saw(self, index: int, payload: bytes | None, size: int, *, step: int) -> None:
        self.observed += 1
        if len(self.entries) >= MAX_ENTRIES:
            self.dropped += 1
            return
        entry: dict[str, Any] = {"dir": "target->host", "step": step, "index": index}
        if payload is None:
            entry.update(size=size, oversized=True)
        elif self._target_bytes + len(payload) > TARGET_TEXT_BUDGET:
            entry.update(size=len(payload), sha256=hashlib.sha256(payload).hexdigest())
        else:
            self._target_bytes += len(payload)
            entry.update(encode_bytes(payload))
        self.entries.append(entry)

    def dump(self, path: Path, *, requirement: str, message: str) -> None:
        header = {**self.header, "requirement": requirement, "violation": message, "dropped_entries": self.dropped}
        write_trace(path, header, self.entries)


def write_trace(path: Path, header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        # The header quotes the violation and the manifest (target text): no
        # lone surrogate may make it unwritable. Entries are strict UTF-8 already.
        out.write(json.dumps(scrub(header), ensure_ascii=False) + "\n")
        for entry in entries:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    # Line by line, split on LF only: str.splitlines() would also split at
    # U+2028/U+2029, which frames carry raw inside strings.
    with path.open("r", encoding="utf-8", newline="\n") as source:
        first = source.readline()
        if not first.strip():
            raise ValueError(f"{path}: empty trace")
        header = json.loads(first)
        if header.get("format") != TRACE_FORMAT:
            raise ValueError(f"{path}: not a {TRACE_FORMAT} trace (format {header.get('format')!r})")
        return header, [json.loads(line) for line in source if line.strip()]
