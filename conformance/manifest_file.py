"""Reading ``extension.toml`` from disk, treating the path as hostile input.

The manifest is the suite's *input*, not the extension's behaviour: anything
wrong with the file itself (missing, a directory, a FIFO, a device, a symlink
loop, too large, a byte-order mark, not UTF-8, not TOML) is a refusal before
spawn (exit status 2), never a verdict. Nothing here may block or read
without bound:

* the file type is checked with ``stat`` before opening, and the file is
  opened with ``O_NONBLOCK``, so a FIFO with no writer (or one swapped in
  after the check) cannot hang the run;
* at most :data:`MAX_MANIFEST_BYTES` + 1 bytes are read, so ``/dev/zero``
  behind a symlink or a file that grows while we read cannot exhaust memory.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

# §0 "Transport defaults": product discovery reads a selected manifest
# through a 256 KiB bound. A larger manifest would not load in octet, so the
# suite refuses it too rather than certify something the host cannot read.
MAX_MANIFEST_BYTES = 256 * 1024

_BOMS = (
    (b"\xef\xbb\xbf", "a UTF-8 byte-order mark (BOM, bytes EF BB BF)"),
    (b"\xff\xfe", "a UTF-16 little-endian byte-order mark (bytes FF FE)"),
    (b"\xfe\xff", "a UTF-16 big-endian byte-order mark (bytes FE FF)"),
)
_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class ManifestError(ValueError):
    """The manifest breaks the documented contract; nothing was spawned."""


def read_manifest(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The resolved path of the manifest and its parsed TOML document."""
    given = Path(path)
    resolved = _resolve(given)
    data = _read_bounded(resolved)
    return resolved, _parse(resolved, data)


def _resolve(given: Path) -> Path:
    try:
        return given.resolve(strict=True)
    except FileNotFoundError:
        if given.is_symlink():
            raise ManifestError(f"{given}: is a symbolic link to {os.readlink(given)}, which does not exist") from None
        raise ManifestError(f"{given}: no such manifest") from None
    except RuntimeError:  # Python 3.11 reports a symlink loop this way
        raise ManifestError(f"{given}: symbolic link loop (the link resolves back to itself)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ManifestError(f"{given}: symbolic link loop (the link resolves back to itself)") from None
        raise ManifestError(f"{given}: cannot read manifest: {exc.strerror or exc}") from None


def _not_regular(path: Path, mode: int) -> ManifestError:
    what = next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")
    hint = ""
    if stat.S_ISDIR(mode) and (path / "extension.toml").is_file():
        hint = f"; did you mean {path / 'extension.toml'}?"
    return ManifestError(f"{path}: is {what}; a manifest must be a regular file{hint}")


def _too_large(path: Path, size: str) -> ManifestError:
    return ManifestError(
        f"{path}: is {size} bytes; octet reads a manifest through a {MAX_MANIFEST_BYTES:,}-byte "
        "(256 KiB) bound (§0), so a larger one cannot load"
    )


def _read_bounded(path: Path) -> bytes:
    try:
        before = os.stat(path)  # stat never blocks, whatever the file is
        if not stat.S_ISREG(before.st_mode):
            raise _not_regular(path, before.st_mode)
        if before.st_size > MAX_MANIFEST_BYTES:
            raise _too_large(path, f"{before.st_size:,}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror or exc}") from None
    try:
        now = os.fstat(fd)  # swapped for something else between stat and open?
        if not stat.S_ISREG(now.st_mode):
            raise _not_regular(path, now.st_mode)
        return _read_up_to(fd, path)
    finally:
        os.close(fd)


def _read_up_to(fd: int, path: Path) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while total <= MAX_MANIFEST_BYTES:
            chunk = os.read(fd, MAX_MANIFEST_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror or exc}") from None
    if total > MAX_MANIFEST_BYTES:
        raise _too_large(path, f"more than {MAX_MANIFEST_BYTES:,}")  # it grew while we read
    return b"".join(chunks)


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise ManifestError(f"{path}: starts with {name}; TOML must be UTF-8 without a BOM: save it without one")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 1].hex().upper()
        raise ManifestError(f"{path}: is not UTF-8: byte 0x{bad} at offset {exc.start} (line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: is not valid TOML: {exc}") from None
