"""Output files written whole or not at all.

Every file the suite writes for a person or a tool to read (``matrix.json``,
``junit.xml``, traces, the HTML report, a baseline, a regression case) goes
through :func:`replacing`: the text is written into a temporary file in the
same directory and moved over the destination with one ``rename`` only when
it is complete. A full disk, a signal or a crash half-way through leaves the
previous file as it was (and no temporary file behind), never a truncated
one; a reader never sees a half-written file.

The temporary file is flushed to the disk (``fsync``) before the rename, so
the rename never publishes a file whose contents are still only in memory.
A destination that is a symbolic link is written through: the link stays and
the file it names is replaced. An existing destination keeps its permission
bits; a new one gets the usual ``0o666`` minus the umask, as ``open`` gives.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["TEMP_SUFFIX", "copy_file", "replacing", "write_bytes", "write_text"]
TEMP_SUFFIX = ".octet-tmp"  # the temporary file's name: .<name>.<random>.octet-tmp, beside the destination


def _destination(path: Path) -> Path:
    """The file a write to ``path`` replaces: a symbolic link's target, so the link survives."""
    return path.resolve() if path.is_symlink() else path


def _mode(path: Path) -> int | None:
    """The permission bits to keep, or None for a new file."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


@contextlib.contextmanager
def replacing(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object (text in UTF-8, or ``binary``) whose contents replace
    ``path`` when the ``with`` body ends normally; on an exception ``path`` is
    untouched and the temporary file is removed."""
    final = _destination(path)
    temp = final.parent / f".{final.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    # O_EXCL: never follow or reuse a file that appeared under our random name.
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:  # named by the file the caller asked for, not our temporary name
        raise OSError(exc.errno, exc.strerror, str(final)) from None
    try:
        kept = _mode(final)
        if kept is not None:
            os.fchmod(fd, kept)
        out = os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8")
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    try:
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, final)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(final)  # a failed write() names no file: say which one
        raise


def write_text(path: Path, text: str) -> Path:
    """``path.write_text(text, encoding="utf-8")``, whole or not at all."""
    with replacing(path) as out:
        out.write(text)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    with replacing(path, binary=True) as out:
        out.write(data)
    return path


def copy_file(source: Path, path: Path) -> Path:
    """``shutil.copyfile(source, path)``, whole or not at all."""
    with source.open("rb") as src, replacing(path, binary=True) as out:
        shutil.copyfileobj(src, out)
    return path
