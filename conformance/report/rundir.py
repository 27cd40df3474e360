"""Reading a finished run directory back: ``matrix.json`` and the traces it names.

Reports only read verdicts (ARCHITECTURE rule 6), so everything here is
plain data in, plain data out; nothing imports the runner. A run directory
is treated as untrusted input: it may be missing, half-written, of another
format version, or written by a hostile target's run (a ``trace`` field
pointing outside the directory). Each problem is a :class:`RunDirError`
whose message names the file, so the command line can print one line and
exit 2 instead of a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "octet-conformance/matrix@4"
# Formats this version reads: @3 differs only by lacking the top-level
# ``catalog`` (the revisions judged against), which readers treat as unknown.
READABLE_FORMATS = ("octet-conformance/matrix@3", FORMAT)
RESULT_FIELDS = ("id", "document", "section", "level", "verdict", "summary", "evidence")
MAX_MATRIX_BYTES = 64 * 1024 * 1024  # a matrix of a few hundred requirements is well under 1 MiB
MAX_TRACE_BYTES = 512 * 1024  # a report shows the start of a trace; the file stays beside the matrix
MAX_TRACE_LINES = 400


class RunDirError(ValueError):
    """A run directory that cannot be read as a finished run."""


@dataclass(frozen=True)
class Run:
    directory: Path
    matrix: dict[str, Any]

    @property
    def results(self) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = self.matrix["results"]
        return results

    @property
    def target(self) -> dict[str, Any]:
        target: dict[str, Any] = self.matrix.get("target") or {}
        return target

    @property
    def suite(self) -> dict[str, Any]:
        suite = self.matrix.get("suite")
        return suite if isinstance(suite, dict) else {}

    @property
    def selection(self) -> str:
        """The options that narrowed what the run judged ("" for a full run)."""
        return str(self.suite.get("selection") or "")

    @property
    def catalog(self) -> dict[str, str]:
        """Document -> the catalog revision this run was judged against
        (empty for a matrix@3, which did not record it)."""
        found = self.matrix.get("catalog")
        revisions = found.get("revisions") if isinstance(found, dict) else None
        if not isinstance(revisions, dict):
            return {}
        return {str(k): str(v) for k, v in revisions.items()}

    def observed(self, requirement: str) -> dict[str, Any]:
        run = self.matrix.get("run")
        found = run.get("observed", {}).get(requirement) if isinstance(run, dict) else None
        return found if isinstance(found, dict) else {}


def load_run(directory: Path) -> Run:
    """The run in ``directory`` (a run directory or its ``matrix.json``)."""
    path = directory if directory.name == "matrix.json" and directory.is_file() else directory / "matrix.json"
    if not path.parent.is_dir():
        raise RunDirError(f"{path.parent}: no such run directory")
    if not path.is_file():
        raise RunDirError(f"{path}: missing (not a finished run directory)")
    if path.stat().st_size > MAX_MATRIX_BYTES:
        raise RunDirError(f"{path}: larger than {MAX_MATRIX_BYTES} bytes; not a matrix")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{path}: not valid JSON (half-written?): {exc}") from None
    except OSError as exc:
        raise RunDirError(f"{path}: cannot be read: {exc.strerror}") from None
    _validate(path, document)
    return Run(path.parent, document)


def _validate(path: Path, document: Any) -> None:
    if not isinstance(document, dict):
        raise RunDirError(f"{path}: not a JSON object")
    found = document.get("format")
    if found not in READABLE_FORMATS:
        raise RunDirError(f"{path}: format {found!r}; this version reads {' and '.join(map(repr, READABLE_FORMATS))}")
    results = document.get("results")
    if not isinstance(results, list):
        raise RunDirError(f"{path}: 'results' is not a list")
    for i, result in enumerate(results):
        if not isinstance(result, dict):
            raise RunDirError(f"{path}: results[{i}] is not an object")
        for field in RESULT_FIELDS:
            if not isinstance(result.get(field), str):
                raise RunDirError(f"{path}: results[{i}].{field} is missing or not a string")
        for field in ("trace", "replay"):
            if result.get(field) is not None and not isinstance(result[field], str):
                raise RunDirError(f"{path}: results[{i}].{field} is neither null nor a string")
    for member in ("target", "summary", "catalog"):
        if not isinstance(document.get(member, {}), dict):
            raise RunDirError(f"{path}: {member!r} is not an object")


def read_trace(run: Run, relative: str | None) -> tuple[list[dict[str, Any]], str]:
    """The first entries of a result's trace and a note on what is missing.

    Only a file inside the run directory is read: a matrix naming
    ``../../somewhere`` gets a note, not that file's contents in a report.
    """
    if not relative:
        return [], ""
    base = run.directory.resolve()
    path = (base / relative).resolve()
    if not path.is_relative_to(base):
        return [], f"trace {relative!r} lies outside the run directory; not read"
    if not path.is_file():  # missing, or a FIFO/device that would block or never end
        return [], f"trace {relative}: not a regular file; not read"
    try:
        with path.open("rb") as f:
            data = f.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        return [], f"trace {relative}: {exc.strerror or exc}"
    note = f"trace cut at {MAX_TRACE_BYTES} bytes" if len(data) > MAX_TRACE_BYTES else ""
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(data[:MAX_TRACE_BYTES].splitlines(), 1):
        if len(entries) >= MAX_TRACE_LINES:
            note = f"first {MAX_TRACE_LINES} trace lines shown"
            break
        try:
            entry = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            note = note or f"trace line {number} is not a JSON object; stopped there"
            break
        if isinstance(entry, dict):
            entries.append(entry)
    return entries, note
