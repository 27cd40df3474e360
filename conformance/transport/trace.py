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
from collections.abc import Iterable, Mapping
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


HOST = "host->target"
TARGET = "target->host"


@dataclass(frozen=True)
class Mark:
    """One entry of a trace that a violation was judged on: its direction and
    its ``index`` there (header ``evidence``, docs/trace-format.md)."""

    dir: str
    index: int
    why: str = ""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir, "index": self.index}
        if self.why:
            out["why"] = self.why
        return out


@dataclass(frozen=True)
class Shown:
    """The violation a trace shows for one requirement: its message, where in
    the run it was seen, and the entries it was judged on. ``order`` ranks
    violations seen in one step by content (evidence.Recorder.violate)."""

    message: str
    context: str
    marks: tuple[Mark, ...]
    order: tuple[Any, ...] = ()


def id_key(rid: Any) -> str:
    """A request id as a dictionary key (ids may be lists or objects when a
    target writes them; equal JSON is one key)."""
    try:
        return json.dumps(rid, sort_keys=True)
    except (TypeError, ValueError):
        return repr(rid)


@dataclass
class Trace:
    header: dict[str, Any]
    entries: list[dict[str, Any]] = field(default_factory=list)
    observed: int = 0  # frames observed from the target so far
    dropped: int = 0
    # requirement -> the violation this trace shows for it (Recorder.violate keeps it)
    shown: dict[str, Shown] = field(default_factory=dict)
    _answered: list[Any] = field(default_factory=list)  # host request ids answered since the last write
    _target_bytes: int = 0
    _writes: int = 0  # host->target entries so far: the next one's index
    _frames: dict[int, int] = field(default_factory=dict)  # a frame's index in its process's output -> in this trace
    _next_frame: int = 0
    _latest: Mark | None = None
    _carries: dict[str, int] = field(default_factory=dict)  # request id -> the write that carried it
    _answers: dict[str, list[int]] = field(default_factory=dict)  # request id -> the frames answering it
    _answer_of: dict[int, str] = field(default_factory=dict)  # frame -> the request id it answered

    def _add(self, entry: dict[str, Any]) -> bool:
        if len(self.entries) < MAX_ENTRIES:
            self.entries.append(entry)
            self._latest = Mark(entry["dir"], entry["index"])
            return True
        self.dropped += 1
        return False

    def _host_entry(self, step: int, *, awaits: bool = True) -> dict[str, Any]:
        # The ordering relation replay reproduces: this write was made after
        # the target answered ``awaits`` (ids) and after ``after`` target
        # frames in all had been observed.
        entry = {"dir": HOST, "step": step, "index": self._writes, "after": self.observed}
        self._writes += 1
        if awaits:
            entry["awaits"], self._answered = self._answered, []
        else:
            entry["awaits"] = []
        return entry

    def wrote(
        self,
        data: bytes,
        *,
        step: int,
        meta: dict[str, Any],
        recipe: dict[str, Any] | None = None,
        carries: Iterable[Any] = (),
    ) -> None:
        """A write of the harness. ``carries``: ids of requests it holds that
        ``meta`` does not list (an absence judged later marks this write)."""
        entry = self._host_entry(step)
        if self._add({**entry, **meta, **encode_bytes(data, recipe)}):
            for rid in [*(r.get("id") for r in meta.get("requests", ())), *carries]:
                self._carries.setdefault(id_key(rid), entry["index"])

    def child_answer(self, data: bytes, *, step: int) -> None:
        """The harness's answer to the target's own request, recorded right
        after that request whenever the harness writes it (held answers go
        out later, several in one write: timing, so not recorded as such).
        Replay answers live; such an entry awaits nothing."""
        self._add({**self._host_entry(step, awaits=False), "child_answer": True, **encode_bytes(data)})

    def answered(self, rid: Any) -> None:
        """The frame just observed answers host request ``rid``."""
        if rid not in self._answered:  # a second answer is evidence, not another await
            self._answered.append(rid)
        if self._latest is not None and self._latest.dir == TARGET:
            key = id_key(rid)
            self._answers.setdefault(key, []).append(self._latest.index)
            self._answer_of[self._latest.index] = key

    def action(self, name: str, *, step: int, carries: Iterable[Any] = (), **details: Any) -> None:
        entry = {**self._host_entry(step), "action": name, **details}
        if self._add(entry):
            for rid in carries:
                self._carries.setdefault(id_key(rid), entry["index"])

    def saw(self, index: int, payload: bytes | None, size: int, *, step: int) -> None:
        self.observed += 1
        if len(self.entries) >= MAX_ENTRIES:
            self.dropped += 1
            return
        # One index names one entry: the frames of a later process (a reload)
        # continue the numbering instead of starting again at 0.
        at = max(index, self._next_frame)
        self._next_frame = at + 1
        self._frames[index] = at
        entry: dict[str, Any] = {"dir": TARGET, "step": step, "index": at}
        if payload is None:
            entry.update(size=size, oversized=True)
        elif self._target_bytes + len(payload) > TARGET_TEXT_BUDGET:
            entry.update(size=len(payload), sha256=hashlib.sha256(payload).hexdigest())
        else:
            self._target_bytes += len(payload)
            entry.update(encode_bytes(payload))
        self._add(entry)

    # -- what evidence can name (conformance/evidence.py derives it) ---------------
    def frame(self, index: int) -> int | None:
        """This trace's index of the target frame with ``index`` in its
        process's output (the latest such), when the trace holds it."""
        return self._frames.get(index)

    def write_carrying(self, rid: Any) -> int | None:
        """The index of the first write that carried request ``rid``."""
        return self._carries.get(id_key(rid))

    def answers_like(self, frame: int) -> list[int]:
        """Every frame of this trace answering the request that ``frame`` answers."""
        key = self._answer_of.get(frame)
        return list(self._answers.get(key, [])) if key is not None else []

    def latest(self) -> Mark | None:
        """The last entry recorded (either direction)."""
        return self._latest

    def evidence(self, requirement: str) -> list[dict[str, Any]]:
        """The header's ``evidence`` for ``requirement``: the entries its
        violation was judged on, else the last entry (empty only for a trace
        without entries)."""
        shown = self.shown.get(requirement)
        marks = list(shown.marks) if shown is not None else []
        if not marks and self._latest is not None:
            marks = [Mark(self._latest.dir, self._latest.index, "the last entry of the trace")]
        return [m.as_json() for m in marks]

    def dump(self, path: Path, *, requirement: str, message: str) -> None:
        """Write this trace as the evidence of ``requirement``: the violation
        it shows for it (``message`` when it recorded none) and the entries
        judged, marked in the header."""
        shown = self.shown.get(requirement)
        header = {**self.header, "requirement": requirement}
        if shown is not None:
            message = shown.message
            if shown.context:  # a replay's recording keeps the context of the run it came from
                header["context"] = shown.context
        header.update(violation=message, evidence=self.evidence(requirement), dropped_entries=self.dropped)
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


def entry_text(e: dict[str, Any]) -> str:
    """An entry's bytes or action as a person reads them (no newline at the end)."""
    if "action" in e:
        text = f"[{e['action']}]"
    elif "text" in e:
        text = str(e["text"])
    elif "base64" in e:
        text = f"[{len(str(e['base64']))} base64 characters: not UTF-8]"
    elif "size" in e:
        text = f"[{e['size']} bytes, sha256 {str(e.get('sha256', ''))[:16]}…]"
    else:
        text = str(e)
    return text.rstrip("\n")


def marked_entries(entries: list[dict[str, Any]], evidence: object) -> list[dict[str, Any]]:
    """The entries a header's ``evidence`` names, in trace order, each with
    the mark's ``why`` (when it has one)."""
    marks = evidence if isinstance(evidence, list) else []
    why = {(m.get("dir"), m.get("index")): m.get("why") for m in marks if isinstance(m, dict)}
    return [
        {**e, **({"why": why[key]} if why[key] else {})}
        for e in entries
        if (key := (e.get("dir"), e.get("index"))) in why
    ]


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
