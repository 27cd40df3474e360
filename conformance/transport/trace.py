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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.outfiles import replacing
from conformance.protocol.framing import pad_frame
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

    def keep_first(
        self,
        violated: Mapping[str, str],
        trace_dir: Path | None,
        traces: dict[str, Path],
        contexts: Mapping[str, str] | None = None,
    ) -> None:
        """Dump this trace as ``<requirement>.jsonl`` in ``trace_dir`` for each
        requirement in ``violated`` (id -> message) that has no trace in
        ``traces`` yet, and note it there: the first generation to break a
        requirement is the one its trace shows. ``contexts`` (id -> where in
        the run it was first broken) goes into the header as ``context``."""
        if trace_dir is None:
            return
        for requirement, message in violated.items():
            if requirement not in traces:
                path = trace_dir / f"{requirement}.jsonl"
                if contexts and requirement in contexts:
                    self.header["context"] = contexts[requirement]
                self.dump(path, requirement=requirement, message=message)
                traces[requirement] = path


def write_trace(path: Path, header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as out:
        # The header quotes the violation and the manifest (target text): no
        # lone surrogate may make it unwritable. Entries are strict UTF-8 already.
        out.write(json.dumps(scrub(header), ensure_ascii=False) + "\n")
        for entry in entries:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")


class TraceError(ValueError):
    """The file is not a whole trace; the message starts with "trace line N: "."""


def _json_line(line: str, number: int, what: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceError(f"trace line {number}: {what} is not JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # e.g. a number too long to convert
        raise TraceError(f"trace line {number}: {what} is not usable JSON ({exc})") from None
    if not isinstance(value, dict):
        raise TraceError(f"trace line {number}: {what} must be a JSON object, not {type(value).__name__}")
    return value


def _text(raw: bytes, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"trace line {number}: not UTF-8 text ({exc.reason}); not a trace file") from None


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and entries of a trace; :class:`TraceError` names the first line
    that is not part of a whole trace (not UTF-8, not JSON, not an object,
    cut short)."""
    header: dict[str, Any] | None = None
    entries: list[dict[str, Any]] = []
    number, raw = 0, b"\n"
    # Binary lines split on LF only: str.splitlines() would also split at
    # U+2028/U+2029, which frames carry raw inside strings.
    with path.open("rb") as source:
        for number, raw in enumerate(source, start=1):
            line = _text(raw, number)
            if header is None:
                if not line.strip():
                    raise TraceError("trace line 1: empty; a trace starts with its header")
                header = _json_line(line, 1, "the header")
                if header.get("format") != TRACE_FORMAT:
                    raise TraceError(f"trace line 1: not a {TRACE_FORMAT} trace (format {header.get('format')!r})")
            elif not line.strip():
                raise TraceError(f"trace line {number}: empty; every line after the header is one entry")
            else:
                entries.append(_json_line(line, number, "an entry"))
    if header is None:
        raise TraceError("trace line 1: the file is empty; a trace starts with its header")
    if not raw.endswith(b"\n"):
        # Every line is written whole, newline included: a missing one means the file was cut.
        raise TraceError(f"trace line {number}: no newline at its end; the trace is truncated")
    return header, entries
