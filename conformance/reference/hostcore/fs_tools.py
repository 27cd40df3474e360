"""Read, Glob, Grep, Write and Edit (§5). Paths arrive already resolved and
classified (see :mod:`.paths`); these functions only do the file work and
keep every result bounded."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from . import limits
from .outcome import ToolFailure


def arg_str(args: dict[str, Any], *names: str, required: bool = True) -> str | None:
    for name in names:
        value = args.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise ToolFailure(f"{name} must be a string")
            return value
    if required:
        raise ToolFailure(f"{names[0]} is required")
    return None


def read(path: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(limits.MAX_READ_BYTES + 1)
        size = os.path.getsize(path)
    except OSError as exc:
        raise ToolFailure(f"cannot read {path}: {exc.strerror}") from exc
    truncated = len(data) > limits.MAX_READ_BYTES
    text = data[: limits.MAX_READ_BYTES].decode("utf-8", errors="replace")
    return {"path": path, "text": text, "sizeBytes": size, "truncated": truncated}


def glob(base: str, args: dict[str, Any]) -> dict[str, Any]:
    pattern = arg_str(args, "pattern")
    assert pattern is not None
    if os.path.isabs(pattern) or ".." in Path(pattern).parts:
        raise ToolFailure("pattern must be relative to the search path and must not use ..")
    matches: list[str] = []
    for found in sorted(Path(base).glob(pattern)):
        if len(matches) == limits.MAX_GLOB_RESULTS:
            return {"path": base, "matches": matches, "truncated": True}
        matches.append(str(found))
    return {"path": base, "matches": matches, "truncated": False}


def grep(base: str, args: dict[str, Any]) -> dict[str, Any]:
    pattern = arg_str(args, "pattern")
    file_glob = arg_str(args, "glob", required=False)
    try:
        regex = re.compile(pattern or "")
    except re.error as exc:
        raise ToolFailure(f"invalid pattern: {exc}") from exc
    matches: list[dict[str, Any]] = []
    for file in _walk(base):
        if file_glob and not fnmatch.fnmatch(os.path.basename(file), file_glob):
            continue
        if _grep_file(file, regex, matches):
            return {"path": base, "matches": matches, "truncated": True}
    return {"path": base, "matches": matches, "truncated": False}


def _walk(base: str) -> list[str]:
    if os.path.isfile(base):
        return [base]
    files: list[str] = []
    # followlinks=False: a recursive walk never inherits the outside-path
    # exception through a symlinked directory (§5).
    for folder, dirs, names in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".git"))
        files.extend(os.path.join(folder, name) for name in sorted(names))
    return files


def _grep_file(file: str, regex: re.Pattern[str], matches: list[dict[str, Any]]) -> bool:
    """Appends matches; True once the result bound is reached."""
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if regex.search(line):
                    matches.append({"path": file, "line": number, "text": line.rstrip("\n")[:500]})
                    if len(matches) >= limits.MAX_GREP_MATCHES:
                        return True
    except OSError:
        pass  # unreadable files are skipped, as grep does
    return False


def write(path: str, args: dict[str, Any]) -> dict[str, Any]:
    content = arg_str(args, "content")
    assert content is not None
    previous = _digest(path)
    data = content.encode("utf-8")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {exc.strerror}") from exc
    return {"path": path, "bytesWritten": len(data), "details": {"review": _review(path, previous, data)}}


def edit(path: str, args: dict[str, Any]) -> dict[str, Any]:
    old = arg_str(args, "old_string", "oldString")
    new = arg_str(args, "new_string", "newString")
    assert old is not None and new is not None
    replace_all = args.get("replace_all", args.get("replaceAll")) is True
    try:
        original = Path(path).read_bytes()
    except OSError as exc:
        raise ToolFailure(f"cannot read {path}: {exc.strerror}") from exc
    text = original.decode("utf-8", errors="surrogateescape")
    count = text.count(old) if old else 0
    if count == 0:
        raise ToolFailure("old_string does not occur in the file")
    if count > 1 and not replace_all:
        raise ToolFailure(f"old_string occurs {count} times; pass replace_all or a longer string")
    updated = text.replace(old, new).encode("utf-8", errors="surrogateescape")
    Path(path).write_bytes(updated)
    review = _review(path, hashlib.sha256(original).hexdigest(), updated)
    return {"path": path, "replacements": count, "details": {"review": review}}


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _review(path: str, previous: str | None, data: bytes) -> dict[str, Any]:
    return {"path": path, "previousSha256": previous, "sha256": hashlib.sha256(data).hexdigest()}
