"""Baselines: failures a project knows about and has not fixed yet.

A baseline is TOML (format ``octet-conformance/baseline@1``)::

    format = "octet-conformance/baseline@1"

    [[expected]]
    requirement = "JSONRPC-5-one-response"          # any target
    reason = "double reply on success, issue #12"

    [[expected]]
    requirement = "my-extension:EXT-1.1-tool-description"   # only the target named my-extension
    reason = "..."

Applied to a certification run, a listed ``fail`` or ``warn`` becomes
``xfail``; a failure that is not listed still fails the run; and a listed
requirement that now passes is *stale* and fails the run too, so a baseline
only ever shrinks. A listed requirement the run did not judge (skip,
untested, error) is neither: nothing was learned about it.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.verdicts import Verdict

from .rundir import Run

FORMAT = "octet-conformance/baseline@1"
BASELINED = ("fail", "warn")  # the verdicts a baseline entry turns into xfail


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Entry:
    requirement: str
    reason: str
    target: str | None = None  # None: every target

    @property
    def key(self) -> str:
        return self.requirement if self.target is None else f"{self.target}:{self.requirement}"


@dataclass(frozen=True)
class Baseline:
    path: Path
    entries: tuple[Entry, ...]

    def for_target(self, name: str) -> dict[str, Entry]:
        """Entries that concern the target ``name``; a target-specific entry wins."""
        found: dict[str, Entry] = {}
        for e in self.entries:
            if e.target is None:
                found.setdefault(e.requirement, e)
        for e in self.entries:
            if e.target == name:
                found[e.requirement] = e
        return found


@dataclass(frozen=True)
class Applied:
    verdicts: tuple[Verdict, ...]
    expected: tuple[Entry, ...]  # entries that matched a failure (now xfail)
    stale: tuple[Entry, ...]  # entries whose requirement passes now


def load_baseline(path: Path, known: Iterable[str], *, target: str | None = None) -> Baseline:
    """The baseline at ``path``, its requirement ids checked against ``known``
    and, given the ``target`` the run certifies, every target-specific entry
    against its name: an entry for a target the run does not certify would
    expect nothing, silently (a typo in the name, or the wrong file)."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BaselineError(f"{path}: not valid TOML: {exc}") from None
    if document.get("format", FORMAT) != FORMAT:
        raise BaselineError(f"{path}: format {document.get('format')!r}; this version reads {FORMAT!r}")
    items = document.get("expected", [])
    if not isinstance(items, list):
        raise BaselineError(f"{path}: 'expected' must be an array of tables ([[expected]])")
    ids = set(known)
    entries: list[Entry] = []
    for i, item in enumerate(items):
        entries.append(_entry(path, i, item, ids))
    keys = [e.key for e in entries]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise BaselineError(f"{path}: listed more than once: {', '.join(duplicates)}")
    others = [e.key for e in entries if target is not None and e.target not in (None, target)]
    if others:
        raise BaselineError(
            f"{path}: {', '.join(others)}: no such target in this run, which certifies {target!r}; "
            "fix the target name before the ':' or drop the entry"
        )
    return Baseline(path, tuple(entries))


def _entry(path: Path, i: int, item: object, ids: set[str]) -> Entry:
    where = f"{path}: expected[{i}]"
    if not isinstance(item, dict):
        raise BaselineError(f"{where} is not a table")
    requirement, reason = item.get("requirement"), item.get("reason")
    if not isinstance(requirement, str) or not requirement:
        raise BaselineError(f'{where}: \'requirement\' must be "ID" or "target:ID"')
    if not isinstance(reason, str) or not reason.strip():
        raise BaselineError(f"{where} ({requirement}): every entry needs a non-empty 'reason'")
    unknown = sorted(set(item) - {"requirement", "reason"})
    if unknown:
        raise BaselineError(f"{where} ({requirement}): unknown key(s) {', '.join(unknown)}")
    target, _, rid = requirement.rpartition(":")
    if rid not in ids:
        raise BaselineError(f"{where}: {rid!r} is not a requirement of this suite's catalog")
    return Entry(rid, reason, target or None)


def expectation(entry: Entry | None, verdict: str) -> str:
    """What a baseline entry makes of a verdict: "expected" (a listed fail or
    warn, now xfail), "stale" (listed, and passes now) or "" (nothing)."""
    if entry is None:
        return ""
    return "expected" if verdict in BASELINED else "stale" if verdict == "pass" else ""


def expected_evidence(evidence: str, entry: Entry) -> str:
    """The evidence stays what was observed; the baseline's reason is added
    so a reader sees why it does not fail the run."""
    return f"{evidence} (expected by baseline: {entry.reason})"


def apply_baseline(verdicts: Sequence[Verdict], baseline: Baseline, target: str) -> Applied:
    listed = baseline.for_target(target)
    out: list[Verdict] = []
    expected: list[Entry] = []
    stale: list[Entry] = []
    for v in verdicts:
        entry = listed.get(v.requirement.id)
        kind = expectation(entry, v.verdict)
        if entry is not None and kind == "expected":
            expected.append(entry)
            v = replace(v, verdict="xfail", evidence=expected_evidence(v.evidence, entry))
        elif entry is not None and kind == "stale":
            stale.append(entry)
        out.append(v)
    return Applied(tuple(out), tuple(expected), tuple(stale))


def apply_to_results(
    results: dict[str, dict[str, Any]], baseline: Baseline, target: str
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """:func:`apply_baseline` on a finished run's ``results[]`` (id -> result):
    the results with listed failures made ``xfail``, and the stale entries
    (id -> entry key). A run the command line already applied it to has no
    listed failure left, so applying it again changes nothing."""
    listed = baseline.for_target(target)
    out: dict[str, dict[str, Any]] = {}
    stale: dict[str, str] = {}
    for rid, r in results.items():
        entry = listed.get(rid)
        kind = expectation(entry, str(r.get("verdict")))
        if entry is not None and kind == "expected":
            r = {**r, "verdict": "xfail", "evidence": expected_evidence(str(r.get("evidence", "")), entry)}
        elif entry is not None and kind == "stale":
            stale[rid] = entry.key
        out[rid] = r
    return out, stale


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML
    refuses a raw DEL and a lone surrogate cannot be written as UTF-8."""
    body = json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
    return "".join(ch if not 0xD800 <= ord(ch) <= 0xDFFF else "\ufffd" for ch in body)


def baseline_toml(run: Run) -> str:
    """A baseline listing every failing requirement of ``run`` (fail, warn,
    and what an earlier baseline already expected), with the evidence as a
    starting reason to be replaced by the real one."""
    target = run.target
    recorded = f"{target.get('name', '?')} {target.get('version', '')} in {run.directory}"
    lines = [
        "# Written by octet-conformance baseline: replace each reason with why the failure is accepted.",
        f"format = {_toml_string(FORMAT)}",
        f"recorded_from = {_toml_string(recorded)}",  # target text goes in strings only, never in comments
    ]
    for r in run.results:
        if r["verdict"] in (*BASELINED, "xfail"):
            evidence = r["evidence"].split(" (expected by baseline: ")[0]
            lines += ["", "[[expected]]", f"requirement = {_toml_string(r['id'])}"]
            lines.append(f"reason = {_toml_string(r['verdict'] + ' when recorded: ' + evidence)}")
    return "\n".join(lines) + "\n"
